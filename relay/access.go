package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/khatru"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file applies the one read rule, buzz.Community.CanRead (RL-12,
// RL-13), to the WebSocket surfaces: the REQ that must authenticate first,
// and live delivery, checked for every subscriber at the moment an event
// is delivered. Stored results and COUNT are scoped by the store with the
// same rule.

// viewer is who reads on the connection of ctx: its NIP-42 pubkey, or
// anonymous.
func viewer(ctx context.Context) buzz.Viewer { return buzz.Viewer(khatru.GetAuthed(ctx)) }

// authRequired is the CLOSED reason of a REQ for a channel that only an
// authenticated connection might read (RL-13). khatru sends the AUTH
// challenge before it.
const authRequired = "auth-required: authenticate to read this channel"

// needsAuth reports whether an anonymous REQ names a channel it may not
// read: private and nonexistent channels answer alike (CW-3), and a value
// that is no channel id names none. A UUID in any spelling names the
// channel of its canonical form, as the REQ's query reads it (CW-2).
func (r *Relay) needsAuth(ctx context.Context, f nostr.Filter) bool {
	hs := f.Tags["h"]
	if len(hs) == 0 || viewer(ctx) != buzz.Anonymous {
		return false
	}
	readsAll := func(c *buzz.Community) bool {
		for _, h := range hs {
			id, ok := nipcw.ParseChannelID(h)
			if !ok || !c.CanReadChannel(buzz.Anonymous, id) {
				return false
			}
		}
		return true
	}
	return !readsAll(r.communityFor(ctx, readsAll))
}

// deliverTo is khatru's DeliverTo hook, for events broadcast without a
// client's EVENT storing them (ingest answers for those): who may receive
// ev, by its broadcastScope.
func (r *Relay) deliverTo(ev *nostr.Event) func(ws *khatru.WebSocket) bool {
	return r.readersOf(broadcastScope(ev))
}

// readersOf is the check, per subscriber, of who may receive an event of
// channel scope now ("": everyone). The access state is read once per
// event.
func (r *Relay) readersOf(scope string) func(ws *khatru.WebSocket) bool {
	if scope == "" {
		return nil
	}
	c := r.store.Community()
	ch := c.Channel(scope)
	return func(ws *khatru.WebSocket) bool {
		return c.CanRead(buzz.Viewer(ws.AuthedPubKey()), ch)
	}
}

func deliverToNobody(*khatru.WebSocket) bool { return false }

// broadcastScope is the channel of an event broadcast without being stored
// by a client's EVENT: an ephemeral event's h tag, or the channel the
// relay's own group state describes.
func broadcastScope(ev *nostr.Event) string {
	if h, err := buzz.ChannelOf(ev.Tags); err == nil && h != "" {
		return h
	}
	switch ev.Kind {
	case buzz.KindGroupMetadata, buzz.KindGroupAdmins, buzz.KindGroupMembers, buzz.KindGroupRoles:
		return ev.Tags.GetD()
	}
	return ""
}
