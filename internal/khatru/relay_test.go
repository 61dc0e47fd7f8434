package khatru

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Upstream's relay_test.go (khatru v0.19.1), ported: the same relay on
// the same in-memory store (made safe for concurrent use) and the same
// steps, with buzz-lite's raw wire client in
// place of go-nostr's (which races with itself on close, and -race runs
// these). The expiration step no longer waits for the manager's ticker
// (it set the interval after NewRelay had started it, a data race, and
// slept 4 s): it stores an event that has already expired and runs the
// manager's check once.
func TestBasicRelayFunctionality(t *testing.T) {
	newRelay := func() *Relay {
		relay := NewRelay()
		store := &lockedStore{}
		store.s.Init()
		relay.StoreEvent = append(relay.StoreEvent, store.save)
		relay.QueryEvents = append(relay.QueryEvents, store.query)
		relay.DeleteEvent = append(relay.DeleteEvent, store.delete)
		return relay
	}
	relay := newRelay()
	signer1, signer2 := testutil.NewSigner(t), testutil.NewSigner(t)
	now := int64(nostr.Now())

	client1 := dialRelay(t, relay)
	client2 := client1.dialAgain()
	mustPublish := func(c *wireConn, ev *nostr.Event) {
		t.Helper()
		if ok, reason := c.publish(ev); !ok {
			t.Fatalf("event refused: %s", reason)
		}
	}

	t.Run("store and query events", func(t *testing.T) {
		evt1 := signer1.Event(t, 1, now, "hello world")
		mustPublish(client1, evt1)
		got := client2.fetch("q1", nostr.Filter{Authors: []string{signer1.PK}, Kinds: []int{1}})
		if !slices.Equal(got, []string{evt1.ID}) {
			t.Errorf("got %v, want %s", got, evt1.ID)
		}
	})

	t.Run("live event subscription", func(t *testing.T) {
		client1.subscribe("live", nostr.Filter{Authors: []string{signer2.PK}, Kinds: []int{1}})
		evt2 := signer2.Event(t, 1, now, "testing live events")
		mustPublish(client2, evt2)
		if got := client1.eventIDs(evt2.ID); len(got) != 0 {
			t.Errorf("got %v before the live event", got)
		}
		client1.send("CLOSE", "live")
	})

	t.Run("event deletion", func(t *testing.T) {
		evt3 := signer1.Event(t, 1, now, "delete me")
		mustPublish(client1, evt3)
		del := signer1.Event(t, 5, now, "deleting", nostr.Tag{"e", evt3.ID})
		mustPublish(client1, del)
		if got := client2.fetch("q3", nostr.Filter{IDs: []string{evt3.ID}}); len(got) != 0 {
			t.Errorf("the deleted event was returned: %v", got)
		}
		if got := client2.fetch("q4", nostr.Filter{Kinds: []int{5}}); !slices.Equal(got, []string{del.ID}) {
			t.Errorf("deletions: got %v, want %s", got, del.ID)
		}
	})

	t.Run("replaceable events", func(t *testing.T) {
		newer := signer1.Event(t, 0, 2000, `{"name":"newer"}`)
		mustPublish(client1, signer1.Event(t, 0, 1000, `{"name":"initial"}`))
		mustPublish(client1, newer)
		mustPublish(client1, signer1.Event(t, 0, 1500, `{"name":"older"}`))
		got := client2.fetch("q5", nostr.Filter{Authors: []string{signer1.PK}, Kinds: []int{0}})
		if !slices.Equal(got, []string{newer.ID}) {
			t.Errorf("got %v, want only the newest %s", got, newer.ID)
		}
	})

	t.Run("event expiration", func(t *testing.T) {
		relay := newRelay()
		client := dialRelay(t, relay)
		expiration := strconv.FormatInt(now-1, 10)
		evt := signer1.Event(t, 1, now-2, "i have expired", nostr.Tag{"expiration", expiration})
		mustPublish(client, evt)
		if got := client.fetch("e1", nostr.Filter{IDs: []string{evt.ID}}); !slices.Equal(got, []string{evt.ID}) {
			t.Fatalf("before the expiration check: got %v, want %s", got, evt.ID)
		}
		relay.expirationManager.checkExpiredEvents(context.Background())
		if got := client.fetch("e2", nostr.Filter{IDs: []string{evt.ID}}); len(got) != 0 {
			t.Errorf("the expired event was returned: %v", got)
		}
	})

	t.Run("unauthorized deletion", func(t *testing.T) {
		evt4 := signer1.Event(t, 1, now, "try to delete me")
		mustPublish(client1, evt4)
		del := signer2.Event(t, 5, now, "trying to delete", nostr.Tag{"e", evt4.ID})
		if ok, _ := client2.publish(del); ok {
			t.Fatal("another author's deletion was accepted")
		}
		if got := client1.fetch("q6", nostr.Filter{IDs: []string{evt4.ID}}); !slices.Equal(got, []string{evt4.ID}) {
			t.Errorf("got %v, want the event %s still there", got, evt4.ID)
		}
	})
}

// lockedStore makes slicestore safe for concurrent use, which upstream's
// test assumed: its QueryEvents goes on reading the slice in a goroutine
// after it returns, while SaveEvent may be writing it. A query here reads
// all its events under the lock.
type lockedStore struct {
	mu sync.Mutex
	s  slicestore.SliceStore
}

func (l *lockedStore) save(ctx context.Context, ev *nostr.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.SaveEvent(ctx, ev)
}

func (l *lockedStore) delete(ctx context.Context, ev *nostr.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.DeleteEvent(ctx, ev)
}

func (l *lockedStore) query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, err := l.s.QueryEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	var evs []*nostr.Event
	for ev := range ch {
		evs = append(evs, ev)
	}
	out := make(chan *nostr.Event, len(evs))
	for _, ev := range evs {
		out <- ev
	}
	close(out)
	return out, nil
}
