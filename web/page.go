package web

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

const (
	// pageChunk is the unit in which a rendered page is reserved and held:
	// a page is not copied as it grows.
	pageChunk = 32 << 10
	// PageMaxBytes bounds a rendered page. Content is clipped
	// (RowTextBytes, RootTextBytes) and html/template writes a byte of it
	// as at most 5 (&amp; &#34; ...), twice for a URL (its text and its
	// href), so the largest thread page, 50 replies and a root, is under
	// 5 MiB (TestWebPageBounded builds it).
	PageMaxBytes = 6 << 20
)

var errPageTooLarge = errors.New("web page: rendered page exceeds its bound")

// pageWriter is the rendered page, held in chunks of pageChunk bytes,
// each reserved from the page's memory before it is filled.
type pageWriter struct {
	ctx    context.Context
	mem    Memory
	chunks [][]byte
}

func (p *pageWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		last := len(p.chunks) - 1
		if last < 0 || len(p.chunks[last]) == pageChunk {
			if (last+2)*pageChunk > PageMaxBytes {
				return written, errPageTooLarge
			}
			if err := p.mem.Reserve(p.ctx, pageChunk); err != nil {
				return written, err
			}
			p.chunks = append(p.chunks, make([]byte, 0, pageChunk))
			last++
		}
		n := min(len(b), pageChunk-len(p.chunks[last]))
		p.chunks[last] = append(p.chunks[last], b[:n]...)
		b = b[n:]
		written += n
	}
	return written, nil
}

// writeTo writes the page to w. The page is rendered: what its reads and
// their events held is garbage, and is given back first; each chunk is
// given back once written, so that a reader slow to take a page holds no
// more than what it has not read yet.
func (p *pageWriter) writeTo(w io.Writer) error {
	for len(p.chunks) > 0 {
		p.mem.Keep(int64(len(p.chunks)) * pageChunk)
		if _, err := w.Write(p.chunks[0]); err != nil {
			return fmt.Errorf("write web page: %w", err)
		}
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	}
	p.mem.Keep(0)
	return nil
}

// readPage is a store read of a page bounded by mem (Memory.ReadBounded):
// what it read (size) stays reserved with the page.
func readPage[T any](ctx context.Context, mem Memory, read func(maxBytes int) (T, error), size func(T) int) (T, error) {
	var page T
	err := mem.ReadBounded(ctx, func(maxBytes int) (int, error) {
		p, err := read(maxBytes)
		if err != nil {
			return 0, err
		}
		page = p
		return size(p), nil
	})
	if err != nil {
		var none T
		return none, err
	}
	return page, nil
}

// RawSize is the bytes of the JSON of evs: what a page reserves to
// decode them, and what a read of them holds.
func RawSize(evs ...[]buzz.RawEvent) int {
	n := 0
	for _, list := range evs {
		for _, ev := range list {
			n += len(ev.JSON)
		}
	}
	return n
}

// decodeRaw decodes stored events for a page, reserving their JSON's
// bytes first: a decoded event holds no more text than its JSON.
func decodeRaw(ctx context.Context, mem Memory, raws []buzz.RawEvent) ([]*nostr.Event, error) {
	if err := mem.Reserve(ctx, int64(RawSize(raws))); err != nil {
		return nil, err
	}
	return buzz.Decode(raws)
}
