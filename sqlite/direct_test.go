package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-27a: a page read ends when its context does, even inside a statement
// that would run for minutes: SQLite is interrupted, the error says why,
// and the connection pool goes on serving pages.
func TestDirectReadInterruptedByContext(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 1})
	sg := testutil.NewSigner(t)
	ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.directRead(ctx, func(tx directTx) error {
		_, err := tx.int64(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errInterrupted) {
		t.Fatalf("endless statement ended with %v; want the deadline and the interrupt", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the interrupt took %v", d)
	}
	for range 3 { // the one connection, reopened or reused, still serves
		page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: ttChan, Limit: 10})
		if err != nil || len(page.Rows) != 1 {
			t.Fatalf("window after an interrupted read: %v, %+v", err, page)
		}
	}
}

// A closed store's page reads fail instead of opening connections.
func TestDirectReadAfterClose(t *testing.T) {
	s := qtOpenWith(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Window(context.Background(), buzz.WindowQuery{Channel: ttChan, Limit: 10}); err == nil {
		t.Fatal("window on a closed store succeeded")
	}
}

// A page whose code panics (net/http recovers a handler's panic) does not
// put its connection back with the snapshot open: the next page on the
// pool's one connection reads, and nothing holds the WAL back.
func TestDirectReadPanicLeavesNoOpenSnapshot(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 1})
	sg := testutil.NewSigner(t)
	ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		s.directRead(context.Background(), func(tx directTx) error {
			if _, err := tx.int64(pageVersionSQL, int64(1)); err != nil {
				return err
			}
			panic("a bug in a page")
		})
	}()
	if page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: ttChan, Limit: 10}); err != nil || len(page.Rows) != 1 {
		t.Fatalf("window after a panicking read: %v, %+v", err, page)
	}
}
