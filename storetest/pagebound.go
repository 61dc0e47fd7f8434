package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-27a: a window or thread page whose rows, replies and aux events would
// pass the query's MaxBytes is refused with buzz.ErrTooLarge, not read
// whole and not cached; within the bound, or without one, it is served.
func testPageMaxBytes(t *testing.T, open Opener) {
	ctx := context.Background()
	s := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "0b6c1e2f-5d74-4f90-8b32-4e6d8c0a2f35"
	big := strings.Repeat("x", 10<<10)
	row := ttIngest(t, s, a.Event(t, 9, 1700000000, "row", ttH(ch)))
	reply := ttIngest(t, s, a.Event(t, 9, 1700000001, big, ttH(ch), ttReplyTag(row.ID)))
	for i := range 10 {
		ttIngest(t, s, b.Event(t, 7, 1700000002+int64(i), big, ttE(row.ID)))
	}
	// The page holds the row and ten reactions of 10 KiB: over 100 KiB.
	window := buzz.WindowQuery{Channel: ch, Limit: 10, Aux: true, MaxBytes: 50 << 10}
	if _, err := s.Window(ctx, window); !errors.Is(err, buzz.ErrTooLarge) {
		t.Fatalf("window over its bound: %v, want ErrTooLarge", err)
	}
	// Whole: the refused read left no part of the page in the cache.
	window.MaxBytes = 1 << 20
	page, err := s.Window(ctx, window)
	if err != nil || len(page.Rows) != 1 || len(page.Aux) != 10 {
		t.Fatalf("window within its bound: %v, %+v", err, page)
	}
	window.MaxBytes = 0
	if page, err := s.Window(ctx, window); err != nil || len(page.Aux) != 10 {
		t.Fatalf("window without a bound: %v", err)
	}

	thread := buzz.ThreadQuery{Root: row.ID, DepthLimit: 1, Limit: 10, MaxBytes: 5 << 10}
	if _, err := s.Thread(ctx, thread); !errors.Is(err, buzz.ErrTooLarge) {
		t.Fatalf("thread replies over their bound: %v, want ErrTooLarge", err)
	}
	thread.MaxBytes, thread.Aux = 50<<10, true
	if _, err := s.Thread(ctx, thread); !errors.Is(err, buzz.ErrTooLarge) {
		t.Fatalf("thread aux over its bound: %v, want ErrTooLarge", err)
	}
	thread.MaxBytes = 1 << 20
	tp, err := s.Thread(ctx, thread)
	if err != nil || len(tp.Replies) != 1 || tp.Replies[0].ID != reply.ID || len(tp.Aux) != 10 {
		t.Fatalf("thread within its bound: %v, %+v", err, tp)
	}
}
