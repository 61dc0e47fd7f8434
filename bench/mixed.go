package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// PageCache is how the relay's window page cache served a measurement:
// pages from the cache (Hits) and from the database (Misses), read from
// its /metrics, while Writes events were published.
type PageCache struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
	Writes int    `json:"writes"`
}

// MarshalJSON gives the counts with the share of pages served from the
// cache (hit_rate), for a reader of the JSON report.
func (p PageCache) MarshalJSON() ([]byte, error) {
	type counts PageCache
	return json.Marshal(struct {
		counts
		HitRate float64 `json:"hit_rate"`
	}{counts(p), p.HitRate()})
}

// HitRate is the share of pages served from the cache.
func (p PageCache) HitRate() float64 {
	if p.Hits+p.Misses == 0 {
		return 0
	}
	return float64(p.Hits) / float64(p.Hits+p.Misses)
}

// pagesMetric is the relay's counter of window pages by source (RL-30).
const pagesMetric = "buzz_lite_window_pages_total"

// pagesServed adds up the window page counters of t's processes.
func pagesServed(ctx context.Context, t Target) (PageCache, error) {
	var sum PageCache
	for i := range t.Processes() {
		p, err := processPagesServed(ctx, t.process(i))
		if err != nil {
			return PageCache{}, err
		}
		sum.Hits, sum.Misses = sum.Hits+p.Hits, sum.Misses+p.Misses
	}
	return sum, nil
}

// processPagesServed reads one relay process's window page counters from
// its /metrics.
func processPagesServed(ctx context.Context, t Target) (PageCache, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.HTTP+"/metrics", nil)
	if err != nil {
		return PageCache{}, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return PageCache{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return PageCache{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	var p PageCache
	found := 0
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		name, value, ok := strings.Cut(lines.Text(), " ")
		if !ok || !strings.HasPrefix(name, pagesMetric+"{") {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return PageCache{}, fmt.Errorf("GET /metrics: %s: %w", lines.Text(), err)
		}
		switch {
		case strings.Contains(name, `source="cache"`):
			p.Hits, found = uint64(n), found+1
		case strings.Contains(name, `source="database"`):
			p.Misses, found = uint64(n), found+1
		}
	}
	if err := lines.Err(); err != nil {
		return PageCache{}, fmt.Errorf("GET /metrics: %w", err)
	}
	if found != 2 {
		return PageCache{}, fmt.Errorf("GET /metrics: no %s of both sources", pagesMetric)
	}
	return p, nil
}

// Mixed measures window pages under writes (issue 15): clients read the
// pages of bodies (picked at random) for d, while one more connection
// publishes writes one at a time, each once the last is acknowledged and
// pace has passed, until the reads end or writes run out. It reports the
// reads and how the page caches of every process served them.
func Mixed(ctx context.Context, t Target, name string, bodies [][]byte, clients int, d time.Duration,
	writes []*nostr.Event, pace time.Duration) (Result, PageCache, error) {
	before, err := pagesServed(ctx, t)
	if err != nil {
		return Result{}, PageCache{}, fmt.Errorf("%s: %w", name, err)
	}
	conn, err := dial(ctx, t.process(0))
	if err != nil {
		return Result{}, PageCache{}, fmt.Errorf("%s: %w", name, err)
	}
	defer conn.Close()
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var published int
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(pace)
		defer tick.Stop()
		var buf bytes.Buffer
		for _, ev := range writes {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			msg, err := json.Marshal([]any{"EVENT", ev})
			if err == nil {
				err = conn.WriteMessage(1, msg)
			}
			if err == nil {
				_, _, err = nextOK(conn, &buf)
			}
			if err != nil {
				werr = fmt.Errorf("publish: %w", err)
				return
			}
			published++
		}
	}()
	r, err := Query(ctx, t, name, "pages", bodies, clients, d)
	stop()
	wg.Wait()
	if err != nil {
		return r, PageCache{}, err
	}
	if werr != nil {
		return r, PageCache{}, fmt.Errorf("%s: %w", name, werr)
	}
	after, err := pagesServed(ctx, t)
	if err != nil {
		return r, PageCache{}, fmt.Errorf("%s: %w", name, err)
	}
	pc := PageCache{Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses, Writes: published}
	r.PageCache = &pc
	return r, pc, nil
}
