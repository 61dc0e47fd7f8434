package khatru

import (
	"context"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Upstream's listener_test.go (khatru v0.19.1), ported to the patched
// listeners (patches 12 and 13): a listener is added to a subscription
// its REQ opened (listen opens it on first use of an id, as a REQ would;
// upstream's repeated addListener calls with one id are the filters of
// one REQ), closing an id is closeSubscriptionId (upstream's
// removeListenerId), specs are pointers and hold their subscription, not
// its id and cancel function. The expected lists and indexes are
// upstream's, compared through specView and listenerView, the fields
// upstream's struct literals named; testify's require is replaced by
// the helpers below.

// specView is what upstream's tests compare of a listenerSpec.
type specView struct {
	id       string
	index    int
	subrelay *Relay
}

// listenerView is what upstream's tests compare of a listener.
type listenerView struct {
	id     string
	filter nostr.Filter
	ws     *WebSocket
}

// listen adds a listener of filter on subrelay to ws's subscription id,
// opening the subscription first unless it is open.
func listen(rl *Relay, ws *WebSocket, id string, subrelay *Relay, filter nostr.Filter) {
	sub := ws.subs[id]
	if sub == nil {
		sub, _ = rl.openSubscription(context.Background(), ws, id, 1)
	}
	rl.addListener(ws, sub, subrelay, filter)
}

func equalClients(t *testing.T, rl *Relay, want map[*WebSocket][]specView) {
	t.Helper()
	got := map[*WebSocket][]specView{}
	for ws, specs := range rl.clients {
		got[ws] = []specView{}
		for _, s := range specs {
			got[ws] = append(got[ws], specView{s.sub.id, s.index, s.subrelay})
		}
	}
	for ws, specs := range want {
		if specs == nil {
			want[ws] = []specView{}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clients:\n got %v\nwant %v", got, want)
	}
}

func equalListeners(t *testing.T, rl *Relay, want []listenerView) {
	t.Helper()
	got := []listenerView{}
	for _, l := range rl.listeners {
		if l.id != l.spec.sub.id {
			t.Errorf("listener %q points at a spec of subscription %q", l.id, l.spec.sub.id)
		}
		got = append(got, listenerView{l.id, l.filter, l.ws})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listeners:\n got %v\nwant %v", got, want)
	}
}

// setState sets rl's specs and listeners (all on rl) to clients and
// listeners, each listener pointing at the spec of its connection and id
// whose index is its own.
func setState(rl *Relay, clients map[*WebSocket][]specView, listeners []listenerView) {
	rl.clients = map[*WebSocket][]*listenerSpec{}
	rl.listeners = make([]listener, len(listeners))
	for ws, views := range clients {
		for _, v := range views {
			ctx, cancel := context.WithCancelCause(context.Background())
			spec := &listenerSpec{sub: &subscription{id: v.id, ctx: ctx, cancel: cancel}, index: v.index, subrelay: v.subrelay}
			rl.clients[ws] = append(rl.clients[ws], spec)
			l := listeners[v.index]
			rl.listeners[v.index] = listener{id: l.id, filter: l.filter, ws: l.ws, spec: spec, head: eventEnvelopeHead(l.id)}
		}
	}
}

func equalLen(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%d %s, want %d", got, what, want)
	}
}

func idFromSeqUpper(seq int) string { return idFromSeq(seq, 65, 90) }
func idFromSeqLower(seq int) string { return idFromSeq(seq, 97, 122) }
func idFromSeq(seq int, min, max int) string {
	maxSeq := max - min + 1
	nLetters := seq/maxSeq + 1
	result := strings.Builder{}
	result.Grow(nLetters)
	for l := 0; l < nLetters; l++ {
		letter := rune(seq%maxSeq + min)
		result.WriteRune(letter)
	}
	return result.String()
}

func TestListenerSetupAndRemoveOnce(t *testing.T) {
	rl := NewRelay()

	ws1 := &WebSocket{}
	ws2 := &WebSocket{}

	f1 := nostr.Filter{Kinds: []int{1}}
	f2 := nostr.Filter{Kinds: []int{2}}
	f3 := nostr.Filter{Kinds: []int{3}}

	rl.clients[ws1] = nil
	rl.clients[ws2] = nil

	t.Run("adding listeners", func(t *testing.T) {
		listen(rl, ws1, "1a", rl, f1)
		listen(rl, ws1, "1b", rl, f2)
		listen(rl, ws2, "2a", rl, f3)
		listen(rl, ws1, "1c", rl, f3)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"1a", 0, rl},
				{"1b", 1, rl},
				{"1c", 3, rl},
			},
			ws2: {
				{"2a", 2, rl},
			},
		})

		equalListeners(t, rl, []listenerView{
			{"1a", f1, ws1},
			{"1b", f2, ws1},
			{"2a", f3, ws2},
			{"1c", f3, ws1},
		})
	})

	t.Run("removing a client", func(t *testing.T) {
		rl.removeClientAndListeners(ws1)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws2: {
				{"2a", 0, rl},
			},
		})

		equalListeners(t, rl, []listenerView{
			{"2a", f3, ws2},
		})
	})
}

func TestListenerMoreConvolutedCase(t *testing.T) {
	rl := NewRelay()

	ws1 := &WebSocket{}
	ws2 := &WebSocket{}
	ws3 := &WebSocket{}
	ws4 := &WebSocket{}

	f1 := nostr.Filter{Kinds: []int{1}}
	f2 := nostr.Filter{Kinds: []int{2}}
	f3 := nostr.Filter{Kinds: []int{3}}

	rl.clients[ws1] = nil
	rl.clients[ws2] = nil
	rl.clients[ws3] = nil
	rl.clients[ws4] = nil

	t.Run("adding listeners", func(t *testing.T) {
		listen(rl, ws1, "c", rl, f1)
		listen(rl, ws2, "b", rl, f2)
		listen(rl, ws3, "a", rl, f3)
		listen(rl, ws4, "d", rl, f3)
		listen(rl, ws2, "b", rl, f1)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rl},
			},
			ws2: {
				{"b", 1, rl},
				{"b", 4, rl},
			},
			ws3: {
				{"a", 2, rl},
			},
			ws4: {
				{"d", 3, rl},
			},
		})

		equalListeners(t, rl, []listenerView{
			{"c", f1, ws1},
			{"b", f2, ws2},
			{"a", f3, ws3},
			{"d", f3, ws4},
			{"b", f1, ws2},
		})
	})

	t.Run("removing a client", func(t *testing.T) {
		rl.removeClientAndListeners(ws2)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rl},
			},
			ws3: {
				{"a", 2, rl},
			},
			ws4: {
				{"d", 1, rl},
			},
		})

		equalListeners(t, rl, []listenerView{
			{"c", f1, ws1},
			{"d", f3, ws4},
			{"a", f3, ws3},
		})
	})

	t.Run("reorganize the first case differently and then remove again", func(t *testing.T) {
		setState(rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 1, rl},
			},
			ws2: {
				{"b", 2, rl},
				{"b", 4, rl},
			},
			ws3: {
				{"a", 0, rl},
			},
			ws4: {
				{"d", 3, rl},
			},
		}, []listenerView{
			{"a", f3, ws3},
			{"c", f1, ws1},
			{"b", f2, ws2},
			{"d", f3, ws4},
			{"b", f1, ws2},
		})

		rl.removeClientAndListeners(ws2)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 1, rl},
			},
			ws3: {
				{"a", 0, rl},
			},
			ws4: {
				{"d", 2, rl},
			},
		})

		equalListeners(t, rl, []listenerView{
			{"a", f3, ws3},
			{"c", f1, ws1},
			{"d", f3, ws4},
		})
	})
}

func TestListenerMoreStuffWithMultipleRelays(t *testing.T) {
	rl := NewRelay()

	ws1 := &WebSocket{}
	ws2 := &WebSocket{}
	ws3 := &WebSocket{}
	ws4 := &WebSocket{}

	f1 := nostr.Filter{Kinds: []int{1}}
	f2 := nostr.Filter{Kinds: []int{2}}
	f3 := nostr.Filter{Kinds: []int{3}}

	rlx := NewRelay()
	rly := NewRelay()
	rlz := NewRelay()

	rl.clients[ws1] = nil
	rl.clients[ws2] = nil
	rl.clients[ws3] = nil
	rl.clients[ws4] = nil

	t.Run("adding listeners", func(t *testing.T) {
		listen(rl, ws1, "c", rlx, f1)
		listen(rl, ws2, "b", rly, f2)
		listen(rl, ws3, "a", rlz, f3)
		listen(rl, ws4, "d", rlx, f3)
		listen(rl, ws4, "e", rlx, f3)
		listen(rl, ws3, "a", rlx, f3)
		listen(rl, ws4, "e", rly, f3)
		listen(rl, ws3, "f", rly, f3)
		listen(rl, ws1, "g", rlz, f1)
		listen(rl, ws2, "g", rlz, f2)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rlx},
				{"g", 1, rlz},
			},
			ws2: {
				{"b", 0, rly},
				{"g", 2, rlz},
			},
			ws3: {
				{"a", 0, rlz},
				{"a", 3, rlx},
				{"f", 2, rly},
			},
			ws4: {
				{"d", 1, rlx},
				{"e", 2, rlx},
				{"e", 1, rly},
			},
		})

		equalListeners(t, rlx, []listenerView{
			{"c", f1, ws1},
			{"d", f3, ws4},
			{"e", f3, ws4},
			{"a", f3, ws3},
		})

		equalListeners(t, rly, []listenerView{
			{"b", f2, ws2},
			{"e", f3, ws4},
			{"f", f3, ws3},
		})

		equalListeners(t, rlz, []listenerView{
			{"a", f3, ws3},
			{"g", f1, ws1},
			{"g", f2, ws2},
		})
	})

	t.Run("removing a subscription id", func(t *testing.T) {
		// removing 'd' from ws4
		rl.closeSubscriptionId(ws4, "d")

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rlx},
				{"g", 1, rlz},
			},
			ws2: {
				{"b", 0, rly},
				{"g", 2, rlz},
			},
			ws3: {
				{"a", 0, rlz},
				{"a", 1, rlx},
				{"f", 2, rly},
			},
			ws4: {
				{"e", 1, rly},
				{"e", 2, rlx},
			},
		})

		equalListeners(t, rlx, []listenerView{
			{"c", f1, ws1},
			{"a", f3, ws3},
			{"e", f3, ws4},
		})

		equalListeners(t, rly, []listenerView{
			{"b", f2, ws2},
			{"e", f3, ws4},
			{"f", f3, ws3},
		})

		equalListeners(t, rlz, []listenerView{
			{"a", f3, ws3},
			{"g", f1, ws1},
			{"g", f2, ws2},
		})
	})

	t.Run("removing another subscription id", func(t *testing.T) {
		// removing 'a' from ws3
		rl.closeSubscriptionId(ws3, "a")

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rlx},
				{"g", 1, rlz},
			},
			ws2: {
				{"b", 0, rly},
				{"g", 0, rlz},
			},
			ws3: {
				{"f", 2, rly},
			},
			ws4: {
				{"e", 1, rly},
				{"e", 1, rlx},
			},
		})

		equalListeners(t, rlx, []listenerView{
			{"c", f1, ws1},
			{"e", f3, ws4},
		})

		equalListeners(t, rly, []listenerView{
			{"b", f2, ws2},
			{"e", f3, ws4},
			{"f", f3, ws3},
		})

		equalListeners(t, rlz, []listenerView{
			{"g", f2, ws2},
			{"g", f1, ws1},
		})
	})

	t.Run("removing a connection", func(t *testing.T) {
		rl.removeClientAndListeners(ws2)

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rlx},
				{"g", 0, rlz},
			},
			ws3: {
				{"f", 0, rly},
			},
			ws4: {
				{"e", 1, rly},
				{"e", 1, rlx},
			},
		})

		equalListeners(t, rlx, []listenerView{
			{"c", f1, ws1},
			{"e", f3, ws4},
		})

		equalListeners(t, rly, []listenerView{
			{"f", f3, ws3},
			{"e", f3, ws4},
		})

		equalListeners(t, rlz, []listenerView{
			{"g", f1, ws1},
		})
	})

	t.Run("removing another subscription id", func(t *testing.T) {
		// removing 'e' from ws4
		rl.closeSubscriptionId(ws4, "e")

		equalClients(t, rl, map[*WebSocket][]specView{
			ws1: {
				{"c", 0, rlx},
				{"g", 0, rlz},
			},
			ws3: {
				{"f", 0, rly},
			},
			ws4: {},
		})

		equalListeners(t, rlx, []listenerView{
			{"c", f1, ws1},
		})

		equalListeners(t, rly, []listenerView{
			{"f", f3, ws3},
		})

		equalListeners(t, rlz, []listenerView{
			{"g", f1, ws1},
		})
	})
}

func TestRandomListenerClientRemoving(t *testing.T) {
	rl := NewRelay()

	f := nostr.Filter{Kinds: []int{1}}

	websockets := make([]*WebSocket, 0, 20)

	l := 0

	for i := 0; i < 20; i++ {
		ws := &WebSocket{}
		websockets = append(websockets, ws)
		rl.clients[ws] = nil
	}

	for j := 0; j < 20; j++ {
		for i := 0; i < 20; i++ {
			ws := websockets[i]
			w := idFromSeqUpper(i)

			if rand.Intn(2) < 1 {
				l++
				listen(rl, ws, w+":"+idFromSeqLower(j), rl, f)
			}
		}
	}

	equalLen(t, "clients", len(rl.clients), 20)
	equalLen(t, "listeners", len(rl.listeners), l)

	for ws := range rl.clients {
		rl.removeClientAndListeners(ws)
	}

	equalLen(t, "clients", len(rl.clients), 0)
	equalLen(t, "listeners", len(rl.listeners), 0)
}

func TestRandomListenerIdRemoving(t *testing.T) {
	rl := NewRelay()

	f := nostr.Filter{Kinds: []int{1}}

	websockets := make([]*WebSocket, 0, 20)

	type wsid struct {
		ws *WebSocket
		id string
	}

	subs := make([]wsid, 0, 20*20)
	extra := 0

	for i := 0; i < 20; i++ {
		ws := &WebSocket{}
		websockets = append(websockets, ws)
		rl.clients[ws] = nil
	}

	for j := 0; j < 20; j++ {
		for i := 0; i < 20; i++ {
			ws := websockets[i]
			w := idFromSeqUpper(i)

			if rand.Intn(2) < 1 {
				id := w + ":" + idFromSeqLower(j)
				listen(rl, ws, id, rl, f)
				subs = append(subs, wsid{ws, id})

				if rand.Intn(5) < 1 {
					listen(rl, ws, id, rl, f)
					extra++
				}
			}
		}
	}

	equalLen(t, "clients", len(rl.clients), 20)
	equalLen(t, "listeners", len(rl.listeners), len(subs)+extra)

	rand.Shuffle(len(subs), func(i, j int) {
		subs[i], subs[j] = subs[j], subs[i]
	})
	for _, wsidToRemove := range subs {
		rl.closeSubscriptionId(wsidToRemove.ws, wsidToRemove.id)
	}

	equalLen(t, "listeners", len(rl.listeners), 0)
	equalLen(t, "clients", len(rl.clients), 20)
	for _, specs := range rl.clients {
		equalLen(t, "specs", len(specs), 0)
	}
}

func TestRouterListenersPabloCrash(t *testing.T) {
	rl := NewRelay()

	rla := NewRelay()
	rlb := NewRelay()

	ws1 := &WebSocket{}
	ws2 := &WebSocket{}
	ws3 := &WebSocket{}

	rl.clients[ws1] = nil
	rl.clients[ws2] = nil
	rl.clients[ws3] = nil

	f := nostr.Filter{Kinds: []int{1}}

	listen(rl, ws1, ":1", rla, f)
	listen(rl, ws2, ":1", rlb, f)
	listen(rl, ws3, "a", rlb, f)
	listen(rl, ws3, "b", rla, f)
	listen(rl, ws3, "c", rlb, f)

	rl.removeClientAndListeners(ws1)
	rl.removeClientAndListeners(ws3)
}
