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
