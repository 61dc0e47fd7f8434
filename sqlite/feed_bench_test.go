package sqlite

import (
	"context"
	"errors"
	"fmt"
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
// then activity, its 100 newest messages, an anonymous reader's activity
// (half the channels readable), and "bound": a stranger named in 6,000
// messages of a private channel it may not read, whose mentions are in a
// stream the stranger does not read and cost it nothing (RL-35).
func BenchmarkFeed(b *testing.B) {
	c, err := gen.Generate(gen.Options{Channels: 4, TopLevel: benchTopLevel(b, 1000)})
	if err != nil {
		b.Fatal(err)
	}
	member, err := nostr.GetPublicKey(c.Authors[1]) // a member of every private channel
	if err != nil {
		b.Fatal(err)
	}
	mentioner, stranger := testutil.NewSigner(b), testutil.NewSigner(b)
	insider := testutil.Signer{SK: c.Authors[1], PK: member}
	evs := c.Events
	for i := range 100 {
		at := int64(evs[len(evs)*i/100].CreatedAt)
		evs = append(evs, mentioner.Event(b, 1, at, "for you", nostr.Tag{"p", member}))
	}
	for i := range 6000 {
		at := int64(evs[len(c.Events)*i/6000].CreatedAt)
		evs = append(evs, insider.Event(b, 9, at, fmt.Sprint("about a stranger ", i), nostr.Tag{"h", c.Channels[1]}, nostr.Tag{"p", stranger.PK}))
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "f.db"), Schema: testutil.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < len(evs); i += 500 {
		outcomes, err := s.ImportBatch(ctx, evs[i:min(i+500, len(evs))])
		if err = errors.Join(append(outcomes, err)...); err != nil {
			b.Fatal(err)
		}
	}
	run := func(name string, q buzz.FeedQuery) {
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
	run("member", buzz.FeedQuery{Viewer: buzz.Viewer(member), Limit: 20,
		Types: []buzz.FeedType{buzz.FeedMentions, buzz.FeedNeedsAction, buzz.FeedActivity}})
	run("member activity", buzz.FeedQuery{Viewer: buzz.Viewer(member), Limit: 100, Types: []buzz.FeedType{buzz.FeedActivity}})
	run("anonymous", buzz.FeedQuery{Viewer: buzz.Anonymous, Limit: 20, Types: []buzz.FeedType{buzz.FeedActivity}})
	run("bound", buzz.FeedQuery{Viewer: buzz.Viewer(stranger.PK), Limit: 20, Types: []buzz.FeedType{buzz.FeedMentions}})

	// A burst: 300 messages of an open channel in the newest second, as a
	// busy minute of a community or one client's backdated events make
	// them. The feed is ordered by id within a second.
	var burst []*nostr.Event
	newest := int64(evs[len(evs)-1].CreatedAt) + 1000
	for i := range 300 {
		burst = append(burst, mentioner.Event(b, 9, newest, fmt.Sprint("burst ", i), nostr.Tag{"h", c.Channels[0]}))
	}
	outcomes, err := s.ImportBatch(ctx, burst)
	if err = errors.Join(append(outcomes, err)...); err != nil {
		b.Fatal(err)
	}
	run("burst anonymous", buzz.FeedQuery{Viewer: buzz.Anonymous, Limit: 20, Types: []buzz.FeedType{buzz.FeedActivity}})
}
