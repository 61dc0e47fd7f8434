package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// benchChannel is the channel of the benchmark community.
const benchChannel = "0b6f1e52-4c8e-4c5a-9d3e-2f7a1c9b8e01"

// parentDistance is how far back in the stream a reply's parent is, so that
// with many concurrent writers the parent is committed before the reply
// arrives.
const parentDistance = 4096

// benchEvents signs n channel events, using every core: about a third
// top-level messages, half replies (depth up to 4, some broadcast) to
// events at least parentDistance earlier, the rest reactions.
func benchEvents(b *testing.B, n int, seed uint64) []*nostr.Event {
	b.Helper()
	signers := make([]testutil.Signer, 50)
	for i := range signers {
		signers[i] = testutil.NewSigner(b)
	}
	type plan struct {
		kind, author, parent, depth int
		broadcast                   bool
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	plans := make([]plan, n)
	for i := range plans {
		p := plan{kind: 9, author: rng.IntN(len(signers)), parent: -1}
		r := rng.IntN(10)
		if i >= parentDistance && r >= 3 {
			parent := rng.IntN(i - parentDistance + 1)
			for plans[parent].kind != 9 || plans[parent].depth >= 4 {
				parent = rng.IntN(i - parentDistance + 1)
			}
			p.parent = parent
			if r >= 8 {
				p.kind = 7
			} else {
				p.depth = plans[parent].depth + 1
				p.broadcast = p.depth == 1 && rng.IntN(10) == 0
			}
		}
		plans[i] = p
	}
	evs := make([]*nostr.Event, n)
	for i, p := range plans {
		tags := []nostr.Tag{{"h", benchChannel}}
		if p.parent >= 0 {
			tags = append(tags, nostr.Tag{"e", "", "", "reply"}) // id patched in when the parent is signed
		}
		if p.broadcast {
			tags = append(tags, nostr.Tag{"broadcast", "1"})
		}
		evs[i] = &nostr.Event{Kind: p.kind, CreatedAt: nostr.Timestamp(1_700_000_000 + i/3), Tags: tags,
			Content: fmt.Sprintf("message %d with some words in it, like a chat line would have", i)}
	}
	var wg sync.WaitGroup
	workers := runtime.NumCPU()
	// Sign in order of dependency: an event only after its parent, so that
	// the parent's id is known. Events at distance >= parentDistance allow
	// signing in blocks of parentDistance in parallel.
	for start := 0; start < n; start += parentDistance {
		end := min(start+parentDistance, n)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := start + w; i < end; i += workers {
					p := plans[i]
					ev := evs[i]
					if p.parent >= 0 {
						if p.kind == 7 {
							ev.Tags[1] = nostr.Tag{"e", evs[p.parent].ID}
						} else {
							ev.Tags[1][1] = evs[p.parent].ID
						}
					}
					if err := ev.Sign(signers[p.author].SK); err != nil {
						panic(err)
					}
				}
			}()
		}
		wg.Wait()
	}
	return evs
}

// BenchmarkIngest measures store ingest of signed channel events (top-level
// messages, thread replies with counter upkeep, reactions) from many
// concurrent writers, as a relay's connections would submit them. Compare
// events/s with BenchmarkVerifySignature: the store must not be the
// bottleneck (issue 2: at least 3x one core's verification rate).
func BenchmarkIngest(b *testing.B) {
	evs := benchEvents(b, b.N, 1)
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "bench.db"), Schema: testutil.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if err := s.Ingest(context.Background(), evs[i]); err != nil {
				b.Errorf("event %d: %v", i, err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVerifySignature is one core's signature verification rate, the
// physical limit of ingest over WebSocket.
func BenchmarkVerifySignature(b *testing.B) {
	evs := benchEvents(b, 64, 2)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ok, err := evs[i%len(evs)].CheckSignature(); !ok || err != nil {
			b.Fatal("signature does not verify", err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifications/s")
}

// BenchmarkQueryChannel measures a REQ by channel (`{"kinds":[9],
// "#h":[channel],"limit":50}`) at the head and deep in the channel's
// history, on a channel of 50,000 events.
func BenchmarkQueryChannel(b *testing.B) {
	const n = 50_000
	evs := benchEvents(b, n, 3)
	s, err := Open(context.Background(), Options{Path: filepath.Join(b.TempDir(), "bench.db"), Schema: testutil.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
				if err := s.Ingest(context.Background(), evs[i]); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range []struct {
		name  string
		until *nostr.Timestamp
	}{
		{"head", nil},
		{"deep", func() *nostr.Timestamp { t := evs[n/10].CreatedAt; return &t }()},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {benchChannel}}, Limit: 50, Until: c.until}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					got, err := s.Query(context.Background(), f, buzz.Anonymous)
					if err != nil || len(got) != 50 {
						b.Errorf("got %d events, err %v", len(got), err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
