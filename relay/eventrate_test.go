package relay

import (
	"net/netip"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// never is a refill too slow to add a token while a test runs: what a
// test sees is the burst alone, whatever the machine's speed.
const never = 1e-9

// withRates turns the event rates on with the given buckets; the others
// stay as large as a test could not reach.
func withRates(perIP, perPubkey, channels Rate, exempt ...netip.Prefix) func(*Config) {
	return func(c *Config) {
		r := DefaultRates
		r.EventsPerIP, r.EventsPerPubkey, r.ChannelsPerPubkey = perIP, perPubkey, channels
		c.Limits.Rates = &r
		c.Limits.Exempt = exempt
	}
}

var plenty = Rate{PerSecond: 1000, Burst: 1000}

// RL-27, finding 5: events count per client IP. A client dialling from
// 127.0.0.2 spends its burst, on every connection from that address, and
// is answered rate-limited; a client on 127.0.0.3 is not affected, and an
// exempt network is never limited. Every event is signed by a fresh key,
// so no pubkey bucket is involved.
func TestEventRatePerIP(t *testing.T) {
	const burst = 5
	s := startServer(t, withRates(Rate{PerSecond: never, Burst: burst}, plenty, plenty, netip.MustParsePrefix("127.0.0.4/32")))
	flooder, again := s.rawFrom(t, "127.0.0.2"), s.rawFrom(t, "127.0.0.2")
	innocent, trusted := s.rawFrom(t, "127.0.0.3"), s.rawFrom(t, "127.0.0.4")
	note := func() *nostr.Event { return testutil.NewSigner(t).Event(t, 1, now(), "note") }

	for range burst {
		mustPublish(t, flooder, note())
	}
	for range 3 {
		mustReject(t, flooder, note(), tooManyEvents)
		mustReject(t, again, note(), tooManyEvents)
	}
	for range burst {
		mustPublish(t, innocent, note())
	}
	for range 2 * burst {
		mustPublish(t, trusted, note())
	}
}

// RL-27: an address's event bucket is taken before the signature is
// checked, so that a flood past its rate, forged or not, costs the relay
// no signature verification: past the burst, a forged event is refused
// for the rate, not for its signature.
func TestEventRatePerIPBeforeVerification(t *testing.T) {
	const burst = 3
	s := startServer(t, withRates(Rate{PerSecond: never, Burst: burst}, plenty, plenty))
	flooder := s.rawFrom(t, "127.0.0.2")
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	forged := func(i int) *nostr.Event {
		ev := a.Event(t, 1, now(), "forged "+string(rune('a'+i)))
		ev.Sig = b.Event(t, 1, now(), "x").Sig
		return ev
	}
	for i := range burst {
		mustReject(t, flooder, forged(i), "invalid: signature is invalid")
	}
	for i := range 3 {
		mustReject(t, flooder, forged(burst+i), tooManyEvents)
	}
}

// RL-27: events count per pubkey too, across connections and addresses;
// forged events (bad signature) in someone's name spend nothing of their
// allowance; another pubkey on the same connection is not affected.
func TestEventRatePerPubkey(t *testing.T) {
	const burst = 4
	s := startServer(t, withRates(plenty, Rate{PerSecond: never, Burst: burst}, plenty))
	a, b := s.rawFrom(t, "127.0.0.2"), s.rawFrom(t, "127.0.0.3")
	victim, other := testutil.NewSigner(t), testutil.NewSigner(t)

	for i := range 2 * burst {
		forged := victim.Event(t, 1, now(), "forged")
		forged.Sig = other.Event(t, 1, now(), "x").Sig
		forged.Content = "forged " + string(rune('a'+i))
		forged.ID = forged.GetID()
		mustReject(t, a, forged, "invalid: signature is invalid")
	}
	for i := range burst {
		mustPublish(t, []*rawClient{a, b}[i%2], victim.Event(t, 1, now(), "mine "+string(rune('a'+i))))
	}
	mustReject(t, a, victim.Event(t, 1, now(), "one more"), tooManyEvents)
	mustReject(t, b, victim.Event(t, 1, now(), "and another"), tooManyEvents)
	mustPublish(t, a, other.Event(t, 1, now(), "someone else"))
}

// RL-27: channel creation has its own bucket per pubkey: a 9007 and a
// first event in a fresh channel (open writes) each take a token; posts to
// existing channels take none; relay admins, who set the community up,
// are not counted.
func TestChannelCreationRate(t *testing.T) {
	const burst = 2
	admin := testutil.NewSigner(t)
	s := startWithPolicy(t, buzz.DefaultPolicy(), admin.PK, withRates(plenty, plenty, Rate{PerSecond: never, Burst: burst}))
	c := s.rawFrom(t, "127.0.0.2")
	maker := testutil.NewSigner(t)

	first := newChannelID(t)
	createChannel(t, c, maker, first, false)
	mustPublish(t, c, chat(t, maker, newChannelID(t), "an implicit channel"))
	mustReject(t, c, maker.Event(t, buzz.KindCreateChannel, now(), "", hTag(newChannelID(t))), tooManyChannels)
	mustReject(t, c, chat(t, maker, newChannelID(t), "another"), tooManyChannels)
	for i := range 3 {
		mustPublish(t, c, chat(t, maker, first, "in an existing channel "+string(rune('a'+i))))
	}
	for range 2 * burst {
		createChannel(t, c, admin, newChannelID(t), false)
	}
	createChannel(t, c, testutil.NewSigner(t), newChannelID(t), false)
}
