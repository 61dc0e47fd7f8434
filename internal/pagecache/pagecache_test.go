package pagecache

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

const channel = "6a1f0c9e-3b52-4d7e-8f10-2c4b6a8e0d13"

// page is a window page of rows signed messages of content size bytes,
// each with a summary naming its author.
func page(t *testing.T, s testutil.Signer, rows, size int, at int64) *buzz.WindowPage {
	t.Helper()
	p := &buzz.WindowPage{}
	for i := range rows {
		ev := s.Event(t, 9, at+int64(i), strings.Repeat("x", size), nostr.Tag{"h", channel})
		p.Rows = append(p.Rows, buzz.RawEvent{ID: ev.ID, CreatedAt: int64(ev.CreatedAt), Kind: ev.Kind, JSON: []byte(ev.String())})
		p.Summaries = append(p.Summaries, buzz.Summary{ID: ev.ID, Summary: nipcw.Summary{ReplyCount: 1, Participants: []string{s.PK}}})
	}
	return p
}

// key is the cache key of the page before cursor position i.
func key(i int) string {
	return Key(buzz.WindowQuery{Channel: channel, Limit: 50, Before: &buzz.Position{CreatedAt: int64(i), ID: fmt.Sprint(i)}})
}

// Issue 32 item 5: an entry counts its page's encoded events, their ids,
// its summaries and a fixed overhead, so that a page of long messages
// counts as much more as it holds.
func TestEntryBytes(t *testing.T) {
	s := testutil.NewSigner(t)
	short, long := page(t, s, 10, 10, 1700000000), page(t, s, 10, 1000, 1700000000)
	k := key(1)
	var json, ids int64
	for _, ev := range short.Rows {
		json, ids = json+int64(len(ev.JSON)), ids+int64(len(ev.ID))
	}
	n := entryBytes(k, short)
	if min := json + ids + int64(len(k)) + 10*64; n <= min {
		t.Errorf("a page of %d bytes of JSON counts %d, want more than its events, ids, key and participants (%d)", json, n, min)
	}
	if min := int64(entryOverhead) + 10*(eventOverhead+summaryOverhead+stringOverhead); n <= min {
		t.Errorf("a page counts %d, want more than its fixed overhead %d", n, min)
	}
	if d := entryBytes(k, long) - n; d != 10*990 {
		t.Errorf("990 more bytes of content in each of 10 rows count %d more, want %d", d, 10*990)
	}
}

// Issue 32 item 5: the cache keeps at most its bound in bytes, evicting
// the least recently used pages; a page served is used.
func TestByteBoundEvictsLeastRecentlyUsed(t *testing.T) {
	const room = 20
	s := testutil.NewSigner(t)
	p := page(t, s, 20, 500, 1700000000)
	per := entryBytes(key(10), p) // every key(i) from 10 to 99 is as long
	c := New(room*per + per/2)    // room for 20 pages, not 21
	at := Versions{Channel: 1}
	for i := range room {
		c.Put(key(10+i), p, at, 1<<62)
	}
	if got := c.Bytes(); got != room*per {
		t.Fatalf("%d pages of %d bytes count %d", room, per, got)
	}
	if _, ok := c.Get(key(10), at, 0); !ok { // the oldest, now the most recently used
		t.Fatal("the first page not kept")
	}
	c.Put(key(10+room), p, at, 1<<62)
	if got := c.Bytes(); got != room*per || got > c.max {
		t.Fatalf("after one more page: %d bytes kept, bound %d, want %d pages (%d)", got, c.max, room, room*per)
	}
	if _, ok := c.Get(key(11), at, 0); ok {
		t.Error("the second page, the least recently used, was kept past the bound")
	}
	for i := range room + 1 {
		if _, ok := c.Get(key(10+i), at, 0); !ok && i != 1 {
			t.Errorf("page %d evicted, want only the second", i)
		}
	}

	// A page twice the size pushes out the two least recently used.
	c.Put(key(10+room+1), page(t, s, 40, 500, 1700000000), at, 1<<62)
	if got := c.Bytes(); got > c.max {
		t.Fatalf("after a big page: %d bytes kept, bound %d", got, c.max)
	}
	for i := range room + 1 {
		_, ok := c.Get(key(10+i), at, 0)
		if want := i > 2; ok != want {
			t.Errorf("after a page of twice the size: page %d kept %v, want %v", i, ok, want)
		}
	}
}

// Issue 32 item 5: a page kept again under its key counts once; a stale
// page dropped by Get frees its bytes; a page over an eighth of the bound
// is not kept; a negative bound keeps nothing.
func TestByteAccounting(t *testing.T) {
	s := testutil.NewSigner(t)
	p := page(t, s, 20, 500, 1700000000)
	per := entryBytes(key(0), p)
	c := New(10 * per)
	c.Put(key(0), p, Versions{Channel: 1}, 1<<62)
	c.Put(key(0), p, Versions{Channel: 2}, 1<<62)
	if got := c.Bytes(); got != per {
		t.Errorf("one page kept twice counts %d, want %d", got, per)
	}
	if _, ok := c.Get(key(0), Versions{Channel: 3}, 0); ok {
		t.Fatal("a page of channel version 2 served at version 3")
	}
	if got := c.Bytes(); got != 0 {
		t.Errorf("after the stale page is dropped, %d bytes kept", got)
	}
	c.Put(key(1), p, Versions{Channel: 3}, 1700000000)
	if _, ok := c.Get(key(1), Versions{Channel: 3}, 1700000000); ok || c.Bytes() != 0 {
		t.Errorf("an expired page: served %v, %d bytes kept", ok, c.Bytes())
	}

	small := New(8*per - 1)
	small.Put(key(0), p, Versions{}, 1<<62)
	if got := small.Bytes(); got != 0 {
		t.Errorf("a page over an eighth of the bound kept: %d bytes", got)
	}
	if hits, misses := small.Counts(); hits != 0 || misses != 1 {
		t.Errorf("counts %d hits, %d misses, want the page read from the database counted", hits, misses)
	}

	off := New(-1)
	off.Put(key(0), p, Versions{}, 1<<62)
	if _, ok := off.Get(key(0), Versions{}, 0); ok || off.Bytes() != 0 {
		t.Error("a cache of negative bound kept a page")
	}
	if def := New(0); def.max != DefaultBytes {
		t.Errorf("New(0) bounds %d bytes, want DefaultBytes %d", def.max, DefaultBytes)
	}
}
