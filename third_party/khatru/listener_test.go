package khatru

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// These tests are buzz-lite's (see PATCHES.md); run them with
// `go test github.com/fiatjaf/khatru` from buzz-lite's module.

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
			rl.removeListenerId(ws, id)
			delete(model[ws], id)
			for range 1 + rng.IntN(6) {
				mark++
				listenForTest(rl, ws, id, mark)
				model[ws][id] = append(model[ws][id], mark)
			}
		case op < 17:
			ws := conns[rng.IntN(len(conns))]
			id := fmt.Sprint("sub-", rng.IntN(8))
			rl.removeListenerId(ws, id)
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
		if l.id != l.spec.id {
			return fmt.Errorf("listener %d: id %q, spec id %q", i, l.id, l.spec.id)
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

// listenForTest adds one listener to subscription id of ws, its filter
// marked with limit mark.
func listenForTest(rl *Relay, ws *WebSocket, id string, mark int) {
	_, cancel := context.WithCancelCause(context.Background())
	rl.addListener(ws, id, rl, nostr.Filter{Limit: mark}, cancel)
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
					for f := range 10 {
						listenForTest(rl, ws, fmt.Sprint(prefix, i), f)
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
					for f := range n / 10 {
						listenForTest(rl, ws, fmt.Sprint("s", s), f)
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
