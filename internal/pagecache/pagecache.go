// Package pagecache keeps recently served window pages for a store: both
// stores serve a page from it while the page version their snapshot reads
// for its channel stands.
package pagecache

import (
	"container/list"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Cache keeps recently served window pages. Every client that opens a
// channel asks for the same head page, and a page from the database costs
// a millisecond or two, most of it the aux closure's index seeks. A page
// is valid while its channel's page version stands (a store bumps it for
// every write that may change the channel's pages, by this process or
// another: SQLite's triggers, PostgreSQL's write transactions), read in
// the same snapshot that would otherwise build the page, so a page served
// from the cache is exactly what the database would give, while writes to
// other channels leave it valid (issue 15). A page with aux events scoped
// to another channel was also judged by that channel's access state: it
// is valid only while the access state it was judged by stands.
type Cache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // front: most recently used
	entries map[string]*list.Element
	// hits and misses count the pages served from the cache and read from
	// the database (buzz.StoreStats).
	hits, misses atomic.Uint64
}

type cachedPage struct {
	key  string
	page *buzz.WindowPage
	Versions
	// expires is the first NIP-40 expiration of an event on the page:
	// reads hide it from then on, before the purge writes anything.
	expires int64
}

// Versions are what a page was read at: its channel's page version and
// the version of the access state that judged it. Foreign says that an
// aux event of another channel's scope was judged: only then does a change
// of the access state make the page stale (its own channel's access is
// checked for every page, cached or not).
type Versions struct {
	Channel, Access int64
	Foreign         bool
}

// serves reports whether a page read at v may be served at versions now.
func (v Versions) serves(now Versions) bool {
	return v.Channel == now.Channel && (!v.Foreign || v.Access == now.Access)
}

// Judged is the aux closure's report of the scope of each event it judged,
// for a page of channel seq read at v: an event of another channel's scope
// makes the page foreign.
func (v *Versions) Judged(seq int64) func(scope int64) {
	return func(scope int64) {
		if scope != seq {
			v.Foreign = true
		}
	}
}

// DefaultSize bounds the cache: a page is some 100 KB.
const DefaultSize = 128

// New makes a cache of max pages: 0 means DefaultSize, a negative number
// no cache (Get finds nothing, Put keeps nothing).
func New(max int) *Cache {
	if max == 0 {
		max = DefaultSize
	}
	return &Cache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// Counts are the pages served from the cache and read from the database.
func (c *Cache) Counts() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// Key names a window page: everything of the request that shapes it,
// the viewer included (the aux closure leaves out what the viewer may not
// read).
func Key(q buzz.WindowQuery) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%v|%v|%v|%s|", q.Channel, q.Limit, q.Projection, q.Summaries, q.Aux, q.Viewer)
	if q.Before != nil {
		fmt.Fprintf(&b, "%d:%s", q.Before.CreatedAt, q.Before.ID)
	}
	fmt.Fprintf(&b, "|%v", q.Kinds)
	return b.String()
}

// Get returns the page of key, unless it was read at versions it may not
// be served at (cur) or an event on it has expired by now, and counts a
// page served from the cache; the caller must not modify it.
func (c *Cache) Get(key string, cur Versions, now int64) (*buzz.WindowPage, bool) {
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
	c.hits.Add(1)
	return e.Value.(*cachedPage).page, true
}

// maxCachedPageBytes keeps big pages (long events, many reactions) out of
// the cache, which is bounded by entries: 128 pages stay some megabytes.
const maxCachedPageBytes = 512 << 10

// Put counts a page read from the database and keeps it as the page of
// key, read at versions v; it replaces the page kept for key, which a
// reader of an older snapshot may also be replacing: the cache then misses
// until the page is read again. expires is the first NIP-40 expiration of
// an event on the page.
func (c *Cache) Put(key string, page *buzz.WindowPage, v Versions, expires int64) {
	c.misses.Add(1)
	if c.max < 0 || pageBytes(page) > maxCachedPageBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	entry := &cachedPage{key: key, page: page, Versions: v, expires: expires}
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

// Holds reports whether a page of key is kept, at whatever versions: a
// store reads a page's rows along with its versions when none is.
func (c *Cache) Holds(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}
