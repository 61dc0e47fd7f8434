package khatru

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// buzz-lite patch 29, RL-27: an EVENT's write ends once it is broadcast,
// before its OK is written. A publisher whose OK cannot be written (it
// reads slowly, its queue is full: here, an OnEventResult hook holds the
// OK back) must not keep a barrier, and so every subscription's memory of
// the ids it sent, waiting.
func TestWriteEndsBeforeItsOK(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	rl.SaveEvent = func(context.Context, *nostr.Event) (func(*WebSocket) bool, error) { return nil, nil }
	answering, release := make(chan struct{}), make(chan struct{})
	rl.OnEventResult = append(rl.OnEventResult, func(context.Context, *nostr.Event, bool, string) {
		close(answering)
		<-release
	})
	c := dialRelay(t, rl)
	c.send("EVENT", signer.Event(t, 1, time.Now().Unix(), "held OK"))
	select {
	case <-answering:
	case <-time.After(5 * time.Second):
		t.Fatal("the EVENT was never answered")
	}
	select {
	case <-rl.writes.barrier():
	case <-time.After(5 * time.Second):
		t.Error("a barrier waits for a write whose OK is held back")
	}
	close(release)
	if label, rest := c.read(); label != "OK" {
		t.Errorf("got %s %s, want the OK", label, rest)
	}
}

// buzz-lite patch 29, CW-21: an overlay told again (a thread summary whose
// counts came back to what they were in the same second: the same id)
// reaches a subscription that still remembers the ids it sent, where a
// stored event's second broadcast does not.
func TestOverlayToldAgain(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	// The subscription never settles: it keeps every id it sent.
	rl.LiveCaughtUp = func() <-chan struct{} { return make(chan struct{}) }
	c := dialRelay(t, rl)
	c.subscribe("sum", nostr.Filter{Kinds: []int{39005}})
	summary := signer.Event(t, 39005, time.Now().Unix(), `{"reply_count":1}`, nostr.Tag{"d", "x"})
	stored := signer.Event(t, 39005, time.Now().Unix(), `{"reply_count":2}`, nostr.Tag{"d", "y"})
	rl.BroadcastOverlay(summary)
	rl.BroadcastEvent(stored)
	rl.BroadcastEvent(stored)
	rl.BroadcastOverlay(summary)
	last := signer.Event(t, 39005, time.Now().Unix(), `{"reply_count":3}`, nostr.Tag{"d", "z"})
	rl.BroadcastEvent(last)
	got := c.eventIDs(last.ID)["sum"]
	if want := []string{summary.ID, stored.ID, summary.ID}; !slices.Equal(got, want) {
		t.Errorf("received %v, want %v", got, want)
	}
}
