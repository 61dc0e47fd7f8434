package buzz

import (
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// MaxFuture is how far ahead of the relay's clock an event may be dated
// (RL-9). Old events are accepted: clients republish history.
const MaxFuture = 15 * time.Minute

// CheckSubmission applies the rules every client-submitted event must pass
// before the database is asked anything, on every surface (WebSocket,
// import): lowercase hex, relay-only kinds (CW-22), the date (RL-9), the
// channel tags, and a d tag with a value.
func CheckSubmission(ev *nostr.Event, now time.Time) error {
	// go-nostr verifies an uppercase pubkey too, but NIP-01 spells ids,
	// pubkeys and signatures in lowercase, and that is how they are stored
	// and served: an event spelled otherwise would be served unverifiable.
	if !nipcw.IsLowerHex64(ev.ID) || !nipcw.IsLowerHex64(ev.PubKey) || len(ev.Sig) != 128 ||
		!nipcw.IsLowerHex64(ev.Sig[:64]) || !nipcw.IsLowerHex64(ev.Sig[64:]) {
		return ErrNotLowerHex
	}
	if IsRelayOnlyKind(ev.Kind) {
		return ErrRelayOnlyKind
	}
	if time.Unix(int64(ev.CreatedAt), 0).After(now.Add(MaxFuture)) {
		return ErrTooFarInFuture
	}
	if _, err := ChannelOf(ev.Tags); err != nil {
		return err
	}
	// Where khatru reads a d tag (every kind it does not call regular), a
	// bare ["d"] would make it index past the end of the tag.
	if !IsEphemeralKind(ev.Kind) && !(ev.Kind < 10000 && ev.Kind != 0 && ev.Kind != 3) {
		for _, tag := range ev.Tags {
			if len(tag) == 1 && tag[0] == "d" {
				return ErrMalformedDTag
			}
		}
	}
	return nil
}

// EventSize is the length of ev's JSON, give or take the escapes: what
// the event size limit measures (RL-27) and what bounds in bytes count
// (RL-27a) for decoded events (events read as stored JSON count that
// JSON's length).
func EventSize(ev *nostr.Event) int {
	n := 64 + 64 + 128 + 100 + len(ev.Content)
	for _, tag := range ev.Tags {
		n += 3
		for _, s := range tag {
			n += len(s) + 3
		}
	}
	return n
}
