// Package bench is buzz-lite's load generator: concurrent clients that
// drive a running relay over WebSocket and HTTP and measure it. Ingest of
// signed events, window and thread pages, REQ by channel, live fan-out to
// many subscribers, and the first screen of a channel both ways (one
// window request against what a generic client must do), and the attacks
// of issue 13 while an innocent client is timed (abuse.go). Deep window
// pages are asked for two ways: uniformly over the channel's pages, and
// skewed as readers ask for them, the head most often and few pages near
// the channel's start (QueryZipf: math/rand/v2's Zipf, s = 1.1, v = 1),
// which is what a page cache meets. It speaks only the wire, knowing
// neither the relay nor the store, so it measures any relay that serves
// the channel window; what the wire does not say, the share of pages the
// page cache served, it reads from buzz-lite's /metrics. Clients do as
// little work as they can during a measurement: events are signed and
// requests encoded before the clock starts, and answers are read, not
// verified.
package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Target is the relay under load: one process, or several serving one
// database (RL-33), over which the measurements spread their clients.
type Target struct {
	// WS is its WebSocket URL (ws://host:port), HTTP its HTTP URL
	// (http://host:port), where POST /query is.
	WS, HTTP string
	// Peers are the relay's other processes on the same database. Clients
	// take the processes round robin, one per connection (a closed-loop
	// client, an ingest connection, a subscriber); what has one
	// connection only (the window walk, the first screen, fan-out's
	// publisher, the writer under reads) goes to this one.
	Peers []Target
}

// Processes is how many relay processes t spreads clients over.
func (t Target) Processes() int { return 1 + len(t.Peers) }

// process is the relay process of the i-th client, round robin.
func (t Target) process(i int) Target {
	if n := i % t.Processes(); n > 0 {
		return t.Peers[n-1]
	}
	return Target{WS: t.WS, HTTP: t.HTTP}
}

// Result is what one measurement found.
type Result struct {
	Name string `json:"name"`
	// Unit names what Ops counts: events, pages, REQs, deliveries.
	Unit string `json:"unit"`
	Ops  int    `json:"ops"`
	// Clients is how many clients ran concurrently.
	Clients int           `json:"clients"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Bytes is what the clients received.
	Bytes int64 `json:"bytes"`
	// P50, P95 and P99 are latencies of one operation, from its request's
	// first byte sent to its answer's last byte read.
	P50 time.Duration `json:"p50_ns"`
	P95 time.Duration `json:"p95_ns"`
	P99 time.Duration `json:"p99_ns"`
	// PeakRSSAnon is the relay's peak anonymous resident set (RssAnon,
	// sampled) during this measurement, in bytes, when the caller knows
	// it: its own memory, not the database pages its reads map. PeakRSS
	// is its peak whole resident set (VmRSS, sampled with it), which
	// counts the mapped database pages once per read connection.
	PeakRSSAnon int64 `json:"peak_rss_anon,omitempty"`
	PeakRSS     int64 `json:"peak_rss,omitempty"`
	// PageCache is how the relay's window page cache served a window
	// measurement (nil for the others): its hits and misses are the
	// pages it served and those built from the database.
	PageCache *PageCache `json:"page_cache,omitempty"`
}

// Rate is operations per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// result summarizes a measurement's latencies.
func result(name, unit string, clients int, lat []time.Duration, elapsed time.Duration, bytes int64) Result {
	r := Result{Name: name, Unit: unit, Ops: len(lat), Clients: clients, Elapsed: elapsed, Bytes: bytes}
	r.P50, r.P95, r.P99 = percentiles(lat)
	return r
}

// percentiles sorts lat and gives its 50th, 95th and 99th percentiles
// by nearest rank (the smallest latency at least p% of all are at or
// below); all 0 for no latencies.
func percentiles(lat []time.Duration) (p50, p95, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	at := func(p int) time.Duration { return lat[max(0, (len(lat)*p+99)/100-1)] }
	return at(50), at(95), at(99)
}

// op is one operation of a closed-loop client: it returns the bytes it
// received.
type op func(ctx context.Context, rng *rand.Rand) (int, error)

// closedLoop runs clients concurrent clients for d, each starting its next
// operation when its last one is answered, and measures every operation.
// newClient makes client i's operation (and whatever connection it holds)
// against the relay process it is to use; close releases it. The first
// failure stops the measurement.
func closedLoop(ctx context.Context, t Target, name, unit string, clients int, d time.Duration,
	newClient func(ctx context.Context, process Target) (op, func(), error)) (Result, error) {
	ops := make([]op, clients)
	for i := range ops {
		o, release, err := newClient(ctx, t.process(i))
		if err != nil {
			return Result{}, fmt.Errorf("%s: client %d: %w", name, i, err)
		}
		defer release()
		ops[i] = o
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu    sync.Mutex
		lat   []time.Duration
		bytes int64
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for i, o := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			var mine []time.Duration
			var got int64
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t := time.Now()
				n, err := o(ctx, rng)
				if err != nil {
					cancel(err)
					break
				}
				mine = append(mine, time.Since(t))
				got += int64(n)
			}
			mu.Lock()
			lat = append(lat, mine...)
			bytes += got
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return result(name, unit, clients, lat, elapsed, bytes), nil
}

// VerifyRate is how many event signatures one core verifies a second, the
// way the relay verifies them (go-nostr's CheckSignature), measured for
// about d over evs: the physical limit of ingest is this times the cores.
func VerifyRate(evs []*nostr.Event, d time.Duration) (float64, error) {
	if len(evs) == 0 {
		return 0, fmt.Errorf("verify rate: no events")
	}
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		for range 64 {
			ev := evs[n%len(evs)]
			if ok, err := ev.CheckSignature(); !ok || err != nil {
				return 0, fmt.Errorf("verify rate: event %s does not verify: %v", ev.ID, err)
			}
			n++
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}
