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

// RL-24: shutdown does not hang on clients that stopped reading, not even
// one second per client: they are closed in parallel.
func TestShutdownWithStalledClient(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing test that publishes 10 MB; run it without -short and -race")
	}
	s := startServer(t)
	var stalled []*rawClient
	for range 5 {
		stalled = append(stalled, stalledSubscriber(t, s))
	}
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
		for _, c := range stalled {
			c.conn.Close()
		}
		s.serveErr = <-s.served
	}
	s.stopped = true
	s.store.Close()
}

// RL-23: when stalled subscribers are dropped, the publisher's OK does not
// wait for them (dropping one must not cost the others a close handshake).
func TestStalledSubscribersDroppedWithoutDelay(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing test that publishes 30 MB; run it without -short and -race")
	}
	s := startServer(t)
	for range 3 {
		stalledSubscriber(t, s)
	}
	pub := s.raw(t)
	a := testutil.NewSigner(t)
	content := strings.Repeat("x", 16<<10)
	now := time.Now().Unix()
	// More live events than a connection's byte budget holds, so that every
	// stalled subscriber overflows and is dropped on the way.
	for i := range 2000 {
		ev := a.Event(t, 1, now-int64(i), content)
		start := time.Now()
		pub.send("EVENT", ev)
		if !waitFor(pub, stallBudget, func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID }) {
			t.Fatalf("no OK for event %d within %v", i, stallBudget)
		}
		if d := time.Since(start); d > dropBudget {
			t.Fatalf("event %d: OK took %v while stalled subscribers were dropped", i, d)
		}
	}
}

// dropBudget is how long one publish may take while stalled subscribers
// are dropped: far less than the one-second close handshake each would
// cost if the publisher waited for it.
const dropBudget = 900 * time.Millisecond

// RL-23: a healthy client loading a long history over a slow link is not
// taken for a stalled one when a live event arrives for it.
func TestStalledLinkHistoryLoadIsNotDropped(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a timing test that loads 9 MB; run it without -short and -race")
	}
	s := startServer(t)
	a := testutil.NewSigner(t)
	pub := s.raw(t)
	now := time.Now().Unix()
	for i := range 1000 {
		if err := s.ingest(t.Context(), a.Event(t, 1, now-int64(i)-10, strings.Repeat("y", 3000))); err != nil {
			t.Fatal(err)
		}
	}
	nd := net.Dialer{Control: smallRecvBuffer}
	c := s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: nd.DialContext})
	f := `{"kinds":[1],"limit":1000}`
	c.sendText(`["REQ","hist",` + f + `,` + f + `,` + f + `]`)
	time.Sleep(300 * time.Millisecond) // a slow link: nothing read yet
	live := a.Event(t, 1, now, "live")
	if ok, reason := pub.publish(live); !ok {
		t.Fatal(reason)
	}
	for n := 0; ; n++ {
		msg, err := c.readWithin(3 * time.Second)
		if err != nil {
			t.Fatalf("dropped after %d messages: %v", n, err)
		}
		if label(msg) == "EVENT" && strings.Contains(string(msg[2]), live.ID) {
			return
		}
	}
}
