package sqlite

import (
	"context"
	"errors"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-30: Ping, the readiness round trip, goes through the writer and
// writes nothing: a cached window page stays cached across pings, and
// the WAL does not grow; the batches count it. Once the store is closed
// it fails.
func TestPingWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := ttOpen(t)
	const ch = "6a1f0c9e-3b52-4d7e-8f10-2c4b6a8e0d13"
	ttIngest(t, s, testutil.NewSigner(t).Event(t, 9, 1700000000, "row", ttH(ch)))
	q := buzz.WindowQuery{Channel: ch, Limit: 10}
	first := pcWindow(t, s, q)
	before, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	const pings = 20
	for range pings {
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if again := pcWindow(t, s, q); again != first {
		t.Error("a ping dropped the cached window page: it counted as a write")
	}
	after, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.WALBytes != before.WALBytes || after.DatabaseBytes != before.DatabaseBytes {
		t.Errorf("pings grew the files: WAL %d -> %d, database %d -> %d",
			before.WALBytes, after.WALBytes, before.DatabaseBytes, after.DatabaseBytes)
	}
	if got := after.BatchJobs - before.BatchJobs; got != pings {
		t.Errorf("the writer took %d jobs for %d pings", got, pings)
	}
	if after.PageCacheBytes <= 0 || after.PageCacheBytes != before.PageCacheBytes {
		t.Errorf("page cache bytes %d -> %d: want the one page kept, counted", before.PageCacheBytes, after.PageCacheBytes)
	}
	if after.PagesFromCache != before.PagesFromCache+1 || after.PagesFromDatabase != 1 {
		t.Errorf("pages from cache %d -> %d, from the database %d; want one more, and 1",
			before.PagesFromCache, after.PagesFromCache, after.PagesFromDatabase)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, errClosed) {
		t.Errorf("Ping of a closed store: %v", err)
	}
}
