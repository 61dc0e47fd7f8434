package relay

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// byteBudget is a number of bytes that requests reserve from before they
// hold them and give back afterwards: what the answers of all running
// `/query` requests hold together (RL-27a), or the NIP-77 sync sessions.
// When perClient is not 0, what one client (Limits.client) holds is
// bounded by it too, so that one client's unread answers cannot take what
// every other client's answers wait for. It is safe for concurrent use.
type byteBudget struct {
	size, perClient int64

	mu   sync.Mutex
	free int64
	// held is what each client holds, when perClient is set.
	held map[netip.Prefix]int64
	// freed is closed, and replaced, whenever bytes are given back, to
	// wake the requests waiting for them.
	freed chan struct{}
}

// newByteBudget is a budget of size bytes, of which one client may hold
// perClient (0: no share; at most size).
func newByteBudget(size, perClient int64) *byteBudget {
	return &byteBudget{size: size, perClient: min(perClient, size), free: size,
		held: map[netip.Prefix]int64{}, freed: make(chan struct{})}
}

// shared says whether what client takes counts against its share: not
// for an invalid client (an exempt network's), nor in a budget without
// shares.
func (b *byteBudget) shared(client netip.Prefix) bool {
	return b.perClient > 0 && client.IsValid()
}

// take reserves n bytes for client, waiting up to slotWait for requests
// to give some back; false when they did not in time, ctx ended, or n is
// more than the whole budget or the client's share. A true take must be
// given back with the same client.
func (b *byteBudget) take(ctx context.Context, client netip.Prefix, n int64) bool {
	shared := b.shared(client)
	if n > b.size || (shared && n > b.perClient) {
		return false
	}
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.free >= n && (!shared || b.held[client]+n <= b.perClient) {
			b.free -= n
			if shared {
				b.held[client] += n
			}
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

// give returns n bytes client took before.
func (b *byteBudget) give(client netip.Prefix, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	if b.shared(client) {
		if b.held[client] -= n; b.held[client] <= 0 {
			delete(b.held, client)
		}
	}
	close(b.freed)
	b.freed = make(chan struct{})
}
