package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// tagged reports whether ev has the tag ["t", value].
func tagged(ev *nostr.Event, value string) bool {
	return ev.Tags.FindWithValue("t", value) != nil
}

// gate holds, for the events tagged ["t", tag], what a relay does next
// (their live delivery) until the test releases it: reached hands over
// each such event's id once it is stored, release lets it go on.
type gate struct {
	tag     string
	reached chan string
	release chan struct{}
	// opened lets everything pass, once the test ends.
	opened chan struct{}
}

func newGate(t *testing.T) *gate {
	return &gate{tag: "gated-" + randomID(t)[:8], reached: make(chan string), release: make(chan struct{}), opened: make(chan struct{})}
}

// pass is called with each stored event on its way to live delivery.
func (g *gate) pass(ev *nostr.Event) {
	if !tagged(ev, g.tag) {
		return
	}
	select {
	case g.reached <- ev.ID:
	case <-g.opened:
		return
	}
	select {
	case <-g.release:
	case <-g.opened:
	}
}

// open lets everything pass: a test that failed leaves no write waiting,
// and its relay stops.
func (g *gate) open() { close(g.opened) }

// await waits for the event id to reach the gate.
func (g *gate) await(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-g.reached:
		if got != id {
			t.Fatalf("event %s reached the gate, want %s", got, id)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("event %s never reached the gate", id)
	}
}

// gatedAdmit is a store whose Admit, once an event is stored, waits at
// its gate before returning: the event is committed, and readable by any
// REQ, while its broadcast waits.
type gatedAdmit struct {
	buzz.Store
	g *gate
}

func (s gatedAdmit) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	a, err := s.Store.Admit(ctx, ev)
	if err == nil {
		s.g.pass(ev)
	}
	return a, err
}

// gatedRemote is a shared store whose events stored by another process
// wait at its gate before their live delivery: the notification is slow.
type gatedRemote struct {
	buzz.SharedStore
	g *gate
}

func (s gatedRemote) OnRemote(fn func(ev *nostr.Event, a buzz.Admitted)) {
	s.SharedStore.OnRemote(func(ev *nostr.Event, a buzz.Admitted) {
		s.g.pass(ev)
		fn(ev, a)
	})
}

// onceCounter counts the events one subscription receives, before EOSE,
// after it or live, and fails the test when one comes twice.
type onceCounter struct {
	t     *testing.T
	c     *rawClient
	sub   string
	times map[string]int
	eose  bool
}

func newOnceCounter(t *testing.T, c *rawClient, sub string) *onceCounter {
	return &onceCounter{t: t, c: c, sub: sub, times: map[string]int{}}
}

// untilEOSE reads the subscription's messages up to its EOSE.
func (o *onceCounter) untilEOSE() {
	o.t.Helper()
	o.read("EOSE", func() bool { return o.eose })
}

// until reads the subscription's messages until the event id came.
func (o *onceCounter) until(id string) {
	o.t.Helper()
	o.read(id[:8], func() bool { return o.times[id] > 0 })
}

func (o *onceCounter) read(what string, done func() bool) {
	o.t.Helper()
	if done() {
		return
	}
	o.c.await(what+" on "+o.sub, func(m []json.RawMessage) bool {
		if str(m, 1) != o.sub {
			return false
		}
		switch label(m) {
		case "EOSE":
			o.eose = true
		case "CLOSED":
			o.t.Fatalf("subscription %s closed: %s", o.sub, joinRaw(m))
		case "EVENT":
			var ev nostr.Event
			if len(m) < 3 || json.Unmarshal(m[2], &ev) != nil {
				o.t.Fatalf("bad EVENT %s", joinRaw(m))
			}
			o.times[ev.ID]++
			if o.times[ev.ID] > 1 {
				when := "before"
				if o.eose {
					when = "after"
				}
				o.t.Fatalf("subscription %s received event %s (%q) twice, the second time %s EOSE", o.sub, ev.ID, ev.Content, when)
			}
		}
		return done()
	})
}

// RL-33, issue 29 item 8b: a subscription never receives an event twice.
// Two processes share one PostgreSQL database; an event stored through A
// is committed, and found by a REQ on B, while its notification is still
// on its way to B (held at a gate until B answered EOSE): once it
// arrives, B does not deliver it again to the subscription whose stored
// events held it. A barrier stored through A after it arrives live, once.
func TestRemoteEventOncePerSubscription(t *testing.T) {
	a := startServer(t)
	if a.pgURL == "" {
		t.Skipf("two relays share a database on PostgreSQL only; %s=postgres runs this test", relayStoreVar)
	}
	g := newGate(t)
	b := startHooked(t, serverHooks{twin: a, wrap: func(st buzz.Store) buzz.Store {
		return gatedRemote{SharedStore: st.(buzz.SharedStore), g: g}
	}})
	t.Cleanup(g.open)
	onA, onB := a.client(t), b.client(t)
	author := testutil.NewSigner(t)
	barrierTag := "barrier-" + randomID(t)[:8]
	for i := range 5 {
		ev := author.Event(t, 1, now(), fmt.Sprint("through A, ", i), nostr.Tag{"t", g.tag})
		mustPublish(t, onA, ev)
		g.await(t, ev.ID)
		sub := fmt.Sprint("once", i)
		onB.send("REQ", sub, nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {g.tag, barrierTag}}})
		got := newOnceCounter(t, onB, sub)
		got.untilEOSE()
		if got.times[ev.ID] != 1 {
			t.Fatalf("REQ %s: the stored events lack %s, committed before it", sub, ev.ID)
		}
		g.release <- struct{}{}
		barrier := author.Event(t, 1, now(), fmt.Sprint("barrier ", i), nostr.Tag{"t", barrierTag})
		mustPublish(t, onA, barrier)
		got.until(barrier.ID)
		onB.send("CLOSE", sub)
	}
}

// gatedRead is a shared store whose stored reads of the filters naming
// its gate's tag, once read, wait at a gate of their own before their
// events are sent; its other processes' events wait at the first gate.
type gatedRead struct {
	gatedRemote
	read *gate
}

func (s gatedRead) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	evs, more, err := s.gatedRemote.QueryBounded(ctx, f, v, beforeID, maxBytes)
	if err == nil && slices.Contains(f.Tags["t"], s.read.tag) {
		s.read.pass(&nostr.Event{ID: "read", Tags: nostr.Tags{{"t", s.read.tag}}})
	}
	return evs, more, err
}

// RL-33, issue 29 item 8b: the same before EOSE. The REQ on B has read
// its stored events, the event stored through A among them, and waits
// before sending them (a gate) while the event arrives live; its stored
// answer does not send it again.
func TestRemoteEventOnceBeforeEOSE(t *testing.T) {
	a := startServer(t)
	if a.pgURL == "" {
		t.Skipf("two relays share a database on PostgreSQL only; %s=postgres runs this test", relayStoreVar)
	}
	g, read := newGate(t), newGate(t)
	read.tag = g.tag
	b := startHooked(t, serverHooks{twin: a, wrap: func(st buzz.Store) buzz.Store {
		return gatedRead{gatedRemote{SharedStore: st.(buzz.SharedStore), g: g}, read}
	}})
	t.Cleanup(g.open)
	t.Cleanup(read.open)
	onA, onB := a.client(t), b.client(t)
	author := testutil.NewSigner(t)
	barrierTag := "barrier-" + randomID(t)[:8]
	for i := range 3 {
		ev := author.Event(t, 1, now(), fmt.Sprint("through A, ", i), nostr.Tag{"t", g.tag})
		mustPublish(t, onA, ev)
		g.await(t, ev.ID)
		sub := fmt.Sprint("early", i)
		onB.send("REQ", sub, nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {g.tag, barrierTag}}})
		read.await(t, "read")
		// The REQ's listener is added as its stored read starts; here it
		// is there once the relay listens for the gated tag.
		deadline := time.Now().Add(waitTimeout)
		probe := &nostr.Event{Kind: 1, PubKey: author.PK, Tags: nostr.Tags{{"t", g.tag}}}
		for !b.relay.kh.Listening(probe, true) {
			if time.Now().After(deadline) {
				t.Fatalf("REQ %s never listened", sub)
			}
			time.Sleep(time.Millisecond)
		}
		g.release <- struct{}{}
		got := newOnceCounter(t, onB, sub)
		got.until(ev.ID)
		if got.eose {
			t.Fatalf("REQ %s answered EOSE before its stored events were sent", sub)
		}
		read.release <- struct{}{}
		got.untilEOSE()
		barrier := author.Event(t, 1, now(), fmt.Sprint("barrier ", i), nostr.Tag{"t", barrierTag})
		mustPublish(t, onA, barrier)
		got.until(barrier.ID)
		onB.send("CLOSE", sub)
	}
}

// Issue 29 item 8b: one process, either store. An event is committed,
// and found by a REQ, while its broadcast waits (held at a gate until the
// REQ's EOSE): the subscription does not receive it again live. A REQ of
// two filters that both match an event receives it once, stored or live.
func TestEventOncePerSubscription(t *testing.T) {
	for _, tc := range []struct {
		name string
		two  bool
	}{{"one filter", false}, {"two filters matching alike", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t)
			s := startHooked(t, serverHooks{wrap: func(st buzz.Store) buzz.Store { return gatedAdmit{Store: st, g: g} }})
			t.Cleanup(g.open)
			writer, reader := s.client(t), s.client(t)
			author := testutil.NewSigner(t)
			barrierTag := "barrier-" + randomID(t)[:8]
			filters := []any{nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {g.tag, barrierTag}}}}
			if tc.two {
				filters = append(filters, nostr.Filter{Authors: []string{author.PK}})
			}
			for i := range 5 {
				ev := author.Event(t, 1, now(), fmt.Sprint("message ", i), nostr.Tag{"t", g.tag})
				writer.send("EVENT", ev)
				g.await(t, ev.ID)
				sub := fmt.Sprint("once", i)
				reader.send(append([]any{"REQ", sub}, filters...)...)
				got := newOnceCounter(t, reader, sub)
				got.untilEOSE()
				if got.times[ev.ID] != 1 {
					t.Fatalf("REQ %s: the stored events lack %s, committed before it", sub, ev.ID)
				}
				g.release <- struct{}{}
				writer.await("OK", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
				// Whatever else was on its way arrives before the second
				// of two barriers.
				for _, name := range []string{"barrier", "second barrier"} {
					barrier := author.Event(t, 1, now(), fmt.Sprint(name, " ", i), nostr.Tag{"t", barrierTag})
					mustPublish(t, writer, barrier)
					got.until(barrier.ID)
				}
				reader.send("CLOSE", sub)
			}
		})
	}
}
