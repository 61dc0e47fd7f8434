package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Root-only replies (CW-10 as changed on 2026-12-03): an event whose only
// valid thread marker is `root` is a direct reply to that root, in live
// ingest, counters, summaries, the window, the thread path, and import
// with backfill.

// roCheck requires the store's Verify to find nothing wrong.
func roCheck(t *testing.T, s Store) {
	t.Helper()
	if err := Verify(context.Background(), s); err != nil {
		t.Fatalf("verify: %v", err)
	}
}

// roThread opens a store with ttChan created by a, a's top-level root in
// it, and b's root-only reply to that root.
func roThread(t *testing.T, open Opener) (s Store, a, b testutil.Signer, root, reply *nostr.Event) {
	t.Helper()
	s = ttOpen(t, open)
	a, b = testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, a.Event(t, 9007, ttBase, "", ttH(ttChan)))
	root = ttIngest(t, s, a.Event(t, 9, ttBase+1, "root", ttH(ttChan)))
	reply = ttIngest(t, s, b.Event(t, 9, ttBase+2, "root-only reply", ttH(ttChan), ttRootTag(root.ID)))
	return s, a, b, root, reply
}

// CW-10, CW-9, CW-19, RL-20: a root-only reply is counted on its root,
// is no row of the default window, and is served by the thread path.
func testRootOnlyReplyIngest(t *testing.T, open Opener) {
	ctx := context.Background()
	s, owner, other, root, reply := roThread(t, open)
	// A reply to the root-only reply, marked as NIP-10 says, now fits.
	deeper := ttIngest(t, s, owner.Event(t, 9, ttBase+3, "deeper", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(reply.ID)))

	CheckClass(t, s, reply.ID, Class{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	CheckClass(t, s, deeper.ID, Class{Depth: 2, Parent: reply.ID, Root: root.ID, RowClass: rowReply})
	if c := ttMustRead(t, s, root.ID); c.ReplyCount != 1 || c.DescendantCount != 2 || c.LastReplyAt.Int64 != ttBase+3 {
		t.Fatalf("root counters: %v", c.ttCounters)
	}

	page, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10, Summaries: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.RawIDs(page.Rows); !slices.Equal(got, []string{root.ID}) {
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
	if got := testutil.RawIDs(proj.Rows); !slices.Equal(got, []string{deeper.ID, reply.ID, root.ID}) {
		t.Fatalf("projection rows %v", got)
	}
	th, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 1, Limit: 10})
	if err != nil || !slices.Equal(testutil.RawIDs(th.Replies), []string{reply.ID}) {
		t.Fatalf("thread of the root at depth 1: %v, %v", testutil.RawIDs(th.Replies), err)
	}
	roCheck(t, s)
}

// CW-10, RL-5: a root-only reply naming a root that is not stored is
// refused as any reply whose parent is missing, and stores nothing.
func testRootOnlyReplyMissingRoot(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	sg := testutil.NewSigner(t)
	ev := sg.Event(t, 9, ttBase, "orphan", ttH(ttChan), ttRootTag("5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"))
	Reject(t, s, ev, buzz.ErrParentNotFound)
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
func testRootOnlyReplyImportBackfill(t *testing.T, open Opener) {
	ctx := context.Background()
	sg := testutil.NewSigner(t)
	root := sg.Event(t, 9, ttBase, "root", ttH(ttChan))
	reply := sg.Event(t, 9, ttBase+1, "direct reply", ttH(ttChan), nostr.Tag{"e", root.ID, "wss://r", "root"})

	live := ttOpen(t, open)
	ttIngest(t, live, root)
	ttIngest(t, live, reply)

	imported := ttOpen(t, open)
	for _, err := range imImport(t, imported, []*nostr.Event{reply, root}) {
		if err != nil {
			t.Fatalf("import refused an event: %v", err)
		}
	}
	CheckClass(t, imported, reply.ID, Class{Depth: -1, RowClass: rowTopLevel})
	res, err := imported.Backfill(ctx)
	if err != nil || res.Classified != 1 || res.Waiting != 0 {
		t.Fatalf("backfill: %d classified, %d waiting, %v", res.Classified, res.Waiting, err)
	}
	CheckClass(t, imported, reply.ID, Class{Depth: 1, Parent: root.ID, Root: root.ID, RowClass: rowReply})
	if got, want := imState(t, imported, []*nostr.Event{root, reply}), imState(t, live, []*nostr.Event{root, reply}); !slices.Equal(got, want) {
		t.Fatalf("after backfill the import differs from live ingest:\n%v\nwant\n%v", got, want)
	}
	roCheck(t, imported)
}
