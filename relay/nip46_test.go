package relay

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/web"
)

// kindNostrConnect is NIP-46's kind: requests to a remote signer and its
// answers, ephemeral.
const kindNostrConnect = 24133

// nip46Event is who's NIP-46 message to the pubkey to, with content as
// opaque to the relay as NIP-44's ciphertext is, unpublished.
func nip46Event(t *testing.T, who testutil.Signer, to string) *nostr.Event {
	t.Helper()
	return who.Event(t, kindNostrConnect, now(), "AoHQs2y2bZ8jHqUYx1C4kBtO9TUvmJw5", nostr.Tag{"p", to})
}

// nip46Subscribe opens the subscription a NIP-46 party holds for what is
// sent to pk, as nostr-tools' BunkerSigner and NDK's backend do.
func nip46Subscribe(t *testing.T, c *rawClient, pk string) {
	t.Helper()
	if evs, closed := c.req("nip46", `{"kinds":[24133],"#p":["`+pk+`"]}`); len(evs) != 0 || closed != "" {
		t.Fatalf("REQ for kind 24133 to %s: %d events, closed %q", pk[:8], len(evs), closed)
	}
}

// nip46AwaitLive waits for ev on c's NIP-46 subscription.
func nip46AwaitLive(t *testing.T, c *rawClient, ev *nostr.Event) {
	t.Helper()
	msg := c.await("kind 24133 EVENT", func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m, 1) == "nip46" })
	var got nostr.Event
	if err := json.Unmarshal(msg[2], &got); err != nil || got.ID != ev.ID {
		t.Fatalf("live kind 24133: got %s (%v), want %s", got.ID, err, ev.ID)
	}
}

// CW-26, NIP-46, RL-9: a bunker URL may name this relay. On an open relay
// a web page's request to a remote signer (kind 24133, signed by the
// page's fresh client key, `p` the bunker) and the bunker's answer are
// accepted and delivered live to the subscription each side holds, and
// never stored.
func TestNIP46ThroughOpenRelay(t *testing.T) {
	s := startServer(t)
	client, bunker := testutil.NewSigner(t), testutil.NewSigner(t)
	cc, bc := s.client(t), s.client(t)
	nip46Subscribe(t, cc, client.PK)
	nip46Subscribe(t, bc, bunker.PK)

	req := nip46Event(t, client, bunker.PK)
	mustPublish(t, cc, req)
	nip46AwaitLive(t, bc, req)
	ans := nip46Event(t, bunker, client.PK)
	mustPublish(t, bc, ans)
	nip46AwaitLive(t, cc, ans)
	mustNotServe(t, cc, req.ID, "a NIP-46 request returned by REQ: it is ephemeral")
}

// RL-29, NIP-46: on a closed relay (open_write off) kind 24133 has no
// exception. A stranger's message, which a web page's fresh client key
// always is, is refused as any event of no channel; an allowed pubkey's
// passes and is delivered. So a closed relay does not carry a bunker's
// conversation with a page: its bunker relay is let in through
// server.web_connect_allow instead (docs/security.md).
func TestNIP46OnClosedRelayFollowsRL29(t *testing.T) {
	admin, allowed, stranger := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	p := buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAdmins, Allowed: map[string]bool{allowed.PK: true}}
	s := startWithPolicy(t, p, admin.PK)
	sc, ac := s.client(t), s.client(t)
	nip46Subscribe(t, sc, stranger.PK)
	nip46Subscribe(t, ac, allowed.PK)

	mustReject(t, sc, nip46Event(t, stranger, allowed.PK), membersOnly)
	ev := nip46Event(t, allowed, stranger.PK)
	mustPublish(t, ac, ev)
	nip46AwaitLive(t, sc, ev)
}

// CW-26: server.web_connect_allow reaches the web view's
// Content-Security-Policy: every answer (a page, the 404, the
// stylesheet) lets a page connect to the configured origins too, and a
// relay without them names no third-party origin.
func TestWebConnectAllowCSP(t *testing.T) {
	allow := []string{"wss://bunker.example.com", "ws://127.0.0.1:7778"}
	s := startServer(t, webOn, func(c *Config) { c.WebConnectAllow = allow })
	want := web.CSPWith(s.wsURL, allow)
	for path, status := range map[string]int{
		"/":                     http.StatusOK,
		"/c/" + newChannelID(t): http.StatusNotFound,
		web.StylesheetURL():     http.StatusOK,
		"/c/" + newChannelID(t) + "/t/" + strings.Repeat("0", 64): http.StatusNotFound,
	} {
		ans := webGet(t, s, path, "text/html")
		got := ans.header.Get("Content-Security-Policy")
		if ans.status != status || got != want || !strings.Contains(got, "connect-src") {
			t.Errorf("GET %s: %d, Content-Security-Policy %q; want %d, %q", path, ans.status, got, status, want)
		}
		for _, o := range allow {
			if !strings.Contains(got, o) {
				t.Errorf("GET %s: Content-Security-Policy %q does not name %s", path, got, o)
			}
		}
	}

	plain := startServer(t, webOn)
	if got := webGet(t, plain, "/", "text/html").header.Get("Content-Security-Policy"); got != web.CSP(plain.wsURL) || strings.Contains(got, "example.com") {
		t.Errorf("without web_connect_allow: Content-Security-Policy %q, want %q", got, web.CSP(plain.wsURL))
	}
}
