package relay

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// stallBudget is how long one publish may take while a subscriber has
// stopped reading; far more than a healthy relay needs.
const stallBudget = 2 * time.Second

// stalledSubscriber opens a subscription to every kind 1 event and never
// reads again, so that its TCP buffers fill up.
func stalledSubscriber(t *testing.T, s *testServer) *rawClient {
	t.Helper()
	nd := net.Dialer{Control: smallRecvBuffer}
	c := s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: nd.DialContext})
	if _, closed := c.req("stalled", `{"kinds":[1],"limit":0}`); closed != "" {
		t.Fatal(closed)
	}
	return c
}

// fillStalled publishes large kind 1 events until the stalled subscriber's
// buffers must be full and returns how many were acknowledged within
// stallBudget each (and, with a healthy subscriber, delivered to it within
// stallBudget), and whether one was not.
func fillStalled(t *testing.T, c *rawClient, a testutil.Signer, healthy *rawClient, healthyID string) (acked int, blocked bool) {
	t.Helper()
	content := strings.Repeat("x", 100<<10)
	now := time.Now().Unix()
	// 10 MB is over three times what the loopback socket buffers of both
	// ends hold on a default Linux (under 3 MB with the stalled client's
	// small receive buffer).
	for i := range 100 {
		ev := a.Event(t, 1, now-int64(i), content)
		c.conn.SetWriteDeadline(time.Now().Add(stallBudget))
		if err := c.conn.WriteJSON([]any{"EVENT", ev}); err != nil {
			return acked, true
		}
		if !waitFor(c, stallBudget, func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID }) {
			return acked, true
		}
		acked++
		if healthy != nil && !waitFor(healthy, stallBudget, func(m []json.RawMessage) bool {
			return label(m) == "EVENT" && str(m, 1) == healthyID && strings.Contains(string(m[2]), ev.ID)
		}) {
			return acked, true
		}
	}
	return acked, false
}

// waitFor reads from c until match accepts a message, for at most d; false
// when it did not come (the connection is then unusable).
func waitFor(c *rawClient, d time.Duration, match func([]json.RawMessage) bool) bool {
	deadline := time.Now().Add(d)
	for {
		msg, err := c.readWithin(time.Until(deadline))
		if err != nil {
			return false
		}
		if match(msg) {
			return true
		}
	}
}

// RL-23: a subscriber that stops reading must not delay delivery to the
// others, nor the OK of the publisher.
func TestStalledSubscriberDoesNotDelayOthers(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing test that publishes 10 MB; run it without -short and -race")
	}
	s := startServer(t)
	stalledSubscriber(t, s) // subscribed first: notified first
	healthy := s.raw(t)
	pub := s.raw(t)
	a := testutil.NewSigner(t)
	if _, closed := healthy.req("healthy", `{"kinds":[1],"authors":["`+a.PK+`"],"limit":0}`); closed != "" {
		t.Fatal(closed)
	}
	if acked, blocked := fillStalled(t, pub, a, healthy, "healthy"); blocked {
		t.Fatalf("after %d events, a subscriber that stopped reading blocked the publisher's OK or another subscriber's delivery for over %v", acked, stallBudget)
	}
}

// stalledShutdownBudget is how long a shutdown may take with a client that
// stopped reading: its close frame cannot be delivered, and the relay should
// give up on it after a short write deadline, not wait for it.
const stalledShutdownBudget = 3 * time.Second

// RL-24: shutdown does not hang on a client that stopped reading.
func TestShutdownWithStalledClient(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing test that publishes 10 MB; run it without -short and -race")
	}
	s := startServer(t)
	stalled := stalledSubscriber(t, s)
	pub := s.raw(t)
	a := testutil.NewSigner(t)
	acked, _ := fillStalled(t, pub, a, nil, "")
	t.Logf("%d large events acknowledged before the stalled subscriber's buffers filled", acked)

	s.cancel()
	select {
	case err := <-s.served:
		s.serveErr = err
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(stalledShutdownBudget):
		t.Errorf("Serve did not return within %v of its context ending: a client that stopped reading holds up the shutdown", stalledShutdownBudget)
		// Unblock the server so that the test can clean up.
		stalled.conn.Close()
		s.serveErr = <-s.served
	}
	s.stopped = true
	s.store.Close()
}
