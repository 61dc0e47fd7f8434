package postgres

import (
	"container/list"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// pageCache keeps recently served window pages, as package sqlite's does
// (this is its copy: the stores share no package yet). Every client that
// opens a channel asks for the same head page. A page is valid while its
// channel's page version stands (page_versions in schema.sql: every write
// transaction, in any process, bumps the version of each channel whose
// pages it may change, pages.go), read in the same snapshot that would
// otherwise build the page, so a page served from the cache is exactly
// what the database would give, while writes to other channels leave it
// valid (issue 15). A page with aux events scoped to
// another channel was also judged by that channel's access state: it is
// valid only while the access state it was judged by stands.
type pageCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // front: most recently used
	entries map[string]*list.Element
	// hits and misses count the pages served from the cache and read from
	// the database (Store.Stats).
	hits, misses atomic.Uint64
}

type cachedPage struct {
	key  string
	page *buzz.WindowPage
	pageVersions
	// expires is the first NIP-40 expiration of an event on the page:
	// reads hide it from then on, before the purge writes anything.
	expires int64
}

// pageVersions are what a page was read at: its channel's page version
// and the version of the access state that judged it. foreign says that an
// aux event of another channel's scope was judged: only then does a change
// of the access state make the page stale (its own channel's access is
// checked for every page, cached or not).
type pageVersions struct {
	channel, access int64
	foreign         bool
}

// serves reports whether a page read at p may be served at versions now.
func (p pageVersions) serves(now pageVersions) bool {
	return p.channel == now.channel && (!p.foreign || p.access == now.access)
}

// pageCacheSize bounds the cache: a page is some 100 KB.
const pageCacheSize = 128

// newPageCache makes a cache of max pages: 0 means pageCacheSize, a
// negative number no cache (get finds nothing, put keeps nothing).
func newPageCache(max int) *pageCache {
	if max == 0 {
		max = pageCacheSize
	}
	return &pageCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// pageKey names a window page: everything of the request that shapes it,
// the viewer included (the aux closure leaves out what the viewer may not
// read).
func pageKey(q buzz.WindowQuery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%v|%v|%v|%s|", q.Channel, q.Limit, q.Projection, q.Summaries, q.Aux, q.Viewer)
	if q.Before != nil {
		fmt.Fprintf(&b, "%d:%s", q.Before.CreatedAt, q.Before.ID)
	}
	fmt.Fprintf(&b, "|%v", q.Kinds)
	return b.String()
}

// get returns the page of key, unless it was read at versions it may not
// be served at (cur) or an event on it has expired by now; the caller must
// not modify it.
func (c *pageCache) get(key string, cur pageVersions, now int64) (*buzz.WindowPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if cp := e.Value.(*cachedPage); !cp.serves(cur) || now >= cp.expires {
		c.order.Remove(e)
		delete(c.entries, key)
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedPage).page, true
}

// maxCachedPageBytes keeps big pages (long events, many reactions) out of
// the cache, which is bounded by entries: 128 pages stay some megabytes.
const maxCachedPageBytes = 512 << 10

// put keeps page as the page of key, read at versions v; it replaces the
// page kept for key, which a reader of an older snapshot may also be
// replacing: the cache then misses until the page is read again.
func (c *pageCache) put(key string, page *buzz.WindowPage, v pageVersions, expires int64) {
	if c.max < 0 || pageBytes(page) > maxCachedPageBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entry := &cachedPage{key: key, page: page, pageVersions: v, expires: expires}
	if e, ok := c.entries[key]; ok {
		e.Value = entry
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(entry)
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cachedPage).key)
	}
}

// pageBytes is the size of a page's stored events.
func pageBytes(p *buzz.WindowPage) int {
	n := 0
	for _, ev := range p.Rows {
		n += len(ev.JSON)
	}
	for _, ev := range p.Aux {
		n += len(ev.JSON)
	}
	return n
}
