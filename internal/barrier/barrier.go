// Package barrier answers calls that wait for a listener to catch up with
// what was sent before them. A process sends a token down the same ordered
// channel as the messages it waits behind; the listener handles messages in
// order, so once it hears the token back, every message sent before it has
// been handled. The PostgreSQL store's CaughtUp (buzz.SharedStore) rides on
// NOTIFY with it; nothing here knows the transport.
package barrier

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Barriers are the calls waiting for the listener to hear a token back.
// One token at a time answers every call made while it was on its way.
type Barriers struct {
	send func(token string) error
	wait time.Duration
	gap  time.Duration
	log  *slog.Logger

	// hearing is set while the listener is connected.
	hearing atomic.Bool
	mu      sync.Mutex
	next    []chan struct{}            // answered by the next token sent
	sent    map[string][]chan struct{} // by token: sent, not heard yet
	sending bool                       // sendLoop is running
	count   uint64
}

// New makes barriers that send each token with send, behind everything
// sent before it, and wait at most wait for the listener to hear it; a
// token is sent at least gap after the previous one was heard, so that
// the calls of that time share it. They start not hearing: Call answers
// at once until Hearing(true).
func New(send func(token string) error, wait, gap time.Duration, log *slog.Logger) *Barriers {
	return &Barriers{send: send, wait: wait, gap: gap, log: log}
}

// Listening reports whether the listener is connected.
func (b *Barriers) Listening() bool { return b.hearing.Load() }

// Hearing marks the listener connected.
func (b *Barriers) Hearing() { b.hearing.Store(true) }

// Call returns a channel closed once the listener has heard a token sent
// after the call. While the listener is not connected, what is sent
// meanwhile is not handled at all: the channel is closed at once.
func (b *Barriers) Call() <-chan struct{} {
	done := make(chan struct{})
	b.mu.Lock()
	if !b.hearing.Load() {
		b.mu.Unlock()
		close(done)
		return done
	}
	b.next = append(b.next, done)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		go b.sendLoop()
	}
	return done
}

// sendLoop sends a token for the calls waiting, waits until the listener
// hears it (or stops hearing), and goes on while calls came meanwhile.
func (b *Barriers) sendLoop() {
	for {
		b.mu.Lock()
		waiting := b.next
		b.next = nil
		if len(waiting) == 0 {
			b.sending = false
			b.mu.Unlock()
			return
		}
		b.count++
		token := strconv.FormatUint(b.count, 10)
		heard := make(chan struct{})
		if b.sent == nil {
			b.sent = make(map[string][]chan struct{})
		}
		b.sent[token] = append(waiting, heard)
		b.mu.Unlock()

		if err := b.send(token); err != nil {
			// Unanswered, the calls would keep their subscriptions'
			// memory of what they sent; answered, one may at worst
			// receive an event twice.
			if b.hearing.Load() {
				b.log.Warn("sending a delivery barrier to this process's listener", "err", err)
			}
			b.Heard(token)
			continue
		}
		// A listener connection that stalls without breaking would keep
		// every waiting subscription's memory of what it sent: past the
		// wait, the calls are answered as if it had heard (one may at
		// worst receive an event twice).
		t := time.NewTimer(b.wait)
		select {
		case <-heard:
		case <-t.C:
			b.log.Warn("this process's listener did not hear a delivery barrier in time", "wait", b.wait)
			b.Heard(token)
		}
		t.Stop()
		// Every token is a transaction of the server's: the calls of the
		// next gap wait for one, rather than one each time the last
		// came back.
		time.Sleep(b.gap)
	}
}

// Heard answers the calls of token, which the listener heard back.
func (b *Barriers) Heard(token string) {
	b.mu.Lock()
	waiting := b.sent[token]
	delete(b.sent, token)
	b.mu.Unlock()
	for _, c := range waiting {
		close(c)
	}
}

// StopHearing marks the listener disconnected and answers every call:
// what it did not hear it will not handle.
func (b *Barriers) StopHearing() {
	b.mu.Lock()
	b.hearing.Store(false)
	sent, next := b.sent, b.next
	b.sent, b.next = nil, nil
	b.mu.Unlock()
	for _, waiting := range sent {
		for _, c := range waiting {
			close(c)
		}
	}
	for _, c := range next {
		close(c)
	}
}
