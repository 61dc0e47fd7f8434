package khatru

import (
	"context"
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
