package khatru

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Tests of the patches the relay's tests do not reach directly (PATCHES.md
// maps every patch to its tests).

// buzz-lite patch 5: without DeleteEvent hooks, a kind 5 makes khatru
// look up none of its targets, and an expiring event is not kept in
// khatru's memory: it could delete nothing either way.
func TestNoDeleteHooksNoDeletionWork(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var internal atomic.Int64
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { return nil })
	rl.QueryEvents = append(rl.QueryEvents, func(ctx context.Context, _ nostr.Filter) (chan *nostr.Event, error) {
		if IsInternalCall(ctx) {
			internal.Add(1)
		}
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	})
	c := dialRelay(t, rl)
	now := time.Now().Unix()
	expiring := signer.Event(t, 1, now, "expiring", nostr.Tag{"expiration", strconv.FormatInt(now+3600, 10)})
	deletion := signer.Event(t, 5, now, "", nostr.Tag{"e", expiring.ID}, nostr.Tag{"a", "30023:" + signer.PK + ":x"})
	for _, ev := range []*nostr.Event{expiring, deletion} {
		if ok, reason := c.publish(ev); !ok {
			t.Fatalf("kind %d refused: %s", ev.Kind, reason)
		}
	}
	if n := internal.Load(); n != 0 {
		t.Errorf("khatru looked up %d deletion targets", n)
	}
	rl.expirationManager.mu.Lock()
	defer rl.expirationManager.mu.Unlock()
	if n := rl.expirationManager.events.Len(); n != 0 {
		t.Errorf("khatru keeps %d expiring events", n)
	}
}

// buzz-lite patch 6: the AUTH handler writes the connection's pubkey while
// live delivery reads it (through AuthedPubKey), under authLock: -race
// reports the two otherwise. Delivery sees the pubkey once AUTH is
// answered.
func TestAuthedPubKeyReadDuringDelivery(t *testing.T) {
	member := testutil.NewSigner(t)
	rl := NewRelay()
	rl.OnConnect = append(rl.OnConnect, RequestAuth)
	rl.ValidateAuth = func(ev *nostr.Event, _ string) (string, bool) { return ev.PubKey, true }
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { return nil })
	rl.DeliverTo = func(*nostr.Event) func(*WebSocket) bool {
		return func(ws *WebSocket) bool { return ws.AuthedPubKey() == member.PK }
	}
	sub := dialRelay(t, rl)
	if label, _ := sub.read(); label != "AUTH" {
		t.Fatalf("want the AUTH challenge first, got %s", label)
	}
	sub.subscribe("all", nostr.Filter{Kinds: []int{1}})
	pub := sub.dialAgain()
	pub.read() // its challenge

	var wg sync.WaitGroup
	wg.Add(1)
	refused := make(chan string, 1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			if ok, reason := pub.publish(member.Event(t, 1, time.Now().Unix(), strconv.Itoa(i))); !ok {
				refused <- reason
				return
			}
		}
	}()
	auth := member.Event(t, nostr.KindClientAuthentication, time.Now().Unix(), "")
	sub.send("AUTH", auth)
	for {
		label, rest := sub.read()
		if label == "OK" {
			break
		} else if label != "EVENT" {
			t.Fatalf("want OK for AUTH, got %s %s", label, rest)
		}
	}
	wg.Wait()
	select {
	case reason := <-refused:
		t.Fatalf("event refused: %s", reason)
	default:
	}
	last := member.Event(t, 1, time.Now().Unix(), "after AUTH")
	if ok, reason := pub.publish(last); !ok {
		t.Fatalf("event refused: %s", reason)
	}
	sub.eventIDs(last.ID) // fails unless delivery saw the pubkey
}

// buzz-lite patch 7: DeliverTo is asked once per broadcast event, however
// many listeners match it, and its check decides per connection.
func TestDeliverToOncePerEvent(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var asked atomic.Int64
	var first atomic.Pointer[WebSocket]
	rl.OnConnect = append(rl.OnConnect, func(ctx context.Context) { first.CompareAndSwap(nil, GetConnection(ctx)) })
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { return nil })
	rl.DeliverTo = func(ev *nostr.Event) func(*WebSocket) bool {
		asked.Add(1)
		if ev.Content == "everyone" {
			return nil
		}
		return func(ws *WebSocket) bool { return ws == first.Load() }
	}
	a := dialRelay(t, rl)
	a.subscribe("s1", nostr.Filter{Kinds: []int{1}})
	a.subscribe("s2", nostr.Filter{Kinds: []int{1}})
	b := a.dialAgain()
	b.subscribe("s1", nostr.Filter{Kinds: []int{1}})

	firstOnly := signer.Event(t, 1, time.Now().Unix(), "first only")
	if ok, reason := a.dialAgain().publish(firstOnly); !ok {
		t.Fatalf("refused: %s", reason)
	}
	broadcast := signer.Event(t, 1, time.Now().Unix(), "everyone")
	if n := rl.BroadcastEvent(broadcast); n != 3 {
		t.Errorf("BroadcastEvent reached %d listeners, want 3", n)
	}
	if got := a.eventIDs(broadcast.ID); len(got["s1"]) != 1 || len(got["s2"]) != 1 {
		t.Errorf("first connection: %v before the broadcast, want %s on s1 and s2", got, firstOnly.ID)
	}
	if got := b.eventIDs(broadcast.ID); len(got) != 0 {
		t.Errorf("second connection: %v before the broadcast, want nothing", got)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("DeliverTo asked %d times for 2 events", n)
	}
}

// buzz-lite patch 25: BroadcastEventTo delivers by the caller's check,
// not DeliverTo's, which it never asks.
func TestBroadcastEventTo(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var asked atomic.Int64
	var first atomic.Pointer[WebSocket]
	rl.OnConnect = append(rl.OnConnect, func(ctx context.Context) { first.CompareAndSwap(nil, GetConnection(ctx)) })
	rl.DeliverTo = func(*nostr.Event) func(*WebSocket) bool {
		asked.Add(1)
		return nil
	}
	a := dialRelay(t, rl)
	a.subscribe("s1", nostr.Filter{Kinds: []int{1}})
	b := a.dialAgain()
	b.subscribe("s1", nostr.Filter{Kinds: []int{1}})

	firstOnly := signer.Event(t, 1, time.Now().Unix(), "first only")
	if n := rl.BroadcastEventTo(firstOnly, func(ws *WebSocket) bool { return ws == first.Load() }); n != 1 {
		t.Errorf("BroadcastEventTo reached %d listeners, want 1", n)
	}
	everyone := signer.Event(t, 1, time.Now().Unix()+1, "everyone")
	if n := rl.BroadcastEventTo(everyone, nil); n != 2 {
		t.Errorf("BroadcastEventTo(nil) reached %d listeners, want 2", n)
	}
	if got := a.eventIDs(everyone.ID); len(got["s1"]) != 1 || got["s1"][0] != firstOnly.ID {
		t.Errorf("first connection: %v before the second event, want %s", got, firstOnly.ID)
	}
	if got := b.eventIDs(everyone.ID); len(got) != 0 {
		t.Errorf("second connection: %v before the second event, want nothing", got)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("DeliverTo asked %d times", n)
	}
}

// buzz-lite patch 10: Listening tells whether a broadcast would reach
// anyone: a listener whose filter matches (with anyTime, whatever its
// since and until) and whom DeliverTo lets receive it.
func TestListening(t *testing.T) {
	rl := NewRelay()
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now()}
	if rl.Listening(ev, false) || rl.Listening(ev, true) {
		t.Fatal("listening with no listener")
	}
	ws := connectForTest(rl)
	later := ev.CreatedAt + 100
	rl.addListener(ws, openForTest(t, rl, ws, "s"), rl, nostr.Filter{Kinds: []int{1}, Since: &later})
	if rl.Listening(ev, false) {
		t.Error("listening although the filter's since excludes the event")
	}
	if !rl.Listening(ev, true) {
		t.Error("not listening with anyTime")
	}
	rl.DeliverTo = func(*nostr.Event) func(*WebSocket) bool {
		return func(*WebSocket) bool { return false }
	}
	if rl.Listening(ev, true) {
		t.Error("listening although DeliverTo lets nobody receive it")
	}
}

// buzz-lite patch 11 (NIP-01): a REQ with the id of an open subscription
// replaces it: a live event arrives once, by the new filter only.
func TestReqReplacesOpenSubscription(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { return nil })
	c := dialRelay(t, rl)
	c.subscribe("s", nostr.Filter{Kinds: []int{1, 2}})
	c.subscribe("s", nostr.Filter{Kinds: []int{1}})
	pub := c.dialAgain()
	one := signer.Event(t, 1, time.Now().Unix(), "once")
	two := signer.Event(t, 2, time.Now().Unix(), "only the old filter")
	last := signer.Event(t, 1, time.Now().Unix(), "last")
	for _, ev := range []*nostr.Event{one, two, last} {
		if ok, reason := pub.publish(ev); !ok {
			t.Fatalf("refused: %s", reason)
		}
	}
	if got := c.eventIDs(last.ID)["s"]; len(got) != 1 || got[0] != one.ID {
		t.Errorf("received %v before the last event, want only %s", got, one.ID)
	}
}

// buzz-lite patch 30: with FilterChannels and EventChannel, a filter's
// "#h" matches by channel, not by the tag's letters (here a channel is its
// letters in lower case, and "bad" names none); the filter's other
// conditions are go-nostr's. EventChannel is asked at most once a
// broadcast, and only when a listener with "#h" passes its filter's other
// conditions. Listening (patch 10) matches alike.
func TestChannelMatching(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	var asked atomic.Int64
	rl.FilterChannels = func(hs []string) []string {
		out := []string{}
		for _, h := range hs {
			if h != "bad" {
				out = append(out, strings.ToLower(h))
			}
		}
		return out
	}
	rl.EventChannel = func(ev *nostr.Event) string {
		asked.Add(1)
		if tag := ev.Tags.GetFirst([]string{"h", ""}); tag != nil {
			return strings.ToLower((*tag)[1])
		}
		return ""
	}
	a := dialRelay(t, rl)
	a.subscribe("upper", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {"ABC"}}})
	a.subscribe("lower", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {"xyz", "abc"}}})
	a.subscribe("bad", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {"bad"}}})
	a.subscribe("tagged", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {"abc"}, "t": {"x"}}})
	a.subscribe("plain", nostr.Filter{Kinds: []int{2}})

	at := time.Now().Unix()
	for _, c := range []struct {
		ev    *nostr.Event
		subs  []string
		asked int64
	}{
		{signer.Event(t, 1, at, "", nostr.Tag{"h", "aBc"}), []string{"upper", "lower"}, 1},
		{signer.Event(t, 1, at, "", nostr.Tag{"h", "abc"}, nostr.Tag{"t", "x"}), []string{"upper", "lower", "tagged"}, 1},
		{signer.Event(t, 1, at, "", nostr.Tag{"h", "bad"}), nil, 1},
		{signer.Event(t, 1, at, "no h"), nil, 1},
		{signer.Event(t, 3, at, "", nostr.Tag{"h", "abc"}), nil, 0},
		{signer.Event(t, 2, at, "", nostr.Tag{"h", "ABC"}), []string{"plain"}, 0},
	} {
		asked.Store(0)
		if n := rl.BroadcastEvent(c.ev); n != len(c.subs) {
			t.Errorf("%v: reached %d subscriptions, want %d", c.ev.Tags, n, len(c.subs))
		}
		if n := asked.Load(); n != c.asked {
			t.Errorf("%v: EventChannel asked %d times, want %d", c.ev.Tags, n, c.asked)
		}
	}
	barrier := signer.Event(t, 2, at, "barrier")
	rl.BroadcastEvent(barrier)
	got := a.eventIDs(barrier.ID)
	for sub, want := range map[string]int{"upper": 2, "lower": 2, "tagged": 1, "bad": 0, "plain": 1} {
		if len(got[sub]) != want {
			t.Errorf("%s received %d events, want %d", sub, len(got[sub]), want)
		}
	}

	for h, want := range map[string]bool{"AbC": true, "XYZ": true, "bad": false, "qqq": false} {
		ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", h}}}
		if got := rl.Listening(ev, false); got != want {
			t.Errorf("Listening(h %q) = %t, want %t", h, got, want)
		}
	}
}
