package relay

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// deliverRemote delivers live an event another relay process stored in the
// database they share (RL-33): to this process's subscriptions that match
// it, under the delivery-time access check of its own events (RL-8,
// RL-13), then the thread summaries it changed, pushed by the process that
// holds the subscription (CW-21).
func (r *Relay) deliverRemote(ev *nostr.Event, a buzz.Admitted) {
	scope := a.Scope
	if scope == "" {
		// The relay's own group state names its channel in its d tag, as
		// it does when this process publishes it (broadcastScope).
		scope = broadcastScope(ev)
	}
	r.kh.BroadcastEventTo(ev, r.readersOf(scope))
	if len(a.Threads) > 0 {
		r.pushSummaries(a.Threads)
	}
}
