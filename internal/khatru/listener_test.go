package khatru

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// These tests are buzz-lite's (see PATCHES.md).

// listenerModel is what the listeners should be: per connection, per
// subscription id, the marks (filter limits) of its filters.
type listenerModel map[*WebSocket]map[string][]int

// RL-27a: the relay's listener list and each connection's specs stay
// consistent (every spec's index points at its own listener, every listener
// at a spec of its connection) while many connections subscribe, close
// subscriptions and hang up in random order, checked against a model after
// every step.
func TestListenerIndexConsistency(t *testing.T) {
	rl := NewRelay()
	rng := rand.New(rand.NewPCG(13, 27))
	model := listenerModel{}
	var conns []*WebSocket
	mark := 0
	for step := range 5000 {
		switch op := rng.IntN(20); {
		case op < 2 || len(conns) == 0:
			ws := connectForTest(rl)
			conns = append(conns, ws)
			model[ws] = map[string][]int{}
		case op < 12:
			ws := conns[rng.IntN(len(conns))]
			id := fmt.Sprint("sub-", rng.IntN(8))
			// A REQ with an open id replaces it (PATCHES.md 11).
			sub := openForTest(t, rl, ws, id)
			delete(model[ws], id)
			for range 1 + rng.IntN(6) {
				mark++
				rl.addListener(ws, sub, rl, nostr.Filter{Limit: mark})
				model[ws][id] = append(model[ws][id], mark)
			}
		case op < 15:
			ws := conns[rng.IntN(len(conns))]
			id := fmt.Sprint("sub-", rng.IntN(8))
			rl.closeSubscriptionId(ws, id)
			delete(model[ws], id)
		case op < 17:
			ws := conns[rng.IntN(len(conns))]
			id := fmt.Sprint("sub-", rng.IntN(8))
			if sub := ws.subs[id]; sub != nil {
				rl.endSubscription(ws, sub, errors.New("closed by the relay"))
			}
			delete(model[ws], id)
		default:
			i := rng.IntN(len(conns))
			ws := conns[i]
			rl.removeClientAndListeners(ws)
			conns = slices.Delete(conns, i, i+1)
			delete(model, ws)
		}
		if err := checkListeners(rl, model); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

func checkListeners(rl *Relay, model listenerModel) error {
	got := listenerModel{}
	for i, l := range rl.listeners {
		if l.spec.index != i {
			return fmt.Errorf("listener %d: its spec says index %d", i, l.spec.index)
		}
		if !slices.Contains(rl.clients[l.ws], l.spec) {
			return fmt.Errorf("listener %d: its spec is not among its connection's", i)
		}
		if l.id != l.spec.sub.id || l.ws.subs[l.id] != l.spec.sub {
			return fmt.Errorf("listener %d: not of the open subscription %q", i, l.id)
		}
		if !bytes.Equal(l.head, eventEnvelopeHead(l.id)) { // patch 28
			return fmt.Errorf("listener %d of %q: envelope head %q", i, l.id, l.head)
		}
		if got[l.ws] == nil {
			got[l.ws] = map[string][]int{}
		}
		got[l.ws][l.id] = append(got[l.ws][l.id], l.filter.Limit)
	}
	for ws, specs := range rl.clients {
		if _, ok := model[ws]; !ok {
			return fmt.Errorf("a connection that hung up is still known")
		}
		for _, spec := range specs {
			if spec.index >= len(rl.listeners) || rl.listeners[spec.index].spec != spec {
				return fmt.Errorf("a spec of index %d does not point at its listener", spec.index)
			}
		}
	}
	for ws, subs := range model {
		if _, ok := rl.clients[ws]; !ok {
			return fmt.Errorf("an open connection is not known")
		}
		for id, marks := range subs {
			have := slices.Clone(got[ws][id])
			slices.Sort(have)
			if !slices.Equal(have, marks) {
				return fmt.Errorf("subscription %s: listeners %v, want %v", id, have, marks)
			}
			delete(got[ws], id)
		}
		if len(got[ws]) != 0 {
			return fmt.Errorf("listeners of closed subscriptions remain: %v", got[ws])
		}
		if len(ws.subs) != len(subs) {
			return fmt.Errorf("%d subscriptions open, want %d", len(ws.subs), len(subs))
		}
	}
	return nil
}

func connectForTest(rl *Relay) *WebSocket {
	ws := &WebSocket{}
	rl.clientsMutex.Lock()
	rl.clients[ws] = nil
	rl.clientsMutex.Unlock()
	return ws
}

// openForTest opens subscription id on ws as a REQ does.
func openForTest(t testing.TB, rl *Relay, ws *WebSocket, id string) *subscription {
	sub, reason := rl.openSubscription(context.Background(), ws, id, 1)
	if sub == nil {
		t.Fatalf("REQ %s refused: %s", id, reason)
	}
	return sub
}

// RL-27: RejectRequest hooks see a connection's REQs one after another, so
// that a cap on open subscriptions holds when many arrive at once, and a
// REQ that replaces an open subscription is not counted twice.
func TestOpenSubscriptionsCappedUnderConcurrency(t *testing.T) {
	const limit = 10
	rl := NewRelay()
	rl.RejectRequest = append(rl.RejectRequest, func(_ context.Context, req Request) (bool, string) {
		return req.Open >= limit, "rate-limited: too many open subscriptions"
	})
	ws := connectForTest(rl)
	var wg sync.WaitGroup
	var opened atomic.Int64
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sub, _ := rl.openSubscription(context.Background(), ws, fmt.Sprint("sub-", i), 1); sub != nil {
				opened.Add(1)
			}
		}()
	}
	wg.Wait()
	if opened.Load() != limit || len(ws.subs) != limit {
		t.Fatalf("%d REQs opened, %d subscriptions open; want %d", opened.Load(), len(ws.subs), limit)
	}
	for id := range ws.subs {
		if sub, reason := rl.openSubscription(context.Background(), ws, id, 1); sub == nil {
			t.Fatalf("a REQ replacing %s was refused: %s", id, reason)
		}
	}
	if sub, _ := rl.openSubscription(context.Background(), ws, "one-more", 1); sub != nil {
		t.Fatalf("a REQ past the cap was opened")
	}
}

// RL-27a: removing a connection's listeners is linear in their number,
// whatever other connections hold: compare ns/op at 10k and 100k.
func BenchmarkRemoveConnection(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("listeners=%d", n), func(b *testing.B) {
			rl := NewRelay()
			others := func(prefix string) []*WebSocket {
				var conns []*WebSocket
				for i := range 50 {
					ws := connectForTest(rl)
					sub := openForTest(b, rl, ws, fmt.Sprint(prefix, i))
					for f := range 10 {
						rl.addListener(ws, sub, rl, nostr.Filter{Limit: f})
					}
					conns = append(conns, ws)
				}
				return conns
			}
			others("before-")
			for b.Loop() {
				b.StopTimer()
				ws := connectForTest(rl)
				// As in the attack: 10 subscriptions with many filters each.
				for s := range 10 {
					sub := openForTest(b, rl, ws, fmt.Sprint("s", s))
					for f := range n / 10 {
						rl.addListener(ws, sub, rl, nostr.Filter{Limit: f})
					}
				}
				after := others("after-")
				b.StartTimer()
				rl.removeClientAndListeners(ws)
				b.StopTimer()
				for _, o := range after {
					rl.removeClientAndListeners(o)
				}
				b.StartTimer()
			}
		})
	}
}
