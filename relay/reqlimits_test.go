package relay

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Exact answers to a REQ or COUNT past a limit (RL-27, RL-27a).
const (
	tooManyFilters       = "invalid: too many filters (limit 10)"
	tooManySubscriptions = "rate-limited: too many open subscriptions (limit 50)"
	tooManyRequests      = "rate-limited: too many requests, slow down"
	relayBusy            = "rate-limited: the relay is busy, try again shortly"
)

// filters is n copies of filter.
func filters(n int, filter string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = filter
	}
	return out
}

// countClosed sends a COUNT with the raw filters and returns the reason of
// the CLOSED that answers it; it fails the test on a COUNT answer.
func (c *rawClient) countClosed(subID string, filters ...string) string {
	c.t.Helper()
	c.sendText(`["COUNT",` + strconvQuote(subID) + `,` + strings.Join(filters, ",") + `]`)
	msg := c.await("COUNT "+subID, func(m []json.RawMessage) bool {
		return (label(m) == "COUNT" || label(m) == "CLOSED") && str(m, 1) == subID
	})
	if label(msg) != "CLOSED" {
		c.t.Fatalf("COUNT %s: answered %s, want CLOSED", subID, joinRaw(msg))
	}
	return str(msg, 2)
}

// RL-27: filters per REQ and COUNT and subscriptions per connection are
// capped by default, a REQ or COUNT past a cap is answered CLOSED with its
// NIP-01 prefix, and a REQ that replaces an open subscription does not
// count twice. (Finding 2: one connection held 200k listeners.)
func TestReqCapsAnsweredClosed(t *testing.T) {
	_, c, _ := startWithClient(t)
	if _, closed := c.req("many", filters(11, `{"kinds":[1]}`)...); closed != tooManyFilters {
		t.Fatalf("REQ with 11 filters: CLOSED %q, want %q", closed, tooManyFilters)
	}
	if got := c.countClosed("many-count", filters(11, `{"kinds":[1]}`)...); got != tooManyFilters {
		t.Fatalf("COUNT with 11 filters: CLOSED %q, want %q", got, tooManyFilters)
	}
	if _, closed := c.req("ten", filters(10, `{"kinds":[1]}`)...); closed != "" {
		t.Fatalf("REQ with 10 filters: CLOSED %q", closed)
	}
	c.send("CLOSE", "ten")
	if n := c.count("ten-count", strings.Join(filters(10, `{"kinds":[1]}`), ",")); n != 0 {
		t.Fatalf("COUNT with 10 filters: %d", n)
	}

	for i := range 50 {
		if _, closed := c.req(fmt.Sprint("sub-", i), `{"kinds":[1],"limit":0}`, `{"kinds":[7],"limit":0}`); closed != "" {
			t.Fatalf("subscription %d: CLOSED %q", i, closed)
		}
	}
	if _, closed := c.req("one-more", `{"kinds":[1],"limit":0}`); closed != tooManySubscriptions {
		t.Fatalf("51st subscription: CLOSED %q, want %q", closed, tooManySubscriptions)
	}
	if _, closed := c.req("sub-7", `{"kinds":[1],"limit":0}`); closed != "" {
		t.Fatalf("a REQ replacing an open subscription: CLOSED %q", closed)
	}
	// A CLOSE ends its subscription before the next message is read.
	c.send("CLOSE", "sub-3")
	if _, closed := c.req("after-close", `{"kinds":[1],"limit":0}`); closed != "" {
		t.Fatalf("a subscription in place of a closed one: CLOSED %q", closed)
	}
	// A COUNT is no subscription: it is answered with 50 open.
	if n := c.count("count-at-cap", `{"kinds":[1]}`); n != 0 {
		t.Fatalf("COUNT: %d", n)
	}
}

// RL-27, RL-22 (NIP-01): a REQ and its CLOSE sent back to back leave no
// subscription open, whatever order their handlers run in: a subscription
// its client closed neither receives live events nor counts against the
// cap of open subscriptions.
func TestReqThenCloseLeavesNoSubscription(t *testing.T) {
	_, c, _ := startWithClient(t)
	for i := range 200 {
		c.sendText(fmt.Sprintf(`["REQ","x-%d",{"kinds":[1],"limit":0}]`, i))
		c.sendText(fmt.Sprintf(`["CLOSE","x-%d"]`, i))
	}
	c.count("barrier", `{"kinds":[1]}`)
	for i := range DefaultLimits.MaxSubscriptions {
		if _, closed := c.req(fmt.Sprint("sub-", i), `{"kinds":[1],"limit":0}`); closed != "" {
			t.Fatalf("subscription %d after 200 closed ones: CLOSED %q", i+1, closed)
		}
	}
}

// RL-27 (NIP-45): a COUNT whose filter is refused is answered CLOSED with
// the reason, as a REQ is, and never with a count: it was a NOTICE and a
// COUNT of 0, a count that was not made.
func TestCountOfRefusedFilterAnsweredClosed(t *testing.T) {
	_, c, _ := startWithClient(t)
	if got, want := c.countClosed("search", `{"search":"hello"}`), "unsupported: search (NIP-50) is not supported"; got != want {
		t.Fatalf("COUNT with search: CLOSED %q, want %q", got, want)
	}
	// Too many values: TestLongFilterListsRefused.
}

// dialFrom connects to s from the loopback address local, so that the
// relay sees a client IP of its own (RL-28).
func (s *testServer) dialFrom(t *testing.T, local string) *rawClient {
	t.Helper()
	nd := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: nd.DialContext})
}

// RL-27, RL-28: a flood of REQs and COUNTs on one connection is limited
// to its bucket and answered CLOSED rate-limited, while a connection from
// another address keeps being served and an exempt network is not limited.
// (Finding 5: 300 COUNTs from one socket slowed everyone's REQs.)
func TestReqCountFloodRateLimitedPerConnection(t *testing.T) {
	const burst = 5
	s := startServer(t, func(c *Config) {
		// Next to no refill: the burst is all a connection gets here.
		c.Limits.Rates = &Rates{ReqsPerConnection: Rate{PerSecond: 0.001, Burst: burst}}
		c.Limits.Exempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")}
	})
	attacker := s.dialFrom(t, "127.0.0.2")
	const flood = 200
	for i := range flood {
		if i%2 == 0 {
			attacker.sendText(fmt.Sprintf(`["COUNT","flood-%d",{"kinds":[1]}]`, i))
		} else {
			attacker.sendText(fmt.Sprintf(`["REQ","flood-%d",{"kinds":[1]}]`, i))
		}
	}
	served, limited := 0, 0
	for served+limited < flood {
		msg := attacker.await("flood answers", func(m []json.RawMessage) bool {
			return strings.HasPrefix(str(m, 1), "flood-") && label(m) != "EVENT"
		})
		switch {
		case label(msg) == "CLOSED" && str(msg, 2) == tooManyRequests:
			limited++
		case label(msg) == "COUNT" || label(msg) == "EOSE":
			served++
		default:
			t.Fatalf("flood answered %s", joinRaw(msg))
		}
	}
	if served != burst {
		t.Fatalf("%d of %d REQ/COUNT served, want the burst of %d", served, flood, burst)
	}

	other := s.dialFrom(t, "127.0.0.3")
	for i := range burst {
		if _, closed := other.req(fmt.Sprint("other-", i), `{"kinds":[1]}`); closed != "" {
			t.Fatalf("another address, REQ %d: CLOSED %q", i, closed)
		}
	}
	exempt := s.dialFrom(t, "127.0.0.4")
	for i := range 3 * burst {
		exempt.count(fmt.Sprint("exempt-", i), `{"kinds":[1]}`)
	}
}

// RL-27, RL-27a: a connection cannot pile up listeners past its caps (10
// filters in each of 50 subscriptions), and when it hangs up all of them
// go while the relay goes on serving. (Finding 2: 200k listeners, then a
// hang-up, froze every EVENT and REQ for 19.7 s.)
func TestHangUpWithManyListeners(t *testing.T) {
	s, pub, a := startWithClient(t)
	attacker := s.raw(t)
	for i := range 60 {
		id := fmt.Sprint("wide-", i)
		if _, closed := attacker.req(id, filters(20, `{"kinds":[1]}`)...); closed != tooManyFilters {
			t.Fatalf("REQ %d with 20 filters: CLOSED %q, want %q", i, closed, tooManyFilters)
		}
	}
	opened := 0
	for i := range 60 {
		id := fmt.Sprint("sub-", i)
		_, closed := attacker.req(id, filters(10, `{"kinds":[1],"limit":0}`)...)
		switch closed {
		case "":
			opened++
		case tooManySubscriptions:
		default:
			t.Fatalf("REQ %d: CLOSED %q", i, closed)
		}
	}
	if opened != 50 {
		t.Fatalf("%d subscriptions opened, want 50", opened)
	}
	probe := a.Event(t, 1, time.Now().Unix(), "probe")
	if !s.relay.kh.Listening(probe, true) {
		t.Fatal("the attacker's subscriptions do not listen")
	}
	attacker.conn.Close()
	deadline := time.Now().Add(waitTimeout)
	for s.relay.kh.Listening(probe, true) {
		if time.Now().After(deadline) {
			t.Fatal("the listeners of a connection that hung up remain")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mustPublish(t, pub, probe)
	if got := fetch(t, pub, nostr.Filter{IDs: []string{probe.ID}}); len(got) != 1 {
		t.Fatalf("after the hang-up: REQ by id got %d events", len(got))
	}
}
