// Package verify checks a nostr event's id and signature as the relay
// receives it: one serialization and one hash serve both checks, and the
// parsed public keys of recent authors are kept, so that an event costs
// one Schnorr verification and little else (issue 15).
package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"
)

var (
	// ErrID is an id that is not the hash of the event's serialization.
	ErrID = errors.New("id is computed incorrectly")
	// ErrSignature is a well-formed signature that does not verify.
	ErrSignature = errors.New("signature is invalid")
)

// keysPerGeneration bounds the parsed keys kept: two generations of this
// many (the current one, and the one before it, read from until the
// current fills), about 200 bytes each.
const keysPerGeneration = 4096

// Verifier checks events; the zero value is ready. It is safe for
// concurrent use.
type Verifier struct {
	mu       sync.Mutex
	current  map[[32]byte]*btcec.PublicKey
	previous map[[32]byte]*btcec.PublicKey
}

// Event reports whether ev's id is the hash of its serialization and its
// signature verifies against its pubkey with that hash: nil, ErrID,
// ErrSignature, or another error for a pubkey or signature that cannot be
// parsed. It agrees with go-nostr's CheckID and CheckSignature together.
func (v *Verifier) Event(ev *nostr.Event) error {
	return v.hashed(ev, sha256.Sum256(ev.Serialize()))
}

// hashed is Event of ev whose serialization's hash is hash.
func (v *Verifier) hashed(ev *nostr.Event, hash [32]byte) error {
	if ev.ID != hex.EncodeToString(hash[:]) {
		return ErrID
	}
	var pk [32]byte
	if len(ev.PubKey) != 64 {
		return fmt.Errorf("event pubkey %q is not 64 hex characters", ev.PubKey)
	}
	if _, err := hex.Decode(pk[:], []byte(ev.PubKey)); err != nil {
		return fmt.Errorf("event pubkey %q is invalid hex: %w", ev.PubKey, err)
	}
	pubkey, err := v.key(pk)
	if err != nil {
		return err
	}
	sigBytes, err := hex.DecodeString(ev.Sig)
	if err != nil {
		return fmt.Errorf("signature %q is invalid hex: %w", ev.Sig, err)
	}
	sig, err := schnorr.ParseSignature(sigBytes)
	if err != nil {
		return fmt.Errorf("failed to parse signature: %w", err)
	}
	if !sig.Verify(hash[:], pubkey) {
		return ErrSignature
	}
	return nil
}

// key is the parsed public key of pk, from the cache when an author was
// seen lately.
func (v *Verifier) key(pk [32]byte) (*btcec.PublicKey, error) {
	v.mu.Lock()
	k, ok := v.current[pk]
	if !ok {
		if k, ok = v.previous[pk]; ok {
			v.put(pk, k)
		}
	}
	v.mu.Unlock()
	if ok {
		return k, nil
	}
	k, err := schnorr.ParsePubKey(pk[:])
	if err != nil {
		return nil, fmt.Errorf("event has invalid pubkey %x: %w", pk, err)
	}
	v.mu.Lock()
	v.put(pk, k)
	v.mu.Unlock()
	return k, nil
}

// put keeps k under pk in the current generation, starting a new one when
// it is full. Called with mu held.
func (v *Verifier) put(pk [32]byte, k *btcec.PublicKey) {
	if len(v.current) >= keysPerGeneration {
		v.previous, v.current = v.current, nil
	}
	if v.current == nil {
		v.current = make(map[[32]byte]*btcec.PublicKey, keysPerGeneration)
	}
	v.current[pk] = k
}
