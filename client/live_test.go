package client

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// CL-4: the live tail places each message by the row rule of the mode the
// pages were served in. By default a top-level message and a broadcast
// reply are rows; a quiet reply is not, and names its thread's root, also
// at depth 2 and under a message older than the tail (its parent fetched
// by id). In projection mode (CW-13) every reply is a row.
func TestFollowPlacesLiveMessages(t *testing.T) {
	admin, a := testutil.NewSigner(t), testutil.NewSigner(t)
	url := startBuzz(t, admin.PK)
	base := time.Now().Unix() - 600
	h := nostr.Tag{"h", testChannel}
	reply := func(at int64, content string, parent, root *nostr.Event, tags ...nostr.Tag) *nostr.Event {
		return a.Event(t, 9, at, content, append([]nostr.Tag{h, {"e", root.ID, "", "root"}, {"e", parent.ID, "", "reply"}}, tags...)...)
	}
	old := a.Event(t, 9, base, "old", h)
	top := a.Event(t, 9, base+20, "top", h)
	broadcast := reply(base+21, "broadcast", top, top, nostr.Tag{"broadcast", "1"})
	quiet := reply(base+22, "quiet", top, top)
	deep := reply(base+23, "deep", broadcast, top)
	under := reply(base+24, "under old", old, old)
	testutil.Publish(t, url, old, top, broadcast, quiet, deep, under)

	wantDefault := map[string]LiveEvent{
		top.ID: {Row: true}, broadcast.ID: {Row: true},
		quiet.ID: {Thread: top.ID}, deep.ID: {Thread: top.ID}, under.ID: {Thread: old.ID},
	}
	if got := follow(t, url, base+10, false, len(wantDefault)); !maps.Equal(got, wantDefault) {
		t.Fatalf("default mode: %v, want %v", got, wantDefault)
	}

	// The mode is the pages': the relay switches to projection.
	testutil.Publish(t, url, admin.Event(t, 9033, time.Now().Unix(), "", nostr.Tag{"thread_replies_in_channel", "true"}))
	c := newClient(t, Options{Relay: url})
	projection := false
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := c.Timeline(ctx, testChannel, 10, false, func(p *nipcw.Page) error {
		projection = p.Bounds.ThreadRepliesInChannel
		return nil
	}); err != nil || !projection {
		t.Fatalf("head page: projection %v, %v", projection, err)
	}
	wantProjection := map[string]LiveEvent{}
	for id := range wantDefault {
		wantProjection[id] = LiveEvent{Row: true}
	}
	if got := follow(t, url, base+10, projection, len(wantProjection)); !maps.Equal(got, wantProjection) {
		t.Fatalf("projection mode: %v, want %v", got, wantProjection)
	}
}

// follow runs Follow from since until it has handed n messages and returns
// them by id, without their events.
func follow(t *testing.T, url string, since int64, projection bool, n int) map[string]LiveEvent {
	t.Helper()
	c := newClient(t, Options{Relay: url})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got := map[string]LiveEvent{}
	err := c.Follow(ctx, testChannel, since, projection, func(live LiveEvent) error {
		got[live.Event.ID] = LiveEvent{Row: live.Row, Thread: live.Thread}
		if len(got) == n {
			cancel()
		}
		return nil
	})
	if err != nil || len(got) != n {
		t.Fatalf("Follow: %v after %d of %d messages", err, len(got), n)
	}
	return got
}
