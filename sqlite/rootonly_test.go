package sqlite

// Root-only replies (CW-10 as changed on 2026-12-03): an event whose only
// valid thread marker is `root` is a direct reply to that root, in live
// ingest, counters, summaries, the window, the thread path, import with
// backfill, and the reclassification of events stored before the change.

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// roIDs lists the ids of raw events, in order.
func roIDs(evs []buzz.RawEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// roCheck requires Check to find nothing wrong.
func roCheck(t *testing.T, s *Store) {
	t.Helper()
	rep, err := s.Check(context.Background(), false)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v, %v", rep, err)
	}
}

// roThread opens a store with ttChan created by a, a's top-level root in
// it, and b's root-only reply to that root.
func roThread(t *testing.T) (s *Store, a, b testutil.Signer, root, reply *nostr.Event) {
	t.Helper()
	s = ttOpen(t)
	a, b = testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, a.Event(t, 9007, ttBase, "", ttH(ttChan)))
	root = ttIngest(t, s, a.Event(t, 9, ttBase+1, "root", ttH(ttChan)))
	reply = ttIngest(t, s, b.Event(t, 9, ttBase+2, "root-only reply", ttH(ttChan), ttRootTag(root.ID)))
	return s, a, b, root, reply
}

// CW-10, CW-9, CW-19, RL-20: a root-only reply is counted on its root,
// is no row of the default window, and is served by the thread path.
func TestRootOnlyReplyIngest(t *testing.T) {
	ctx := context.Background()
	s, owner, other, root, reply := roThread(t)
	// A reply to the root-only reply, marked as NIP-10 says, now fits.
	deeper := ttIngest(t, s, owner.Event(t, 9, ttBase+3, "deeper", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(reply.ID)))

	ttCheckClass(t, s, reply.ID, ttClass{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	ttCheckClass(t, s, deeper.ID, ttClass{Depth: 2, Parent: reply.ID, Root: root.ID, RowClass: rowReply})
	if c := ttMustRead(t, s, root.ID); c.ReplyCount != 1 || c.DescendantCount != 2 || c.LastReplyAt.Int64 != ttBase+3 {
		t.Fatalf("root counters: %v", c.ttCounters)
	}

	page, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10, Summaries: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := roIDs(page.Rows); !slices.Equal(got, []string{root.ID}) {
		t.Fatalf("default window rows %v, want only the root %s", got, root.ID)
	}
	if len(page.Summaries) != 1 || page.Summaries[0].ID != root.ID || page.Summaries[0].ReplyCount != 1 ||
		page.Summaries[0].DescendantCount != 2 || !slices.Equal(page.Summaries[0].Participants, []string{owner.PK, other.PK}) {
		t.Fatalf("summaries: %+v", page.Summaries)
	}
	sums, err := s.Summaries(ctx, []string{root.ID})
	if err != nil || len(sums) != 1 || sums[0].ReplyCount != 1 || sums[0].DescendantCount != 2 {
		t.Fatalf("Summaries: %+v, %v", sums, err)
	}
	proj, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10, Projection: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := roIDs(proj.Rows); !slices.Equal(got, []string{deeper.ID, reply.ID, root.ID}) {
		t.Fatalf("projection rows %v", got)
	}
	th, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 1, Limit: 10})
	if err != nil || !slices.Equal(roIDs(th.Replies), []string{reply.ID}) {
		t.Fatalf("thread of the root at depth 1: %v, %v", roIDs(th.Replies), err)
	}
	roCheck(t, s)
}

// CW-10, RL-5: a root-only reply naming a root that is not stored is
// refused as any reply whose parent is missing, and stores nothing.
func TestRootOnlyReplyMissingRoot(t *testing.T) {
	s := ttOpen(t)
	sg := testutil.NewSigner(t)
	ev := sg.Event(t, 9, ttBase, "orphan", ttH(ttChan), ttRootTag("5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"))
	ttReject(t, s, ev, buzz.ErrParentNotFound)
	if got := buzz.ErrParentNotFound.Error(); got != "invalid: reply parent not found" {
		t.Fatalf("message %q", got)
	}
	if _, ok := ttRead(t, s, ev.ID); ok {
		t.Fatal("refused event stored")
	}
}

// CW-10, CW-12: an imported root-only reply that arrives before its root
// stays unclassified (a row), and backfill classifies it once the root is
// stored, with the counters live ingest would have.
func TestRootOnlyReplyImportBackfill(t *testing.T) {
	ctx := context.Background()
	sg := testutil.NewSigner(t)
	root := sg.Event(t, 9, ttBase, "root", ttH(ttChan))
	reply := sg.Event(t, 9, ttBase+1, "direct reply", ttH(ttChan), nostr.Tag{"e", root.ID, "wss://r", "root"})

	live := openTest(t)
	ttIngest(t, live, root)
	ttIngest(t, live, reply)

	imported := openTest(t)
	for _, err := range imImport(t, imported, []*nostr.Event{reply, root}) {
		if err != nil {
			t.Fatalf("import refused an event: %v", err)
		}
	}
	ttCheckClass(t, imported, reply.ID, ttClass{Depth: -1, RowClass: rowTopLevel})
	res, err := imported.Backfill(ctx)
	if err != nil || res.Classified != 1 || res.Waiting != 0 {
		t.Fatalf("backfill: %+v, %v", res, err)
	}
	ttCheckClass(t, imported, reply.ID, ttClass{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	if got, want := imState(t, imported), imState(t, live); !slices.Equal(got, want) {
		t.Fatalf("after backfill the import differs from live ingest:\n%v\nwant\n%v", got, want)
	}
	roCheck(t, imported)
}

// roOldTopLevel rewrites stored event id as ingest stored a root-only reply
// before CW-10 changed: top-level, a row, the replies below it one level
// up with it as their root. Check's repair then makes the counters exact
// for that shape, as they were.
func roOldTopLevel(t *testing.T, s *Store, id string, below ...string) {
	t.Helper()
	ttExec(t, s, `UPDATE events SET parent = NULL, root = NULL, depth = 0, row_class = 2 WHERE id = x'`+id+`'`)
	for _, b := range below {
		ttExec(t, s, `UPDATE events SET root = (SELECT seq FROM events WHERE id = x'`+id+`'), depth = depth - 1 WHERE id = x'`+b+`'`)
	}
}

// CW-10, CW-12, RL-5: Reclassify makes the root-only replies stored
// top-level before the change replies of their root, with the replies
// below them, the counters exact; it keeps those ingest would refuse now,
// and a second run changes nothing.
func TestReclassifyRootOnlyReplies(t *testing.T) {
	ctx := context.Background()
	s, a, b, root, x := roThread(t)
	y := ttIngest(t, s, a.Event(t, 9, ttBase+3, "reply-only below it", ttH(ttChan), ttReplyTag(x.ID)))
	w := ttIngest(t, s, b.Event(t, 9, ttBase+4, "another root-only reply", ttH(ttChan), ttRootTag(root.ID)))
	// An orphan: its root was never stored (import keeps it, CW-12).
	orphan := a.Event(t, 9, ttBase+5, "orphan", ttH(ttChan), ttRootTag("5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"))
	for _, err := range imImport(t, s, []*nostr.Event{orphan}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	roOldTopLevel(t, s, x.ID, y.ID)
	roOldTopLevel(t, s, w.ID)
	roOldTopLevel(t, s, orphan.ID)
	if rep, err := s.Check(ctx, true); err != nil || len(rep.Integrity) > 0 {
		t.Fatalf("repair of the old shape: %+v, %v", rep, err)
	}
	// Below w, a reply that names w as its root: the old rules took it,
	// today's refuse it, so w keeps its place.
	v := ttIngest(t, s, a.Event(t, 9, ttBase+6, "thread of w", ttH(ttChan), ttRootTag(w.ID), ttReplyTag(w.ID)))
	roCheck(t, s)
	page, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10})
	if err != nil || !slices.Equal(roIDs(page.Rows), []string{orphan.ID, w.ID, x.ID, root.ID}) {
		t.Fatalf("window before: %v, %v", roIDs(page.Rows), err)
	}

	res, err := s.Reclassify(ctx)
	if err != nil || res != (ReclassifyResult{Reclassified: 1, Kept: 2}) {
		t.Fatalf("reclassify: %+v, %v", res, err)
	}
	ttCheckClass(t, s, x.ID, ttClass{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	ttCheckClass(t, s, y.ID, ttClass{Depth: 2, Parent: x.ID, Root: root.ID, RowClass: rowReply})
	ttCheckClass(t, s, w.ID, ttClass{Depth: 0, RowClass: rowTopLevel})
	ttCheckClass(t, s, v.ID, ttClass{Depth: 1, Parent: w.ID, Root: w.ID, RowClass: rowReply})
	if c := ttMustRead(t, s, root.ID); c.ReplyCount != 1 || c.DescendantCount != 2 || c.LastReplyAt.Int64 != ttBase+3 {
		t.Fatalf("root counters: %v", c.ttCounters)
	}
	roCheck(t, s)
	page, err = s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10})
	if err != nil || !slices.Equal(roIDs(page.Rows), []string{orphan.ID, w.ID, root.ID}) {
		t.Fatalf("window after: %v, %v", roIDs(page.Rows), err)
	}
	th, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 2, Limit: 10})
	if err != nil || !slices.Equal(roIDs(th.Replies), []string{x.ID, y.ID}) {
		t.Fatalf("thread after: %v, %v", roIDs(th.Replies), err)
	}
	if res, err := s.Reclassify(ctx); err != nil || res != (ReclassifyResult{Kept: 2}) {
		t.Fatalf("second reclassify: %+v, %v", res, err)
	}
}
