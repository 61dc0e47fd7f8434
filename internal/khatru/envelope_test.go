package khatru

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// buzz-lite patch 22: a broadcast event is encoded once and each
// subscriber's envelope wraps those bytes with its own subscription id.
// Subscription ids and content that need escaping arrive as sent, the
// event still verifies, and each subscriber gets its own id.
func TestBroadcastEnvelopePerSubscriber(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	rl.SaveEvent = func(context.Context, *nostr.Event) (func(*WebSocket) bool, error) { return nil, nil }
	ids := []string{`plain`, `quote " and \ back`, "<script>&\u2028\x01", "ünïcødé 🐝"}
	conns := make([]*wireConn, len(ids))
	for i, id := range ids {
		if i == 0 {
			conns[i] = dialRelay(t, rl)
		} else {
			conns[i] = conns[0].dialAgain()
		}
		conns[i].subscribe(id, nostr.Filter{Kinds: []int{1}})
	}
	ev := signer.Event(t, 1, time.Now().Unix(), "<b>\"hostile\"</b> & \u2028 \\ 🐝", nostr.Tag{"t", "</script>"})
	if ok, reason := conns[0].dialAgain().publish(ev); !ok {
		t.Fatalf("refused: %s", reason)
	}
	for i, c := range conns {
		label, rest := c.read()
		if label != "EVENT" || len(rest) != 2 {
			t.Fatalf("subscriber %d: got %s %s", i, label, rest)
		}
		var sub string
		var got nostr.Event
		if err := json.Unmarshal(rest[0], &sub); err != nil || sub != ids[i] {
			t.Errorf("subscriber %d: subscription %q (%v), want %q", i, sub, err, ids[i])
		}
		if err := json.Unmarshal(rest[1], &got); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		if got.ID != ev.ID || got.Content != ev.Content || got.Tags[0][1] != "</script>" {
			t.Errorf("subscriber %d: got %+v", i, got)
		}
		if ok, err := got.CheckSignature(); !ok || err != nil {
			t.Errorf("subscriber %d: the event does not verify: %v", i, err)
		}
	}
}
