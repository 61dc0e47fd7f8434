package relay

import (
	"context"

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

// communityFor is the access state to judge a request by: the one last
// seen when it admits the request, else, on a store other processes share,
// the database's state now (RL-33): a channel created or a member added
// through another process holds here from the next request, not from
// whenever its notification arrives. Only what admits returns false for
// costs the round trip: a refusal, or what no later check judges again
// (an ephemeral event); a stale state that admits a read or a stored
// write is judged again by the store in its own snapshot. Should the
// store not answer, the state last seen stands.
func (r *Relay) communityFor(ctx context.Context, admits func(*buzz.Community) bool) *buzz.Community {
	c := r.store.Community()
	shared, ok := r.store.(buzz.SharedStore)
	if !ok || admits(c) {
		return c
	}
	now, err := shared.CommunityNow(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("reading the access state", "err", err)
		}
		return c
	}
	return now
}

// shareEphemeral is khatru's OnEphemeralEvent hook on a store other
// processes share: an ephemeral event, accepted and never stored, reaches
// their subscribers too, under the same access check (RL-33). One that
// cannot be handed on is still delivered here.
func (r *Relay) shareEphemeral(shared buzz.SharedStore) func(ctx context.Context, ev *nostr.Event) {
	return func(ctx context.Context, ev *nostr.Event) {
		if err := shared.Broadcast(context.WithoutCancel(ctx), ev); err != nil {
			r.log.Warn("handing an ephemeral event to the other processes", "id", ev.ID, "kind", ev.Kind, "err", err)
		}
	}
}
