package khatru

import (
	"context"
	"errors"

	"github.com/nbd-wtf/go-nostr"
)

var ErrSubscriptionClosedByClient = errors.New("subscription closed by client")

type listenerSpec struct {
	id       string // kept here so we can easily match against it removeListenerId
	cancel   context.CancelCauseFunc
	index    int
	subrelay *Relay // this is important when we're dealing with routing, otherwise it will be always the same
}

// buzz-lite patch: a listener points at its spec, so that the spec of a
// listener moved by a swap-delete is fixed in O(1); it was searched for
// among all the specs of its connection, which made removing a connection's
// n listeners O(n^2) under the global clientsMutex (RL-27a).
type listener struct {
	id     string // duplicated here so we can easily send it on notifyListeners
	filter nostr.Filter
	ws     *WebSocket
	spec   *listenerSpec
}

func (rl *Relay) GetListeningFilters() []nostr.Filter {
	respfilters := make([]nostr.Filter, len(rl.listeners))
	for i, l := range rl.listeners {
		respfilters[i] = l.filter
	}
	return respfilters
}

// addListener may be called multiple times for each id and ws -- in which case each filter will
// be added as an independent listener
func (rl *Relay) addListener(
	ws *WebSocket,
	id string,
	subrelay *Relay,
	filter nostr.Filter,
	cancel context.CancelCauseFunc,
) {
	rl.clientsMutex.Lock()
	defer rl.clientsMutex.Unlock()

	if specs, ok := rl.clients[ws]; ok /* this will always be true unless client has disconnected very rapidly */ {
		spec := &listenerSpec{
			id:       id,
			cancel:   cancel,
			subrelay: subrelay,
			index:    len(subrelay.listeners),
		}
		rl.clients[ws] = append(specs, spec)
		subrelay.listeners = append(subrelay.listeners, listener{
			ws:     ws,
			id:     id,
			filter: filter,
			spec:   spec,
		})
	}
}

// remove a specific subscription id from listeners for a given ws client
// and cancel its specific context
func (rl *Relay) removeListenerId(ws *WebSocket, id string) {
	rl.clientsMutex.Lock()
	defer rl.clientsMutex.Unlock()

	if specs, ok := rl.clients[ws]; ok {
		// swap delete specs that match this id
		for s := len(specs) - 1; s >= 0; s-- {
			spec := specs[s]
			if spec.id == id {
				spec.cancel(ErrSubscriptionClosedByClient)
				specs[s] = specs[len(specs)-1]
				specs[len(specs)-1] = nil
				specs = specs[0 : len(specs)-1]
				rl.clients[ws] = specs
				removeListener(spec)
			}
		}
	}
}

func (rl *Relay) removeClientAndListeners(ws *WebSocket) {
	rl.clientsMutex.Lock()
	defer rl.clientsMutex.Unlock()
	// no need to cancel contexts since they inherit from the main connection context
	for _, spec := range rl.clients[ws] {
		removeListener(spec)
	}
	delete(rl.clients, ws)
}

// removeListener swap-deletes the listener of spec from its relay's list,
// in O(1). Called with clientsMutex held.
//
// buzz-lite patch (see listener).
func removeListener(spec *listenerSpec) {
	srl := spec.subrelay // == rl in normal cases, but different when this came from a route
	last := len(srl.listeners) - 1
	if spec.index != last {
		moved := srl.listeners[last] // this wasn't removed, but will be moved
		srl.listeners[spec.index] = moved
		moved.spec.index = spec.index
	}
	srl.listeners[last] = listener{} // the slice keeps no filter or connection alive
	srl.listeners = srl.listeners[:last]
}

// returns how many listeners were notified
//
// buzz-lite patch: the listeners are read under clientsMutex (they are
// changed under it, and reading them unlocked was a data race), and each is
// sent the event without waiting (TrySendJSON), so that one peer that does
// not read never delays the others.
func (rl *Relay) notifyListeners(event *nostr.Event) int {
	rl.clientsMutex.Lock()
	matched := make([]listener, 0, 8)
	for _, l := range rl.listeners {
		if l.filter.Matches(event) {
			matched = append(matched, l)
		}
	}
	rl.clientsMutex.Unlock()

	// buzz-lite patch: DeliverTo is asked once per event (also when nobody
	// listens, so that it may forget what it kept for the event) and says,
	// per connection, who may receive it.
	var deliver func(ws *WebSocket) bool
	if rl.DeliverTo != nil {
		deliver = rl.DeliverTo(event)
	}

	count := 0
listenersloop:
	for _, listener := range matched {
		if deliver != nil && !deliver(listener.ws) {
			continue
		}
		for _, pb := range rl.PreventBroadcast {
			if pb(listener.ws, event) {
				continue listenersloop
			}
		}
		listener.ws.TrySendJSON(nostr.EventEnvelope{SubscriptionID: &listener.id, Event: *event})
		count++
	}
	return count
}

// Listening reports whether a broadcast of event would reach anyone: a
// listener whose filter matches it and whom DeliverTo lets receive it.
// With anyTime, filters' since and until are not checked, so that an
// event whose created_at is not known yet can be asked about.
//
// buzz-lite patch: the relay reads and signs an event it synthesizes for
// live delivery (a thread summary) only when someone would receive it.
func (rl *Relay) Listening(event *nostr.Event, anyTime bool) bool {
	rl.clientsMutex.Lock()
	matched := make([]*WebSocket, 0, 8)
	for _, l := range rl.listeners {
		if (anyTime && l.filter.MatchesIgnoringTimestampConstraints(event)) || (!anyTime && l.filter.Matches(event)) {
			matched = append(matched, l.ws)
		}
	}
	rl.clientsMutex.Unlock()
	if len(matched) == 0 || rl.DeliverTo == nil {
		return len(matched) > 0
	}
	deliver := rl.DeliverTo(event)
	for _, ws := range matched {
		if deliver == nil || deliver(ws) {
			return true
		}
	}
	return false
}
