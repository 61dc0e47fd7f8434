package postgres

import (
	"context"
	"slices"
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

// CW-17, CW-18: a window page read ahead, its aux closure's first hop
// read for every row the page may serve before the rows are known, serves
// the closure a transaction of its own serves: the aux events of a row
// that cannot be rebuilt are left out with the row, and a deleted
// reaction's deletion (the second hop) is served, and a hop of more than
// the page read ahead is read whole.
func TestWindowReadAheadClosure(t *testing.T) {
	ctx := context.Background()
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	owner, reader := testutil.NewSigner(t), testutil.NewSigner(t)
	h := nostr.Tag{"h", procChan}
	admit(t, s.Store, owner.Event(t, 9007, procT, "", h))
	var rows []*nostr.Event
	for i := range 3 {
		rows = append(rows, owner.Event(t, 9, procT+1+int64(i), "row", h))
		admit(t, s.Store, rows[i])
	}
	liked := reader.Event(t, 7, procT+10, "+", h, nostr.Tag{"e", rows[0].ID})
	hidden := reader.Event(t, 7, procT+11, "+", h, nostr.Tag{"e", rows[2].ID})
	unliked := reader.Event(t, 7, procT+12, "+", h, nostr.Tag{"e", rows[1].ID})
	unlike := reader.Event(t, 5, procT+13, "", h, nostr.Tag{"e", unliked.ID})
	admit(t, s.Store, liked)
	admit(t, s.Store, hidden)
	if _, err := s.pool.Exec(ctx, `UPDATE events SET tags = 'not json' WHERE id = $1`, hexKeys([]string{rows[2].ID})[0]); err != nil {
		t.Fatal(err)
	}
	many := []*nostr.Event{liked, unlike}
	for i := range buzz.AuxPageSize {
		many = append(many, reader.Event(t, 7, procT+20+int64(i), "+", h, nostr.Tag{"e", rows[0].ID}))
	}
	for _, want := range [][]*nostr.Event{{liked}, {liked, unlike}, many} {
		switch len(want) {
		case 2:
			admit(t, s.Store, unliked)
			admit(t, s.Store, unlike)
		case len(many):
			if _, err := s.ImportBatch(ctx, many[2:]); err != nil {
				t.Fatal(err)
			}
		}
		wantIDs := make([]string, len(want))
		for i, ev := range want {
			wantIDs[i] = ev.ID
		}
		slices.Sort(wantIDs)
		// A page of 3 holds the three rows and says no more follow.
		for _, limit := range []int{10, 3} {
			page, err := s.Window(ctx, buzz.WindowQuery{Channel: procChan, Limit: limit, Aux: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range page.Aux {
				got = append(got, ev.ID)
			}
			slices.Sort(got)
			if len(page.Rows) != 2 || !slices.Equal(got, wantIDs) {
				t.Fatalf("window of %d: %d rows, %d aux %v; want 2 rows, %d aux %v", limit, len(page.Rows), len(got), got, len(wantIDs), wantIDs)
			}
		}
	}
}
