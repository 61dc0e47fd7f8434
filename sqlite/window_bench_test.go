package sqlite

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// BenchmarkWindowPage is the store's cost of one window page of 50 rows
// with summaries and the aux closure, at the head and at random depths of
// a generated channel of about 10,000 events (issue 4), without the page
// cache: the database work itself. BUZZ_LITE_BENCH_TOPLEVEL=50000 makes it
// about 500,000 events: the cost must not change.
func BenchmarkWindowPage(b *testing.B) {
	c, err := gen.Generate(gen.Options{Channels: 1, TopLevel: benchTopLevel(b, 1000)})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "w.db"), Schema: testutil.Schema(b), PageCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < len(c.Events); i += 500 {
		if _, err := s.ImportBatch(ctx, c.Events[i:min(i+500, len(c.Events))]); err != nil {
			b.Fatal(err)
		}
	}
	q := buzz.WindowQuery{Channel: c.Channels[0], Kinds: []int{9}, Limit: 50, Summaries: true, Aux: true}
	var cursors []*buzz.Position
	for cur := (*buzz.Position)(nil); ; {
		q.Before = cur
		page, err := s.Window(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		cursors = append(cursors, cur)
		if !page.HasMore {
			break
		}
		cur = page.Next
	}
	for _, depth := range []string{"head", "deep"} {
		b.Run(depth, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			events := 0
			for b.Loop() {
				q.Before = nil
				if depth == "deep" {
					q.Before = cursors[rng.IntN(len(cursors))]
				}
				page, err := s.Window(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				events += len(page.Rows) + len(page.Aux) + len(page.Summaries)
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/page")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
