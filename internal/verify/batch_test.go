package verify

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr"
)

// order is the order n of secp256k1's group.
var order, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

// offCurveX is, in hex, the least x of no point on the curve.
func offCurveX(t testing.TB) string {
	for x := uint16(1); ; x++ {
		var fx, y btcec.FieldVal
		fx.SetInt(x)
		if !btcec.DecompressY(&fx, false, &y) {
			b := fx.Bytes()
			return hex.EncodeToString(b[:])
		}
	}
}

// withS is sig with its s replaced by f(s).
func withS(sig string, f func(s *big.Int) *big.Int) string {
	s, _ := new(big.Int).SetString(sig[64:], 16)
	return sig[:64] + fmt.Sprintf("%064x", f(s))
}

// brokenWays are the ways to break a signed event that Events must judge
// as Event does, alone or among valid events: what only the signature
// check finds and what is found before it.
func brokenWays(t testing.TB) map[string]func(ev *nostr.Event) {
	other := signed(t, nostr.GeneratePrivateKey(), "other")
	offCurve := offCurveX(t)
	return map[string]func(ev *nostr.Event){
		"content changed":      func(ev *nostr.Event) { ev.Content += "!" },
		"sig of another event": func(ev *nostr.Event) { ev.Sig = other.Sig },
		"sig flipped":          func(ev *nostr.Event) { ev.Sig = flip(ev.Sig) },
		"s plus one": func(ev *nostr.Event) {
			ev.Sig = withS(ev.Sig, func(s *big.Int) *big.Int { return s.Add(s, big.NewInt(1)) })
		},
		"s negated": func(ev *nostr.Event) { ev.Sig = withS(ev.Sig, func(s *big.Int) *big.Int { return s.Sub(order, s) }) },
		"s the order": func(ev *nostr.Event) {
			ev.Sig = withS(ev.Sig, func(*big.Int) *big.Int { return new(big.Int).Set(order) })
		},
		"r not on the curve":  func(ev *nostr.Event) { ev.Sig = offCurve + ev.Sig[64:] },
		"r above the prime":   func(ev *nostr.Event) { ev.Sig = strings.Repeat("f", 64) + ev.Sig[64:] },
		"r of another event":  func(ev *nostr.Event) { ev.Sig = other.Sig[:64] + ev.Sig[64:] },
		"pubkey of another":   func(ev *nostr.Event) { ev.PubKey = other.PubKey; ev.ID = ev.GetID() },
		"pubkey not on curve": func(ev *nostr.Event) { ev.PubKey = strings.Repeat("ff", 32); ev.ID = ev.GetID() },
		"sig uppercase":       func(ev *nostr.Event) { ev.Sig = strings.ToUpper(ev.Sig) },
		"sig short":           func(ev *nostr.Event) { ev.Sig = ev.Sig[:126] },
		"id changed":          func(ev *nostr.Event) { ev.ID = flip(ev.ID) },
	}
}

// authors are a few secret keys, as a chat's events come from a few
// authors again and again.
func authors(n int) []string {
	sks := make([]string, n)
	for i := range sks {
		sks[i] = nostr.GeneratePrivateKey()
	}
	return sks
}

// Issue 32: a batch's verdicts are Event's, event by event, for batches
// of every size, all valid or with broken events anywhere in them, alone
// or several, and the first time an author is seen or with its key kept.
func TestEventsAgreesWithEvent(t *testing.T) {
	sks := authors(5)
	ways := brokenWays(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var v Verifier
	check := func(name string, evs []*nostr.Event) {
		t.Helper()
		errs := make([]error, len(evs))
		v.Events(evs, errs)
		for i, ev := range evs {
			if want := v.Event(ev); !same(errs[i], want) {
				t.Errorf("%s: event %d of %d: %v, Event says %v", name, i, len(evs), errs[i], want)
			}
		}
	}
	batch := func(n int) []*nostr.Event {
		evs := make([]*nostr.Event, n)
		for i := range evs {
			evs[i] = signed(t, sks[rng.IntN(len(sks))], fmt.Sprint("message ", i, rng.Int()))
		}
		return evs
	}
	for _, n := range []int{0, 1, 2, 3, 5, 16, 64} {
		check(fmt.Sprintf("%d valid", n), batch(n))
	}
	for name, broken := range ways {
		for _, n := range []int{1, 3, 17, 64} {
			evs := batch(n)
			broken(evs[rng.IntN(n)])
			check(fmt.Sprintf("%s, one of %d", name, n), evs)
		}
	}
	evs := batch(64)
	for name, broken := range ways {
		broken(evs[rng.IntN(len(evs))])
		check("several broken: up to "+name, evs)
	}
}

// Issue 32: the batch equation itself holds for valid signatures (the
// check, not the fallback, accepts them) and fails as soon as one of
// them is broken.
func TestBatchHolds(t *testing.T) {
	sks := authors(3)
	var v Verifier
	var evs []*nostr.Event
	for i := range 40 {
		evs = append(evs, signed(t, sks[i%3], fmt.Sprint("message ", i)))
	}
	terms := func() []batchTerm {
		var ts []batchTerm
		for _, ev := range evs {
			tm, ok := v.term(ev)
			if !ok {
				t.Fatalf("no term for %v", ev)
			}
			ts = append(ts, tm)
		}
		return ts
	}
	if !batchHolds(terms()) {
		t.Fatal("40 valid signatures do not hold together")
	}
	for _, n := range []int{3, 7} {
		if !batchHolds(terms()[:n]) {
			t.Fatalf("%d valid signatures do not hold together", n)
		}
	}
	evs[17].Sig = withS(evs[17].Sig, func(s *big.Int) *big.Int { return s.Add(s, big.NewInt(1)) })
	if batchHolds(terms()) {
		t.Fatal("a broken signature holds with 39 valid ones")
	}
	// An r that is no point's x is found before any batch: such an event
	// cannot make the batch of others fail.
	offCurve := *evs[0]
	offCurve.Sig = offCurveX(t) + offCurve.Sig[64:]
	if _, ok := v.term(&offCurve); ok {
		t.Fatal("an r off the curve made a batch term")
	}
}

// wnaf's digits are k again, each zero or odd within the window, and
// every window holds at most one digit that is not zero.
func TestWNAF(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(15), big.NewInt(16), big.NewInt(31),
		new(big.Int).Sub(order, big.NewInt(1)), new(big.Int).Lsh(big.NewInt(1), 255)}
	for range 200 {
		var b [32]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		values = append(values, new(big.Int).SetBytes(b[:]))
	}
	for _, want := range values {
		var k btcec.ModNScalar
		k.SetByteSlice(want.Bytes())
		var digits [257]int8
		n := wnaf(&k, &digits)
		kb := k.Bytes()
		want = new(big.Int).SetBytes(kb[:]) // reduced modulo the order
		got := new(big.Int)
		last := -window
		for i := n - 1; i >= 0; i-- {
			d := digits[i]
			got.Lsh(got, 1).Add(got, big.NewInt(int64(d)))
			if d == 0 {
				continue
			}
			if d%2 == 0 || d >= 1<<(window-1) || d <= -(1<<(window-1)) {
				t.Fatalf("%x: digit %d is %d", want, i, d)
			}
			if last-i < window && last >= 0 {
				t.Fatalf("%x: digits %d and %d in one window", want, last, i)
			}
			last = i
		}
		if got.Cmp(want) != 0 {
			t.Fatalf("digits of %x are %x", want, got)
		}
	}
}

// Issue 32: on any event JSON among valid events, a batch's verdict on it
// is Event's.
func FuzzEventsAgreesWithEvent(f *testing.F) {
	sk := seedEvents(f)
	valid := []*nostr.Event{signed(f, sk, "one"), signed(f, nostr.GeneratePrivateKey(), "two"), signed(f, sk, "three")}
	var v Verifier
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev nostr.Event
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		evs := append([]*nostr.Event{&ev}, valid...)
		errs := make([]error, len(evs))
		v.Events(evs, errs)
		if want := v.Event(&ev); !same(errs[0], want) {
			t.Errorf("%s: %v, Event says %v", data, errs[0], want)
		}
		for i, err := range errs[1:] {
			if err != nil {
				t.Errorf("valid event %d beside %s: %v", i, data, err)
			}
		}
	})
}

// Issue 32: what an event's verification costs in batches, against
// Event's (BenchmarkVerify), authors' keys kept as the relay keeps them.
//
//	go test ./internal/verify -run '^$' -bench . -count 6
func BenchmarkVerifyBatch(b *testing.B) {
	sks := authors(8)
	for _, n := range []int{4, 16, 64, 256} {
		evs := make([]*nostr.Event, n)
		for i := range evs {
			evs[i] = signed(b, sks[i%len(sks)], fmt.Sprint("a message of ordinary length, with an h tag ", i))
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var v Verifier
			errs := make([]error, n)
			for b.Loop() {
				v.Events(evs, errs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}

// Issue 32: events checked by many goroutines at once get Event's
// verdicts, each its own, whether they are verified alone or in groups,
// and every goroutine returns.
func TestGroupVerdicts(t *testing.T) {
	sks := authors(4)
	ways := brokenWays(t)
	var evs []*nostr.Event
	var want []error
	var v Verifier
	for i := range 400 {
		ev := signed(t, sks[i%len(sks)], fmt.Sprint("message ", i))
		if i%7 == 3 {
			for _, spoil := range ways {
				spoil(ev)
				break
			}
		}
		evs = append(evs, ev)
		want = append(want, v.Event(ev))
	}
	for _, goroutines := range []int{16, 100} {
		g := NewGroup(&Verifier{})
		g.cores = 2
		got := make([]error, len(evs))
		var wg sync.WaitGroup
		for w := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(evs); i += goroutines {
					got[i] = g.Event(evs[i])
				}
			}()
		}
		wg.Wait()
		for i := range evs {
			if !same(got[i], want[i]) {
				t.Errorf("%d goroutines, event %d: %v, Event says %v", goroutines, i, got[i], want[i])
			}
		}
		if g.working != 0 || len(g.waiting) != 0 {
			t.Errorf("%d goroutines, after all returned: %d verifying, %d waiting", goroutines, g.working, len(g.waiting))
		}
	}
}
