package khatru

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// buzz-lite patch 19, RL-13: the broadcast of an event a SaveEvent hook
// stored asks the check the hook returned for it, not DeliverTo; an event
// the hook calls a duplicate is accepted and not broadcast.
func TestSaveEventDecidesDelivery(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var mu sync.Mutex
	var only *WebSocket // who may receive events tagged "only"
	rl.OnConnect = append(rl.OnConnect, func(ctx context.Context) {
		mu.Lock()
		if only == nil {
			only = GetConnection(ctx)
		}
		mu.Unlock()
	})
	rl.DeliverTo = func(*nostr.Event) func(*WebSocket) bool {
		t.Error("DeliverTo was asked about an event SaveEvent stored")
		return nil
	}
	rl.SaveEvent = func(_ context.Context, ev *nostr.Event) (func(*WebSocket) bool, error) {
		switch ev.Content {
		case "dup":
			return nil, eventstore.ErrDupEvent
		case "only":
			mu.Lock()
			defer mu.Unlock()
			want := only
			return func(ws *WebSocket) bool { return ws == want }, nil
		}
		return nil, nil
	}
	first := dialRelay(t, rl)
	first.subscribe("all", nostr.Filter{Kinds: []int{1}})
	second := first.dialAgain()
	second.subscribe("all", nostr.Filter{Kinds: []int{1}})

	only1 := signer.Event(t, 1, time.Now().Unix(), "only")
	dup := signer.Event(t, 1, time.Now().Unix(), "dup")
	everyone := signer.Event(t, 1, time.Now().Unix(), "everyone")
	pub := first.dialAgain()
	for _, ev := range []*nostr.Event{only1, dup, everyone} {
		if ok, reason := pub.publish(ev); !ok {
			t.Fatalf("%s refused: %s", ev.Content, reason)
		}
	}
	if got := first.eventIDs(everyone.ID)["all"]; len(got) != 1 || got[0] != only1.ID {
		t.Errorf("first connection received %v before the last event, want only %s", got, only1.ID)
	}
	if got := second.eventIDs(everyone.ID); len(got) != 0 {
		t.Errorf("second connection received %v before the last event, want nothing", got)
	}
}

// buzz-lite patch 19: with a SaveEvent hook, an EVENT reaches the store
// once, through the hook, whatever its kind: khatru asks no QueryEvents
// hook first (whether the event was deleted, by "#e" and "#a" filters no
// store indexes, or which older version it replaces), and calls no
// StoreEvent, ReplaceEvent or DeleteEvent hook. The store decides all that
// in its own transaction.
func TestSaveEventIsTheOnlyStoreCall(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var mu sync.Mutex
	var calls []string
	called := func(what string) {
		mu.Lock()
		calls = append(calls, what)
		mu.Unlock()
	}
	rl.SaveEvent = func(_ context.Context, ev *nostr.Event) (func(*WebSocket) bool, error) {
		called("SaveEvent " + ev.Content)
		return nil, nil
	}
	rl.QueryEvents = append(rl.QueryEvents, func(_ context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		called("QueryEvents " + f.String())
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	})
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { called("StoreEvent"); return nil })
	rl.ReplaceEvent = append(rl.ReplaceEvent, func(context.Context, *nostr.Event) error { called("ReplaceEvent"); return nil })
	rl.DeleteEvent = append(rl.DeleteEvent, func(context.Context, *nostr.Event) error { called("DeleteEvent"); return nil })

	now := time.Now().Unix()
	regular := signer.Event(t, 1, now, "regular")
	evs := []*nostr.Event{
		regular,
		signer.Event(t, 0, now, "replaceable"),
		signer.Event(t, 30023, now, "addressable", nostr.Tag{"d", "x"}),
		signer.Event(t, 5, now, "deletion", nostr.Tag{"e", regular.ID}, nostr.Tag{"a", "30023:" + signer.PK + ":x"}),
	}
	c := dialRelay(t, rl)
	var want []string
	for _, ev := range evs {
		if ok, reason := c.publish(ev); !ok {
			t.Fatalf("%s refused: %s", ev.Content, reason)
		}
		want = append(want, "SaveEvent "+ev.Content)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("store hooks called:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
}
