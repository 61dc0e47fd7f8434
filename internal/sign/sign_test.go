package sign

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"
)

// RL-21: a signature is the one btcec's schnorr.Sign makes with go-nostr's
// options, byte for byte, and it verifies: for keys of either parity and
// any message.
func FuzzSignAsBtcec(f *testing.F) {
	f.Add([]byte("key"), []byte("message"))
	f.Add([]byte{0}, []byte{})
	f.Add([]byte("another key, odd or even"), []byte("🐝"))
	f.Fuzz(func(t *testing.T, seed, message []byte) {
		secret := sha256.Sum256(seed)
		hash := sha256.Sum256(message)
		k, err := NewKey(hex.EncodeToString(secret[:]))
		if err != nil {
			t.Fatal(err)
		}
		priv, pub := btcec.PrivKeyFromBytes(secret[:])
		want, err := schnorr.Sign(priv, hash[:], schnorr.FastSign())
		if err != nil {
			t.Fatal(err)
		}
		got := k.Sign(hash)
		if hex.EncodeToString(got[:]) != hex.EncodeToString(want.Serialize()) {
			t.Fatalf("key %x, hash %x: signature %x, btcec's %x", secret, hash, got, want.Serialize())
		}
		if k.PubKey() != hex.EncodeToString(schnorr.SerializePubKey(pub)) {
			t.Fatalf("key %x: public key %s", secret, k.PubKey())
		}
		sig, err := schnorr.ParseSignature(got[:])
		if err != nil || !sig.Verify(hash[:], pub) {
			t.Fatalf("key %x, hash %x: signature does not verify (%v)", secret, hash, err)
		}
	})
}

// RL-21: an event signed with Sign is the event go-nostr's Event.Sign makes.
func TestSignsEventsAsGoNostr(t *testing.T) {
	for i := range 64 {
		sk := nostr.GeneratePrivateKey()
		k, err := NewKey(sk)
		if err != nil {
			t.Fatal(err)
		}
		want := nostr.Event{Kind: 39005, CreatedAt: nostr.Timestamp(1700000000 + i), Tags: nostr.Tags{{"d", "x"}}, Content: "{}"}
		if err := want.Sign(sk); err != nil {
			t.Fatal(err)
		}
		got := want
		got.PubKey = k.PubKey()
		hash := sha256.Sum256(got.Serialize())
		sig := k.Sign(hash)
		if got.PubKey != want.PubKey || hex.EncodeToString(hash[:]) != want.ID || hex.EncodeToString(sig[:]) != want.Sig {
			t.Fatalf("key %d: pubkey %s id %x sig %x; go-nostr: %s %s %s", i, got.PubKey, hash, sig, want.PubKey, want.ID, want.Sig)
		}
	}
}

func TestBadKeys(t *testing.T) {
	for _, sk := range []string{"", "zz", "00", hex.EncodeToString(make([]byte, 32)), hex.EncodeToString(make([]byte, 33))} {
		if _, err := NewKey(sk); err != ErrKey {
			t.Errorf("NewKey(%q) = %v, want ErrKey", sk, err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	sk := nostr.GeneratePrivateKey()
	k, _ := NewKey(sk)
	ev := nostr.Event{Kind: 39005, CreatedAt: 1700000000, Tags: nostr.Tags{{"d", "x"}}, Content: "{}"}
	b.Run("sign", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ev.CreatedAt = nostr.Timestamp(i)
			k.Sign(sha256.Sum256(ev.Serialize()))
		}
	})
	b.Run("go-nostr", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			ev.CreatedAt = nostr.Timestamp(i)
			if err := ev.Sign(sk); err != nil {
				b.Fatal(err)
			}
		}
	})
}
