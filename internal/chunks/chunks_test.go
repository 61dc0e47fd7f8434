package chunks

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
)

// A chunk is empty and of capacity Size, holds what is written to it, and
// comes back from the pool while the pool keeps it.
func TestGetPutKeeps(t *testing.T) {
	p := NewPool(2, 4)
	c := p.Get()
	if len(c.B) != 0 || cap(c.B) != Size {
		t.Fatalf("a new chunk is %d of %d bytes, want 0 of %d", len(c.B), cap(c.B), Size)
	}
	if runtime.GOOS == "linux" && !c.mapped {
		t.Fatal("on Linux a chunk within the pool's bound is mapped outside the heap")
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), Size/16)
	c.B = append(c.B, want...)
	if !bytes.Equal(c.B, want) {
		t.Fatal("the chunk does not hold what was written to it")
	}
	first := &c.B[:1][0]
	p.Put(c)
	again := p.Get()
	if len(again.B) != 0 || &again.B[:1][0] != first {
		t.Fatalf("the chunk kept is not the one handed out next, emptied")
	}
	p.Put(again)
}

// Past keep, a chunk given back is given back to the system; past max,
// chunks are made on the heap and work the same.
func TestPoolBounds(t *testing.T) {
	p := NewPool(1, 2)
	var cs []Chunk
	for range 4 {
		c := p.Get()
		c.B = append(c.B, make([]byte, Size)...)
		cs = append(cs, c)
	}
	mapped := 0
	for _, c := range cs {
		if c.mapped {
			mapped++
		}
	}
	if runtime.GOOS == "linux" && mapped != 2 {
		t.Fatalf("%d of 4 chunks mapped with max 2", mapped)
	}
	for _, c := range cs {
		p.Put(c)
	}
	p.mu.Lock()
	kept, stillMapped := len(p.kept), p.mapped
	p.mu.Unlock()
	if kept != 1 {
		t.Fatalf("the pool keeps %d chunks, want 1", kept)
	}
	if want := min(mapped, 1); stillMapped > want {
		t.Fatalf("%d chunks still mapped once all but the kept one are back, want at most %d", stillMapped, want)
	}
}

// Concurrent use keeps the count of mapped chunks within max (run with
// -race).
func TestPoolConcurrent(t *testing.T) {
	p := NewPool(4, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c := p.Get()
				c.B = append(c.B, byte(g), byte(i))
				if c.B[0] != byte(g) || c.B[1] != byte(i) {
					t.Errorf("a chunk in use changed under its holder")
				}
				p.Put(c)
			}
		})
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mapped > 8 || len(p.kept) > 4 {
		t.Fatalf("%d mapped and %d kept after the run, want at most 8 and 4", p.mapped, len(p.kept))
	}
}
