package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// BenchmarkFeed is the store's cost of one home feed of 20 events (RL-35)
// in a generated community of 4 channels, two of them private, about
// 36,000 events (BUZZ_LITE_BENCH_TOPLEVEL=50000: about 1.8 million), with
// 100 mentions of a member spread over its history: a member's mentions
// then activity, an anonymous reader's activity (half the channels
// readable), and the bound: an anonymous reader of a relay whose reads
// are not public, who may read nothing and walks feedScanRows candidates.
func BenchmarkFeed(b *testing.B) {
	c, err := gen.Generate(gen.Options{Channels: 4, TopLevel: benchTopLevel(b, 1000)})
	if err != nil {
		b.Fatal(err)
	}
	member, err := nostr.GetPublicKey(c.Authors[1]) // a member of every private channel
	if err != nil {
		b.Fatal(err)
	}
	mentioner := testutil.NewSigner(b)
	evs := c.Events
	for i := range 100 {
		at := int64(evs[len(evs)*i/100].CreatedAt)
		evs = append(evs, mentioner.Event(b, 1, at, "for you", nostr.Tag{"p", member}))
	}
	path := filepath.Join(b.TempDir(), "f.db")
	ctx := context.Background()
	open := func(p *buzz.Policy) *Store {
		s, err := Open(ctx, Options{Path: path, Schema: testutil.Schema(b), Policy: p})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	s := open(nil)
	for i := 0; i < len(evs); i += 500 {
		if _, err := s.ImportBatch(ctx, evs[i:min(i+500, len(evs))]); err != nil {
			b.Fatal(err)
		}
	}
	run := func(s *Store, name string, q buzz.FeedQuery) {
		b.Run(name, func(b *testing.B) {
			served := 0
			for b.Loop() {
				got, err := s.Feed(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				served += len(got)
			}
			b.ReportMetric(float64(served)/float64(b.N), "events/feed")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "feeds/s")
		})
	}
	run(s, "member", buzz.FeedQuery{Viewer: buzz.Viewer(member), Limit: 20,
		Types: []buzz.FeedType{buzz.FeedMentions, buzz.FeedNeedsAction, buzz.FeedActivity}})
	run(s, "member activity", buzz.FeedQuery{Viewer: buzz.Viewer(member), Limit: 100, Types: []buzz.FeedType{buzz.FeedActivity}})
	run(s, "anonymous", buzz.FeedQuery{Viewer: buzz.Anonymous, Limit: 20, Types: []buzz.FeedType{buzz.FeedActivity}})
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	closed := buzz.DefaultPolicy()
	closed.PublicRead = false
	s = open(&closed)
	defer s.Close()
	run(s, "bound", buzz.FeedQuery{Viewer: buzz.Anonymous, Limit: 20, Types: []buzz.FeedType{buzz.FeedActivity}})
}
