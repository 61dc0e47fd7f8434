package postgres

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-33, issue 15: a repair by check in one process moves the page
// versions of the channels it changed, so that another process drops the
// window pages it cached from the damaged rows: counters, and the tag
// index rows that find a message's reactions (CW-18, CW-19).
func TestRepairMovesPageVersions(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	clock := func() time.Time { return time.Unix(procT+1000, 0) }
	open := func(cache int64) *Store {
		s, err := Open(ctx, Options{URL: url, PageCacheBytes: cache, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	fresh, repairer := open(-1), open(-1)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	root := a.Event(t, 9, procT, "root", nostr.Tag{"h", pcA})
	admit(t, repairer, root)
	admit(t, repairer, b.Event(t, 9, procT+1, "reply", nostr.Tag{"h", pcA}, nostr.Tag{"e", root.ID, "", "reply"}))
	admit(t, repairer, b.Event(t, 7, procT+2, "+", nostr.Tag{"h", pcA}, nostr.Tag{"e", root.ID}))
	q := buzz.WindowQuery{Channel: pcA, Limit: 10, Summaries: true, Aux: true, Viewer: buzz.Anonymous}
	window := func(s *Store) *buzz.WindowPage {
		t.Helper()
		p, err := s.Window(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// One damage at a time, each seen by a process that caches from then
	// on: each repair must move the versions itself.
	for _, damage := range []string{
		`UPDATE thread_metadata SET reply_count = reply_count + 5`,
		`DELETE FROM tags WHERE kind = 7`,
	} {
		if _, err := repairer.pool.Exec(ctx, damage); err != nil {
			t.Fatal(damage, err)
		}
		cached := open(0)
		damaged := window(cached)
		if !reflect.DeepEqual(window(cached), damaged) {
			t.Fatal("the second read of a page is not the cached one")
		}
		rep, err := repairer.Check(ctx, true)
		if err != nil || !rep.Repaired || rep.OK() {
			t.Fatalf("repair of %s: %+v, %v", damage, rep, err)
		}
		got, want := window(cached), window(fresh)
		if reflect.DeepEqual(got, damaged) {
			t.Fatalf("after %s and its repair, the process that cached the damaged page still serves it", damage)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s and its repair, the cached page differs from the database's:\n%+v\n%+v", damage, got, want)
		}
	}
}
