// Package testutil gives the tests of every package the same schema, keys
// and signed events. Test-only: nothing in the binary imports it.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
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
