package relay

import (
	"context"
	"sync"
	"time"
)

// byteBudget is a number of bytes that requests reserve from before they
// hold them and give back afterwards: what the answers of all running
// `/query` requests hold together (RL-27a). It is safe for concurrent use.
type byteBudget struct {
	size int64

	mu   sync.Mutex
	free int64
	// freed is closed, and replaced, whenever bytes are given back, to
	// wake the requests waiting for them.
	freed chan struct{}
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, free: size, freed: make(chan struct{})}
}

// take reserves n bytes, waiting up to slotWait for other requests to give
// some back; false when they did not in time, ctx ended, or n is more than
// the whole budget. A true take must be given back.
func (b *byteBudget) take(ctx context.Context, n int64) bool {
	if n > b.size {
		return false
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(slotWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// give returns n bytes taken before.
func (b *byteBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}
