package nipcw

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
)

// AuthHeader is the Authorization header of a POST of body to url, the
// `/query` URL (RL-17): a NIP-98 kind 27235 event with the URL, the method
// and the body's SHA-256, signed with the secret key sk (hex). A nonce tag
// makes every token distinct: Schnorr signing here is deterministic, and
// the relay refuses a signature it has seen (replay), as a second request
// in the same second would be.
func AuthHeader(sk, url string, body []byte) (string, error) {
	sum := sha256.Sum256(body)
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("NIP-98 nonce: %w", err)
	}
	ev := nostr.Event{
		CreatedAt: nostr.Now(),
		Kind:      27235,
		Tags: nostr.Tags{
			{"u", url},
			{"method", "POST"},
			{"payload", hex.EncodeToString(sum[:])},
			{"nonce", hex.EncodeToString(nonce[:])},
		},
	}
	if err := ev.Sign(sk); err != nil {
		return "", fmt.Errorf("NIP-98: %w", err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("NIP-98: %w", err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(raw), nil
}
