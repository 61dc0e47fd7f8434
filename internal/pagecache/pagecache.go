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
	"unsafe"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
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
	mu sync.Mutex
	// max bounds used, the bytes of the pages kept (entryBytes), the
	// least recently used evicted to stay under it: pages differ in size
	// tenfold (a page of long messages with many reactions against one of
	// short ones), so a bound in pages would not bound memory (issue 32).
	max, used int64
	order     *list.List // front: most recently used
	entries   map[string]*list.Element
	// hits and misses count the pages served from the cache and read from
	// the database (buzz.StoreStats).
	hits, misses atomic.Uint64
}

type cachedPage struct {
	key  string
	page *buzz.WindowPage
	// bytes is what the entry counts against the bound (entryBytes).
	bytes int64
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

// DefaultBytes bounds the cache (storage.page_cache_bytes): some 150
// deep pages of 100 KB of a million-event community, within the relay's
// 150 MB bound on its own memory (docs/performance.md).
const DefaultBytes = 16 << 20

// New makes a cache of at most maxBytes of pages (entryBytes): 0 means
// DefaultBytes, a negative number no cache (Get finds nothing, Put keeps
// nothing).
func New(maxBytes int64) *Cache {
	if maxBytes == 0 {
		maxBytes = DefaultBytes
	}
	return &Cache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
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
		c.remove(e)
		return nil, false
	}
	c.order.MoveToFront(e)
	c.hits.Add(1)
	return e.Value.(*cachedPage).page, true
}

// Bytes is what the pages kept count against the bound.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Put counts a page read from the database and keeps it as the page of
// key, read at versions v; it replaces the page kept for key, which a
// reader of an older snapshot may also be replacing: the cache then misses
// until the page is read again. expires is the first NIP-40 expiration of
// an event on the page. A page of more than an eighth of the bound is not
// kept: it would push out many pages to keep one.
func (c *Cache) Put(key string, page *buzz.WindowPage, v Versions, expires int64) {
	c.misses.Add(1)
	if c.max < 0 {
		return
	}
	n := entryBytes(key, page)
	if n > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
	c.entries[key] = c.order.PushFront(&cachedPage{key: key, page: page, bytes: n, Versions: v, expires: expires})
	c.used += n
	for c.used > c.max {
		c.remove(c.order.Back())
	}
}

// remove drops entry e; c.mu is held.
func (c *Cache) remove(e *list.Element) {
	cp := e.Value.(*cachedPage)
	c.order.Remove(e)
	delete(c.entries, cp.key)
	c.used -= cp.bytes
}

// Fixed parts of an entry's bytes: what a kept page holds besides its
// variable-length data, measured as Go lays the values out (64-bit).
const (
	// entryOverhead is the entry itself: its list element and map slot,
	// cachedPage and the WindowPage with its Next position.
	entryOverhead = 384
	// eventOverhead is a RawEvent: its struct (string and slice headers,
	// date, kind) in the page's slice.
	eventOverhead = int64(unsafe.Sizeof(buzz.RawEvent{}))
	// summaryOverhead is a Summary: its struct in the page's slice and
	// its LastReplyAt.
	summaryOverhead = int64(unsafe.Sizeof(buzz.Summary{})) + 8
	// stringOverhead is a string header in a slice (a participant).
	stringOverhead = int64(unsafe.Sizeof(""))
)

// entryBytes is what the page of key counts against the cache's bound:
// its encoded events' JSON and ids, its summaries and what a server keeps
// of them with the page, its key, and the fixed overhead of each part.
func entryBytes(key string, p *buzz.WindowPage) int64 {
	n := int64(entryOverhead + len(key))
	for _, evs := range [][]buzz.RawEvent{p.Rows, p.Aux} {
		for _, ev := range evs {
			n += eventOverhead + int64(len(ev.ID)+len(ev.JSON))
		}
	}
	channel, _, _ := strings.Cut(key, "|") // Key begins with it
	for _, s := range p.Summaries {
		n += summaryOverhead + int64(len(s.ID)) + KeptSummaryBytes(s, channel)
		for _, pk := range s.Participants {
			n += stringOverhead + int64(len(pk))
		}
	}
	return n
}

// KeptSummaryBytes bounds what a server keeps with a page of channel for
// summary s (buzz.WindowPage.Keep: the relay's signed summary overlay, at
// most 630 bytes with counters of 19 digits besides the channel's name
// and the participants, each quoted within a quoted string: a hex key as
// 69 bytes, anything else four bytes a byte at worst; and its slice
// header), so that the bound on the cache covers it.
func KeptSummaryBytes(s buzz.Summary, channel string) int64 {
	n := int64(660 + len(channel))
	for _, p := range s.Participants {
		if tagjson.Plain(p) {
			n += int64(5 + len(p))
		} else {
			n += int64(8 + 4*len(p))
		}
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
