package khatru

import (
	"github.com/nbd-wtf/go-nostr"
)

// BroadcastEvent emits an event to all listeners whose filters' match, skipping all filters and actions
// it also doesn't attempt to store the event or trigger any reactions or callbacks
func (rl *Relay) BroadcastEvent(evt *nostr.Event) int {
	return rl.notifyListeners(evt, rl.deliverTo(evt), true) // buzz-lite patch
}

// BroadcastOverlay is BroadcastEvent for an event no stored read returns
// (the relay's live overlays): a subscription receives it even when it
// received an event of the same id before, since the same content at the
// same second is a state told again, not a stored event met twice.
//
// buzz-lite patch 29.
func (rl *Relay) BroadcastOverlay(evt *nostr.Event) int {
	return rl.notifyListeners(evt, rl.deliverTo(evt), false)
}

// BroadcastEventTo is BroadcastEvent with deliver (nil: everyone) saying
// who may receive evt, in place of DeliverTo: the caller knows what
// DeliverTo cannot tell from the event alone, as SaveEvent does for a
// stored one.
//
// buzz-lite patch 25.
func (rl *Relay) BroadcastEventTo(evt *nostr.Event, deliver func(ws *WebSocket) bool) int {
	return rl.notifyListeners(evt, deliver, true)
}
