package storetest

// RL-9: NIP-01 replacement of replaceable (0, 3, 10000-19999) and addressable
// (30000-39999, keyed by the d tag) events, and how NIP-09 deletions of an
// address (`a` tags) and of an id (`e` tags) interact with later arrivals.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// rpExpect checks that Ingest fails with exactly want (errors.Is).
func rpExpect(t testing.TB, s Store, ev *nostr.Event, want error) {
	t.Helper()
	err := ingest(s, context.Background(), ev)
	if !errors.Is(err, want) {
		t.Fatalf("ingest kind %d at %d: got error %v, want %v", ev.Kind, ev.CreatedAt, err, want)
	}
}

// rpVisible returns the stored versions a filter for (kind, author) sees,
// in read order.
func rpVisible(t testing.TB, s Store, kind int, author string) []string {
	t.Helper()
	f := nostr.Filter{Kinds: []int{kind}, Authors: []string{author}}
	got := QueryIDs(t, s, f, buzz.Anonymous)
	if n := Count(t, s, f, buzz.Anonymous); n != int64(len(got)) {
		t.Errorf("Count(%v) = %d, Query returned %d", f, n, len(got))
	}
	return got
}

// rpCheckIndex checks that the store's indexes agree with its events
// and that no replaced version is left in it.
func rpCheckIndex(t testing.TB, s Store, gone ...*nostr.Event) {
	t.Helper()
	ctx := context.Background()
	if err := Verify(ctx, s); err != nil {
		t.Errorf("verify: %v", err)
	}
	for _, ev := range gone {
		if holds(t, s, ev.ID) {
			t.Errorf("replaced version %s is still stored", ev.ID)
		}
	}
}

// rpTags prepends the d tag an addressable kind needs to extra.
func rpTags(kind int, d string, extra ...nostr.Tag) []nostr.Tag {
	if buzz.IsAddressableKind(kind) {
		return append([]nostr.Tag{{"d", d}}, extra...)
	}
	return extra
}

// RL-9: a newer version replaces the older one atomically; an older one
// arriving later is refused with ErrNewerVersionStored and changes nothing;
// other authors' versions are untouched; a stored event again is
// ErrDuplicate.
func testReplaceNewerReplacesOlder(t *testing.T, open Opener) {
	for _, kind := range []int{0, 3, 10000, 10002, 19999, 30000, 30023, 39999} {
		t.Run("kind "+strconv.Itoa(kind), func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a, b := testutil.NewSigner(t), testutil.NewSigner(t)
			v1 := a.Event(t, kind, qtT0+10, "v1", rpTags(kind, "x", nostr.Tag{"t", "v1"})...)
			v2 := a.Event(t, kind, qtT0+20, "v2", rpTags(kind, "x", nostr.Tag{"t", "v2"})...)
			other := b.Event(t, kind, qtT0+5, "b", rpTags(kind, "x")...)
			qtIngest(t, s, v1, other)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(v1)) {
				t.Fatalf("after v1: got %v, want v1", got)
			}

			qtIngest(t, s, v2)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(v2)) {
				t.Fatalf("after v2: got %v, want only v2", got)
			}
			if got := QueryIDs(t, s, nostr.Filter{IDs: []string{v1.ID}}, buzz.Anonymous); len(got) != 0 {
				t.Errorf("v1 still readable by id")
			}
			if got := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"v1"}}}, buzz.Anonymous); len(got) != 0 {
				t.Errorf("v1 still readable by its tag")
			}
			if got := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"v2"}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(v2)) {
				t.Errorf("#t v2: got %v, want v2", got)
			}
			rpCheckIndex(t, s, v1)

			// The replaced version again, and a new but older one.
			rpExpect(t, s, v1, buzz.ErrNewerVersionStored)
			older := a.Event(t, kind, qtT0+15, "v1.5", rpTags(kind, "x")...)
			rpExpect(t, s, older, buzz.ErrNewerVersionStored)
			rpExpect(t, s, v2, buzz.ErrDuplicate)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(v2)) {
				t.Fatalf("after refusals: got %v, want only v2", got)
			}
			if got := rpVisible(t, s, kind, b.PK); !slices.Equal(got, testutil.IDs(other)) {
				t.Errorf("other author's version: got %v, want it untouched", got)
			}
			rpCheckIndex(t, s, v1, older)
			if n := held(t, s, nostr.Filter{}); n != 2 {
				t.Errorf("%d events stored, want 2 (v2 and the other author's)", n)
			}
		})
	}
}

// RL-9: regular kinds next to the replaceable ranges keep every version.
func testReplaceRegularKindsKeepAll(t *testing.T, open Opener) {
	for _, kind := range []int{1, 2, 4, 9999, 40000} {
		t.Run("kind "+strconv.Itoa(kind), func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a := testutil.NewSigner(t)
			e1 := a.Event(t, kind, qtT0+10, "one", nostr.Tag{"d", "x"})
			e2 := a.Event(t, kind, qtT0+20, "two", nostr.Tag{"d", "x"})
			e0 := a.Event(t, kind, qtT0+5, "zero", nostr.Tag{"d", "x"})
			qtIngest(t, s, e1, e2, e0)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(e2, e1, e0)) {
				t.Errorf("got %v, want all three", got)
			}
			rpExpect(t, s, e1, buzz.ErrDuplicate)
		})
	}
}

// RL-9: same created_at, the version with the lower id wins, whichever
// arrives first.
func testReplaceSameSecondLowerIDWins(t *testing.T, open Opener) {
	for _, kind := range []int{0, 10002, 30023} {
		for _, lowerFirst := range []bool{true, false} {
			name := "kind " + strconv.Itoa(kind) + " higher id first"
			if lowerFirst {
				name = "kind " + strconv.Itoa(kind) + " lower id first"
			}
			t.Run(name, func(t *testing.T) {
				s := qtOpen(t, open, nil)
				a := testutil.NewSigner(t)
				x := a.Event(t, kind, qtT0, "x", rpTags(kind, "d")...)
				y := a.Event(t, kind, qtT0, "y", rpTags(kind, "d")...)
				lower, higher := x, y
				if y.ID < x.ID {
					lower, higher = y, x
				}
				if lowerFirst {
					qtIngest(t, s, lower)
					rpExpect(t, s, higher, buzz.ErrNewerVersionStored)
				} else {
					qtIngest(t, s, higher, lower)
					rpCheckIndex(t, s, higher)
					rpExpect(t, s, higher, buzz.ErrNewerVersionStored)
				}
				if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(lower)) {
					t.Errorf("got %v, want only the lower id %s", got, lower.ID)
				}
			})
		}
	}
}

// RL-9: the d tag keys addressable events (different d tags coexist, a
// missing d tag is the empty one); replaceable kinds ignore it.
func testReplaceAddressKeys(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a := testutil.NewSigner(t)

	// Addressable: x and y coexist, each replaced on its own.
	x1 := a.Event(t, 30023, qtT0+10, "x1", nostr.Tag{"d", "x"})
	y1 := a.Event(t, 30023, qtT0+11, "y1", nostr.Tag{"d", "y"})
	x2 := a.Event(t, 30023, qtT0+20, "x2", nostr.Tag{"d", "x"})
	// d values that differ only in case or by a prefix are other addresses.
	xx := a.Event(t, 30023, qtT0+12, "X", nostr.Tag{"d", "X"})
	xp := a.Event(t, 30023, qtT0+13, "xx", nostr.Tag{"d", "xx"})
	qtIngest(t, s, x1, y1, xx, xp, x2)
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, Ordered([]*nostr.Event{x2, y1, xx, xp})) {
		t.Errorf("addressable: got %v, want x2, y1, X, xx", got)
	}
	rpCheckIndex(t, s, x1)
	if got := QueryIDs(t, s, nostr.Filter{Kinds: []int{30023}, Tags: nostr.TagMap{"d": {"x"}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(x2)) {
		t.Errorf("#d x: got %v, want x2", got)
	}

	// A missing d tag and an empty one are the same address.
	n1 := a.Event(t, 30001, qtT0+10, "no d")
	n2 := a.Event(t, 30001, qtT0+20, "empty d", nostr.Tag{"d", ""})
	qtIngest(t, s, n1, n2)
	if got := rpVisible(t, s, 30001, a.PK); !slices.Equal(got, testutil.IDs(n2)) {
		t.Errorf("empty d: got %v, want only the newer", got)
	}
	rpExpect(t, s, a.Event(t, 30001, qtT0+15, "older, no d"), buzz.ErrNewerVersionStored)

	// Replaceable: the d tag plays no part.
	r1 := a.Event(t, 10002, qtT0+10, "r1", nostr.Tag{"d", "x"})
	r2 := a.Event(t, 10002, qtT0+20, "r2", nostr.Tag{"d", "y"})
	qtIngest(t, s, r1, r2)
	if got := rpVisible(t, s, 10002, a.PK); !slices.Equal(got, testutil.IDs(r2)) {
		t.Errorf("replaceable with d tags: got %v, want only r2", got)
	}
	// Kinds 0 and 3 are separate replaceable slots.
	k0 := a.Event(t, 0, qtT0, "{}")
	k3 := a.Event(t, 3, qtT0, "")
	qtIngest(t, s, k0, k3)
	if got := rpVisible(t, s, 0, a.PK); !slices.Equal(got, testutil.IDs(k0)) {
		t.Errorf("kind 0: got %v", got)
	}
	if got := rpVisible(t, s, 3, a.PK); !slices.Equal(got, testutil.IDs(k3)) {
		t.Errorf("kind 3: got %v", got)
	}
	rpCheckIndex(t, s, r1, n1)
}

// RL-9, RL-6 (NIP-09): a kind 5 `a` tag deletes the versions of an address
// up to its own created_at; versions dated up to the deletion that arrive
// later are refused with ErrDeletedBeforeArriving, newer ones are stored.
func testReplaceAddressDeletion(t *testing.T, open Opener) {
	ctx := context.Background()
	for _, kind := range []int{0, 10002, 30023} {
		t.Run("kind "+strconv.Itoa(kind), func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a := testutil.NewSigner(t)
			addr := strconv.Itoa(kind) + ":" + a.PK + ":"
			if buzz.IsAddressableKind(kind) {
				addr += "x"
			}
			v1 := a.Event(t, kind, qtT0+10, "v1", rpTags(kind, "x")...)
			qtIngest(t, s, v1)
			del := a.Event(t, 5, qtT0+20, "", nostr.Tag{"a", addr})
			qtIngest(t, s, del)

			if got := rpVisible(t, s, kind, a.PK); len(got) != 0 {
				t.Fatalf("deleted address still readable: %v", got)
			}
			if got := QueryIDs(t, s, nostr.Filter{IDs: []string{v1.ID}}, buzz.Anonymous); len(got) != 0 {
				t.Errorf("deleted version readable by id")
			}
			if got := QueryIDs(t, s, nostr.Filter{Kinds: []int{5}, Tags: nostr.TagMap{"a": {addr}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(del)) {
				t.Errorf("the deletion itself is stored and readable: got %v", got)
			}
			// The deleted version again: its row is kept, so a duplicate.
			rpExpect(t, s, v1, buzz.ErrDuplicate)
			// Older, and same-second, versions arriving after the deletion.
			rpExpect(t, s, a.Event(t, kind, qtT0+5, "v0", rpTags(kind, "x")...), buzz.ErrDeletedBeforeArriving)
			rpExpect(t, s, a.Event(t, kind, qtT0+20, "same second", rpTags(kind, "x")...), buzz.ErrDeletedBeforeArriving)
			if got := rpVisible(t, s, kind, a.PK); len(got) != 0 {
				t.Fatalf("refused versions became readable: %v", got)
			}
			// A version newer than the deletion is an ordinary new version.
			v3 := a.Event(t, kind, qtT0+30, "v3", rpTags(kind, "x")...)
			qtIngest(t, s, v3)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(v3)) {
				t.Errorf("after a newer version: got %v, want v3", got)
			}
			// And the deleted versions are still refused.
			rpExpect(t, s, a.Event(t, kind, qtT0+6, "v0'", rpTags(kind, "x")...), buzz.ErrDeletedBeforeArriving)
			if err := ingest(s, ctx, v1); !errors.Is(err, buzz.ErrDuplicate) {
				t.Errorf("v1 again: %v, want ErrDuplicate", err)
			}
		})
	}
}

// RL-9, RL-6: an `a` deletion dated before the stored version deletes
// nothing; one for another d tag leaves this address alone.
func testReplaceAddressDeletionScope(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a := testutil.NewSigner(t)
	x := a.Event(t, 30023, qtT0+30, "x", nostr.Tag{"d", "x"})
	y := a.Event(t, 30023, qtT0+10, "y", nostr.Tag{"d", "y"})
	qtIngest(t, s, x, y)
	// Dated before x: x survives. Names y: y goes.
	qtIngest(t, s,
		a.Event(t, 5, qtT0+20, "", nostr.Tag{"a", "30023:" + a.PK + ":x"}),
		a.Event(t, 5, qtT0+20, "", nostr.Tag{"a", "30023:" + a.PK + ":y"}),
	)
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, testutil.IDs(x)) {
		t.Errorf("got %v, want only x", got)
	}
	// A newer y is stored; an older x is refused as older, not as deleted.
	y2 := a.Event(t, 30023, qtT0+40, "y2", nostr.Tag{"d", "y"})
	qtIngest(t, s, y2)
	rpExpect(t, s, a.Event(t, 30023, qtT0+25, "x older", nostr.Tag{"d", "x"}), buzz.ErrNewerVersionStored)
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, testutil.IDs(y2, x)) {
		t.Errorf("got %v, want y2, x", got)
	}
}

// RL-6, RL-9: a deletion naming another author's address is refused and
// deletes nothing; one naming an address with nothing stored is stored but
// never blocks the address owner's own events.
func testReplaceAddressDeletionOtherAuthor(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	x := a.Event(t, 30023, qtT0+10, "x", nostr.Tag{"d", "x"})
	qtIngest(t, s, x)

	rpExpect(t, s, b.Event(t, 5, qtT0+20, "", nostr.Tag{"a", "30023:" + a.PK + ":x"}), buzz.ErrNotAuthor)
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, testutil.IDs(x)) {
		t.Errorf("after a refused deletion: got %v, want x", got)
	}
	if n := Count(t, s, nostr.Filter{Kinds: []int{5}}, buzz.Anonymous); n != 0 {
		t.Errorf("refused deletion was stored (%d kind 5 events)", n)
	}

	// Nothing stored at a's y: b's deletion of it is stored, and blocks
	// nothing of a's.
	qtIngest(t, s, b.Event(t, 5, qtT0+20, "", nostr.Tag{"a", "30023:" + a.PK + ":y"}))
	y := a.Event(t, 30023, qtT0+10, "y", nostr.Tag{"d", "y"})
	qtIngest(t, s, y)
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, Ordered([]*nostr.Event{x, y})) {
		t.Errorf("got %v, want x and y", got)
	}
}

// RL-6, RL-9: an event deleted by `e` keeps its row, so submitting it again
// is a duplicate and it stays hidden; an event whose deletion by its author
// arrived first is refused; another author's deletion blocks nothing.
func testReplaceEDeletedResubmitted(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ev := a.Event(t, 1, qtT0+10, "to delete", nostr.Tag{"t", "gone"})
	qtIngest(t, s, ev, a.Event(t, 5, qtT0+20, "", nostr.Tag{"e", ev.ID}))
	rpExpect(t, s, ev, buzz.ErrDuplicate)
	if got := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"gone"}}}, buzz.Anonymous); len(got) != 0 {
		t.Errorf("deleted event readable after resubmission: %v", got)
	}
	if n := Count(t, s, nostr.Filter{IDs: []string{ev.ID}}, buzz.Anonymous); n != 0 {
		t.Errorf("Count of the deleted event = %d", n)
	}

	// Deletion first, event later.
	early := a.Event(t, 1, qtT0+30, "deleted before arriving")
	qtIngest(t, s, a.Event(t, 5, qtT0+31, "", nostr.Tag{"e", early.ID}))
	rpExpect(t, s, early, buzz.ErrDeletedBeforeArriving)
	if n := Count(t, s, nostr.Filter{IDs: []string{early.ID}}, buzz.Anonymous); n != 0 {
		t.Errorf("refused event stored")
	}

	// Another author's deletion of an id not stored yet blocks nothing.
	later := a.Event(t, 1, qtT0+40, "not b's to delete")
	qtIngest(t, s, b.Event(t, 5, qtT0+41, "", nostr.Tag{"e", later.ID}), later)
	if got := QueryIDs(t, s, nostr.Filter{IDs: []string{later.ID}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(later)) {
		t.Errorf("event blocked by another author's deletion")
	}
}

// RL-9, RL-4: one of two versions submitted concurrently wins, the newest;
// never both, never none.
func testReplaceConcurrentVersions(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a := testutil.NewSigner(t)
	evs := make([]*nostr.Event, 40)
	for i := range evs {
		evs[i] = a.Event(t, 30023, qtT0+int64(i), strconv.Itoa(i), nostr.Tag{"d", "race"})
	}
	errs := make(chan error, len(evs))
	for _, ev := range evs {
		go func() { errs <- ingest(s, context.Background(), ev) }()
	}
	for range evs {
		if err := <-errs; err != nil && !errors.Is(err, buzz.ErrNewerVersionStored) {
			t.Errorf("ingest: %v", err)
		}
	}
	if got := rpVisible(t, s, 30023, a.PK); !slices.Equal(got, testutil.IDs(evs[len(evs)-1])) {
		t.Errorf("got %v, want only the newest version", got)
	}
	if n := held(t, s, nostr.Filter{}); n != 1 {
		t.Errorf("%d events stored, want 1", n)
	}
	rpCheckIndex(t, s, evs[:len(evs)-1]...)
}

// RL-6, RL-9 (NIP-09): an `a` deletion acts on the same versions when they
// arrive later as when they were already stored. Whatever spelling of the
// address the store accepts (a pubkey in uppercase hex, a d part on a
// replaceable kind), a deletion that removed the stored version must also
// refuse an older version that arrives afterwards; one that removed nothing
// leaves the address as it was.
func testReplaceAddressDeletionSpellings(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		kind int
		addr func(pk string) string
	}{
		{"addressable, uppercase pubkey", 30023, func(pk string) string { return "30023:" + strings.ToUpper(pk) + ":x" }},
		{"replaceable, uppercase pubkey", 0, func(pk string) string { return "0:" + strings.ToUpper(pk) + ":" }},
		{"replaceable, with a d part", 0, func(pk string) string { return "0:" + pk + ":junk" }},
		{"addressable, mixed-case pubkey", 30023, func(pk string) string { return "30023:" + qtMixedCase(pk) + ":x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a := testutil.NewSigner(t)
			v1 := a.Event(t, tc.kind, qtT0+10, "v1", rpTags(tc.kind, "x")...)
			qtIngest(t, s, v1, a.Event(t, 5, qtT0+20, "", nostr.Tag{"a", tc.addr(a.PK)}))
			deleted := len(QueryIDs(t, s, nostr.Filter{IDs: []string{v1.ID}}, buzz.Anonymous)) == 0

			older := a.Event(t, tc.kind, qtT0+5, "v0", rpTags(tc.kind, "x")...)
			err := ingest(s, context.Background(), older)
			switch {
			case deleted && !errors.Is(err, buzz.ErrDeletedBeforeArriving):
				t.Errorf("the deletion removed the stored version, but an older version arriving later got %v "+
					"(want ErrDeletedBeforeArriving); visible now: %v", err, rpVisible(t, s, tc.kind, a.PK))
			case !deleted && !errors.Is(err, buzz.ErrNewerVersionStored):
				t.Errorf("the deletion removed nothing; an older version got %v, want ErrNewerVersionStored", err)
			}
		})
	}
}

// RL-6 (NIP-09): an `e` deletion acts the same whichever arrives first. The
// store accepts an id in uppercase or mixed-case hex as a deletion target
// when the event is stored; the same deletion arriving first must then
// refuse the event when it comes.
func testReplaceEDeletionSpellings(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name  string
		spell func(string) string
	}{
		{"lowercase", func(id string) string { return id }},
		{"uppercase", strings.ToUpper},
		{"mixed case", qtMixedCase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a := testutil.NewSigner(t)

			// Stored first, then deleted.
			first := a.Event(t, 1, qtT0, "stored first")
			qtIngest(t, s, first, a.Event(t, 5, qtT0+1, "", nostr.Tag{"e", tc.spell(first.ID)}))
			deletesStored := len(QueryIDs(t, s, nostr.Filter{IDs: []string{first.ID}}, buzz.Anonymous)) == 0

			// Deleted first, then stored.
			second := a.Event(t, 1, qtT0+2, "deleted first")
			qtIngest(t, s, a.Event(t, 5, qtT0+3, "", nostr.Tag{"e", tc.spell(second.ID)}))
			err := ingest(s, context.Background(), second)
			blocksLater := errors.Is(err, buzz.ErrDeletedBeforeArriving)
			if !blocksLater && err != nil {
				t.Fatalf("ingest after deletion: %v", err)
			}
			if deletesStored != blocksLater {
				t.Errorf("a deletion naming the id as %s deletes a stored event: %v, but refuses it arriving later: %v",
					tc.name, deletesStored, blocksLater)
			}
		})
	}
}

// RL-9, RL-6: when the current version is deleted by id, an older version
// sent again does not become current: the deleted one is still the newest.
func testReplaceDeletedVersionStaysNewest(t *testing.T, open Opener) {
	for _, kind := range []int{0, 10002, 30023} {
		t.Run(strconv.Itoa(kind), func(t *testing.T) {
			s := qtOpen(t, open, nil)
			a := testutil.NewSigner(t)
			v1 := a.Event(t, kind, qtT0+10, "v1", rpTags(kind, "x")...)
			v2 := a.Event(t, kind, qtT0+20, "v2", rpTags(kind, "x")...)
			qtIngest(t, s, v1, v2)
			qtIngest(t, s, a.Event(t, 5, qtT0+30, "", nostr.Tag{"e", v2.ID}))
			rpExpect(t, s, v1, buzz.ErrNewerVersionStored)
			if got := rpVisible(t, s, kind, a.PK); len(got) != 0 {
				t.Fatalf("an older version came back: %v", got)
			}
			v3 := a.Event(t, kind, qtT0+40, "v3", rpTags(kind, "x")...)
			qtIngest(t, s, v3)
			if got := rpVisible(t, s, kind, a.PK); !slices.Equal(got, testutil.IDs(v3)) {
				t.Fatalf("a newer version: got %v, want v3", got)
			}
		})
	}
}
