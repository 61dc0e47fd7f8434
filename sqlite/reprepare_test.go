package sqlite

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Issue 32: a REQ by tag runs a statement the direct connection keeps,
// without SQLite preparing it again. A tag name bound as an argument did
// that on every REQ by `#e` or `#p`: tags_aux is a partial index on
// name = 'e', and SQLite, to know whether it may use it, compares the
// bound name with 'e' and marks the statement to be prepared again
// whenever that argument is bound anew (RL-3: the tag index lookup, and
// nothing per REQ beyond it).
func TestReqStatementsNotPreparedAgain(t *testing.T) {
	s := qtOpenWith(t, Options{ReadConns: 1, PageCacheBytes: -1})
	sg := testutil.NewSigner(t)
	root := ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
	other := ttIngest(t, s, sg.Event(t, 9, ttBase+1, "other", ttH(ttChan)))
	ttIngest(t, s, sg.Event(t, 9, ttBase+2, "reply", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(root.ID), nostr.Tag{"p", sg.PK}))
	ttIngest(t, s, sg.Event(t, 7, ttBase+3, "+", ttH(ttChan), ttE(other.ID), nostr.Tag{"p", sg.PK}))

	filters := []nostr.Filter{
		{Tags: nostr.TagMap{"e": {root.ID}}, Limit: 500},
		{Tags: nostr.TagMap{"e": {other.ID}}, Limit: 500},
		{Tags: nostr.TagMap{"e": {root.ID, other.ID}}, Limit: 500},
		{Tags: nostr.TagMap{"p": {sg.PK}}, Limit: 500},
		{Tags: nostr.TagMap{"p": {sg.PK}, "e": {root.ID}}, Kinds: []int{9}, Limit: 500},
	}
	run := func() {
		t.Helper()
		for _, f := range filters {
			evs, _, err := s.QueryBounded(context.Background(), f, buzz.Anonymous, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				t.Fatalf("filter %v matched nothing", f)
			}
		}
	}
	// reprepares sums, over the statements the one direct connection
	// keeps, the times SQLite prepared them again since the last call.
	reprepares := func() int {
		t.Helper()
		s.direct.mu.Lock()
		defer s.direct.mu.Unlock()
		if len(s.direct.idle) != 1 {
			t.Fatalf("%d idle direct connections, want the one", len(s.direct.idle))
		}
		c := s.direct.idle[0]
		n := 0
		for query, st := range c.stmts {
			if k := sqlite3.Xsqlite3_stmt_status(c.tls, st.p, sqlite3.SQLITE_STMTSTATUS_REPREPARE, 1); k > 0 {
				t.Logf("prepared again %d times: %.160q", k, query)
				n += int(k)
			}
		}
		return n
	}
	// A connection keeps a text the second time it prepares it
	// (directConn.prepare), and SQLite prepares a kept statement once
	// more on its first step: from then on each REQ runs it as it is.
	for range 3 {
		run()
	}
	reprepares()
	for range 5 {
		run()
	}
	if n := reprepares(); n > 0 {
		t.Errorf("REQs by tag prepared their statements again %d times", n)
	}
}
