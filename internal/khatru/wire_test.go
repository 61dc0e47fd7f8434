package khatru

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// wireConn is a raw client of a test relay: the tests read exactly what
// the relay sends (go-nostr's client races with itself on close, so that
// tests using it could not run under -race).
type wireConn struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialRelay(t *testing.T, rl *Relay) *wireConn {
	t.Helper()
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &wireConn{t, conn}
}

// dialAgain opens another connection to the relay c is connected to.
func (c *wireConn) dialAgain() *wireConn {
	c.t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, _, err := d.Dial("ws://"+c.conn.RemoteAddr().String(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return &wireConn{c.t, conn}
}

func (c *wireConn) send(msg ...any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(msg); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next message: its label and its other elements.
func (c *wireConn) read() (string, []json.RawMessage) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatal(err)
	}
	var msg []json.RawMessage
	var label string
	if err := json.Unmarshal(b, &msg); err != nil || len(msg) == 0 || json.Unmarshal(msg[0], &label) != nil {
		c.t.Fatalf("not a message: %s", b)
	}
	return label, msg[1:]
}

// publish sends ev and returns the OK's acceptance and reason. Events of
// the connection's subscriptions that arrive first are skipped.
func (c *wireConn) publish(ev *nostr.Event) (bool, string) {
	c.t.Helper()
	c.send("EVENT", ev)
	label, rest := c.read()
	for label == "EVENT" {
		label, rest = c.read()
	}
	var ok bool
	var reason string
	if label != "OK" || len(rest) != 3 || json.Unmarshal(rest[1], &ok) != nil || json.Unmarshal(rest[2], &reason) != nil {
		c.t.Fatalf("want OK, got %s %s", label, rest)
	}
	return ok, reason
}

// subscribe opens sub and reads its EOSE.
func (c *wireConn) subscribe(sub string, f nostr.Filter) {
	c.t.Helper()
	c.send("REQ", sub, f)
	if label, rest := c.read(); label != "EOSE" {
		c.t.Fatalf("REQ %s: want EOSE, got %s %s", sub, label, rest)
	}
}

// eventIDs reads messages until the EVENT of last, and returns the ids of
// the events received before it, by subscription.
func (c *wireConn) eventIDs(last string) map[string][]string {
	c.t.Helper()
	got := map[string][]string{}
	for {
		label, rest := c.read()
		if label != "EVENT" {
			c.t.Fatalf("want EVENT, got %s %s", label, rest)
		}
		var sub string
		var ev nostr.Event
		if json.Unmarshal(rest[0], &sub) != nil || json.Unmarshal(rest[1], &ev) != nil {
			c.t.Fatalf("bad EVENT %s", rest)
		}
		if ev.ID == last {
			return got
		}
		got[sub] = append(got[sub], ev.ID)
	}
}

// fetch sends a REQ with f and returns the ids of the events it answers
// before EOSE, then closes it. Events of other subscriptions are skipped.
func (c *wireConn) fetch(sub string, f nostr.Filter) []string {
	c.t.Helper()
	c.send("REQ", sub, f)
	var ids []string
	for {
		label, rest := c.read()
		switch label {
		case "EOSE":
			c.send("CLOSE", sub)
			return ids
		case "EVENT":
			var of string
			var ev nostr.Event
			if json.Unmarshal(rest[0], &of) != nil || json.Unmarshal(rest[1], &ev) != nil {
				c.t.Fatalf("bad EVENT %s", rest)
			}
			if of == sub {
				ids = append(ids, ev.ID)
			}
		default:
			c.t.Fatalf("REQ %s: want EVENT or EOSE, got %s %s", sub, label, rest)
		}
	}
}
