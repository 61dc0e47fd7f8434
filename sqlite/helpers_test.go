package sqlite

// Helpers of the store's own tests: opening a store with options,
// ingesting, counting rows with SQL. Every name starts with "qt"; the
// checks every store shares are storetest's.

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// qtT0 is the created_at of the first event of a fixture. The store does not
// check dates (buzz.CheckSubmission does), so fixed dates keep tests exact.
const qtT0 int64 = 1_700_000_000

// qtOpen opens a fresh store in t.TempDir(); clock may be nil (time.Now).
func qtOpen(t testing.TB, clock *testutil.Clock) *Store {
	t.Helper()
	var opts Options
	if clock != nil {
		opts.Now = clock.Now
	}
	return qtOpenWith(t, opts)
}

// qtOpenWith opens a fresh store in t.TempDir() with opts, whose Path and
// Schema it sets, and closes it when the test ends: a failing Close fails
// the test.
func qtOpenWith(t testing.TB, opts Options) *Store {
	t.Helper()
	opts.Path = filepath.Join(t.TempDir(), "buzz.db")
	opts.Schema = testutil.Schema(t)
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// qtIngest stores every event, failing the test on any error.
func qtIngest(t testing.TB, s *Store, evs ...*nostr.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := s.Ingest(context.Background(), ev); err != nil {
			t.Fatalf("ingest %s (kind %d, %q): %v", ev.ID, ev.Kind, ev.Content, err)
		}
	}
}

// qtSQLCount runs a count(*) statement on the read pool.
func qtSQLCount(t testing.TB, s *Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.readers.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}
