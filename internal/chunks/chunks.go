// Package chunks hands out fixed-size byte chunks for the answers the relay
// builds, kept outside the Go heap where the system allows. An answer's
// bytes are already bounded by a byte budget (RL-27a) and are written out
// whole, then dropped: nothing in them is the garbage collector's business.
// On the heap they were: with the relay's soft memory limit (64 MiB) no
// larger than what the `/query` budget lets answers hold, one client asking
// for 32 MiB answers made the collector run back to back, and every other
// client waited on it (buzz-lite bench --abuse, the /query flood).
package chunks

import "sync"

// Size is the capacity of a chunk: a window page's answer (about 100 KB)
// fits one, and a 32 MiB answer takes 128.
const Size = 256 << 10

// Chunk is a byte slice of capacity Size that came from Get and goes back
// with Put, after which it must not be used.
type Chunk struct {
	B []byte
	// mapped is true for a chunk outside the Go heap.
	mapped bool
}

// Pool hands out chunks: a chunk given back is kept for the next Get while
// fewer than keep are kept, and given back to the system otherwise, so that
// after a burst of large answers the relay's resident memory falls back. At
// most max chunks are outside the heap at once; past that a chunk is made
// on the heap, which is correct, only not spared the collector. It is safe
// for concurrent use.
type Pool struct {
	keep, max int

	mu     sync.Mutex
	kept   []Chunk
	mapped int
}

// NewPool is a pool that keeps up to keep chunks and has at most max outside
// the heap at once.
func NewPool(keep, max int) *Pool {
	return &Pool{keep: keep, max: max}
}

// Get is an empty chunk.
func (p *Pool) Get() Chunk {
	p.mu.Lock()
	if n := len(p.kept); n > 0 {
		c := p.kept[n-1]
		p.kept = p.kept[:n-1]
		p.mu.Unlock()
		return c
	}
	mapIt := p.mapped < p.max
	if mapIt {
		p.mapped++
	}
	p.mu.Unlock()
	if mapIt {
		if b, err := mapChunk(); err == nil {
			return Chunk{B: b[:0], mapped: true}
		}
		p.mu.Lock()
		p.mapped--
		p.mu.Unlock()
	}
	return Chunk{B: make([]byte, 0, Size)}
}

// Put gives c back.
func (p *Pool) Put(c Chunk) {
	c.B = c.B[:0]
	p.mu.Lock()
	if len(p.kept) < p.keep {
		p.kept = append(p.kept, c)
		p.mu.Unlock()
		return
	}
	if c.mapped {
		p.mapped--
	}
	p.mu.Unlock()
	if c.mapped {
		unmapChunk(c.B)
	}
}
