package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// CW-2, RL-36: a NIP-29 group id names a channel as it is written, letter
// case included: NDK's mixed-case id and the same letters in another case
// are two channels, each with its own group state (d = the id), window,
// thread and export; so are ids of every allowed punctuation and of 128
// characters.
func testGroupIDsVerbatim(t *testing.T, open Opener) {
	ctx := context.Background()
	relayKey := nostr.GeneratePrivateKey()
	s := open(t, Config{RelayKey: relayKey})
	owner := testutil.NewSigner(t)
	ids := []string{
		"p0ZPf6Xc6Ngx7TZFdJHcWRxY", "P0zpF6xC6nGX7tzfDjhCwrXy", "p0zpf6xc6ngx7tzfdjhcwrxy",
		"a.b~C_d-e", ".", "..", "~", strings.Repeat("Zz9-_.~", 19)[:128],
	}
	msgs := map[string]*nostr.Event{}
	replies := map[string]*nostr.Event{}
	for i, h := range ids {
		at := chT + int64(10*i)
		ttIngest(t, s, owner.Event(t, buzz.KindCreateChannel, at, "", ttH(h), nostr.Tag{"name", "group " + h}))
		msgs[h] = ttIngest(t, s, owner.Event(t, 9, at+1, "in "+h, ttH(h)))
		replies[h] = ttIngest(t, s, owner.Event(t, 9, at+2, "re "+h, ttH(h), ttReplyTag(msgs[h].ID)))
	}
	for _, h := range ids {
		if ch := s.Community().Channel(h); ch == nil || !ch.Created || ch.H != h {
			t.Fatalf("channel %q: %s", h, ChannelState(ch))
		}
		state, err := s.Query(ctx, nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {h}}}, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		if len(state) != 1 || state[0].Tags.GetD() != h || state[0].Tags.Find("name")[1] != "group "+h {
			t.Fatalf("39000 of %q: %v", h, state)
		}
		page, err := s.Window(ctx, buzz.WindowQuery{Channel: h, Limit: 10, Viewer: buzz.Anonymous})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Rows) != 1 || page.Rows[0].ID != msgs[h].ID {
			t.Fatalf("window of %q: %d rows, want its one message", h, len(page.Rows))
		}
		thread, err := s.Thread(ctx, buzz.ThreadQuery{Root: msgs[h].ID, DepthLimit: 1, Limit: 10, Viewer: buzz.Anonymous})
		if err != nil {
			t.Fatal(err)
		}
		if len(thread.Replies) != 1 || thread.Replies[0].ID != replies[h].ID {
			t.Fatalf("thread of %q: %d replies, want its one reply", h, len(thread.Replies))
		}
		var out bytes.Buffer
		if n, err := s.Export(ctx, buzz.ExportFilter{Channel: h}, &out); err != nil || n != 3 {
			t.Fatalf("export of %q: %d events, %v; want its 9007, message and reply", h, n, err)
		}
	}
}

// CW-2: an event whose h tag spells a UUID otherwise (upper case, 32 bare
// hex, braced, urn:uuid:) belongs to the channel of the canonical form:
// it is in that channel's window and in a REQ's answer for #h in any
// spelling, and no channel goes by the spelling; a first event so spelled
// makes the canonical channel.
func testUUIDSpellingsOneChannel(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey()})
	owner := testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, buzz.KindCreateChannel, chT, "", ttH(ttChan)))
	bare := strings.ReplaceAll(ttChan, "-", "")
	spellings := []string{ttChan, strings.ToUpper(ttChan), bare, "{" + ttChan + "}", "urn:uuid:" + ttChan, strings.ToUpper(bare)}
	var want []string
	for i, h := range spellings {
		ev := ttIngest(t, s, owner.Event(t, 9, chT+1+int64(i), h, ttH(h)))
		want = append([]string{ev.ID}, want...)
		p, found, err := s.Placement(ctx, ev.ID)
		if err != nil || !found || p.Channel != ttChan {
			t.Fatalf("h %q: placed in %q (%v, %v), want %s", h, p.Channel, found, err, ttChan)
		}
	}
	page, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10, Viewer: buzz.Anonymous})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Rows {
		got = append(got, r.ID)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("window of %s: %v, want every spelling's message %v", ttChan, got, want)
	}
	for _, h := range spellings {
		if ch := s.Community().Channel(h); ch != nil && h != ttChan {
			t.Fatalf("a channel goes by the spelling %q", h)
		}
		// A REQ's #h names the channel as the window does: in any spelling.
		evs, err := s.Query(ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}}, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := s.Count(ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}}, buzz.Anonymous); err != nil || n != int64(len(want)) || len(evs) != len(want) {
			t.Fatalf("REQ #h %q: %d events, COUNT %d (%v); want every spelling's %d", h, len(evs), n, err, len(want))
		}
	}
	ttIngest(t, s, owner.Event(t, 9, chT+20, "first", ttH(strings.ToUpper(ttChan2))))
	if ch := s.Community().Channel(ttChan2); ch == nil || ch.Created {
		t.Fatalf("the first event of %s spelled in upper case made %s", ttChan2, ChannelState(ch))
	}
}
