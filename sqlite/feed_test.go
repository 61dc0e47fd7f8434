package sqlite

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// The home feed's bounded walk, a matter of this store's indexes; the
// feed's behaviour every store shows is storetest's (feed.go).

// RL-35, RL-27a: a requester who may read almost nothing costs a bounded
// walk, feedScanRows candidates for a feed filter across its types. Behind
// feedScanRows-1 newer messages of a private channel, an outsider's
// activity still reaches the one open message; a mention of it in that
// channel spends one candidate of the budget first, and the open message
// is out of reach; so it is behind one more private message.
func TestFeedScanBound(t *testing.T) {
	s := ttOpen(t)
	o, x := testutil.NewSigner(t), testutil.NewSigner(t)
	at := ttBase
	ttIngest(t, s, o.Event(t, 9007, at, "", ttH(ttChan), nostr.Tag{"private"}))
	open := ttIngest(t, s, o.Event(t, 9, at+1, "", ttH(ttChan2)))
	batch := make([]*nostr.Event, feedScanRows-1)
	for i := range batch {
		batch[i] = o.Event(t, 9, at+2+int64(i), "", ttH(ttChan))
	}
	if _, err := s.ImportBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	feed := func(types ...buzz.FeedType) []string {
		got, err := s.Feed(context.Background(), buzz.FeedQuery{Viewer: buzz.Viewer(x.PK), Types: types, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		return testutil.IDs(got...)
	}
	if got := feed(buzz.FeedActivity); !slices.Equal(got, []string{open.ID}) {
		t.Fatalf("within the bound: %v, want the open message", got)
	}
	ttIngest(t, s, o.Event(t, 1111, at, "", ttH(ttChan), nostr.Tag{"p", x.PK}))
	if got := feed(buzz.FeedActivity); !slices.Equal(got, []string{open.ID}) {
		t.Fatalf("activity alone: %v, want the open message", got)
	}
	if got := feed(buzz.FeedMentions, buzz.FeedActivity); len(got) != 0 {
		t.Fatalf("mentions, then activity past the bound: %v, want nothing", got)
	}
	ttIngest(t, s, o.Event(t, 9, at+2+feedScanRows, "", ttH(ttChan)))
	if got := feed(buzz.FeedActivity); len(got) != 0 {
		t.Fatalf("past the bound: %v, want nothing", got)
	}
}
