package sqlite

// Helpers of the store's own tests: opening a store with options,
// ingesting, reading back, a clock the test moves. Every name starts with
// "qt".

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
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

// qtIngestConcurrently stores evs from several goroutines, so that the
// writer batches them (a fast way to load many events).
func qtIngestConcurrently(t testing.TB, s *Store, evs []*nostr.Event) {
	t.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				if err := s.Ingest(context.Background(), evs[i]); err != nil {
					errs <- fmt.Errorf("ingest %s: %w", evs[i].ID, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// qtQuery runs Query and returns the ids in the order returned.
func qtQuery(t testing.TB, s *Store, f nostr.Filter) []string {
	t.Helper()
	evs, err := s.Query(context.Background(), f, buzz.Anonymous)
	if err != nil {
		t.Fatalf("query %v: %v", f, err)
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// qtCountF runs Count.
func qtCountF(t testing.TB, s *Store, f nostr.Filter) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), f, buzz.Anonymous)
	if err != nil {
		t.Fatalf("count %v: %v", f, err)
	}
	return n
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

// qtOrdered returns the ids of evs in the order the contract asks for,
// created_at DESC then id ASC, computed independently of the store.
func qtOrdered(evs []*nostr.Event) []string {
	sorted := slices.Clone(evs)
	slices.SortFunc(sorted, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(sorted))
	for i, ev := range sorted {
		ids[i] = ev.ID
	}
	return ids
}

// qtIDs lists the ids of evs in their order.
func qtIDs(evs ...*nostr.Event) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// qtMixedCase upper-cases every other character of a hex string.
func qtMixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if 'a' <= b[i] && b[i] <= 'f' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}
