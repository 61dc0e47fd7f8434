package sqlite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// benchTopLevel is the number of top-level messages per channel of a
// benchmark's generated community: BUZZ_LITE_BENCH_TOPLEVEL, or def.
func benchTopLevel(b *testing.B, def int) int {
	v := os.Getenv("BUZZ_LITE_BENCH_TOPLEVEL")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("BUZZ_LITE_BENCH_TOPLEVEL=%q", v)
	}
	return n
}

// BenchmarkDeepDelete is issue 13 finding 1 (RL-27a): the deletion of the
// newest reply at the bottom of a thread d levels deep, on a database of
// about 50,000 events (BUZZ_LITE_BENCH_TOPLEVEL=5000: 185,000, which must
// not change it), while another user publishes a small message every
// 5 ms in another channel. ns/op is the deletion's time in the writer (its
// Ingest, which waits for its batch's commit); p50/p95-ms are the other
// user's publish latencies meanwhile. Each iteration first adds a fresh
// newest leaf (outside the timer), so that every deletion makes every
// ancestor recompute its latest activity and participants.
func BenchmarkDeepDelete(b *testing.B) {
	s, c := openCommunity(b, benchTopLevel(b, 1400))
	ctx := context.Background()
	ch, other := c.Channels[0], c.Channels[2]
	author, bystander := testutil.NewSigner(b), testutil.NewSigner(b)
	at := int64(1_800_000_000)
	for _, depth := range []int{30, 100} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			// A chain down to depth-1: root, then one reply below the other.
			root := author.Event(b, 9, at, "root", nostr.Tag{"h", ch})
			if err := s.Ingest(ctx, root); err != nil {
				b.Fatal(err)
			}
			parent := root
			for range depth - 1 {
				at++
				parent = author.Event(b, 9, at, "step", nostr.Tag{"h", ch},
					nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", parent.ID, "", "reply"})
				if err := s.Ingest(ctx, parent); err != nil {
					b.Fatal(err)
				}
			}

			var (
				mu        sync.Mutex
				latencies []time.Duration
				stop      = make(chan struct{})
				done      = make(chan struct{})
			)
			msgs := make([]*nostr.Event, 400)
			for i := range msgs {
				msgs[i] = bystander.Event(b, 9, at+int64(i), fmt.Sprintf("unrelated %d", i), nostr.Tag{"h", other})
			}
			go func() {
				defer close(done)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for _, ev := range msgs {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					start := time.Now()
					if err := s.Ingest(ctx, ev); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					latencies = append(latencies, time.Since(start))
					mu.Unlock()
				}
			}()

			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				at++
				leaf := author.Event(b, 9, at, fmt.Sprintf("leaf %d", i), nostr.Tag{"h", ch},
					nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", parent.ID, "", "reply"})
				if err := s.Ingest(ctx, leaf); err != nil {
					b.Fatal(err)
				}
				del := author.Event(b, 5, at, "", nostr.Tag{"e", leaf.ID})
				b.StartTimer()
				if err := s.Ingest(ctx, del); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			close(stop)
			<-done
			at += int64(len(msgs))
			mu.Lock()
			defer mu.Unlock()
			if len(latencies) == 0 {
				return
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(latencies[len(latencies)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// BenchmarkDeleteInLongThread is the deletion of the newest reply of a
// thread of n replies written by two authors (issue 13, left from finding
// 1): the root's participants are recounted, and must cost the same at
// 1,000 and 20,000 replies. Each iteration first adds a fresh newest reply
// (outside the timer).
func BenchmarkDeleteInLongThread(b *testing.B) {
	ctx := context.Background()
	s := qtOpen(b, nil)
	authors := []testutil.Signer{testutil.NewSigner(b), testutil.NewSigner(b)}
	const ch = "6b1d2c3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"
	at := int64(1_800_000_000)
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("replies=%d", n), func(b *testing.B) {
			root := authors[0].Event(b, 9, at, "root", nostr.Tag{"h", ch})
			evs := []*nostr.Event{root}
			for i := range n {
				at++
				evs = append(evs, authors[i%2].Event(b, 9, at, "reply", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "root"}))
			}
			for batch := range slices.Chunk(evs, 500) {
				outcomes, err := s.ImportBatch(ctx, batch)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outcomes {
					if o != nil {
						b.Fatal(o)
					}
				}
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				at++
				leaf := authors[i%2].Event(b, 9, at, "newest", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "root"})
				if err := s.Ingest(ctx, leaf); err != nil {
					b.Fatal(err)
				}
				del := authors[i%2].Event(b, 5, at, "", nostr.Tag{"e", leaf.ID})
				b.StartTimer()
				if err := s.Ingest(ctx, del); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
