package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

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

// RL-19, RL-27a: a connection's statement cache keeps a text the second
// time it is prepared, so that filters of ever new shapes do not push out
// the statements every page runs; the least recently used kept statement
// gives way, never one a read still holds: the read goes on to its last
// row.
func TestDirectStatementCache(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 1})
	const hot = "SELECT 'hot'"
	run := func(tx directTx, query string) error {
		st, err := tx.query(query)
		if err != nil {
			return err
		}
		defer st.reset()
		if more, err := st.step(); !more || err != nil {
			return fmt.Errorf("%s: %v, %v", query, more, err)
		}
		return nil
	}
	err := s.directRead(context.Background(), func(tx directTx) error {
		for range 2 {
			if err := run(tx, hot); err != nil {
				return err
			}
		}
		kept := tx.c.stmts[hot]
		if kept == nil {
			return errors.New("a text prepared twice is not kept")
		}
		for i := range 3 * maxReadStmts { // one-off shapes
			if err := run(tx, fmt.Sprintf("SELECT %d", i)); err != nil {
				return err
			}
		}
		if tx.c.stmts[hot] != kept || len(tx.c.stmts) > maxReadStmts {
			return fmt.Errorf("one-off texts pushed out a kept one (%d kept)", len(tx.c.stmts))
		}

		const rows = 5
		const counting = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT i FROM n`
		if _, err := tx.int64(counting, rows); err != nil { // once, so that the next is kept
			return err
		}
		busy, err := tx.query(counting, rows)
		if err != nil {
			return err
		}
		defer busy.reset()
		if tx.c.stmts[counting] != busy {
			return errors.New("a text prepared twice is not kept")
		}
		if more, err := busy.step(); !more || err != nil || busy.int64(0) != 1 {
			return fmt.Errorf("first row: %v, %v", more, err)
		}
		for i := range 3 * maxReadStmts { // texts repeated: kept, each pushing out the oldest
			for range 2 {
				if err := run(tx, fmt.Sprintf("SELECT %d", i)); err != nil {
					return err
				}
			}
		}
		if len(tx.c.stmts) > maxReadStmts || tx.c.stmts[hot] != nil {
			return fmt.Errorf("%d statements kept, bound %d; the least recently used kept: %v", len(tx.c.stmts), maxReadStmts, tx.c.stmts[hot] != nil)
		}
		for want := int64(2); want <= rows; want++ {
			if more, err := busy.step(); !more || err != nil || busy.int64(0) != want {
				return fmt.Errorf("row %d of the statement held: %v, %v, %d", want, more, err, busy.int64(0))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Issue 15, RL-27a: window and thread pages take turns, pageBuilds at
// once; a page waits for its turn only as long as its context lets it. Filters' reads take no turn: a client whose reads hold every
// turn holds up no REQ.
func TestPagesTakeTurnsFiltersDoNot(t *testing.T) {
	s := qtOpenWith(t, Options{PageCacheBytes: -1})
	sg := testutil.NewSigner(t)
	root := ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
	if cap(s.pageSlots) != pageBuilds() || pageBuilds() < 2 {
		t.Fatalf("%d page turns, want pageBuilds() = %d (at least 2)", cap(s.pageSlots), pageBuilds())
	}
	for range cap(s.pageSlots) {
		s.pageSlots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("window page with every turn taken: %v, want the context's deadline", err)
	}
	if _, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("thread page with every turn taken: %v, want the context's deadline", err)
	}
	evs, _, err := s.QueryBounded(context.Background(), nostr.Filter{Kinds: []int{9}}, buzz.Anonymous, "", 1<<20)
	if err != nil || len(evs) != 1 {
		t.Fatalf("filter with every page turn taken: %d events, %v", len(evs), err)
	}
	<-s.pageSlots
	page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: ttChan, Limit: 10})
	if err != nil || len(page.Rows) != 1 {
		t.Fatalf("window page with a turn free: %+v, %v", page, err)
	}
}
