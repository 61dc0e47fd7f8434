package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-28: the URL tokens must name is relay.url, or, without it, ws:// and
// a loopback listen address; any other listen address is refused.
func TestPublicURL(t *testing.T) {
	for _, tc := range []struct{ configured, listen, want string }{
		{"", "127.0.0.1:7777", "ws://127.0.0.1:7777"},
		{"", "localhost:7777", "ws://localhost:7777"},
		{"", "LocalHost:7777", "ws://LocalHost:7777"},
		{"", "[::1]:7777", "ws://[::1]:7777"},
		{"", "127.0.0.2:7777", "ws://127.0.0.2:7777"},
		{"wss://relay.example", "0.0.0.0:7777", "wss://relay.example"},
		{"wss://relay.example", "127.0.0.1:7777", "wss://relay.example"},
	} {
		if got, err := PublicURL(tc.configured, tc.listen); err != nil || got != tc.want {
			t.Errorf("PublicURL(%q, %q) = %q, %v; want %q", tc.configured, tc.listen, got, err, tc.want)
		}
	}
	for _, listen := range []string{":7777", "0.0.0.0:7777", "[::]:7777", "10.0.0.5:7777", "relay.example:7777", "localhost", ""} {
		if got, err := PublicURL("", listen); !errors.Is(err, ErrRelayURLRequired) {
			t.Errorf("PublicURL(\"\", %q) = %q, %v; want ErrRelayURLRequired", listen, got, err)
		}
	}
}

// RL-28: Serve without a relay URL refuses a listener that is not on
// loopback.
func TestServeRefusesPublicListenerWithoutURL(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t) // for its store and relay; its own listener is loopback
	if err := s.relay.Serve(context.Background(), ln); !errors.Is(err, ErrRelayURLRequired) {
		t.Fatalf("Serve on %s without a URL: %v", ln.Addr(), err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Fatal("Serve left the refused listener open")
	}
}

// spoof is request headers that name another relay, and the URL a token
// signed for that relay names.
type spoof struct {
	name   string
	header http.Header
	signed string
}

// spoofs are the spoofs of NIP-42: the relay tags khatru, without a
// configured URL, took for the relay's own URL.
func spoofs(s *testServer) []spoof {
	return []spoof{
		{"Host", http.Header{"Host": {"evil.example"}}, "wss://evil.example"},
		{"X-Forwarded-Host", http.Header{"X-Forwarded-Host": {"evil.example"}}, "wss://evil.example"},
		{"X-Forwarded-Host with port", http.Header{"X-Forwarded-Host": {"evil.example:8080"}}, "ws://evil.example:8080"},
		{"X-Forwarded-Proto", http.Header{"X-Forwarded-Proto": {"https"}}, "wss://" + s.addr},
		{"X-Forwarded-Host and -Proto", http.Header{"X-Forwarded-Host": {"evil.example"}, "X-Forwarded-Proto": {"http"}}, "ws://evil.example"},
	}
}

// dialWith connects to s with extra request headers and reads the AUTH
// challenge.
func (s *testServer) dialWith(t *testing.T, header http.Header) *session {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitTimeout}
	conn, _, err := d.Dial(s.wsURL, header)
	if err != nil {
		t.Fatalf("dial %s with %v: %v", s.wsURL, header, err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawClient{t: t, conn: conn}
	msg, err := c.read()
	if err != nil || label(msg) != "AUTH" {
		t.Fatalf("first message %v, %v; want the AUTH challenge", msg, err)
	}
	return &session{rawClient: c, challenge: str(msg, 1)}
}

// auth sends who's AUTH event naming relayURL and returns the relay's OK.
func (c *session) auth(t *testing.T, who testutil.Signer, relayURL string) bool {
	t.Helper()
	ev := who.Event(t, nostr.KindClientAuthentication, time.Now().Unix(), "",
		nostr.Tag{"relay", relayURL}, nostr.Tag{"challenge", c.challenge})
	c.send("AUTH", ev)
	msg := c.await("OK of AUTH", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
	var ok bool
	if len(msg) < 3 || json.Unmarshal(msg[2], &ok) != nil {
		t.Fatalf("bad OK %s", joinRaw(msg))
	}
	return ok
}

// RL-28 (finding 3): without relay.url, Host, X-Forwarded-Host and
// X-Forwarded-Proto never decide the URL NIP-42 AUTH events must name:
// an AUTH event for the relay the headers name is refused and a member's
// private channel stays closed; an AUTH event for the relay's real URL,
// in any spelling of it, is accepted whatever the headers say.
func TestAuthURLNotFromHeaders(t *testing.T) {
	s := startServer(t)
	p := qySetupPrivate(t, s)
	private := nostr.Filter{Tags: nostr.TagMap{"h": {p.h}}}
	for _, tc := range spoofs(s) {
		t.Run(tc.name, func(t *testing.T) {
			c := s.dialWith(t, tc.header)
			if c.auth(t, p.member, tc.signed) {
				t.Fatalf("AUTH for %s accepted with %v", tc.signed, tc.header)
			}
			if evs, closed := subscribe(t, c.rawClient, "private", private); len(evs) != 0 || !strings.HasPrefix(closed, "auth-required: ") {
				t.Fatalf("after a refused AUTH, the private channel answered %d events, CLOSED %q", len(evs), closed)
			}
			if !c.auth(t, p.member, s.wsURL) {
				t.Fatalf("AUTH for the relay's own URL %s refused with %v", s.wsURL, tc.header)
			}
			if evs := mustSubscribe(t, c.rawClient, "private-2", private); !qyHas(evs, p.msg.ID) {
				t.Fatal("the authenticated member does not read the private channel")
			}
		})
	}
	_, port, _ := net.SplitHostPort(s.addr)
	for _, u := range []string{"ws://localhost:" + port, "ws://127.0.0.1:" + port + "/", "WS://127.0.0.1:" + port} {
		if !s.dialWith(t, nil).auth(t, p.member, u) {
			t.Errorf("AUTH for %s refused: it names the relay", u)
		}
	}
	if s.dialWith(t, nil).auth(t, p.member, "ws://127.0.0.1:1") {
		t.Error("AUTH for another port accepted")
	}
}

// RL-28, RL-17 (finding 3): a NIP-98 token names the relay's URL, never
// the one the request's Host or X-Forwarded-* headers name.
func TestQueryURLNotFromHeaders(t *testing.T) {
	s := startServer(t)
	p := qySetupPrivate(t, s)
	body := `[{"#h":["` + p.h + `"]}]`
	post := func(header http.Header, auth string) qyResult {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, qyURL(s), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Host = header.Get("Host")
		req.Header.Set("Authorization", auth)
		resp, err := qyClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return qyResult{status: resp.StatusCode, header: resp.Header, body: b}
	}
	for _, tc := range []spoof{
		{"Host", http.Header{"Host": {"evil.example"}}, "http://evil.example/query"},
		{"Host with port", http.Header{"Host": {"evil.example:8080"}}, "http://evil.example:8080/query"},
		{"X-Forwarded-Host", http.Header{"X-Forwarded-Host": {"evil.example"}}, "http://evil.example/query"},
		{"X-Forwarded-Proto", http.Header{"X-Forwarded-Proto": {"https"}}, "https://" + s.addr + "/query"},
		{"X-Forwarded-Host and -Proto", http.Header{"X-Forwarded-Host": {"evil.example"}, "X-Forwarded-Proto": {"https"}}, "https://evil.example/query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			post(tc.header, qyAuth(t, p.member, tc.signed, body)).wantError(t, http.StatusUnauthorized, "NIP-98: URL mismatch")
			evs := post(tc.header, qyAuth(t, p.member, qyURL(s), body)).events(t)
			if !qyHas(evs, p.msg.ID) {
				t.Fatalf("a token for the relay's own URL did not read the private channel with %v", tc.header)
			}
		})
	}
	_, port, _ := net.SplitHostPort(s.addr)
	qyPost(t, s, body, qyAuth(t, p.member, "http://localhost:"+port+"/query", body)).events(t)
	qyPost(t, s, body, qyAuth(t, p.member, "http://[::1]:"+port+"/query", body)).events(t)
}

// RL-28: behind a configured wss:// URL, AUTH events and NIP-98 tokens
// must name it; the loopback address the relay listens on no longer
// counts, nor does any header.
func TestConfiguredURLOnly(t *testing.T) {
	s := startServer(t, func(c *Config) { c.URL = "wss://relay.example.com" })
	p := qySetupPrivate(t, s)
	if s.dialWith(t, nil).auth(t, p.member, s.wsURL) {
		t.Error("AUTH for the listen address accepted behind a configured URL")
	}
	if s.dialWith(t, http.Header{"Host": {"evil.example"}}).auth(t, p.member, "wss://evil.example") {
		t.Error("AUTH for the Host header's relay accepted")
	}
	for _, u := range []string{"wss://relay.example.com", "wss://relay.example.com:443/", "WSS://Relay.Example.com"} {
		if !s.dialWith(t, nil).auth(t, p.member, u) {
			t.Errorf("AUTH for the configured URL spelt %s refused", u)
		}
	}
	body := `[{"#h":["` + p.h + `"]}]`
	qyPost(t, s, body, qyAuth(t, p.member, "https://relay.example.com/query", body)).events(t)
	for _, u := range []string{qyURL(s), "http://relay.example.com/query", "https://evil.example/query"} {
		qyPost(t, s, body, qyAuth(t, p.member, u, body)).wantError(t, http.StatusUnauthorized, "NIP-98: URL mismatch")
	}
}
