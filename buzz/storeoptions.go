package buzz

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// StoreBasics are what every store makes of the options they share, the
// same way: how it logs, its clock, the access policy it judges by and
// the relay key's public key.
type StoreBasics struct {
	// Log discards when the options give no logger.
	Log *slog.Logger
	// Now is time.Now when the options give no clock.
	Now func() time.Time
	// Policy is the configured one, DefaultPolicy without one, and its
	// relay admins those of the policy and the admins given beside it.
	Policy Policy
	// RelayPubKey is the hex public key of the relay key, "" without one.
	RelayPubKey string
}

// NewStoreBasics makes the StoreBasics of a store's options: its logger
// and clock (nil for the defaults), its policy (nil for DefaultPolicy),
// further relay admins (hex pubkeys) and its relay key (hex secret key,
// "" for none).
func NewStoreBasics(log *slog.Logger, now func() time.Time, policy *Policy, admins []string, relayKey string) (StoreBasics, error) {
	b := StoreBasics{Log: log, Now: now, Policy: DefaultPolicy()}
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	if policy != nil {
		b.Policy = *policy
	}
	all := make(map[string]bool, len(b.Policy.Admins)+len(admins))
	for a := range b.Policy.Admins {
		all[a] = true
	}
	for _, a := range admins {
		all[a] = true
	}
	b.Policy.Admins = all
	if relayKey != "" {
		pk, err := nostr.GetPublicKey(relayKey)
		if err != nil {
			return b, fmt.Errorf("relay key: %w", err)
		}
		b.RelayPubKey = pk
	}
	return b, nil
}
