package khatru

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// buzz-lite patch 17: with a ValidateAuth hook, the hook alone decides an
// AUTH event, with the connection's own challenge: the request's Host
// header, which getBaseURL would have taken for the relay's URL, does not
// matter.
func TestValidateAuthHook(t *testing.T) {
	const ours = "ws://relay.example"
	rl := NewRelay()
	rl.OnConnect = append(rl.OnConnect, RequestAuth)
	challenges := make(chan string, 2)
	rl.ValidateAuth = func(ev *nostr.Event, challenge string) (string, bool) {
		challenges <- challenge
		if ev.Tags.GetFirst([]string{"relay", ours}) == nil {
			return "", false
		}
		return ev.PubKey, true
	}
	srv := httptest.NewServer(http.HandlerFunc(rl.HandleWebsocket))
	t.Cleanup(srv.Close)

	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), http.Header{"Host": {"evil.example"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	read := func() []json.RawMessage {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var msg []json.RawMessage
		if err := json.Unmarshal(b, &msg); err != nil || len(msg) < 2 {
			t.Fatalf("not a message: %s", b)
		}
		return msg
	}
	var challenge string
	if msg := read(); json.Unmarshal(msg[1], &challenge) != nil || challenge == "" {
		t.Fatal("no AUTH challenge")
	}
	sk := nostr.GeneratePrivateKey()
	auth := func(relay string) bool {
		t.Helper()
		ev := nostr.Event{Kind: nostr.KindClientAuthentication, CreatedAt: nostr.Now(),
			Tags: nostr.Tags{{"relay", relay}, {"challenge", challenge}}}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		if err := conn.WriteJSON([]any{"AUTH", ev}); err != nil {
			t.Fatal(err)
		}
		var ok bool
		if msg := read(); len(msg) < 3 || json.Unmarshal(msg[2], &ok) != nil {
			t.Fatalf("bad OK %s", msg)
		}
		return ok
	}
	if auth("wss://evil.example") {
		t.Error("AUTH for the Host header's relay accepted although the hook refused it")
	}
	if !auth(ours) {
		t.Error("AUTH the hook accepted was refused")
	}
	for range 2 {
		if got := <-challenges; got != challenge {
			t.Errorf("hook saw challenge %q, want the connection's %q", got, challenge)
		}
	}
}
