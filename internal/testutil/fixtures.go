package testutil

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/nbd-wtf/go-nostr"
)

// Clock is a store clock the test moves. A store reads it from goroutines
// of its own (a writer, a purge loop), hence the atomic.
type Clock struct{ unix atomic.Int64 }

// NewClock is a clock standing at unix seconds.
func NewClock(unix int64) *Clock {
	c := &Clock{}
	c.unix.Store(unix)
	return c
}

// Now is the clock's time, to give a store as its clock.
func (c *Clock) Now() time.Time { return time.Unix(c.unix.Load(), 0) }

// Set moves the clock to unix seconds.
func (c *Clock) Set(unix int64) { c.unix.Store(unix) }

// SortedSigners makes n signers sorted by pubkey, so that tests can reason
// about the pubkey ASC tie-break of thread participants.
func SortedSigners(t testing.TB, n int) []Signer {
	t.Helper()
	ss := make([]Signer, n)
	for i := range ss {
		ss[i] = NewSigner(t)
	}
	slices.SortFunc(ss, func(a, b Signer) int { return strings.Compare(a.PK, b.PK) })
	for i := 1; i < n; i++ {
		if ss[i].PK == ss[i-1].PK {
			t.Fatal("duplicate key")
		}
	}
	return ss
}

// SignMany signs n events built by mk, on every core (signing dominates
// the time of large fixtures, above all under -race).
func SignMany(t testing.TB, n int, mk func(i int) (Signer, *nostr.Event)) []*nostr.Event {
	t.Helper()
	evs := make([]*nostr.Event, n)
	signers := make([]Signer, n)
	for i := range evs {
		signers[i], evs[i] = mk(i)
		if evs[i].Tags == nil {
			evs[i].Tags = nostr.Tags{}
		}
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				evs[i].PubKey = signers[i].PK
				if err := evs[i].Sign(signers[i].SK); err != nil {
					errs <- fmt.Errorf("sign event %d: %w", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return evs
}

// Threads signs n events of one channel's threads: roots and replies down
// to depth 4, some broadcast, by several authors, in an order where every
// parent comes before its replies. The same n gives the same shape.
func Threads(t testing.TB, n int) []*nostr.Event {
	t.Helper()
	ch := "44444444-4444-4444-8444-444444444444"
	signers := []Signer{NewSigner(t), NewSigner(t), NewSigner(t)}
	rng := rand.New(rand.NewPCG(7, 7))
	var evs []*nostr.Event
	depth := map[string]int{}
	for i := range n {
		sg := signers[rng.IntN(len(signers))]
		tags := []nostr.Tag{{"h", ch}}
		d := 0
		if i > 0 && rng.IntN(4) > 0 {
			p := evs[rng.IntN(len(evs))]
			if depth[p.ID] < 4 {
				tags = append(tags, nostr.Tag{"e", p.ID, "", "reply"})
				d = depth[p.ID] + 1
				if d == 1 && rng.IntN(5) == 0 {
					tags = append(tags, nostr.Tag{"broadcast", "1"})
				}
			}
		}
		ev := sg.Event(t, 9, 1_000_000+int64(i), fmt.Sprint("message ", i), tags...)
		depth[ev.ID] = d
		evs = append(evs, ev)
	}
	return evs
}

// SameSet reports whether a and b hold the same strings as many times
// each, in any order.
func SameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// IDs lists the ids of evs in their order.
func IDs(evs ...*nostr.Event) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// RawIDs lists the ids of raw events in their order.
func RawIDs(evs []buzz.RawEvent) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}
