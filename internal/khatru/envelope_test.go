package khatru

import (
	"bytes"
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

// buzz-lite patches 24 and 27: a stored event answering a REQ goes out as
// the JSON its hook handed over, wrapped with the subscription id quoted,
// however hostile the id and content: each answer decodes, names its
// subscription and verifies, and every event reaches the peer (written in
// batches).
func TestReqAnswerEnvelopes(t *testing.T) {
	signer := testutil.NewSigner(t)
	var stored []*nostr.Event
	// One base time: a second turning between two events would give two
	// of them one date, one id, and a subscription sends an id once.
	at := time.Now().Unix()
	for i := range 40 {
		stored = append(stored, signer.Event(t, 1, at-int64(i), "<b>\"hostile\"</b> & \u2028 \\ 🐝", nostr.Tag{"t", "</script>"}))
	}
	rl := NewRelay()
	encoded := make([][]byte, len(stored))
	for i, ev := range stored {
		encoded[i], _ = ev.MarshalJSON()
	}
	rl.StreamEvents = append(rl.StreamEvents, func(_ context.Context, _ nostr.Filter, send func(string, []byte) error) error {
		for i, ev := range encoded {
			if err := send(stored[i].ID, ev); err != nil {
				return err
			}
		}
		return nil
	})
	c := dialRelay(t, rl)
	for _, sub := range []string{`plain`, `quote " and \ back`, "<script>&\u2028\x01", "ünïcødé 🐝"} {
		c.send("REQ", sub, nostr.Filter{Kinds: []int{1}})
		for i := 0; ; i++ {
			label, rest := c.read()
			if label == "EOSE" {
				if i != len(stored) {
					t.Fatalf("subscription %q: %d events before EOSE, want %d", sub, i, len(stored))
				}
				break
			}
			var of string
			var got nostr.Event
			if label != "EVENT" || json.Unmarshal(rest[0], &of) != nil || json.Unmarshal(rest[1], &got) != nil {
				t.Fatalf("subscription %q: got %s %s", sub, label, rest)
			}
			if of != sub || got.ID != stored[i].ID || got.Content != stored[i].Content {
				t.Fatalf("subscription %q: event %d is %q of %q", sub, i, got.ID, of)
			}
			if !bytes.Equal(rest[1], encoded[i]) { // patch 27: as the hook gave it
				t.Fatalf("subscription %q: event %d went out as\n%s\nnot as given:\n%s", sub, i, rest[1], encoded[i])
			}
			if ok, err := got.CheckSignature(); !ok || err != nil {
				t.Fatalf("subscription %q: event %d does not verify: %v", sub, i, err)
			}
		}
		c.send("CLOSE", sub)
	}
}
