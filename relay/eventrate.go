package relay

import (
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// The refusals of the event rates (RL-27).
const (
	tooManyEvents   = "rate-limited: slow down, too many events"
	tooManyChannels = "rate-limited: too many new channels, try again later"
)

// eventRates are the token buckets of the events clients send (RL-27):
// per client IP, per pubkey, and the channels a pubkey creates. Each is
// nil, allowing everything, when rates are off.
type eventRates struct {
	perIP, perPubkey, channels *keyedLimiter
}

func newEventRates(r *Rates) eventRates {
	if r == nil {
		return eventRates{}
	}
	return eventRates{
		perIP:     newKeyedLimiter(r.EventsPerIP),
		perPubkey: newKeyedLimiter(r.EventsPerPubkey),
		channels:  newKeyedLimiter(r.ChannelsPerPubkey),
	}
}

// exempt reports whether conn's events escape every event rate: those of
// a network the configuration exempts, which it trusts (a bridge, the
// operator's tools). That includes the per-pubkey buckets, so that a
// trusted bridge publishing for its users does not spend their allowance.
func exempt(conn *connState, l Limits) bool { return conn != nil && l.exempt(conn.ip) }

// fromIP takes a token for an event from conn's client IP: the first
// check of every event, before its signature is verified, so that a flood
// is refused before anything else is done for it. It returns the refusal,
// or "". conn is nil when the connection is gone.
func (e eventRates) fromIP(conn *connState, l Limits, now time.Time) string {
	if conn == nil || exempt(conn, l) || e.perIP.allow(l.client(conn.ip).String(), now) {
		return ""
	}
	return tooManyEvents
}

// fromPubkey takes a token for ev from its author's bucket, and, when ev
// would create channel h, one from the author's channel creation bucket
// (relay admins, who set the community up, excepted). It is counted only
// for an event whose signature khatru verified, so that no one can spend
// another pubkey's allowance with forged events, and only for one the
// policy (c) accepts. It returns the refusal, or "".
func (e eventRates) fromPubkey(conn *connState, l Limits, c *buzz.Community, ev *nostr.Event, h string, now time.Time) string {
	switch {
	case exempt(conn, l):
		return ""
	case !e.perPubkey.allow(ev.PubKey, now):
		return tooManyEvents
	case e.channels != nil && c.CreatesChannel(ev, h) && !c.IsRelayAdmin(ev.PubKey) && !e.channels.allow(ev.PubKey, now):
		return tooManyChannels
	}
	return ""
}
