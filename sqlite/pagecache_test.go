package sqlite

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// pcIDs lists the ids of a page's rows and aux events.
func pcIDs(p *buzz.WindowPage) []string {
	var ids []string
	for _, ev := range append(append([]buzz.RawEvent{}, p.Rows...), p.Aux...) {
		ids = append(ids, ev.ID)
	}
	return ids
}

func pcWindow(t *testing.T, s *Store, q buzz.WindowQuery) *buzz.WindowPage {
	t.Helper()
	p, err := s.Window(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 4, CW-18, RL-13: a cached window page is served only while no
// write has happened, in this process or another one, and only to a
// viewer who would get the same page.
func TestWindowPageCache(t *testing.T) {
	ctx := context.Background()
	s := ttOpen(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "6a1f0c9e-3b52-4d7e-8f10-2c4b6a8e0d13"
	const private = "7b2e1dae-4c63-4e8f-9a21-3d5c7b9f1e24"
	row := ttIngest(t, s, a.Event(t, 9, 1700000000, "row", ttH(ch)))
	q := buzz.WindowQuery{Channel: ch, Limit: 10, Summaries: true, Aux: true}
	first := pcWindow(t, s, q)
	if again := pcWindow(t, s, q); again != first {
		t.Fatal("the same page, asked twice with no write between, was built twice")
	}

	// A reaction stored here: the next page holds it.
	react := ttIngest(t, s, b.Event(t, 7, 1700000001, "+", ttE(row.ID)))
	if got := pcIDs(pcWindow(t, s, q)); len(got) != 2 || got[1] != react.ID {
		t.Fatalf("after a reaction: %v", got)
	}

	// A reaction stored by another process on the same file: the same.
	other, err := Open(ctx, Options{Path: s.path, Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	react2 := b.Event(t, 7, 1700000002, "🙂", ttE(row.ID))
	if err := other.Ingest(ctx, react2); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if got := pcIDs(pcWindow(t, s, q)); len(got) != 3 {
		t.Fatalf("after another process's reaction: %v", got)
	}

	// An aux event of a private channel: cached for its member, never
	// served from that cache to anyone else.
	ttIngest(t, s, a.Event(t, 9007, 1700000003, "", ttH(private), nostr.Tag{"private"}))
	hidden := ttIngest(t, s, a.Event(t, 7, 1700000004, "!", ttH(private), ttE(row.ID)))
	member := q
	member.Viewer = buzz.Viewer(a.PK)
	if got := pcIDs(pcWindow(t, s, member)); len(got) != 4 || got[3] != hidden.ID {
		t.Fatalf("member's page: %v", got)
	}
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(b.PK)} {
		q.Viewer = v
		if got := pcIDs(pcWindow(t, s, q)); len(got) != 3 {
			t.Fatalf("%q after the member's page: %v", v, got)
		}
	}
}
