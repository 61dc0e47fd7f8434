package postgres

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// RL-13, CW-3: a read ahead, its statement built from the access state
// this process published, judges by its snapshot's state when that is
// newer (another process's change this one has not heard of yet): a
// channel made private since is not served to a non-member, neither by a
// REQ nor by a window page, though the published state still shows it
// open.
func TestReadAheadJudgedBySnapshot(t *testing.T) {
	ctx := context.Background()
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	owner, reader := testutil.NewSigner(t), testutil.NewSigner(t)
	admit(t, s.Store, owner.Event(t, 9007, procT, "", nostr.Tag{"h", procChan}))
	msg := owner.Event(t, 9, procT+1, "hello", nostr.Tag{"h", procChan})
	admit(t, s.Store, msg)
	open := s.Community()
	admit(t, s.Store, owner.Event(t, 9002, procT+2, "", nostr.Tag{"h", procChan}, nostr.Tag{"private"}))
	for _, f := range []nostr.Filter{{Kinds: []int{9}}, {Tags: nostr.TagMap{"h": {procChan}}}} {
		s.community.Store(open) // as if the change were another process's, not heard of yet
		evs, err := s.Query(ctx, f, buzz.Viewer(reader.PK))
		if err != nil || len(evs) != 0 {
			t.Fatalf("REQ %v: %d events (%v) served to a non-member of the private channel, want 0", f, len(evs), err)
		}
		if !s.Community().Channel(procChan).Private {
			t.Fatalf("REQ %v: the snapshot's access state was not published", f)
		}
	}
	s.community.Store(open)
	page, err := s.Window(ctx, buzz.WindowQuery{Channel: procChan, Limit: 10, Viewer: buzz.Viewer(reader.PK)})
	if err != nil || !page.Unreadable || len(page.Rows) != 0 {
		t.Fatalf("window of the private channel for a non-member: %+v (%v), want it unreadable", page, err)
	}
	if evs, err := s.Query(ctx, nostr.Filter{IDs: []string{msg.ID}}, buzz.Viewer(owner.PK)); err != nil || len(evs) != 1 {
		t.Fatalf("REQ of the owner: %d events (%v), want 1", len(evs), err)
	}
}
