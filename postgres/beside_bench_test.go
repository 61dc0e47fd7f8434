package postgres

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// readStore is what BenchmarkReadsBesideSQLite reads of either store.
type readStore interface {
	QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error)
	Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error)
}

// BenchmarkReadsBesideSQLite is BenchmarkReads's two reads on the same
// data in both stores, one after the other in one run, so that the ratio
// issue 32 sets a target for (PostgreSQL within 1.5x of SQLite) is read
// from one run: one generated channel (internal/gen, as sqlite's
// BenchmarkWindowPage: about 10,000 events with replies, reactions, edits
// and deletions) imported into each, PostgreSQL's then vacuumed and
// analyzed, the page caches off; a REQ head of 50 by channel and kind,
// and a window head of 50 with summaries and aux events, one at a time:
//
//	go test ./postgres -run '^$' -bench ReadsBesideSQLite -benchtime 1000x
func BenchmarkReadsBesideSQLite(b *testing.B) {
	ctx := context.Background()
	c, err := gen.Generate(gen.Options{Channels: 1, TopLevel: 1000})
	if err != nil {
		b.Fatal(err)
	}
	pg, err := Open(ctx, Options{URL: pgtest.FreshDatabase(b), PageCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pg.Close() })
	lite, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "reads.db"), Schema: testutil.Schema(b), PageCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lite.Close() })
	stores := []struct {
		name string
		s    interface {
			readStore
			ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
		}
	}{{"sqlite", lite}, {"postgres", pg}}
	for _, st := range stores {
		for i := 0; i < len(c.Events); i += 500 {
			if _, err := st.s.ImportBatch(ctx, c.Events[i:min(i+500, len(c.Events))]); err != nil {
				b.Fatal(err)
			}
		}
	}
	// A server's autovacuum would have vacuumed the imported tables: their
	// visibility map set, index-only scans read no rows.
	if _, err := pg.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {c.Channels[0]}}, Limit: 50}
	q := buzz.WindowQuery{Channel: c.Channels[0], Kinds: []int{9}, Limit: 50, Summaries: true, Aux: true}
	for _, st := range stores {
		b.Run("REQ head/"+st.name, func(b *testing.B) {
			for b.Loop() {
				if evs, _, err := st.s.QueryBounded(ctx, f, "", "", 0); err != nil || len(evs) != 50 {
					b.Fatalf("%d events (%v), want 50", len(evs), err)
				}
			}
		})
		b.Run("window head uncached/"+st.name, func(b *testing.B) {
			aux := 0
			for b.Loop() {
				page, err := st.s.Window(ctx, q)
				if err != nil || len(page.Rows) != 50 {
					b.Fatalf("%+v (%v), want 50 rows", page, err)
				}
				aux = len(page.Aux)
			}
			b.ReportMetric(float64(aux), "aux/page")
		})
	}
}
