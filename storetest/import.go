package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// imState is the classification and counters of evs, by event id: what
// two stores holding the same events must agree on.
func imState(t *testing.T, s Store, evs []*nostr.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		in, ok := ttRead(t, s, ev.ID)
		if !ok {
			t.Fatalf("event %s is not stored", ev.ID)
		}
		out = append(out, fmt.Sprint(in.ID, in.Depth, in.Parent, in.Root, in.Broadcast, in.RowClass, in.ttCounters))
	}
	return out
}

// imUnclassified counts the events of evs without a place in a thread.
func imUnclassified(t *testing.T, s Store, evs []*nostr.Event) int {
	t.Helper()
	n := 0
	for _, ev := range evs {
		if !ttMustRead(t, s, ev.ID).Depth.Valid {
			n++
		}
	}
	return n
}

func imImport(t *testing.T, s Store, evs []*nostr.Event) []error {
	t.Helper()
	out, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CW-12, issue 8: an import that meets replies before their parents keeps
// them unclassified instead of refusing them, and Backfill then classifies
// every one exactly as live ingest would have, counters included. A second
// Backfill does nothing; a second import is all duplicates.
func testImportOutOfOrderThenBackfill(t *testing.T, open Opener) {
	evs := testutil.Threads(t, 120)

	live := ttOpen(t, open)
	for _, ev := range evs {
		if err := ingest(live, context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}

	imported := ttOpen(t, open)
	reversed := slices.Clone(evs)
	slices.Reverse(reversed)
	for _, err := range imImport(t, imported, reversed) {
		if err != nil {
			t.Fatalf("import refused an event: %v", err)
		}
	}
	if imUnclassified(t, imported, evs) == 0 {
		t.Fatal("reversed import classified replies whose parents it had not seen")
	}
	res, err := imported.Backfill(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 0 || res.Classified == 0 {
		t.Fatalf("backfill: %d classified, %d waiting", res.Classified, res.Waiting)
	}
	if got, want := imState(t, imported, evs), imState(t, live, evs); !slices.Equal(got, want) {
		t.Fatalf("after backfill the import differs from live ingest:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res, err := imported.Backfill(context.Background()); err != nil || res.Classified != 0 {
		t.Fatalf("second backfill: %d classified, %v", res.Classified, err)
	}
	for _, err := range imImport(t, imported, evs) {
		if !errors.Is(err, buzz.ErrDuplicate) {
			t.Fatalf("second import: %v, want duplicate", err)
		}
	}
	if got, want := imState(t, imported, evs), imState(t, live, evs); !slices.Equal(got, want) {
		t.Fatal("a second import changed the store")
	}
}

// CW-12: a reply whose parent never arrives stays unclassified, a row of
// its channel, and Backfill says it is waiting; the thread rules still
// refuse what live ingest refuses.
func testImportMissingParent(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a := testutil.NewSigner(t)
	ch, other := "44444444-4444-4444-8444-444444444444", "55555555-5555-4555-8555-555555555555"
	elsewhere := a.Event(t, 9, 1000, "elsewhere", nostr.Tag{"h", other})
	orphan := a.Event(t, 9, 1001, "orphan", nostr.Tag{"h", ch}, nostr.Tag{"e", strings.Repeat("ab", 32), "", "reply"})
	cross := a.Event(t, 9, 1002, "cross", nostr.Tag{"h", ch}, nostr.Tag{"e", elsewhere.ID, "", "reply"})
	out := imImport(t, s, []*nostr.Event{elsewhere, orphan, cross})
	if out[0] != nil || out[1] != nil || !errors.Is(out[2], buzz.ErrParentOtherChannel) {
		t.Fatalf("outcomes %v", out)
	}
	res, err := s.Backfill(context.Background())
	if err != nil || res.Classified != 0 || res.Waiting != 1 {
		t.Fatalf("backfill: %d classified, %d waiting, %v", res.Classified, res.Waiting, err)
	}
	got, err := s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous)
	if err != nil || len(got) != 1 || got[0].ID != orphan.ID {
		t.Fatalf("the orphan is not served: %v %v", got, err)
	}
	if in := ttMustRead(t, s, orphan.ID); in.Depth.Valid || in.RowClass != rowTopLevel {
		t.Fatalf("the orphan's place: %+v, want an unclassified row", in)
	}
}

// CW-12, RL-13: Backfill places a reply of a private channel as its
// author sees it: the parent it waited for is in a channel the author is
// a member of (it was judged as an anonymous reader's, which found none).
func testBackfillPrivateChannel(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	owner := testutil.NewSigner(t)
	create := owner.Event(t, 9007, 1000, "", ttH(ttChan), nostr.Tag{"private"})
	root := owner.Event(t, 9, 1002, "root", ttH(ttChan))
	reply := owner.Event(t, 9, 1003, "reply", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(root.ID))
	for i, err := range imImport(t, s, []*nostr.Event{create, reply, root}) {
		if err != nil {
			t.Fatalf("import #%d: %v", i, err)
		}
	}
	res, err := s.Backfill(context.Background())
	if err != nil || res.Classified != 1 || res.Waiting != 0 {
		t.Fatalf("backfill: %d classified, %d waiting, %v; want the reply placed", res.Classified, res.Waiting, err)
	}
	if in := ttMustRead(t, s, reply.ID); !in.Depth.Valid || in.Depth.Int64 != 1 {
		t.Fatalf("the reply's place: %+v, want depth 1", in)
	}
}

// RL-3, RL-25, RL-33: one import batch that stores, replaces, deletes and
// reacts to its own events leaves the same tag index as live ingest of
// the same events one by one: every tag filter answers alike, and the
// index holds exactly the rows of the events kept (a store may write an
// import's index rows in bulk at the batch's end).
func testImportBatchTagIndex(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := "66666666-6666-4666-8666-666666666666"
	msg := a.Event(t, 9, 1000, "message", nostr.Tag{"h", ch}, nostr.Tag{"p", b.PK}, nostr.Tag{"t", "kept"})
	note := a.Event(t, 1, 1001, "note", nostr.Tag{"t", "deleted"})
	v1 := a.Event(t, 30023, 1002, "v1", nostr.Tag{"d", "doc"}, nostr.Tag{"t", "old-version"})
	v2 := a.Event(t, 30023, 1003, "v2", nostr.Tag{"d", "doc"}, nostr.Tag{"t", "new-version"})
	deletion := a.Event(t, buzz.KindDeletion, 1004, "", nostr.Tag{"e", note.ID})
	react := b.Event(t, buzz.KindReaction, 1005, "+", nostr.Tag{"e", msg.ID}, nostr.Tag{"p", a.PK})
	evs := []*nostr.Event{msg, note, v1, v2, deletion, react}

	imported := ttOpen(t, open)
	if out := imImport(t, imported, evs); errors.Join(out...) != nil {
		t.Fatalf("import outcomes %v", out)
	}
	live := ttOpen(t, open)
	for _, ev := range evs {
		ttIngest(t, live, ev)
	}
	for _, s := range []Store{imported, live} {
		if err := Verify(ctx, s); err != nil {
			t.Fatalf("tag index after the batch: %v", err)
		}
	}
	filters := []nostr.Filter{
		{Tags: nostr.TagMap{"t": {"kept", "deleted", "old-version", "new-version"}}},
		{Tags: nostr.TagMap{"p": {a.PK, b.PK}}},
		{Tags: nostr.TagMap{"e": {msg.ID, note.ID}}},
		{Tags: nostr.TagMap{"d": {"doc"}}},
		{Tags: nostr.TagMap{"h": {ch}}},
	}
	for _, f := range filters {
		got, err := imported.Query(ctx, f, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		want, err := live.Query(ctx, f, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(testutil.IDs(got...), testutil.IDs(want...)) {
			t.Errorf("%v: imported %v, live %v", f.Tags, testutil.IDs(got...), testutil.IDs(want...))
		}
	}
}
