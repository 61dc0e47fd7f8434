package sqlite

// Root-only replies (CW-10 as changed on 2026-12-03): the reclassification
// of events this store kept before the change. The behaviour of root-only
// replies every store shows is storetest's (rootonly.go).

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

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
	if err != nil || !slices.Equal(testutil.RawIDs(page.Rows), []string{orphan.ID, w.ID, x.ID, root.ID}) {
		t.Fatalf("window before: %v, %v", testutil.RawIDs(page.Rows), err)
	}

	res, err := s.Reclassify(ctx)
	if err != nil || res != (ReclassifyResult{Reclassified: 1, Kept: 2}) {
		t.Fatalf("reclassify: %+v, %v", res, err)
	}
	storetest.CheckClass(t, suiteStore{s}, x.ID, storetest.Class{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	storetest.CheckClass(t, suiteStore{s}, y.ID, storetest.Class{Depth: 2, Parent: x.ID, Root: root.ID, RowClass: rowReply})
	storetest.CheckClass(t, suiteStore{s}, w.ID, storetest.Class{Depth: 0, RowClass: rowTopLevel})
	storetest.CheckClass(t, suiteStore{s}, v.ID, storetest.Class{Depth: 1, Parent: w.ID, Root: w.ID, RowClass: rowReply})
	if c := ttMustRead(t, s, root.ID); c.ReplyCount != 1 || c.DescendantCount != 2 || c.LastReplyAt.Int64 != ttBase+3 {
		t.Fatalf("root counters: %+v", c.ttCounters)
	}
	roCheck(t, s)
	page, err = s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10})
	if err != nil || !slices.Equal(testutil.RawIDs(page.Rows), []string{orphan.ID, w.ID, root.ID}) {
		t.Fatalf("window after: %v, %v", testutil.RawIDs(page.Rows), err)
	}
	th, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 2, Limit: 10})
	if err != nil || !slices.Equal(testutil.RawIDs(th.Replies), []string{x.ID, y.ID}) {
		t.Fatalf("thread after: %v, %v", testutil.RawIDs(th.Replies), err)
	}
	if res, err := s.Reclassify(ctx); err != nil || res != (ReclassifyResult{Kept: 2}) {
		t.Fatalf("second reclassify: %+v, %v", res, err)
	}
}
