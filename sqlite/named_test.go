package sqlite

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// nmAuxIDs is the ids of the aux closure of ttChan's head page, sorted.
func nmAuxIDs(t *testing.T, s *Store) []string {
	t.Helper()
	page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: ttChan, Limit: 10, Aux: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range page.Aux {
		ids = append(ids, ev.ID)
	}
	slices.Sort(ids)
	return ids
}

// nmHop2Events is a message, reactions to it, and deletions naming the
// reactions in either order (schema.sql, named_by_deletion): the events
// in the order they are stored, and the aux closure of the message's page.
func nmHop2Events(t *testing.T) (stored []*nostr.Event, aux []string) {
	a, b, c := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	msg := a.Event(t, 9, qtT0, "hello", ttH(ttChan))
	// The author deletes a reaction: it is not served, its deletion is.
	r1 := b.Event(t, 7, qtT0+1, "+", ttH(ttChan), ttE(msg.ID))
	d1 := b.Event(t, 5, qtT0+2, "", ttE(r1.ID))
	// Someone else's deletion of a reaction not stored yet: it deletes
	// nothing, and is served beside the reaction once that arrives.
	r2 := b.Event(t, 7, qtT0+3, "-", ttH(ttChan), ttE(msg.ID))
	d2 := c.Event(t, 5, qtT0+2, "", ttE(r2.ID))
	// A reaction no deletion names.
	r3 := c.Event(t, 7, qtT0+4, "?", ttH(ttChan), ttE(msg.ID))
	// A message of another channel deleted by its author: not an aux
	// kind, never marked.
	other := a.Event(t, 9, qtT0+5, "elsewhere", ttH(ttChan2))
	gone := a.Event(t, 5, qtT0+6, "", ttE(other.ID))
	aux = []string{d1.ID, r2.ID, d2.ID, r3.ID}
	slices.Sort(aux)
	return []*nostr.Event{msg, r1, d1, d2, r2, r3, other, gone}, aux
}

// Issue 15, CW-18: hop 2 serves every deletion that names a hop-1 event,
// whether the deletion or the event was stored first: the writer marks
// the event named when the deletion comes second, and at its own insert
// when it comes first.
func TestHop2DeletionsEitherOrder(t *testing.T) {
	s := ttOpen(t)
	stored, want := nmHop2Events(t)
	qtIngest(t, s, stored...)
	if got := nmAuxIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("aux closure %v, want %v", got, want)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE named_by_deletion = 1`); n != 2 {
		t.Errorf("%d events named by a deletion, want the two reactions", n)
	}
}

// Issue 15: a version 5 database gets named_by_deletion, set for every aux
// event a stored deletion names, as the writer would have set it.
func TestMigrateFromVersion5(t *testing.T) {
	stored, want := nmHop2Events(t)
	path := mgNewDB(t, stored...)
	mgDowngradeToV5(t, path)
	s, fresh := mgMigrated(t, path)
	if got, want := mgColumns(t, s.readers, "events"), mgColumns(t, fresh.readers, "events"); !slices.Equal(got, want) {
		t.Errorf("events after migration %v, fresh %v", got, want)
	}
	if got := nmAuxIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("aux closure %v, want %v", got, want)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE named_by_deletion = 1`); n != 2 {
		t.Errorf("%d events named by a deletion, want the two reactions", n)
	}
}

// Issue 15: check finds aux events whose deletion marks are missing (a
// window would not serve their deletions) and repair sets them again.
func TestCheckDeletionMarks(t *testing.T) {
	ctx := context.Background()
	s := ttOpen(t)
	stored, want := nmHop2Events(t)
	qtIngest(t, s, stored...)
	if rep, err := s.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check of a sound database: %+v, %v", rep, err)
	}
	ttExec(t, s, `UPDATE events SET named_by_deletion = 0`)
	rep, err := s.Check(ctx, false)
	if err != nil || rep.DeletionMarks != 2 || rep.OK() {
		t.Fatalf("check with the marks gone: %+v, %v; want 2 deletion marks", rep, err)
	}
	if rep, err = s.Check(ctx, true); err != nil || !rep.Repaired {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	if rep, err = s.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check after repair: %+v, %v", rep, err)
	}
	if got := nmAuxIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("aux closure after repair %v, want %v", got, want)
	}
}
