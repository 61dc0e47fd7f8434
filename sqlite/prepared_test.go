package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// deadlockGuard is how long the reads below may take before the test
// calls them stuck: far beyond any real run, it only turns a hang into a
// failure.
const deadlockGuard = time.Minute

// A statement seen for the first time while every read connection is held
// by a transaction must not wait for a free connection to prepare it for
// the pool: the transactions hold them all, each waiting for another
// (found by `buzz-lite bench`: the first burst of thread requests from 16
// clients stopped every read of the relay). With a pool of one
// connection, a single window, thread or summary read is that case.
func TestPreparedWithEveryConnectionHeld(t *testing.T) {
	for _, conns := range []int{1, 2} {
		s := qtOpenWith(t, Options{ReadConns: conns})
		sg := testutil.NewSigner(t)
		root := ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
		reply := ttIngest(t, s, sg.Event(t, 9, ttBase+1, "reply", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(root.ID)))
		ttIngest(t, s, sg.Event(t, 7, ttBase+2, "+", ttH(ttChan), ttE(reply.ID)))

		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				page, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 4, Limit: 100, Aux: true})
				if err == nil && (len(page.Replies) != 1 || len(page.Aux) != 1) {
					t.Errorf("thread: %d replies, %d aux; want 1 and 1", len(page.Replies), len(page.Aux))
				}
				errs <- err
				w, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan, Limit: 10, Summaries: true, Aux: true})
				if err == nil && len(w.Rows) != 1 {
					t.Errorf("window: %d rows, want 1", len(w.Rows))
				}
				errs <- err
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(deadlockGuard):
			t.Fatalf("reads on a pool of %d connections are stuck", conns)
		}
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The statements of the read paths end up prepared for the pool, however
// few connections it has open: a quiet relay's reads run one at a time on
// one connection, which is never idle while a read holds it.
func TestPreparedCachesForThePool(t *testing.T) {
	for _, conns := range []int{1, 4} {
		s := qtOpenWith(t, Options{ReadConns: conns})
		sg := testutil.NewSigner(t)
		ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
		deadline := time.Now().Add(deadlockGuard)
		for {
			if _, err := s.ChannelsByActivity(context.Background(), nil, 10); err != nil {
				t.Fatal(err)
			}
			s.readStmtsMu.Lock()
			cached, preparing := len(s.readStmts), len(s.preparing)
			s.readStmtsMu.Unlock()
			if cached >= 2 && preparing == 0 { // the access version, the channel list
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool of %d: %d statements cached, %d being prepared", conns, cached, preparing)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Issue 15: the window and thread pages prepare their statements once per
// direct connection, to keep, and reuse them: a connection keeps a
// statement the second time it is asked for (directConn.prepare), and the
// third page runs the very statements the second one kept.
func TestDirectStatementsPreparedOnce(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 1, PageCacheBytes: -1})
	sg := testutil.NewSigner(t)
	root := ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
	ttIngest(t, s, sg.Event(t, 9, ttBase+1, "reply", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(root.ID)))
	q := buzz.WindowQuery{Channel: ttChan, Limit: 10, Summaries: true, Aux: true}
	prepared := func() map[string]*directStmt {
		if _, err := s.Window(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Thread(context.Background(), buzz.ThreadQuery{Root: root.ID, DepthLimit: 4, Limit: 10, Aux: true}); err != nil {
			t.Fatal(err)
		}
		s.direct.mu.Lock()
		defer s.direct.mu.Unlock()
		if len(s.direct.idle) != 1 {
			t.Fatalf("%d idle direct connections, want the one", len(s.direct.idle))
		}
		return maps.Clone(s.direct.idle[0].stmts)
	}
	prepared()
	first, second := prepared(), prepared()
	for _, query := range []string{windowRowsSQL(false, false, 0, true), hop1SQL, pageVersionSQL} {
		if first[query] == nil || first[query] != second[query] {
			t.Errorf("statement %.60q: prepared %p then %p", query, first[query], second[query])
		}
	}
	if len(first) != len(second) {
		t.Errorf("%d statements after two pages, %d after three", len(first), len(second))
	}
}

// RL-27a: statement texts seen once (a client can make up a filter shape
// per REQ) are not prepared for the pool, so they neither push the
// repeated ones out nor keep the pool busy preparing; repeated ones are,
// and the cache stays bounded, the least recently used going first.
func TestPreparedCacheBoundedAndKeepsRepeated(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 2})
	ctx := context.Background()
	run := func(query string) {
		t.Helper()
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			st, err := s.prepared(ctx, tx, query)
			if err != nil {
				return err
			}
			var n int
			return st.QueryRowContext(ctx).Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	settle := func() {
		t.Helper()
		for deadline := time.Now().Add(deadlockGuard); ; time.Sleep(5 * time.Millisecond) {
			s.readStmtsMu.Lock()
			n := len(s.preparing)
			s.readStmtsMu.Unlock()
			if n == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("statements still being prepared")
			}
		}
	}
	cached := func(query string) bool {
		s.readStmtsMu.Lock()
		defer s.readStmtsMu.Unlock()
		return s.readStmts[query] != nil
	}
	const hot = `SELECT 1 AS hot`
	run(hot)
	run(hot)
	settle()
	if !cached(hot) {
		t.Fatal("a statement run twice is not prepared for the pool")
	}
	for i := range 3 * maxReadStmts {
		run(fmt.Sprintf(`SELECT %d AS once`, i))
		run(hot)
	}
	settle()
	if !cached(hot) {
		t.Fatal("one-off statements pushed the repeated one out")
	}
	for i := range 2 * maxReadStmts {
		q := fmt.Sprintf(`SELECT %d AS twice`, i)
		run(q)
		run(q)
		settle()
		run(hot)
	}
	s.readStmtsMu.Lock()
	n := len(s.readStmts)
	s.readStmtsMu.Unlock()
	if n > maxReadStmts || !cached(hot) {
		t.Fatalf("%d statements cached (bound %d), the most used one cached: %v", n, maxReadStmts, cached(hot))
	}
}
