package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// RL-35: the client reads the home feed of its key from a buzz-lite relay,
// types in the order asked; without a key, activity only.
func TestFeed(t *testing.T) {
	url := startBuzz(t)
	me, other := testutil.NewSigner(t), testutil.NewSigner(t)
	base := time.Now().Unix() - 100
	msg := other.Event(t, 9, base, "in the channel", nostr.Tag{"h", testChannel})
	mention := other.Event(t, 1, base+1, "hey you", nostr.Tag{"p", me.PK})
	testutil.Publish(t, url, msg, mention)
	ctx := context.Background()
	for _, c := range []struct {
		key   string
		types []string
		want  []string
	}{
		{me.SK, []string{nipcw.FeedMentions, nipcw.FeedActivity}, []string{mention.ID, msg.ID}},
		{me.SK, []string{nipcw.FeedActivity, nipcw.FeedMentions}, []string{msg.ID, mention.ID}},
		{"", []string{nipcw.FeedMentions, nipcw.FeedActivity}, []string{msg.ID}},
	} {
		cl := newClient(t, Options{Relay: url, Key: c.key})
		evs, err := cl.Feed(ctx, c.types, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, ev.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("key %t, types %v: %v, want %v", c.key != "", c.types, got, c.want)
		}
	}
}

// RL-35, CL-3: a relay that does not advertise the feed is not asked; a
// feed of events that do not verify, or of more than asked for, is refused.
func TestFeedRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := newClient(t, Options{Relay: startPlain(t, nil)}).Feed(ctx, []string{nipcw.FeedActivity}, 5); !errors.Is(err, ErrNoFeed) {
		t.Fatalf("relay without the feed: %v, want ErrNoFeed", err)
	}
	sg := testutil.NewSigner(t)
	good := sg.Event(t, 9, time.Now().Unix(), "fine", nostr.Tag{"h", testChannel})
	forged := *good
	forged.Content = "forged"
	for _, c := range []struct {
		name   string
		answer []*nostr.Event
		limit  int
	}{
		{"forged event", []*nostr.Event{good, &forged}, 5},
		{"more than the limit", []*nostr.Event{good, good}, 1},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/query" {
				json.NewEncoder(w).Encode(c.answer)
				return
			}
			fmt.Fprintf(w, `{"self":%q,"supported_extensions":["nip-cw",%q]}`, sg.PK, nipcw.FeedExtension)
		}))
		t.Cleanup(srv.Close)
		cl := newClient(t, Options{Relay: "ws" + strings.TrimPrefix(srv.URL, "http")})
		if evs, err := cl.Feed(ctx, []string{nipcw.FeedActivity}, c.limit); err == nil {
			t.Errorf("%s: %d events, want an error", c.name, len(evs))
		}
	}
}
