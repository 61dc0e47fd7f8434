package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// These tests drive the relay with two client libraries nobody here wrote,
// pinned in testdata/clients/package-lock.json: nostr-tools (JavaScript) and
// rust-nostr's nostr-sdk (Rust compiled to WASM), both under Node. They need
// Node and `npm ci --prefix relay/testdata/clients`, so they run only when
// BUZZ_LITE_JS_CLIENTS=1 (as .ci/run does); opted in, a missing
// node_modules fails them.
//
// Each script prints one JSON object: what the library got, and the wire
// as it saw it ([direction, label, subscription or event id, detail]).

const (
	jsClientsEnv = "BUZZ_LITE_JS_CLIENTS"
	jsClientsDir = "testdata/clients"
	// jsClientTimeout bounds one script; the scripts give up after 40 s.
	jsClientTimeout = 60 * time.Second
)

// jsPrivateChannel is a relay with a private channel, its owner, a member
// and the member's stored messages, oldest first.
type jsPrivateChannel struct {
	s        *testServer
	owner    testutil.Signer
	member   testutil.Signer
	channel  string
	messages []string
}

// jsClientsRequire skips unless opted in, and checks that Node and the
// libraries are installed.
func jsClientsRequire(t *testing.T) {
	t.Helper()
	if os.Getenv(jsClientsEnv) != "1" {
		t.Skipf("set %s=1 to drive the relay with nostr-tools and rust-nostr under Node (needs `npm ci --prefix relay/testdata/clients`)", jsClientsEnv)
	}
	if _, err := os.Stat(filepath.Join(jsClientsDir, "node_modules")); err != nil {
		t.Fatalf("%s=1 but the client libraries are not installed (%v): run `npm ci --prefix relay/testdata/clients`", jsClientsEnv, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s=1 but node is not on PATH: %v", jsClientsEnv, err)
	}
}

// jsClientsSetup skips unless opted in (jsClientsRequire), and sets up a
// private channel over WebSocket with signed events: the owner creates it
// and adds the member, who posts 3 messages.
func jsClientsSetup(t *testing.T) *jsPrivateChannel {
	t.Helper()
	jsClientsRequire(t)
	s := startServer(t)
	p := &jsPrivateChannel{
		s:       s,
		owner:   testutil.NewSigner(t),
		member:  testutil.NewSigner(t),
		channel: newChannelID(t),
	}
	at := time.Now().Unix()
	h := nostr.Tag{"h", p.channel}

	c := s.client(t)
	mustPublish(t, c, p.owner.Event(t, buzz.KindCreateChannel, at-10, "", h, nostr.Tag{"name", "clients"}, nostr.Tag{"private"})) // RL-10
	mustPublish(t, c, p.owner.Event(t, buzz.KindPutUser, at-9, "", h, nostr.Tag{"p", p.member.PK}))
	for i := range 3 {
		ev := p.member.Event(t, 9, at-5+int64(i), fmt.Sprintf("stored message %d", i+1), h)
		mustPublish(t, c, ev) // RL-14: a member writes; the event's signature says who
		p.messages = append(p.messages, ev.ID)
	}

	// The same state, read through the relay by a connection that
	// authenticated as the member, so that a failure below is the library's.
	m := s.client(t)
	jsAuth(t, s, m, p.member)
	if got := ids(fetch(t, m, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {p.channel}}})); !sameIDs(got, p.messages) {
		t.Fatalf("setup: the member reads %v, want %v", got, p.messages)
	}
	return p
}

// jsAuth answers the connection's NIP-42 challenge, the first message the
// relay sends, as signer.
func jsAuth(t *testing.T, s *testServer, c *rawClient, signer testutil.Signer) {
	t.Helper()
	msg := c.await("AUTH challenge", func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	ev := signer.Event(t, nostr.KindClientAuthentication, time.Now().Unix(), "",
		nostr.Tag{"relay", s.wsURL}, nostr.Tag{"challenge", str(msg, 1)})
	c.send("AUTH", ev)
	ok := c.await("OK to AUTH", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
	if string(ok[2]) != "true" {
		t.Fatalf("AUTH refused: %s", joinRaw(ok))
	}
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// runJSClient runs a script of testdata/clients with the relay URL, the
// member's secret key and the channel, and decodes its JSON output into v.
// env adds NAME=value settings to the script's environment.
func (p *jsPrivateChannel) runJSClient(t *testing.T, script string, v any, env ...string) {
	t.Helper()
	runNode(t, script, []string{p.s.wsURL, p.member.SK, p.channel}, env, v)
}

// runNode runs a script of testdata/clients with args and env (NAME=value
// settings added to the script's environment), and decodes its JSON
// output into v.
func runNode(t *testing.T, script string, args, env []string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), jsClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = jsClientsDir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", script, stderr.String())
	}
	if err != nil {
		t.Fatalf("node %s: %v (context: %v)\nstdout:\n%s", script, err, ctx.Err(), stdout.String())
	}
	t.Logf("node %s:\n%s", script, stdout.String())
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("node %s: output is not the expected JSON: %v", script, err)
	}
}

// jsWire is the wire as a script saw it: [direction, label, subscription
// or event id, detail], direction ">" for sent and "<" for received.
type jsWire [][]string

func (w jsWire) String() string {
	var b strings.Builder
	for _, m := range w {
		b.WriteString("\n  " + strings.Join(m, " "))
	}
	return b.String()
}

// find returns the index of the first message from index from on that
// starts with prefix ("" matches any element), or -1.
func (w jsWire) find(from int, prefix ...string) int {
	for i := max(from, 0); i < len(w); i++ {
		if len(w[i]) < len(prefix) {
			continue
		}
		match := true
		for j, p := range prefix {
			if p != "" && w[i][j] != p {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// element is element j of message i, or "".
func (w jsWire) element(i, j int) string {
	if i < 0 || i >= len(w) || j >= len(w[i]) {
		return ""
	}
	return w[i][j]
}

// eventsOn lists the ids of the events received on subscription sub.
func (w jsWire) eventsOn(sub string) []string {
	var out []string
	for _, m := range w {
		if len(m) >= 4 && m[0] == "<" && m[1] == "EVENT" && m[2] == sub {
			out = append(out, m[3])
		}
	}
	return out
}

// checkAuthRetry checks the dance RL-13 is written for, on a connection
// that asked for the channel before it authenticated: the challenge
// first, the REQ closed with auth-required and nothing delivered, the AUTH
// (answering that challenge, naming relayTag) accepted, the REQ sent again
// (its subscription id returned), answered with want and EOSE.
func (p *jsPrivateChannel) checkAuthRetry(t *testing.T, w jsWire, relayTag string, want []string) (retrySub string) {
	t.Helper()
	req := w.find(0, ">", "REQ")
	if req < 0 {
		t.Fatalf("no REQ:%s", w)
	}
	sub := w.element(req, 2)
	closed := w.find(req, "<", "CLOSED", sub)
	if closed < 0 || w.element(closed, 3) != authRequired {
		t.Fatalf("first REQ %s not CLOSED with %q:%s", sub, authRequired, w)
	}
	// The relay sends the challenge on connect, before any answer to a
	// REQ (a client may send its REQ before it has read the challenge).
	challenge := w.find(0, "<", "AUTH")
	if challenge < 0 || challenge > closed {
		t.Fatalf("the AUTH challenge did not come before the CLOSED:%s", w)
	}
	// The challenge sent again just before the CLOSED may be answered
	// before the client has read the CLOSED.
	auth := w.find(req, ">", "AUTH")
	if auth < 0 {
		t.Fatalf("no AUTH sent after auth-required:%s", w)
	}
	if got := w[:auth].eventsOn(sub); len(got) != 0 {
		t.Fatalf("events before AUTH: %v", got)
	}
	// khatru sends the challenge again with the auth-required CLOSED; it
	// is the connection's one challenge, whichever a client answers.
	for i := w.find(0, "<", "AUTH"); i >= 0; i = w.find(i+1, "<", "AUTH") {
		if w.element(i, 2) != w.element(challenge, 2) {
			t.Fatalf("the relay sent two different challenges:%s", w)
		}
	}
	if got := w.element(auth, 3); got != w.element(challenge, 2) {
		t.Fatalf("AUTH answers challenge %q, the relay sent %q", got, w.element(challenge, 2))
	}
	if got := w.element(auth, 4); got != relayTag {
		t.Fatalf("AUTH names relay %q, want %q", got, relayTag)
	}
	ok := w.find(auth, "<", "OK", w.element(auth, 2))
	if ok < 0 || w.element(ok, 3) != "true" {
		t.Fatalf("AUTH not accepted:%s", w)
	}
	retry := w.find(max(ok, closed), ">", "REQ")
	if retry < 0 {
		t.Fatalf("no REQ after AUTH:%s", w)
	}
	retrySub = w.element(retry, 2)
	eose := w.find(retry, "<", "EOSE", retrySub)
	if eose < 0 {
		t.Fatalf("no EOSE for retried REQ %s:%s", retrySub, w)
	}
	if got := w[retry:eose].eventsOn(retrySub); !sameIDs(got, want) {
		t.Fatalf("retried REQ %s got %v before EOSE, want %v:%s", retrySub, got, want, w)
	}
	return retrySub
}

// nostrToolsResult is what testdata/clients/nostr-tools.mjs prints.
type nostrToolsResult struct {
	Library   string `json:"library"`
	Version   string `json:"version"`
	Pubkey    string `json:"pubkey"`
	Anonymous struct {
		Events []string `json:"events"`
		Closed []string `json:"closed"`
		Count  *int64   `json:"count"`
		Wire   jsWire   `json:"wire"`
	} `json:"anonymous"`
	Member struct {
		Events        []string `json:"events"`
		Published     string   `json:"published"`
		PublishReason string   `json:"publishReason"`
		Live          []string `json:"live"`
		Count         *int64   `json:"count"`
		Wire          jsWire   `json:"wire"`
	} `json:"member"`
}

// nostr-tools' SimplePool: anonymous, a private channel's REQ is CLOSED
// with auth-required and nothing is delivered; with onauth, the pool
// authenticates on that CLOSED and retries with a new subscription id,
// which returns the member's messages; the member's kind 9 is accepted and
// delivered live to the open subscription; COUNT answers both.
func TestClientsNostrTools(t *testing.T) {
	p := jsClientsSetup(t)
	var got nostrToolsResult
	p.runJSClient(t, "nostr-tools.mjs", &got)
	if got.Library != "nostr-tools" || got.Version != "2.25.2" || got.Pubkey != p.member.PK {
		t.Fatalf("ran %s %s as %s, want nostr-tools 2.25.2 as %s", got.Library, got.Version, got.Pubkey, p.member.PK)
	}

	// RL-13: an anonymous REQ for a private channel closes with
	// auth-required, after the challenge (nostr-tools retries only if the
	// challenge came first, and only with onauth: here it has none).
	a := got.Anonymous
	if len(a.Events) != 0 {
		t.Errorf("anonymous: got events %v", a.Events)
	}
	if !slices.Equal(a.Closed, []string{authRequired}) {
		t.Errorf("anonymous: closed with %q, want [%q]", a.Closed, authRequired)
	}
	if c, r := a.Wire.find(0, "<", "AUTH"), a.Wire.find(0, "<", "CLOSED"); c < 0 || r < 0 || c > r {
		t.Errorf("anonymous: want the AUTH challenge before the CLOSED:%s", a.Wire)
	}
	if a.Wire.find(0, ">", "AUTH") >= 0 {
		t.Errorf("anonymous: the pool authenticated without onauth:%s", a.Wire)
	}
	// RL-13: COUNT of a channel the requester may not read counts nothing,
	// as for a nonexistent channel (CW-3), and is answered.
	if a.Count == nil || *a.Count != 0 {
		t.Errorf("anonymous: COUNT = %v, want 0", a.Count)
	}

	// RL-12, RL-13: after AUTH the member reads the private channel.
	m := got.Member
	if !sameIDs(m.Events, p.messages) {
		t.Errorf("member: got %v, want %v", m.Events, p.messages)
	}
	// Its AUTH names the relay URL with a trailing slash (new URL() of
	// ws://host:port); go-nostr's nip42.ValidateAuthEvent, which khatru
	// checks AUTH with, trims one trailing slash from both URLs.
	first := m.Wire.element(m.Wire.find(0, ">", "REQ"), 2)
	if retry := p.checkAuthRetry(t, m.Wire, p.s.wsURL+"/", p.messages); retry == first {
		t.Errorf("nostr-tools retried with the same subscription id %q", retry)
	}

	// RL-14: the member writes to the channel; RL-13: the open subscription
	// of an authenticated member receives it live.
	if m.PublishReason != "" {
		t.Errorf("member: publish answered OK true with %q", m.PublishReason)
	}
	stored, err := p.s.store.Query(context.Background(), nostr.Filter{IDs: []string{m.Published}}, buzz.Viewer(p.member.PK))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].PubKey != p.member.PK || stored[0].Kind != 9 || stored[0].Tags.GetFirst([]string{"h", p.channel}) == nil {
		t.Errorf("member: published %s, stored %v", m.Published, stored)
	}
	if !slices.Equal(m.Live, []string{m.Published}) {
		t.Errorf("member: live %v, want [%s]", m.Live, m.Published)
	}
	if m.Count == nil || *m.Count != int64(len(p.messages)+1) {
		t.Errorf("member: COUNT = %v, want %d", m.Count, len(p.messages)+1)
	}
	// What an anonymous connection would see of that new message: nothing.
	anon, err := p.s.store.Query(context.Background(), nostr.Filter{IDs: []string{m.Published}}, buzz.Anonymous)
	if err != nil || len(anon) != 0 {
		t.Errorf("anonymous reads the member's new message: %v, %v", anon, err)
	}
}

// rustNostrResult is what testdata/clients/rust-nostr.mjs prints.
type rustNostrResult struct {
	Library   string `json:"library"`
	Version   string `json:"version"`
	Pubkey    string `json:"pubkey"`
	Anonymous struct {
		Events []string `json:"events"`
		Error  string   `json:"error"`
		Wire   jsWire   `json:"wire"`
	} `json:"anonymous"`
	Member struct {
		Events     []string `json:"events"`
		Count      *int64   `json:"count"`
		CountError string   `json:"countError"`
		Wire       jsWire   `json:"wire"`
	} `json:"member"`
}

// rust-nostr's Client: anonymous, the channel is CLOSED with
// auth-required and fetches nothing; with the member's keys it
// authenticates on its own and the fetch returns the member's messages;
// COUNT on the authenticated connection counts them.
func TestClientsRustNostr(t *testing.T) {
	p := jsClientsSetup(t)
	var got rustNostrResult
	p.runJSClient(t, "rust-nostr.mjs", &got)
	if got.Library != "@rust-nostr/nostr-sdk" || got.Version != "0.43.0" || got.Pubkey != p.member.PK {
		t.Fatalf("ran %s %s as %s, want @rust-nostr/nostr-sdk 0.43.0 as %s", got.Library, got.Version, got.Pubkey, p.member.PK)
	}

	// RL-13: anonymous, the REQ closes with auth-required and nothing comes.
	a := got.Anonymous
	if len(a.Events) != 0 || a.Error != "" {
		t.Errorf("anonymous: got events %v, error %q; want none", a.Events, a.Error)
	}
	req := a.Wire.find(0, ">", "REQ")
	if closed := a.Wire.find(req, "<", "CLOSED", a.Wire.element(req, 2)); req < 0 || a.Wire.element(closed, 3) != authRequired {
		t.Errorf("anonymous: want the REQ CLOSED with %q:%s", authRequired, a.Wire)
	}
	if a.Wire.find(0, ">", "AUTH") >= 0 {
		t.Errorf("anonymous: a client without a signer authenticated:%s", a.Wire)
	}

	// RL-12, RL-13: the member's fetch returns the member's messages.
	m := got.Member
	if !sameIDs(m.Events, p.messages) {
		t.Errorf("member: got %v, want %v", m.Events, p.messages)
	}
	// Told auth-required (its automatic authentication was off while the
	// challenge on connect came in), it authenticates, names the relay URL
	// as given, and re-sends the REQ with the same subscription id, which
	// must be reusable after CLOSED.
	first := m.Wire.element(m.Wire.find(0, ">", "REQ"), 2)
	if retry := p.checkAuthRetry(t, m.Wire, p.s.wsURL, p.messages); retry != first {
		t.Errorf("rust-nostr retried with subscription id %q, not the first one %q", retry, first)
	}
	// COUNT, on the connection that authenticated.
	if m.CountError != "" || m.Count == nil || *m.Count != int64(len(p.messages)) {
		t.Errorf("member: COUNT = %v (error %q), want %d", m.Count, m.CountError, len(p.messages))
	}
}
