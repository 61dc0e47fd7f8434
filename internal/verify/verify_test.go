package verify

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// goNostr is what go-nostr's checks say of ev, in Event's terms.
func goNostr(ev *nostr.Event) error {
	if !ev.CheckID() {
		return ErrID
	}
	ok, err := ev.CheckSignature()
	switch {
	case err != nil:
		return err
	case !ok:
		return ErrSignature
	}
	return nil
}

// same reports whether two verdicts are the same: both nil, both ErrID,
// both ErrSignature, or both some other error.
func same(a, b error) bool {
	for _, sentinel := range []error{ErrID, ErrSignature} {
		if errors.Is(a, sentinel) || errors.Is(b, sentinel) {
			return errors.Is(a, sentinel) && errors.Is(b, sentinel)
		}
	}
	return (a == nil) == (b == nil)
}

func signed(t testing.TB, sk string, content string) *nostr.Event {
	ev := &nostr.Event{Kind: 9, CreatedAt: 1700000000, Content: content, Tags: nostr.Tags{{"h", "abc123"}}}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

// Issue 15: one hash for id and signature agrees with go-nostr's two
// checks on valid events and on every way of breaking one, first seen and
// with the author's key cached.
func TestAgreesWithGoNostr(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	other := signed(t, nostr.GeneratePrivateKey(), "other")
	cases := map[string]func(ev *nostr.Event){
		"valid":                 func(*nostr.Event) {},
		"content changed":       func(ev *nostr.Event) { ev.Content += "!" },
		"id uppercase":          func(ev *nostr.Event) { ev.ID = strings.ToUpper(ev.ID) },
		"id short":              func(ev *nostr.Event) { ev.ID = ev.ID[:62] },
		"sig of another event":  func(ev *nostr.Event) { ev.Sig = other.Sig },
		"sig flipped":           func(ev *nostr.Event) { ev.Sig = flip(ev.Sig) },
		"sig not hex":           func(ev *nostr.Event) { ev.Sig = "zz" + ev.Sig[2:] },
		"sig short":             func(ev *nostr.Event) { ev.Sig = ev.Sig[:126] },
		"sig uppercase":         func(ev *nostr.Event) { ev.Sig = strings.ToUpper(ev.Sig) },
		"pubkey of another":     func(ev *nostr.Event) { ev.PubKey = other.PubKey; ev.ID = ev.GetID() },
		"pubkey not on curve":   func(ev *nostr.Event) { ev.PubKey = strings.Repeat("ff", 32); ev.ID = ev.GetID() },
		"pubkey not hex":        func(ev *nostr.Event) { ev.PubKey = "zz" + ev.PubKey[2:]; ev.ID = ev.GetID() },
		"pubkey uppercase":      func(ev *nostr.Event) { ev.PubKey = strings.ToUpper(ev.PubKey); ev.ID = ev.GetID() },
		"pubkey compressed":     func(ev *nostr.Event) { ev.PubKey = "02" + ev.PubKey; ev.ID = ev.GetID() },
		"created_at changed":    func(ev *nostr.Event) { ev.CreatedAt++ },
		"tags changed, id kept": func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"p", ev.PubKey}) },
	}
	var v Verifier
	for round := range 2 { // the second round with every key cached
		for name, mutate := range cases {
			ev := signed(t, sk, name)
			mutate(ev)
			got, want := v.Event(ev), goNostr(ev)
			if !same(got, want) {
				t.Errorf("round %d, %s: got %v, go-nostr %v", round, name, got, want)
			}
		}
	}
}

func flip(sig string) string {
	b := []byte(sig)
	if b[10] == '0' {
		b[10] = '1'
	} else {
		b[10] = '0'
	}
	return string(b)
}

// The cache stays within two generations however many authors come, and
// a key still verifies after its generation was dropped.
func TestKeysBounded(t *testing.T) {
	var v Verifier
	first := signed(t, nostr.GeneratePrivateKey(), "first")
	if err := v.Event(first); err != nil {
		t.Fatal(err)
	}
	for i := range 2*keysPerGeneration + 10 {
		var pk [32]byte
		pk[0], pk[1], pk[2] = byte(i), byte(i>>8), 1
		v.mu.Lock()
		v.put(pk, nil)
		v.mu.Unlock()
		if n := len(v.current) + len(v.previous); n > 2*keysPerGeneration {
			t.Fatalf("%d keys kept", n)
		}
	}
	if err := v.Event(first); err != nil {
		t.Errorf("after eviction: %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	var v Verifier
	evs := []*nostr.Event{signed(t, nostr.GeneratePrivateKey(), "a"), signed(t, nostr.GeneratePrivateKey(), "b")}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if err := v.Event(evs[(i+j)%2]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// seedEvents adds events of one author to f's corpus as JSON, and returns
// the author's secret key.
func seedEvents(f *testing.F) string {
	sk := nostr.GeneratePrivateKey()
	for _, content := range []string{"", "hello", "ünïcødé \n\t\"quoted\""} {
		b, err := json.Marshal(signed(f, sk, content))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	return sk
}

// Issue 15: on any event JSON, the verdict is go-nostr's.
func FuzzAgreesWithGoNostr(f *testing.F) {
	seedEvents(f)
	var v Verifier
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev nostr.Event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		if got, want := v.Event(&ev), goNostr(&ev); !same(got, want) {
			t.Errorf("%s: got %v, go-nostr %v", data, got, want)
		}
	})
}

// Issue 15: what one event's checks cost, go-nostr's two and Event with
// the author's key cached (the relay's case: authors write again and
// again).
//
//	go test ./internal/verify -run '^$' -bench . -count 6
func BenchmarkVerify(b *testing.B) {
	ev := signed(b, nostr.GeneratePrivateKey(), "a message of ordinary length, with an h tag")
	b.Run("go-nostr", func(b *testing.B) {
		for b.Loop() {
			if goNostr(ev) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		var v Verifier
		for b.Loop() {
			if v.Event(ev) != nil {
				b.Fatal("invalid")
			}
		}
	})
}
