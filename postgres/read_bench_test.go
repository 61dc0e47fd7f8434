package postgres

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
)

// BenchmarkReads measures the reads of issue 32 on PostgreSQL, one at a
// time, on planDatabase (121,000 events; channel ch2 holds 500 of them):
// a REQ's head by channel, `{"kinds":[9],"#h":["ch2"],"limit":50}`, and
// a window head with summaries and aux events, the page cache off. Each
// costs its round trips to the server and the server's work:
//
//	go test ./postgres -run '^$' -bench Reads -benchtime 2s
func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: pgtest.FreshDatabase(b), PageCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, fill := range planDatabase {
		if _, err := s.pool.Exec(ctx, fill); err != nil {
			b.Fatalf("%s: %v", fill, err)
		}
	}
	if err := s.refresh(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("REQ head", func(b *testing.B) {
		f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {"ch2"}}, Limit: 50}
		for b.Loop() {
			evs, _, err := s.QueryBounded(ctx, f, "", "", 0)
			if err != nil || len(evs) != 50 {
				b.Fatalf("%d events (%v), want 50", len(evs), err)
			}
		}
	})
	b.Run("window head uncached", func(b *testing.B) {
		q := buzz.WindowQuery{Channel: "ch2", Limit: 50, Summaries: true, Aux: true}
		for b.Loop() {
			page, err := s.Window(ctx, q)
			if err != nil || len(page.Rows) != 50 {
				b.Fatalf("%+v (%v), want 50 rows", page, err)
			}
		}
	})
}
