package relay

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/internal/gen"
)

// benchTopLevel is the number of top-level messages of the benchmark
// channel: about ten events each (replies to depth 4, reactions, edits).
// BUZZ_LITE_BENCH_TOPLEVEL=50000 makes it a 500,000-event channel.
func benchTopLevel(b *testing.B) int {
	if v := os.Getenv("BUZZ_LITE_BENCH_TOPLEVEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BUZZ_LITE_BENCH_TOPLEVEL=%q", v)
		}
		return n
	}
	return 1000
}

// benchChannels is the number of channels of the benchmark community;
// BUZZ_LITE_BENCH_CHANNELS=100 with BUZZ_LITE_BENCH_TOPLEVEL=1000 makes it
// the million-event community of issue 4 (channels of 10,000 events).
func benchChannels(b *testing.B) int {
	if v := os.Getenv("BUZZ_LITE_BENCH_CHANNELS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("BUZZ_LITE_BENCH_CHANNELS=%q", v)
		}
		return n
	}
	return 1
}

// benchCommunity loads a generated community into a fresh server and
// returns its first channel; cache says whether window pages are cached,
// edit adjusts the relay's configuration.
func benchCommunity(b *testing.B, cache bool, edit ...func(*Config)) (*testServer, string, int) {
	b.Helper()
	c, err := gen.Generate(gen.Options{Channels: benchChannels(b), TopLevel: benchTopLevel(b)})
	if err != nil {
		b.Fatal(err)
	}
	s := startServerWith(&testing.T{}, func(o *testStoreOptions) {
		if !cache {
			o.PageCacheBytes = -1
		}
	}, edit...)
	b.Cleanup(func() { s.stop() })
	ctx := context.Background()
	for i := 0; i < len(c.Events); i += 500 {
		if _, err := s.store.ImportBatch(ctx, c.Events[i:min(i+500, len(c.Events))]); err != nil {
			b.Fatal(err)
		}
	}
	return s, c.Channels[0], len(c.Events)
}

// BenchmarkQueryWindow measures window pages over HTTP with 16 concurrent
// clients (issue 4: 1,500 pages/s, p99 under 25 ms on 2 cores), at the
// head and at random depths, anonymous and with a NIP-98 token per request
// (tokens signed before the clock starts), with the store's page cache and
// without it (every page built from the database).
func BenchmarkQueryWindow(b *testing.B) {
	// The collector as `buzz-lite serve` sets it (main.go, tuneGC).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, cache := range []string{"cached", "uncached"} {
		b.Run(cache, func(b *testing.B) { benchQueryWindow(b, cache == "cached") })
	}
}

func benchQueryWindow(b *testing.B, cache bool) {
	s, channel, events := benchCommunity(b, cache)
	chain, err := bench.WalkWindow(context.Background(), bench.Target{WS: s.wsURL, HTTP: s.httpURL}, channel, 50, math.MaxInt)
	if err != nil {
		b.Fatal(err)
	}
	cursors := chain.Cursors
	b.Logf("channel of %d events, %d window pages of 50", events, len(cursors))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	reader := nostr.GeneratePrivateKey()
	for _, depth := range []string{"head", "deep"} {
		for _, auth := range []string{"anonymous", "nip98"} {
			b.Run(depth+"/"+auth, func(b *testing.B) {
				bodies := make([][]byte, b.N)
				tokens := make([]string, b.N)
				rng := rand.New(rand.NewPCG(1, 2))
				for i := range b.N {
					c := cursors[0]
					if depth == "deep" {
						c = cursors[rng.IntN(len(cursors))]
					}
					bodies[i] = bench.WindowBody(channel, c, 50)
					if auth == "nip98" {
						tokens[i] = benchToken(b, reader, s.httpURL+"/query")
					}
				}
				var next atomic.Int64
				var mu sync.Mutex
				var latencies []time.Duration
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var mine []time.Duration
					for pb.Next() {
						i := next.Add(1) - 1
						req, _ := http.NewRequest(http.MethodPost, s.httpURL+"/query", bytes.NewReader(bodies[i]))
						if tokens[i] != "" {
							req.Header.Set("Authorization", tokens[i])
						}
						start := time.Now()
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						mine = append(mine, time.Since(start))
						if err != nil || resp.StatusCode != http.StatusOK {
							b.Errorf("status %d, %v", resp.StatusCode, err)
							return
						}
					}
					mu.Lock()
					latencies = append(latencies, mine...)
					mu.Unlock()
				})
				b.StopTimer()
				slices.Sort(latencies)
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
				b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
			})
		}
	}
}

// benchToken is a NIP-98 Authorization header for url.
func benchToken(b *testing.B, sk, url string) string {
	ev := nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"u", url}, {"method", "POST"}},
		Content: fmt.Sprint(rand.Int64())}
	if err := ev.Sign(sk); err != nil {
		b.Fatal(err)
	}
	j, _ := json.Marshal(ev)
	return "Nostr " + base64.StdEncoding.EncodeToString(j)
}

// BenchmarkFirstScreen compares the two ways to show a channel's first 50
// top-level messages with their reply counts and reactions (issue 4, and
// "Why it exists" in channel-window.md): one window request, against what
// a generic client must do over WebSocket, paging the channel with plain
// filters and classifying NIP-10 tags itself until it has 50 top-level
// messages, then asking for the replies and reactions naming them. It
// reports the bytes received and the time of each; pages are not cached.
func BenchmarkFirstScreen(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	s, channel, _ := benchCommunity(b, false)
	b.Run("window", func(b *testing.B) {
		body := bench.WindowBody(channel, nil, 50)
		var bytesIn int
		for b.Loop() {
			resp, err := http.Post(s.httpURL+"/query", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			bytesIn = int(n)
		}
		b.ReportMetric(float64(bytesIn), "bytes/screen")
	})
	b.Run("generic", func(b *testing.B) {
		conn, _, err := websocket.DefaultDialer.Dial(s.wsURL, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		var bytesIn, requests int
		for b.Loop() {
			screen, err := bench.GenericScreen(conn, channel)
			if err != nil {
				b.Fatal(err)
			}
			bytesIn, requests = screen.Bytes, screen.Requests
		}
		b.ReportMetric(float64(bytesIn), "bytes/screen")
		b.ReportMetric(float64(requests), "REQs/screen")
	})
}
