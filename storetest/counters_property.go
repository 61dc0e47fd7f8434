package storetest

// A property test of the thread counters (RL-5, RL-6, CW-19): random
// sequences of replies, replacements, kind 5 and 9005 deletions and expiry
// purges, submitted one by one, concurrently (so that a store that batches
// writes batches them) or as one import batch, after which the store's Verify, which
// recomputes every counter from what is stored, must find nothing wrong.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// cpEvent is what the test remembers of an event it submitted.
type cpEvent struct {
	ev     *nostr.Event
	author int
}

// RL-5, RL-6, CW-19: whatever the order of replies, deletions (several
// targets at once, parents with their replies, roots, deleted events
// again, 9005 by an admin), replacements and purges, and whether they share
// a transaction, every counter is what Verify computes from scratch.
func testCountersProperty(t *testing.T, open Opener) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { cpRun(t, open, seed) })
	}
}

func cpRun(t *testing.T, open Opener, seed uint64) {
	ctx := context.Background()
	admin := testutil.NewSigner(t)
	clock := testutil.NewClock(exStart)
	s := qtOpenWith(t, open, Config{Admins: []string{admin.PK}, Now: clock.Now})
	// Thirteen authors: more than the ten participants a subtree lists.
	sg := testutil.SortedSigners(t, 13)
	rng := rand.New(rand.NewPCG(seed, 17))
	var msgs []cpEvent                                    // the thread messages submitted so far
	at := func() int64 { return ttBase + rng.Int64N(30) } // ties are common

	// next makes one random submission from what was submitted so far.
	next := func() cpEvent {
		a := rng.IntN(len(sg))
		tags := nostr.Tags{ttH(ttChan)}
		switch op := rng.IntN(20); {
		case op < 14 || len(msgs) == 0:
			kind := 9
			if rng.IntN(5) == 0 {
				kind = 30023 // addressable: a newer version removes the older (RL-9)
				tags = append(tags, nostr.Tag{"d", fmt.Sprint(rng.IntN(2))})
			}
			switch r := rng.IntN(10); {
			case r < 4 && len(msgs) > 0:
				// Deep chains: a reply to one of the latest.
				tags = append(tags, ttReplyTag(msgs[max(0, len(msgs)-1-rng.IntN(3))].ev.ID))
			case r < 9 && len(msgs) > 0:
				tags = append(tags, ttReplyTag(msgs[rng.IntN(len(msgs))].ev.ID))
			}
			if rng.IntN(6) == 0 {
				tags = append(tags, exTag(clock.Now().Unix()+1+rng.Int64N(4)))
			}
			return cpEvent{sg[a].Event(t, kind, at(), "m", tags...), a}
		case op < 18:
			// A kind 5 by one author naming one to three of their events,
			// deleted ones and addresses included.
			var mine []*nostr.Event
			for _, e := range msgs {
				if e.author == a {
					mine = append(mine, e.ev)
				}
			}
			var del nostr.Tags
			for range 1 + rng.IntN(3) {
				if len(mine) == 0 {
					break
				}
				e := mine[rng.IntN(len(mine))]
				if e.Kind == 30023 && rng.IntN(2) == 0 {
					del = append(del, nostr.Tag{"a", fmt.Sprintf("30023:%s:%s", e.PubKey, e.Tags.GetD())})
				} else {
					del = append(del, ttE(e.ID))
				}
			}
			if rng.IntN(2) == 0 {
				del = append(del, ttH(ttChan))
			}
			return cpEvent{sg[a].Event(t, 5, ttBase+100, "", del...), a}
		default:
			target := msgs[rng.IntN(len(msgs))].ev
			return cpEvent{admin.Event(t, 9005, ttBase+100, "", ttH(ttChan), ttE(target.ID)), -1}
		}
	}
	accept := func(ev *nostr.Event, err error) {
		t.Helper()
		if _, rejected := buzz.AsRejection(err); err != nil && !rejected {
			t.Fatalf("kind %d %v: %v", ev.Kind, ev.Tags, err)
		}
	}
	for round := range 80 {
		batch := make([]cpEvent, 1+rng.IntN(8))
		for i := range batch {
			batch[i] = next()
			if k := batch[i].ev.Kind; k != 5 && k != 9005 {
				msgs = append(msgs, batch[i])
			}
		}
		switch mode := round % 3; mode {
		case 0:
			for _, e := range batch {
				accept(e.ev, ingest(s, ctx, e.ev))
			}
		case 1:
			var wg sync.WaitGroup
			errs := make([]error, len(batch))
			for i, e := range batch {
				wg.Go(func() { errs[i] = ingest(s, ctx, e.ev) })
			}
			wg.Wait()
			for i, e := range batch {
				accept(e.ev, errs[i])
			}
		case 2:
			evsOf := make([]*nostr.Event, len(batch))
			for i, e := range batch {
				evsOf[i] = e.ev
			}
			outcomes, err := s.ImportBatch(ctx, evsOf)
			if err != nil {
				t.Fatalf("import batch: %v", err)
			}
			for i, e := range batch {
				accept(e.ev, outcomes[i])
			}
			if _, err := s.Backfill(ctx); err != nil {
				t.Fatalf("backfill: %v", err)
			}
		}
		if round%4 == 3 {
			clock.Set(clock.Now().Unix() + 2)
			if _, err := s.PurgeExpired(ctx); err != nil {
				t.Fatalf("purge: %v", err)
			}
		}
		if err := Verify(ctx, s); err != nil {
			t.Fatalf("round %d (mode %d): %v", round, round%3, err)
		}
	}
}
