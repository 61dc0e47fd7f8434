package web

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

// lentMemory is a Memory that notes what it holds, as the relay's budget
// lends it.
type lentMemory struct{ lent int64 }

func (m *lentMemory) Reserve(_ context.Context, n int64) error { m.lent += n; return nil }
func (m *lentMemory) Keep(n int64)                             { m.lent = min(m.lent, n) }
func (m *lentMemory) Release()                                 { m.lent = 0 }
func (m *lentMemory) ReadBounded(_ context.Context, read func(maxBytes int) (int, error)) error {
	size, err := read(PageMaxBytes)
	m.lent += int64(size)
	return err
}

// lentWriter notes, at each write, what its page's memory holds.
type lentWriter struct {
	mem   *lentMemory
	taken []int64
}

func (w *lentWriter) Write(p []byte) (int, error) {
	w.taken = append(w.taken, w.mem.lent)
	return len(p), nil
}

// Issue 29 item 5, RL-27a: a web page gives its memory back as it is
// written: a client slow to read holds only what it has not read. A page
// gives back what its reads held before its first byte is written: the
// page is rendered, they are garbage.
func TestPageGivesBackWhatIsWritten(t *testing.T) {
	mem := &lentMemory{}
	defer mem.Release()
	if err := mem.Reserve(context.Background(), 1<<20); err != nil { // what the page's reads held
		t.Fatal(err)
	}
	page := &pageWriter{ctx: context.Background(), mem: mem}
	if _, err := page.Write(bytes.Repeat([]byte{'p'}, 2*pageChunk+10)); err != nil {
		t.Fatal(err)
	}
	w := &lentWriter{mem: mem}
	if err := page.writeTo(w); err != nil {
		t.Fatal(err)
	}
	want := []int64{3 * pageChunk, 2 * pageChunk, pageChunk}
	if !slices.Equal(w.taken, want) {
		t.Fatalf("lent at each write: %v, want %v", w.taken, want)
	}
	if mem.lent != 0 {
		t.Fatalf("%d bytes lent once the page is written", mem.lent)
	}
}
