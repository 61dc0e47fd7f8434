package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Reads measures the read paths on channel: window pages at the head, at
// depths picked uniformly ("window deep") and at depths skewed as
// readers' are ("window deep zipf": QueryZipf, the head most often, few
// pages near the channel's start), thread pages, and REQ by channel at
// the head and at random depths, each from clients clients for d. Each
// window measurement reports how the relay's page cache served it (its
// /metrics). suffix is appended to the window measurements' names
// (" uncached", say); windowOnly leaves out threads and REQs. observe,
// if not nil, sees each result as it is made.
func Reads(ctx context.Context, t Target, chain Chain, channel string, clients int, d time.Duration, suffix string,
	windowOnly bool, observe func(*Result)) ([]Result, error) {
	var out []Result
	keep := func(r Result) {
		if observe != nil {
			observe(&r)
		}
		out = append(out, r)
	}
	deep := make([][]byte, len(chain.Cursors))
	for i, c := range chain.Cursors {
		deep[i] = WindowBody(channel, c, 50)
	}
	for _, m := range []struct {
		name   string
		bodies [][]byte
		pick   picker
	}{
		{"window head", deep[:1], uniform},
		{"window deep", deep, uniform},
		{"window deep zipf", deep, zipf},
	} {
		r, err := windowPages(ctx, t, m.name+suffix, m.bodies, clients, d, m.pick)
		if err != nil {
			return out, err
		}
		keep(r)
	}
	if windowOnly {
		return out, nil
	}
	if len(chain.Threads) == 0 {
		return out, fmt.Errorf("channel %s has no threads to read", channel)
	}
	threads := make([][]byte, len(chain.Threads))
	for i, root := range chain.Threads {
		threads[i] = ThreadBody(root)
	}
	r, err := Query(ctx, t, "thread", "pages", threads, clients, d)
	if err != nil {
		return out, err
	}
	keep(r)

	head := []nostr.Filter{{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50}}
	var random []nostr.Filter
	for _, c := range chain.Cursors[1:] {
		until := nostr.Timestamp(c.CreatedAt)
		random = append(random, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50, Until: &until})
	}
	if len(random) == 0 {
		random = head
	}
	for _, m := range []struct {
		name    string
		filters []nostr.Filter
	}{
		{"REQ head", head},
		{"REQ deep", random},
	} {
		r, err := REQ(ctx, t, m.name, m.filters, clients, d)
		if err != nil {
			return out, err
		}
		keep(r)
	}
	return out, nil
}

// windowPages measures window pages as Query does, each client's bodies
// chosen by pick, with how the page caches of t's processes served them.
func windowPages(ctx context.Context, t Target, name string, bodies [][]byte, clients int, d time.Duration,
	pick picker) (Result, error) {
	before, err := pagesServed(ctx, t)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	r, err := queryPicking(ctx, t, name, "pages", bodies, clients, d, pick)
	if err != nil {
		return r, err
	}
	after, err := pagesServed(ctx, t)
	if err != nil {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	r.PageCache = &PageCache{Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses}
	return r, nil
}
