package khatru

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

var ErrSubscriptionClosedByClient = errors.New("subscription closed by client")

// subscription is one REQ of a connection, open from the REQ until a CLOSE,
// a CLOSED, another REQ with its id, or the connection's end.
//
// buzz-lite patch: subscriptions are known by what they are, not only by
// id, so that one ending removes exactly its own listeners (not those of a
// REQ that replaced it meanwhile), a connection's open subscriptions can be
// counted (RejectRequest), and a listener is never added to a subscription
// that already ended.
type subscription struct {
	id string
	// ctx is the REQ's; it ends with the subscription, and its cause says
	// why (a closedError when the relay ended it).
	ctx    context.Context
	cancel context.CancelCauseFunc
	ended  bool // its listeners are gone; under clientsMutex

	// seen are the ids sent while stored and live events may overlap,
	// nil once they cannot (buzz-lite patch 29, once.go).
	seenMu sync.Mutex
	seen   map[string]struct{}
	// broadcast is the last broadcast that reached it, so that one
	// reaches it once whatever number of its filters match; under
	// clientsMutex (buzz-lite patch 29).
	broadcast uint64
}

// closedError is the cause of a subscription the relay ended with CLOSED.
type closedError struct{ reason string }

func (e closedError) Error() string { return e.reason }

type listenerSpec struct {
	sub      *subscription
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
	// head is the envelope's head for the subscription (eventEnvelopeHead),
	// made once rather than for every event delivered. buzz-lite patch 28.
	head []byte
	// byChannel says filter's "h" condition is channels, the channels its
	// "#h" values name (Relay.FilterChannels), and filter is left without
	// it. buzz-lite patch 30.
	byChannel bool
	channels  []string
}

// channelFilter splits the "#h" condition off f when the relay matches it
// by channel (Relay.FilterChannels): f without it, and the channels its
// values name. f's own tag map is left as it is: the REQ's stored query
// reads it.
//
// buzz-lite patch 30.
func (rl *Relay) channelFilter(f nostr.Filter) (nostr.Filter, []string, bool) {
	hs := f.Tags["h"]
	if hs == nil || rl.FilterChannels == nil || rl.EventChannel == nil {
		return f, nil, false
	}
	tags := make(nostr.TagMap, len(f.Tags)-1)
	for name, values := range f.Tags {
		if name != "h" {
			tags[name] = values
		}
	}
	f.Tags = tags
	return f, rl.FilterChannels(hs), true
}

// eventChannel is the channel of a broadcast event, asked of
// Relay.EventChannel once, when the first listener matched by channel
// needs it. buzz-lite patch 30.
type eventChannel struct {
	of    func(*nostr.Event) string
	event *nostr.Event
	id    string
	known bool
}

func (c *eventChannel) get() string {
	if !c.known {
		c.id, c.known = c.of(c.event), true
	}
	return c.id
}

// matches reports whether l's filter matches event (with anyTime, whatever
// its since and until say): go-nostr's Matches, the "h" condition by
// channel when the listener has it so (buzz-lite patch 30).
func (l *listener) matches(event *nostr.Event, channel *eventChannel, anyTime bool) bool {
	if anyTime {
		if !l.filter.MatchesIgnoringTimestampConstraints(event) {
			return false
		}
	} else if !l.filter.Matches(event) {
		return false
	}
	return !l.byChannel || slices.Contains(l.channels, channel.get())
}

// addListener may be called multiple times for each subscription -- in which case each filter will
// be added as an independent listener
func (rl *Relay) addListener(
	ws *WebSocket,
	sub *subscription,
	subrelay *Relay,
	filter nostr.Filter,
) {
	filter, channels, byChannel := rl.channelFilter(filter)
	rl.clientsMutex.Lock()
	defer rl.clientsMutex.Unlock()

	if specs, ok := rl.clients[ws]; ok && !sub.ended /* this will always be true unless client has disconnected very rapidly */ {
		spec := &listenerSpec{
			sub:      sub,
			subrelay: subrelay,
			index:    len(subrelay.listeners),
		}
		rl.clients[ws] = append(specs, spec)
		subrelay.listeners = append(subrelay.listeners, listener{
			ws:     ws,
			id:     sub.id,
			filter: filter,
			spec:   spec,
			head:   eventEnvelopeHead(sub.id),

			byChannel: byChannel,
			channels:  channels,
		})
	}
}

// rejectRequest is the reason the first RejectRequest hook that refuses req
// gives, or "".
//
// buzz-lite patch.
func (rl *Relay) rejectRequest(ctx context.Context, req Request) string {
	for _, reject := range rl.RejectRequest {
		if rejecting, msg := reject(ctx, req); rejecting {
			return nostr.NormalizeOKMessage(msg, "blocked")
		}
	}
	return ""
}

// openSubscription opens the subscription of a REQ with id and filters
// filters on ws, unless a RejectRequest hook refuses it: then it returns
// nil and the reason. Either way an open subscription with that id ends
// (NIP-01: a REQ replaces it; refused, the id is CLOSED). The hooks run
// under the connection's subsMu, so that the connection's REQs are counted
// one after another and none slips past a cap.
//
// buzz-lite patch.
func (rl *Relay) openSubscription(ctx context.Context, ws *WebSocket, id string, filters int) (*subscription, string) {
	ws.subsMu.Lock()
	old := ws.subs[id]
	if old != nil {
		delete(ws.subs, id)
	}
	var sub *subscription
	reason := rl.rejectRequest(ctx, Request{Label: "REQ", SubscriptionID: id, Filters: filters, Open: len(ws.subs)})
	if reason == "" {
		reqCtx, cancel := context.WithCancelCause(ctx)
		sub = &subscription{id: id, ctx: reqCtx, cancel: cancel,
			seen: make(map[string]struct{})}
		if ws.subs == nil {
			ws.subs = make(map[string]*subscription)
		}
		ws.subs[id] = sub
	}
	ws.subsMu.Unlock()
	if old != nil {
		rl.removeSubscription(ws, old, ErrSubscriptionClosedByClient)
	}
	return sub, reason
}

// closeSubscriptionId ends the open subscription with id on ws, if any (a
// CLOSE).
//
// buzz-lite patch.
func (rl *Relay) closeSubscriptionId(ws *WebSocket, id string) {
	ws.subsMu.Lock()
	sub := ws.subs[id]
	delete(ws.subs, id)
	ws.subsMu.Unlock()
	if sub != nil {
		rl.removeSubscription(ws, sub, ErrSubscriptionClosedByClient)
	}
}

// endSubscription ends sub, which the relay answers with CLOSED, for
// cause.
//
// buzz-lite patch.
func (rl *Relay) endSubscription(ws *WebSocket, sub *subscription, cause error) {
	ws.subsMu.Lock()
	if ws.subs[sub.id] == sub {
		delete(ws.subs, sub.id)
	}
	ws.subsMu.Unlock()
	rl.removeSubscription(ws, sub, cause)
}

// removeSubscription removes the listeners of sub, in time linear in the
// connection's listeners, and cancels its context with cause.
//
// buzz-lite patch.
func (rl *Relay) removeSubscription(ws *WebSocket, sub *subscription, cause error) {
	rl.clientsMutex.Lock()
	sub.ended = true
	if specs, ok := rl.clients[ws]; ok {
		// swap delete the specs of sub
		for s := len(specs) - 1; s >= 0; s-- {
			spec := specs[s]
			if spec.sub == sub {
				specs[s] = specs[len(specs)-1]
				specs[len(specs)-1] = nil
				specs = specs[0 : len(specs)-1]
				removeListener(spec)
			}
		}
		rl.clients[ws] = specs
	}
	rl.clientsMutex.Unlock()
	sub.cancel(cause)
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

// deliverTo is DeliverTo's answer for event, nil without the hook.
//
// buzz-lite patch.
func (rl *Relay) deliverTo(event *nostr.Event) func(ws *WebSocket) bool {
	if rl.DeliverTo == nil {
		return nil
	}
	return rl.DeliverTo(event)
}

// returns how many listeners were notified
//
// buzz-lite patch: the listeners are read under clientsMutex (they are
// changed under it, and reading them unlocked was a data race), and each is
// sent the event without waiting (TrySendJSON), so that one peer that does
// not read never delays the others. deliver (nil: everyone) says, per
// connection, who may receive it: DeliverTo's or SaveEvent's answer,
// asked once per event. once says whether a subscription that sent the
// event's id already skips it (patch 29; false for an overlay).
func (rl *Relay) notifyListeners(event *nostr.Event, deliver func(ws *WebSocket) bool, once bool) int {
	// buzz-lite patch 28: what a delivery needs of a matching listener,
	// not a copy of the listener and its filter, each envelope's head made
	// when the listener was added: a broadcast to a thousand subscribers
	// grew a slice of a thousand filters, and encoded the subscription id
	// a thousand times.
	//
	// buzz-lite patch 29: each subscription once, however many of its
	// filters match, and not when it sent the event already (once.go).
	type target struct {
		ws   *WebSocket
		head []byte
		sub  *subscription
	}
	channel := eventChannel{of: rl.EventChannel, event: event}
	rl.clientsMutex.Lock()
	rl.broadcasts++
	matched := make([]target, 0, 16)
	for i := range rl.listeners {
		l := &rl.listeners[i]
		if sub := l.spec.sub; sub.broadcast != rl.broadcasts && l.matches(event, &channel, false) {
			sub.broadcast = rl.broadcasts
			matched = append(matched, target{l.ws, l.head, sub})
		}
	}
	rl.clientsMutex.Unlock()

	// buzz-lite patch: the event is encoded once, and each subscriber's
	// envelope is its subscription id around those bytes; encoding the
	// whole envelope per subscriber was most of a broadcast's CPU.
	if len(matched) == 0 {
		return 0
	}
	encoded, err := json.Marshal(event)
	if err != nil {
		// Not reached: go-nostr's event encoder has no failing path.
		return 0
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
		if once && !listener.sub.firstTime(event.ID) {
			continue
		}
		listener.ws.trySend(appendEventEnvelope(listener.head, encoded))
		count++
	}
	return count
}

// eventEnvelopeHead is `["EVENT",<id>,`, the head of every envelope of
// subscription id.
func eventEnvelopeHead(id string) []byte {
	quoted, _ := json.Marshal(id) // a string always encodes
	return append(append([]byte(`["EVENT",`), quoted...), ',')
}

// appendEventEnvelope is the envelope of an encoded event after its head,
// in a slice of its own.
func appendEventEnvelope(head, event []byte) []byte {
	b := make([]byte, 0, len(head)+len(event)+1)
	b = append(b, head...)
	b = append(b, event...)
	return append(b, ']')
}

// Listening reports whether a broadcast of event would reach anyone: a
// listener whose filter matches it and whom DeliverTo lets receive it.
// With anyTime, filters' since and until are not checked, so that an
// event whose created_at is not known yet can be asked about.
//
// buzz-lite patch: the relay reads and signs an event it synthesizes for
// live delivery (a thread summary) only when someone would receive it.
func (rl *Relay) Listening(event *nostr.Event, anyTime bool) bool {
	channel := eventChannel{of: rl.EventChannel, event: event}
	rl.clientsMutex.Lock()
	matched := make([]*WebSocket, 0, 8)
	for i := range rl.listeners {
		l := &rl.listeners[i]
		if l.matches(event, &channel, anyTime) {
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
