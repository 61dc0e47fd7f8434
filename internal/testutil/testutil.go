// Package testutil gives the tests of every package the same schema, keys,
// signed events and fixtures, a clock they move, and temporary files.
// Test-only: nothing in the binary imports it.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// Schema returns the text of the repository's schema.sql, the file the
// binary embeds.
func Schema(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate testutil source")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Signer is a test identity.
type Signer struct {
	SK, PK string
}

// NewSigner makes a fresh key pair.
func NewSigner(t testing.TB) Signer {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return Signer{SK: sk, PK: pk}
}

// Event returns a signed event of this signer.
func (s Signer) Event(t testing.TB, kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{
		PubKey:    s.PK,
		CreatedAt: nostr.Timestamp(createdAt),
		Kind:      kind,
		Tags:      nostr.Tags(tags),
		Content:   content,
	}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(s.SK); err != nil {
		t.Fatal(err)
	}
	return ev
}

// NewPubKey makes the public key of a fresh key pair, in hex and as an npub
// (NIP-19).
func NewPubKey(t testing.TB) (hex, npub string) {
	t.Helper()
	pk := NewSigner(t).PK
	npub, err := nip19.EncodePublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	return pk, npub
}

// WriteFile writes content to a file called name in a fresh t.TempDir() and
// returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Signers counts by signer the events that query answers to f.
func Signers(t testing.TB, query func(nostr.Filter) ([]*nostr.Event, error), f nostr.Filter) map[string]int {
	t.Helper()
	evs, err := query(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range evs {
		out[ev.PubKey]++
	}
	return out
}
