package relay

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// This file tests `POST /query` end to end against a real relay on a
// loopback port: the request contract (RL-16), NIP-98 auth (RL-17), the
// dispatch order (RL-18), the generic path (RL-19), the thread path
// (RL-20), overlay signing (RL-21), the NIP-11 advertisement of the
// extension, and robustness against hostile bodies.

// qyClient is the HTTP client of these tests: no test waits forever.
var qyClient = &http.Client{Timeout: 4 * waitTimeout}

// qyResult is one HTTP answer of the relay.
type qyResult struct {
	status int
	header http.Header
	body   []byte
}

// qyDo sends one request; auth is the Authorization header ("" for none).
func qyDo(t *testing.T, method, url string, body []byte, auth string) qyResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := qyClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return qyResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// qyPost posts body to s's /query.
func qyPost(t *testing.T, s *testServer, body, auth string) qyResult {
	t.Helper()
	return qyDo(t, http.MethodPost, s.httpURL+"/query", []byte(body), auth)
}

// qyURL is the URL a client signs for s's /query.
func qyURL(s *testServer) string { return s.httpURL + "/query" }

// events decodes a 200 answer; anything else fails the test.
func (r qyResult) events(t *testing.T) []*nostr.Event {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(r.body, &evs); err != nil {
		t.Fatalf("answer is not a JSON array of events: %v: %s", err, qyClip(r.body))
	}
	if evs == nil {
		t.Fatalf("answer is %s, want a JSON array", qyClip(r.body))
	}
	return evs
}

// qyErrorMessage checks the error body form of RL-16 for status and
// returns the message: exactly {"error":"<message>"}, application/json.
func (r qyResult) errorMessage(t *testing.T, status int) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, qyClip(r.body))
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q, want application/json", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("error body is not JSON: %s", qyClip(r.body))
	}
	msg, ok := m["error"].(string)
	if len(m) != 1 || !ok || msg == "" {
		t.Fatalf(`error body %s, want exactly {"error":"<message>"}`, qyClip(r.body))
	}
	if got, want := string(bytes.TrimSpace(r.body)), `{"error":`+strconvQuote(msg)+`}`; got != want {
		t.Fatalf("error body %q, want %q", got, want)
	}
	return msg
}

// wantError checks an error answer: status and exact message.
func (r qyResult) wantError(t *testing.T, status int, msg string) {
	t.Helper()
	if got := r.errorMessage(t, status); got != msg {
		t.Fatalf("error %q, want %q", got, msg)
	}
}

func qyClip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// qyIDs lists the ids of evs; qyKinds their kinds.
func qyIDs(evs []*nostr.Event) []string { return ids(evs) }

func qyKinds(evs []*nostr.Event) []int {
	out := make([]int, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// qySortAsc orders evs created_at ASC, id ASC (the thread order);
// qySortDesc created_at DESC, id ASC (the generic order).
func qySortAsc(evs []*nostr.Event) []*nostr.Event {
	out := slices.Clone(evs)
	slices.SortFunc(out, func(a, b *nostr.Event) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out
}

func qySortDesc(evs []*nostr.Event) []*nostr.Event {
	out := slices.Clone(evs)
	slices.SortFunc(out, func(a, b *nostr.Event) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out
}

// qySameIDs fails the test unless got holds exactly want, in order.
func qySameIDs(t *testing.T, what string, got, want []*nostr.Event) {
	t.Helper()
	if g, w := qyIDs(got), qyIDs(want); !slices.Equal(g, w) {
		t.Fatalf("%s:\n got  %s\n want %s", what, qyShort(g), qyShort(w))
	}
}

func qyShort(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		if len(id) > 8 {
			id = id[:8]
		}
		parts[i] = id
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// qyJSON marshals v, which cannot fail for the values of these tests.
func qyJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// qyReplyTo is the NIP-10 marked tag naming parent.
func qyReplyTo(parent *nostr.Event) nostr.Tag { return nostr.Tag{"e", parent.ID, "", "reply"} }

// qyMsg is who's kind 9 in channel h at ts; parent, when not nil, makes it
// a reply.
func qyMsg(t *testing.T, who testutil.Signer, h string, ts int64, content string, parent *nostr.Event) *nostr.Event {
	t.Helper()
	tags := []nostr.Tag{{"h", h}}
	if parent != nil {
		tags = append(tags, qyReplyTo(parent))
	}
	return who.Event(t, 9, ts, content, tags...)
}

// qyReact is who's reaction to target (no h tag: RL-8).
func qyReact(t *testing.T, who testutil.Signer, target *nostr.Event, ts int64) *nostr.Event {
	t.Helper()
	return who.Event(t, buzz.KindReaction, ts, "+",
		nostr.Tag{"e", target.ID}, nostr.Tag{"p", target.PubKey}, nostr.Tag{"k", fmt.Sprint(target.Kind)})
}

// qyDelete is who's NIP-09 deletion of target.
func qyDelete(t *testing.T, who testutil.Signer, target *nostr.Event, ts int64) *nostr.Event {
	t.Helper()
	return who.Event(t, buzz.KindDeletion, ts, "", nostr.Tag{"e", target.ID}, nostr.Tag{"k", fmt.Sprint(target.Kind)})
}

// qyAdmit stores ev straight through the store, for the bulk fixtures
// whose events need no round trip each.
func qyAdmit(t *testing.T, s *testServer, ev *nostr.Event) {
	t.Helper()
	if _, err := s.store.Admit(context.Background(), ev); err != nil {
		t.Fatalf("admit kind %d: %v", ev.Kind, err)
	}
}

// --- NIP-98 tokens ---

// qyTokenEvent is the unsigned NIP-98 event for method on u, now.
func qyTokenEvent(u, method string, extra ...nostr.Tag) nostr.Event {
	return nostr.Event{
		Kind:      nip98Kind,
		CreatedAt: nostr.Timestamp(time.Now().Unix()),
		Tags:      append(nostr.Tags{{"u", u}, {"method", method}}, extra...),
	}
}

// qySign signs ev with sk with a fresh nonce, as nostr-tools does, so that
// two tokens with the same content still differ (go-nostr's Sign is
// deterministic, and the relay refuses a signature it has seen).
func qySign(t testing.TB, ev *nostr.Event, sk string) {
	t.Helper()
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	ev.PubKey = ""
	nip98Sign(t, ev, sk)
}

// qyHeader is the Authorization header carrying ev.
func qyHeader(t testing.TB, ev nostr.Event) string {
	t.Helper()
	return nip98Header(t, ev)
}

// qyPayload is the NIP-98 payload tag of body.
func qyPayload(body string) nostr.Tag {
	sum := sha256.Sum256([]byte(body))
	return nostr.Tag{"payload", hex.EncodeToString(sum[:])}
}

// qyAuth is a fresh valid header of who for a POST of body to u, with the
// payload tag.
func qyAuth(t testing.TB, who testutil.Signer, u, body string) string {
	t.Helper()
	ev := qyTokenEvent(u, "POST", qyPayload(body))
	qySign(t, &ev, who.SK)
	return qyHeader(t, ev)
}

// qyPostAs posts body to s's /query as who (nil: anonymous).
func qyPostAs(t *testing.T, s *testServer, who *testutil.Signer, body string) qyResult {
	t.Helper()
	auth := ""
	if who != nil {
		auth = qyAuth(t, *who, qyURL(s), body)
	}
	return qyPost(t, s, body, auth)
}

// --- fixtures ---

// qyPrivate is a relay with a private channel (owner, member; an
// outsider who is neither) holding a message and a reply to it, and an open
// channel with a message of the outsider.
type qyPrivate struct {
	s                       *testServer
	c                       *rawClient
	owner, member, outsider testutil.Signer
	h, open                 string
	msg, reply, openMsg     *nostr.Event
}

func qySetupPrivate(t *testing.T, s *testServer) *qyPrivate {
	t.Helper()
	p := &qyPrivate{
		s: s, c: s.client(t),
		owner: testutil.NewSigner(t), member: testutil.NewSigner(t), outsider: testutil.NewSigner(t),
		h: newChannelID(t), open: newChannelID(t),
	}
	ts := time.Now().Unix()
	mustPublish(t, p.c, p.owner.Event(t, buzz.KindCreateChannel, ts, "", nostr.Tag{"h", p.h}, nostr.Tag{"private"}))
	mustPublish(t, p.c, p.owner.Event(t, buzz.KindPutUser, ts, "", nostr.Tag{"h", p.h}, nostr.Tag{"p", p.member.PK}))
	p.msg = qyMsg(t, p.owner, p.h, ts, "private root", nil)
	mustPublish(t, p.c, p.msg)
	p.reply = qyMsg(t, p.member, p.h, ts+1, "private reply", p.msg)
	mustPublish(t, p.c, p.reply)
	p.openMsg = qyMsg(t, p.outsider, p.open, ts, "open hello", nil)
	mustPublish(t, p.c, p.openMsg)
	return p
}

// qyHas reports whether evs holds the event id.
func qyHas(evs []*nostr.Event, id string) bool {
	return slices.ContainsFunc(evs, func(ev *nostr.Event) bool { return ev.ID == id })
}

// --- RL-16 ---

// RL-16: the body contract of POST /query: size, shape, bounds, the
// error body, all-or-nothing, and the method.
func TestQueryRequestContract(t *testing.T) {
	s, c, a := startWithClient(t)
	note := a.Event(t, 1, time.Now().Unix(), "hello")
	mustPublish(t, c, note)

	// RL-27: a 413, like a 429, says rate-limited:.
	t.Run("body over 1 MiB is 413", func(t *testing.T) {
		body := "[{}]" + strings.Repeat(" ", maxQueryBody-3) // 1 MiB + 1
		r := qyPost(t, s, body, "")
		r.wantError(t, http.StatusRequestEntityTooLarge, "rate-limited: request body too large (limit 1 MiB)")
	})
	t.Run("body of exactly 1 MiB is served", func(t *testing.T) {
		body := `[{"ids":["` + note.ID + `"]}]`
		body += strings.Repeat(" ", maxQueryBody-len(body))
		qySameIDs(t, "1 MiB body", qyPost(t, s, body, "").events(t), []*nostr.Event{note})
	})
	for _, body := range []string{`{}`, `{"kinds":[1]}`, `[{`, `[{"kinds":[1]}`, ``, `"filters"`, `42`, `[1]`, `["x"]`, `[[]]`, `[null]`, `[{}]]`} {
		t.Run("invalid filters "+body, func(t *testing.T) {
			msg := qyPost(t, s, body, "").errorMessage(t, http.StatusBadRequest)
			if !strings.HasPrefix(msg, "invalid filters: ") {
				t.Fatalf("error %q, want prefix %q", msg, "invalid filters: ")
			}
		})
	}
	t.Run("32 filters are served, 33 are too many", func(t *testing.T) {
		f := `{"ids":["` + note.ID + `"]}`
		body := "[" + strings.TrimSuffix(strings.Repeat(f+",", 32), ",") + "]"
		if evs := qyPost(t, s, body, "").events(t); len(evs) == 0 || evs[0].ID != note.ID {
			t.Fatalf("32 filters: %d events, want the note", len(evs))
		}
		body = "[" + strings.TrimSuffix(strings.Repeat(f+",", 33), ",") + "]"
		qyPost(t, s, body, "").wantError(t, http.StatusBadRequest, "too many filters")
	})
	t.Run("128 #h values are served, 129 across the request are too many", func(t *testing.T) {
		hs := func(n int) string {
			list := make([]string, n)
			for i := range list {
				list[i] = newChannelID(t)
			}
			return qyJSON(t, list)
		}
		body := `[{"#h":` + hs(100) + `},{"kinds":[1],"#h":` + hs(28) + `}]`
		if evs := qyPost(t, s, body, "").events(t); len(evs) != 0 {
			t.Fatalf("unknown channels: %d events", len(evs))
		}
		body = `[{"#h":` + hs(100) + `},{"kinds":[1],"#h":` + hs(29) + `}]`
		qyPost(t, s, body, "").wantError(t, http.StatusBadRequest, "too many explicit channels")
		// Window and thread filters count too.
		body = `[{"top_level":true,"#h":` + hs(1) + `},{"depth_limit":1,"#e":["` + note.ID + `"],"#h":` + hs(128) + `}]`
		qyPost(t, s, body, "").wantError(t, http.StatusBadRequest, "too many explicit channels")
	})
	t.Run("all or nothing", func(t *testing.T) {
		good := `{"ids":["` + note.ID + `"]}`
		for _, bad := range []struct{ filter, msg string }{
			{`{"before_id":"nope","until":1}`, "before_id must be a 64-char hex event id"},
			{`{"depth_limit":1,"#e":["` + note.ID + `"],"thread_cursor_id":"` + note.ID + `"}`, "thread_cursor_id requires thread_cursor"},
			{`{"top_level":true}`, "top_level requires exactly one #h channel"},
		} {
			for _, body := range []string{"[" + good + "," + bad.filter + "]", "[" + bad.filter + "," + good + "]"} {
				r := qyPost(t, s, body, "")
				r.wantError(t, http.StatusBadRequest, bad.msg)
				if bytes.Contains(r.body, []byte(note.ID)) {
					t.Fatalf("%s: the refused request still carried an event: %s", body, r.body)
				}
			}
		}
	})
	t.Run("methods", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch} {
			r := qyDo(t, m, qyURL(s), nil, "")
			r.errorMessage(t, http.StatusMethodNotAllowed)
		}
		// A preflight is no query and no error.
		if r := qyDo(t, http.MethodOptions, qyURL(s), nil, ""); r.status/100 != 2 {
			t.Fatalf("OPTIONS: status %d", r.status)
		}
	})
	t.Run("empty request", func(t *testing.T) {
		r := qyPost(t, s, `[]`, "")
		r.events(t)
		if got := string(bytes.TrimSpace(r.body)); got != "[]" {
			t.Fatalf("empty request: %q, want []", got)
		}
	})
}

// RL-16: an internal failure is 500 {"error":"internal server error"},
// with the detail only in the log, on every path.
func TestQueryInternalError(t *testing.T) {
	var sink syncBuffer
	s := startServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := s.client(t)
	a := testutil.NewSigner(t)
	h := newChannelID(t)
	root := qyMsg(t, a, h, time.Now().Unix(), "root", nil)
	mustPublish(t, c, root)
	mustPublish(t, c, qyMsg(t, a, h, time.Now().Unix(), "reply", root))
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`[{"kinds":[1]}]`,
		`[{"depth_limit":2,"#e":["` + root.ID + `"]}]`,
		`[{"top_level":true,"#h":["` + h + `"]}]`,
	} {
		r := qyPost(t, s, body, "")
		r.wantError(t, http.StatusInternalServerError, "internal server error")
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sink.String(), "query failed") {
		t.Fatalf("the failure is not in the log:\n%s", sink.String())
	}
}

// --- RL-17 ---

// RL-17, RL-26: NIP-98 over HTTP: valid tokens identify the requester,
// no header is anonymous, each refusal is 401 with its exact message, and
// the log never holds a token.
func TestQueryNIP98(t *testing.T) {
	var sink syncBuffer
	s := startServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	p := qySetupPrivate(t, s)
	u := qyURL(s)
	body := `[{"#h":["` + p.h + `"]},{"#h":["` + p.open + `"]}]`
	var tokens []string // every header sent, to look for in the log
	post := func(auth string) qyResult {
		t.Helper()
		if auth != "" {
			tokens = append(tokens, strings.TrimPrefix(auth, "Nostr "))
		}
		return qyPost(t, s, body, auth)
	}
	sign := func(who testutil.Signer, ev nostr.Event) string {
		t.Helper()
		qySign(t, &ev, who.SK)
		return qyHeader(t, ev)
	}
	readsPrivate := func(t *testing.T, r qyResult, want bool) {
		t.Helper()
		evs := r.events(t)
		if !qyHas(evs, p.openMsg.ID) {
			t.Fatal("the open channel's message is missing")
		}
		if got := qyHas(evs, p.msg.ID) && qyHas(evs, p.reply.ID); got != want {
			t.Fatalf("private channel read = %v, want %v", got, want)
		}
	}

	t.Run("no header is anonymous", func(t *testing.T) {
		readsPrivate(t, post(""), false)
	})
	t.Run("another scheme is anonymous", func(t *testing.T) {
		readsPrivate(t, post("Bearer abc"), false)
	})
	t.Run("member with payload", func(t *testing.T) {
		readsPrivate(t, post(sign(p.member, qyTokenEvent(u, "POST", qyPayload(body)))), true)
	})
	t.Run("member without payload, method lower case", func(t *testing.T) {
		readsPrivate(t, post(sign(p.member, qyTokenEvent(u, "post"))), true)
	})
	t.Run("payload in upper case", func(t *testing.T) {
		pl := qyPayload(body)
		pl[1] = strings.ToUpper(pl[1])
		readsPrivate(t, post(sign(p.owner, qyTokenEvent(u, "POST", pl))), true)
	})
	t.Run("localhost and trailing slash name the same URL", func(t *testing.T) {
		local := strings.Replace(u, "127.0.0.1", "localhost", 1)
		readsPrivate(t, post(sign(p.member, qyTokenEvent(local, "POST"))), true)
		readsPrivate(t, post(sign(p.member, qyTokenEvent(u+"/", "POST"))), true)
	})
	t.Run("two payload-less tokens of one second are both honest", func(t *testing.T) {
		ev := qyTokenEvent(u, "POST")
		first, second := ev, ev
		first.Tags, second.Tags = slices.Clone(ev.Tags), slices.Clone(ev.Tags)
		readsPrivate(t, post(sign(p.member, first)), true)
		readsPrivate(t, post(sign(p.member, second)), true)
	})
	t.Run("valid token of a non-member", func(t *testing.T) {
		readsPrivate(t, post(sign(p.outsider, qyTokenEvent(u, "POST"))), false)
	})
	t.Run("replay", func(t *testing.T) {
		auth := sign(p.member, qyTokenEvent(u, "POST", qyPayload(body)))
		readsPrivate(t, post(auth), true)
		post(auth).wantError(t, http.StatusUnauthorized, "NIP-98: replay detected")
		// The same token re-encoded is the same token.
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(auth, "Nostr "))
		if err != nil {
			t.Fatal(err)
		}
		post("Nostr "+base64.RawURLEncoding.EncodeToString(raw)).wantError(t, http.StatusUnauthorized, "NIP-98: replay detected")
	})

	wrongKind := qyTokenEvent(u, "POST")
	wrongKind.Kind = nip98Kind + 1
	stale, future := qyTokenEvent(u, "POST"), qyTokenEvent(u, "POST")
	stale.CreatedAt -= 300
	future.CreatedAt += 300
	badSig := func() string {
		ev := qyTokenEvent(u, "POST")
		qySign(t, &ev, p.member.SK)
		last := ev.Sig[len(ev.Sig)-1]
		flip := byte('0')
		if last == '0' {
			flip = '1'
		}
		ev.Sig = ev.Sig[:len(ev.Sig)-1] + string(flip)
		return qyHeader(t, ev)
	}
	badID := func() string {
		ev := qyTokenEvent(u, "POST")
		qySign(t, &ev, p.member.SK)
		ev.Content = "changed after signing"
		return qyHeader(t, ev)
	}
	for _, tc := range []struct {
		name, auth, msg string
	}{
		{"another port", sign(p.member, qyTokenEvent("http://127.0.0.1:1/query", "POST")), "NIP-98: URL mismatch"},
		{"another path", sign(p.member, qyTokenEvent(s.httpURL+"/other", "POST")), "NIP-98: URL mismatch"},
		{"another host", sign(p.member, qyTokenEvent("http://relay.example.com/query", "POST")), "NIP-98: URL mismatch"},
		{"another scheme", sign(p.member, qyTokenEvent(strings.Replace(u, "http://", "https://", 1), "POST")), "NIP-98: URL mismatch"},
		{"no u tag", sign(p.member, nostr.Event{Kind: nip98Kind, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"method", "POST"}}}), "NIP-98: URL mismatch"},
		{"method GET", sign(p.member, qyTokenEvent(u, "GET")), "NIP-98: method mismatch"},
		{"payload of another body", sign(p.member, qyTokenEvent(u, "POST", qyPayload(body+" "))), "NIP-98: payload mismatch"},
		{"empty payload", sign(p.member, qyTokenEvent(u, "POST", nostr.Tag{"payload", ""})), "NIP-98: payload mismatch"},
		{"stale", sign(p.member, stale), "NIP-98: timestamp out of range"},
		{"future", sign(p.member, future), "NIP-98: timestamp out of range"},
		{"signature", badSig(), "NIP-98: invalid signature"},
		{"content changed after signing", badID(), "NIP-98: invalid signature"},
		{"wrong kind", sign(p.member, wrongKind), "NIP-98: wrong kind"},
		{"invalid base64", "Nostr %%%not-base64%%%", "invalid base64 in Nostr auth"},
		{"empty token", "Nostr ", "invalid base64 in Nostr auth"},
		{"invalid JSON", "Nostr " + base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,`)), "invalid NIP-98 event JSON"},
		{"JSON not an object", "Nostr " + base64.StdEncoding.EncodeToString([]byte(`["kind"]`)), "invalid NIP-98 event JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(tc.auth)
			r.wantError(t, http.StatusUnauthorized, tc.msg)
			if bytes.Contains(r.body, []byte(s.addr)) || bytes.Contains(r.body, []byte(p.h)) {
				t.Fatalf("the 401 echoes server data: %s", r.body)
			}
		})
	}

	// A token refused for its URL was not remembered: the same request
	// signed properly afterwards passes, and a refused token is not
	// "used" (a replay of a refused token still names the first reason).
	t.Run("a refused token is not remembered", func(t *testing.T) {
		auth := sign(p.member, qyTokenEvent(u, "GET"))
		post(auth).wantError(t, http.StatusUnauthorized, "NIP-98: method mismatch")
		post(auth).wantError(t, http.StatusUnauthorized, "NIP-98: method mismatch")
	})

	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	log := sink.String()
	for _, tok := range tokens {
		if len(tok) >= 40 && strings.Contains(log, tok) {
			t.Fatalf("the log holds a full NIP-98 token: %s", tok)
		}
		raw, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			continue
		}
		var ev nostr.Event
		if json.Unmarshal(raw, &ev) == nil && ev.Sig != "" && strings.Contains(log, ev.Sig) {
			t.Fatal("the log holds a NIP-98 token's signature")
		}
	}
}

// RL-17: behind a proxy (--relay-url), a token is signed for the public
// URL: the relay checks it against that, not against the loopback address
// the request came to.
func TestQueryNIP98BehindProxy(t *testing.T) {
	s := startServer(t, func(c *Config) { c.URL = "wss://relay.example.com" })
	p := qySetupPrivate(t, s)
	body := `[{"#h":["` + p.h + `"]}]`
	public := qyAuth(t, p.member, "https://relay.example.com/query", body)
	evs := qyPost(t, s, body, public).events(t)
	if !qyHas(evs, p.msg.ID) || !qyHas(evs, p.reply.ID) {
		t.Fatalf("member with a token for the public URL did not read the private channel: %s", qyShort(qyIDs(evs)))
	}
	qyPost(t, s, body, qyAuth(t, p.member, "https://relay.example.com:443/query/", body)).events(t)
	qyPost(t, s, body, qyAuth(t, p.member, qyURL(s), body)).wantError(t, http.StatusUnauthorized, "NIP-98: URL mismatch")
	qyPost(t, s, body, qyAuth(t, p.member, "http://relay.example.com/query", body)).wantError(t, http.StatusUnauthorized, "NIP-98: URL mismatch")
}

// --- RL-19 ---

// RL-19: composite cursor paging through a same-second burst visits
// every event once, in created_at DESC, id ASC order.
func TestGenericCursorPaging(t *testing.T) {
	s, c, a := startWithClient(t)
	t0 := time.Now().Unix() - 3600
	var all []*nostr.Event
	add := func(ts int64, n int) {
		for i := 0; i < n; i++ {
			ev := a.Event(t, 1, ts, fmt.Sprintf("note %d at %d", i, ts))
			mustPublish(t, c, ev)
			all = append(all, ev)
		}
	}
	add(t0, 15) // the burst
	add(t0+1, 3)
	add(t0-1, 5)
	add(t0-7, 2)
	other := testutil.NewSigner(t)
	mustPublish(t, c, other.Event(t, 1, t0, "not in the author filter"))
	want := qySortDesc(all)

	var got []*nostr.Event
	filter := map[string]any{"authors": []string{a.PK}, "kinds": []int{1}, "limit": 4}
	for page := 0; ; page++ {
		if page > len(all) {
			t.Fatal("paging does not end")
		}
		evs := qyPost(t, s, "["+qyJSON(t, filter)+"]", "").events(t)
		if len(evs) > 4 {
			t.Fatalf("page %d: %d events, limit 4", page, len(evs))
		}
		if len(evs) == 0 {
			break
		}
		got = append(got, evs...)
		last := evs[len(evs)-1]
		filter["until"] = int64(last.CreatedAt)
		filter["before_id"] = last.ID
	}
	qySameIDs(t, "paged", got, want)

	// One request: the same order as the pages.
	qySameIDs(t, "unpaged", qyPost(t, s, `[{"authors":["`+a.PK+`"]}]`, "").events(t), want)

	// Inside the burst: strictly after (t0, id).
	burst := qySortDesc(all[:15])
	mid := burst[6]
	evs := qyPost(t, s, qyJSON(t, []any{map[string]any{"authors": []string{a.PK}, "until": t0, "before_id": mid.ID}}), "").events(t)
	i := slices.IndexFunc(want, func(ev *nostr.Event) bool { return ev.ID == mid.ID })
	qySameIDs(t, "after a burst position", evs, want[i+1:])

	// An upper-case before_id names the same position.
	evs = qyPost(t, s, qyJSON(t, []any{map[string]any{"authors": []string{a.PK}, "until": t0, "before_id": strings.ToUpper(mid.ID)}}), "").events(t)
	qySameIDs(t, "upper-case before_id", evs, want[i+1:])
}

// RL-19: before_id errors, in their order.
func TestGenericBeforeIDErrors(t *testing.T) {
	s := startServer(t)
	id := randomID(t)
	for _, tc := range []struct{ body, msg string }{
		{`[{"before_id":"abc","until":5}]`, "before_id must be a 64-char hex event id"},
		{`[{"before_id":"abc"}]`, "before_id must be a 64-char hex event id"}, // checked first
		{`[{"before_id":"` + id[:63] + `g","until":5}]`, "before_id must be a 64-char hex event id"},
		{`[{"before_id":"` + id + `0","until":5}]`, "before_id must be a 64-char hex event id"},
		{`[{"before_id":5,"until":5}]`, "before_id must be a 64-char hex event id"},
		{`[{"before_id":"","until":5}]`, "before_id must be a 64-char hex event id"},
		{`[{"before_id":"` + id + `"}]`, "before_id requires until to be set"},
		{`[{"before_id":"` + id + `","until":null}]`, "before_id requires until to be set"},
	} {
		qyPost(t, s, tc.body, "").wantError(t, http.StatusBadRequest, tc.msg)
	}
	// A null before_id is no cursor.
	qyPost(t, s, `[{"before_id":null}]`, "").events(t)
}

// RL-19: an empty kinds list matches nothing, as in NIP-01; access
// scoping as RL-13.
func TestGenericKindsAndAccess(t *testing.T) {
	s := startServer(t)
	p := qySetupPrivate(t, s)
	if evs := qyPost(t, s, `[{"kinds":[]}]`, "").events(t); len(evs) != 0 {
		t.Fatalf("kinds []: %d events, want none", len(evs))
	}
	if evs := qyPost(t, s, `[{"kinds":[],"authors":["`+p.owner.PK+`"]}]`, "").events(t); len(evs) != 0 {
		t.Fatalf("kinds [] with authors: %d events, want none", len(evs))
	}
	if evs := qyPost(t, s, `[{"kinds":[9]}]`, "").events(t); !qyHas(evs, p.openMsg.ID) {
		t.Fatal("kinds [9]: the open message is missing")
	}

	bodies := []string{
		`[{"#h":["` + p.h + `"]}]`,
		`[{"ids":["` + p.msg.ID + `","` + p.reply.ID + `"]}]`,
		`[{"authors":["` + p.owner.PK + `","` + p.member.PK + `"]}]`,
		`[{"kinds":[9]}]`,
		`[{"#e":["` + p.msg.ID + `"]}]`,
		`[{}]`,
	}
	for _, rq := range []struct {
		name string
		who  *testutil.Signer
		may  bool
	}{
		{"anonymous", nil, false},
		{"non-member", &p.outsider, false},
		{"member", &p.member, true},
		{"owner", &p.owner, true},
	} {
		for _, body := range bodies {
			evs := qyPostAs(t, s, rq.who, body).events(t)
			hasReply := qyHas(evs, p.reply.ID)
			if hasReply != rq.may || (body != `[{"#e":["`+p.msg.ID+`"]}]` && qyHas(evs, p.msg.ID) != rq.may) {
				t.Errorf("%s %s: private events served = %v, want %v", rq.name, body, !rq.may, rq.may)
			}
			for _, ev := range evs {
				if h := ev.Tags.GetFirst([]string{"h", ""}); h != nil && (*h)[1] == p.h && !rq.may {
					t.Errorf("%s %s: served the private channel's kind %d", rq.name, body, ev.Kind)
				}
			}
		}
	}
}

// RL-19, RL-20: the page bounds. Generic: limit default and max 1000.
// Thread: limit default 100, max 500, 0 returns no replies.
func TestQueryLimitBounds(t *testing.T) {
	s := startServer(t)
	a := testutil.NewSigner(t)
	h := newChannelID(t)
	t0 := time.Now().Unix() - 10_000
	root := qyMsg(t, a, h, t0, "root", nil)
	qyAdmit(t, s, root)
	replies := make([]*nostr.Event, 0, 1200)
	for i := range 1200 {
		ev := qyMsg(t, a, h, t0+1+int64(i/2), fmt.Sprintf("reply %d", i), root)
		qyAdmit(t, s, ev)
		replies = append(replies, ev)
	}
	stored := append([]*nostr.Event{root}, replies...)

	desc := qySortDesc(stored)
	for _, f := range []string{
		`{"authors":["` + a.PK + `"]}`,
		`{"authors":["` + a.PK + `"],"limit":1000}`,
		`{"authors":["` + a.PK + `"],"limit":1001}`,
		`{"authors":["` + a.PK + `"],"limit":100000}`,
		`{"authors":["` + a.PK + `"],"limit":-1}`,
	} {
		qySameIDs(t, "generic "+f, qyPost(t, s, "["+f+"]", "").events(t), desc[:1000])
	}
	qySameIDs(t, "generic limit 7", qyPost(t, s, `[{"authors":["`+a.PK+`"],"limit":7}]`, "").events(t), desc[:7])

	asc := qySortAsc(replies)
	thread := func(extra string) []*nostr.Event {
		t.Helper()
		return qyPost(t, s, `[{"depth_limit":1,"#e":["`+root.ID+`"]`+extra+`}]`, "").events(t)
	}
	qySameIDs(t, "thread default", thread(""), asc[:100])
	qySameIDs(t, "thread limit 500", thread(`,"limit":500`), asc[:500])
	qySameIDs(t, "thread limit 501", thread(`,"limit":501`), asc[:500])
	qySameIDs(t, "thread limit 100000", thread(`,"limit":100000`), asc[:500])
	qySameIDs(t, "thread limit 3", thread(`,"limit":3`), asc[:3])
	if evs := thread(`,"limit":0`); len(evs) != 0 {
		t.Fatalf("thread limit 0: %d replies, want none", len(evs))
	}
	// limit 0 with include_aux: the root's aux closure only, and the root
	// has none here.
	if evs := thread(`,"limit":0,"include_aux":true`); len(evs) != 0 {
		t.Fatalf("thread limit 0 with aux: %d events, want none", len(evs))
	}
	// Paging the whole thread with the cursor visits every reply once.
	var got []*nostr.Event
	cursor := ""
	for range 10 {
		evs := thread(`,"limit":500` + cursor)
		if len(evs) == 0 {
			break
		}
		got = append(got, evs...)
		last := evs[len(evs)-1]
		cursor = fmt.Sprintf(`,"thread_cursor":%d,"thread_cursor_id":"%s"`, last.CreatedAt, last.ID)
	}
	qySameIDs(t, "thread paged", got, asc)
}

// --- RL-20 ---

// qyTree is a thread of depth 4 in an open channel:
//
//	root
//	├── a1 ── b1 ── c1 ── d1
//	├── a2 ── b2
//	└── a3
type qyTree struct {
	s                                *testServer
	c                                *rawClient
	alice, bob                       testutil.Signer
	h                                string
	t0                               int64
	root, a1, a2, a3, b1, b2, c1, d1 *nostr.Event
}

func qyBuildTree(t *testing.T) *qyTree {
	t.Helper()
	s, c, alice := startWithClient(t)
	tr := &qyTree{s: s, c: c, alice: alice, bob: testutil.NewSigner(t), h: newChannelID(t), t0: time.Now().Unix() - 3600}
	msg := func(who testutil.Signer, dt int64, content string, parent *nostr.Event) *nostr.Event {
		ev := qyMsg(t, who, tr.h, tr.t0+dt, content, parent)
		mustPublish(t, c, ev)
		return ev
	}
	tr.root = msg(alice, 0, "root", nil)
	tr.a1 = msg(alice, 10, "a1", tr.root)
	tr.a2 = msg(tr.bob, 10, "a2", tr.root) // same second as a1: id decides
	tr.b1 = msg(tr.bob, 20, "b1", tr.a1)
	tr.b2 = msg(alice, 15, "b2", tr.a2)
	tr.c1 = msg(alice, 30, "c1", tr.b1)
	tr.d1 = msg(tr.bob, 40, "d1", tr.c1)
	tr.a3 = msg(tr.bob, 50, "a3", tr.root)
	// A top-level message of the channel, not in the thread.
	msg(tr.bob, 5, "another root", nil)
	return tr
}

func (tr *qyTree) thread(t *testing.T, filter string) []*nostr.Event {
	t.Helper()
	return qyPost(t, tr.s, "["+filter+"]", "").events(t)
}

// RL-20: depth, order, the root never returned, inner subtrees, and the
// filters that are not thread filters.
func TestThreadPathDepthAndOrder(t *testing.T) {
	tr := qyBuildTree(t)
	byDepth := [][]*nostr.Event{
		{tr.a1, tr.a2, tr.a3},
		{tr.b1, tr.b2},
		{tr.c1},
		{tr.d1},
	}
	for depth := 0; depth <= 5; depth++ {
		var want []*nostr.Event
		for d := 0; d < depth && d < len(byDepth); d++ {
			want = append(want, byDepth[d]...)
		}
		got := tr.thread(t, fmt.Sprintf(`{"depth_limit":%d,"#e":["%s"]}`, depth, tr.root.ID))
		qySameIDs(t, fmt.Sprintf("depth_limit %d", depth), got, qySortAsc(want))
	}
	all := qySortAsc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b1, tr.b2, tr.c1, tr.d1})
	got := tr.thread(t, `{"depth_limit":4294967295,"#e":["`+tr.root.ID+`"]}`)
	qySameIDs(t, "depth_limit max", got, all)
	if qyHas(got, tr.root.ID) {
		t.Fatal("the root was returned")
	}
	got = tr.thread(t, `{"depth_limit":4,"#e":["`+strings.ToUpper(tr.root.ID)+`"]}`)
	qySameIDs(t, "upper-case root id", got, all)

	// Subtrees of inner events, the named event never returned.
	for _, tc := range []struct {
		name  string
		at    *nostr.Event
		depth int
		want  []*nostr.Event
	}{
		{"a1 depth 1", tr.a1, 1, []*nostr.Event{tr.b1}},
		{"a1 depth 2", tr.a1, 2, []*nostr.Event{tr.b1, tr.c1}},
		{"a1 depth 3", tr.a1, 3, []*nostr.Event{tr.b1, tr.c1, tr.d1}},
		{"a1 depth 100", tr.a1, 100, []*nostr.Event{tr.b1, tr.c1, tr.d1}},
		{"a1 depth max", tr.a1, 4294967295, []*nostr.Event{tr.b1, tr.c1, tr.d1}},
		{"a1 depth 0", tr.a1, 0, nil},
		{"b1 depth 2", tr.b1, 2, []*nostr.Event{tr.c1, tr.d1}},
		{"a2 depth 5", tr.a2, 5, []*nostr.Event{tr.b2}},
		{"c1 depth 1", tr.c1, 1, []*nostr.Event{tr.d1}},
		{"d1 (a leaf)", tr.d1, 4, nil},
		{"a3 (a leaf)", tr.a3, 4, nil},
	} {
		got := tr.thread(t, fmt.Sprintf(`{"depth_limit":%d,"#e":["%s"]}`, tc.depth, tc.at.ID))
		qySameIDs(t, tc.name, got, qySortAsc(tc.want))
	}

	// kinds, since and until are ignored on the thread path.
	for _, extra := range []string{`"kinds":[12345]`, `"since":9999999999`, `"until":1`, `"kinds":[],"since":1,"until":2`} {
		got := tr.thread(t, `{"depth_limit":4,"#e":["`+tr.root.ID+`"],`+extra+`}`)
		qySameIDs(t, "thread with "+extra, got, all)
	}

	// Not thread filters: the generic path, where the #e tag, kinds and
	// order (created_at DESC) apply.
	direct := qySortDesc([]*nostr.Event{tr.a1, tr.a2, tr.a3})
	for _, dl := range []string{`"2"`, `2.5`, `-1`, `4294967296`, `1e2`, `true`, `null`, `[2]`} {
		got := tr.thread(t, `{"depth_limit":`+dl+`,"#e":["`+tr.root.ID+`"],"kinds":[9]}`)
		qySameIDs(t, "generic: depth_limit "+dl, got, direct)
	}
	got = tr.thread(t, `{"depth_limit":2,"#e":["`+tr.root.ID+`","`+tr.a1.ID+`"],"kinds":[9]}`)
	qySameIDs(t, "generic: two #e", got, qySortDesc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b1}))
	got = tr.thread(t, `{"depth_limit":2,"#e":["`+tr.root.ID+`","`+tr.root.ID+`"],"kinds":[9]}`)
	qySameIDs(t, "generic: the same #e twice", got, direct)
	got = tr.thread(t, `{"depth_limit":2,"#e":["`+tr.root.ID[:63]+`"]}`)
	qySameIDs(t, "generic: short #e", got, nil)
	got = tr.thread(t, `{"depth_limit":2,"#e":[]}`)
	qySameIDs(t, "generic: empty #e", got, nil)
	got = tr.thread(t, `{"depth_limit":2,"#e":["`+tr.root.ID+`"],"top_level":true,"#h":["`+tr.h+`"]}`)
	if len(got) == 0 || got[len(got)-1].Kind != buzz.KindWindowBounds {
		t.Fatalf("top_level wins over depth_limit: kinds %v", qyKinds(got))
	}
}

// RL-20: the cursor, its spellings and its errors.
func TestThreadPathCursor(t *testing.T) {
	tr := qyBuildTree(t)
	all := qySortAsc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b1, tr.b2, tr.c1, tr.d1})
	base := `"depth_limit":4,"#e":["` + tr.root.ID + `"]`
	after := func(i int) []*nostr.Event { return all[i+1:] }

	for i, ev := range all {
		for _, names := range [][2]string{{"thread_cursor", "thread_cursor_id"}, {"threadCursor", "threadCursorId"}} {
			got := tr.thread(t, fmt.Sprintf(`{%s,"%s":%d,"%s":"%s"}`, base, names[0], ev.CreatedAt, names[1], ev.ID))
			qySameIDs(t, fmt.Sprintf("%s after %d", names[0], i), got, after(i))
		}
	}
	// The tie of a1 and a2 (same second): the id decides.
	first := all[0]
	if first.CreatedAt != all[1].CreatedAt {
		t.Fatal("fixture: a1 and a2 should share a second")
	}
	got := tr.thread(t, fmt.Sprintf(`{%s,"thread_cursor":%d,"thread_cursor_id":"%s","limit":1}`, base, first.CreatedAt, first.ID))
	qySameIDs(t, "tie", got, all[1:2])
	// Upper-case cursor id.
	got = tr.thread(t, fmt.Sprintf(`{%s,"thread_cursor":%d,"thread_cursor_id":"%s"}`, base, first.CreatedAt, strings.ToUpper(first.ID)))
	qySameIDs(t, "upper-case cursor id", got, after(0))
	// A cursor id that names no event is a position all the same.
	got = tr.thread(t, fmt.Sprintf(`{%s,"thread_cursor":%d,"thread_cursor_id":"%s"}`, base, tr.t0+10, strings.Repeat("0", 64)))
	qySameIDs(t, "cursor id before both", got, all)
	got = tr.thread(t, fmt.Sprintf(`{%s,"thread_cursor":%d,"thread_cursor_id":"%s"}`, base, tr.t0+10, strings.Repeat("f", 64)))
	qySameIDs(t, "cursor id after both", got, all[2:])

	// thread_cursor alone: strictly after the second.
	for _, name := range []string{"thread_cursor", "threadCursor"} {
		got := tr.thread(t, fmt.Sprintf(`{%s,"%s":%d}`, base, name, tr.t0+10))
		qySameIDs(t, name+" alone", got, all[2:])
		got = tr.thread(t, fmt.Sprintf(`{%s,"%s":%d}`, base, name, tr.t0+9))
		qySameIDs(t, name+" alone, the second before", got, all)
		got = tr.thread(t, fmt.Sprintf(`{%s,"%s":%d}`, base, name, tr.t0+50))
		qySameIDs(t, name+" alone, the last second", got, nil)
	}
	got = tr.thread(t, fmt.Sprintf(`{%s,"thread_cursor":0}`, base))
	qySameIDs(t, "thread_cursor 0", got, all)

	// Errors.
	id := tr.a1.ID
	for _, tc := range []struct{ filter, msg string }{
		{`"thread_cursor_id":"` + id + `"`, "thread_cursor_id requires thread_cursor"},
		{`"threadCursorId":"` + id + `"`, "thread_cursor_id requires thread_cursor"},
		{`"thread_cursor_id":"` + id + `","thread_cursor":null`, "thread_cursor_id requires thread_cursor"},
		{`"thread_cursor":5,"thread_cursor_id":"nope"`, "thread_cursor_id must be a 64-char hex event id"},
		{`"thread_cursor":5,"thread_cursor_id":"` + id[:63] + `"`, "thread_cursor_id must be a 64-char hex event id"},
		{`"thread_cursor":5,"thread_cursor_id":"` + id[:63] + `x"`, "thread_cursor_id must be a 64-char hex event id"},
		{`"thread_cursor":5,"thread_cursor_id":5`, "thread_cursor_id must be a 64-char hex event id"},
		{`"threadCursor":5,"threadCursorId":""`, "thread_cursor_id must be a 64-char hex event id"},
	} {
		qyPost(t, tr.s, `[{`+base+`,`+tc.filter+`}]`, "").wantError(t, http.StatusBadRequest, tc.msg)
	}
	// The thread path's 400 refuses the whole request too.
	r := qyPost(t, tr.s, `[{`+base+`},{`+base+`,"thread_cursor_id":"`+id+`"}]`, "")
	r.wantError(t, http.StatusBadRequest, "thread_cursor_id requires thread_cursor")
}

// RL-20, CW-18: include_aux appends the aux closure of the replies and
// of the root, hop 2 included; a deleted root's replies are still served.
func TestThreadPathAuxAndDeletedRoot(t *testing.T) {
	tr := qyBuildTree(t)
	carol := testutil.NewSigner(t)
	ts := tr.t0 + 100
	pub := func(ev *nostr.Event) *nostr.Event { mustPublish(t, tr.c, ev); return ev }
	reactA1 := pub(qyReact(t, carol, tr.a1, ts))
	editB1 := pub(tr.bob.Event(t, buzz.KindEdit, ts, "b1 edited", nostr.Tag{"h", tr.h}, nostr.Tag{"e", tr.b1.ID}))
	reactRoot := pub(qyReact(t, carol, tr.root, ts+1))
	reactA2 := pub(qyReact(t, carol, tr.a2, ts+2))
	unreact := pub(qyDelete(t, carol, reactA2, ts+3)) // hop 2
	reactD1 := pub(qyReact(t, carol, tr.d1, ts+4))    // below depth 3

	replies3 := qySortAsc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b1, tr.b2, tr.c1})
	wantAux := []*nostr.Event{reactA1, editB1, reactRoot, unreact}

	check := func(t *testing.T, got, replies, aux []*nostr.Event) {
		t.Helper()
		if len(got) < len(replies) {
			t.Fatalf("%d events, want %d replies then %d aux", len(got), len(replies), len(aux))
		}
		qySameIDs(t, "replies first", got[:len(replies)], replies)
		if g, w := sortedIDs(got[len(replies):]), sortedIDs(aux); !slices.Equal(g, w) {
			t.Fatalf("aux:\n got  %s\n want %s", qyShort(g), qyShort(w))
		}
	}

	got := tr.thread(t, `{"depth_limit":3,"#e":["`+tr.root.ID+`"],"include_aux":true}`)
	check(t, got, replies3, wantAux)
	if qyHas(got, reactA2.ID) {
		t.Fatal("a deleted reaction was served")
	}
	got = tr.thread(t, `{"depth_limit":3,"#e":["`+tr.root.ID+`"]}`)
	qySameIDs(t, "without include_aux", got, replies3)
	got = tr.thread(t, `{"depth_limit":3,"#e":["`+tr.root.ID+`"],"include_aux":"true"}`)
	qySameIDs(t, "include_aux not literally true", got, replies3)
	got = tr.thread(t, `{"depth_limit":4,"#e":["`+tr.root.ID+`"],"include_aux":true}`)
	check(t, got, qySortAsc(append(slices.Clone(replies3), tr.d1)), append(slices.Clone(wantAux), reactD1))
	// The aux of the named event and of the page only: a1's subtree.
	got = tr.thread(t, `{"depth_limit":1,"#e":["`+tr.a1.ID+`"],"include_aux":true}`)
	check(t, got, []*nostr.Event{tr.b1}, []*nostr.Event{reactA1, editB1})
	// A cursor past every reply leaves the root's closure.
	got = tr.thread(t, fmt.Sprintf(`{"depth_limit":3,"#e":["%s"],"include_aux":true,"thread_cursor":%d}`, tr.root.ID, tr.t0+1000))
	check(t, got, nil, []*nostr.Event{reactRoot})

	// The root deleted by its author: its replies are still served, and
	// its deletion is in its closure.
	del := pub(qyDelete(t, tr.alice, tr.root, ts+10))
	mustNotServe(t, tr.c, tr.root.ID, "the deleted root is still served")
	all := qySortAsc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b1, tr.b2, tr.c1, tr.d1})
	got = tr.thread(t, `{"depth_limit":4,"#e":["`+tr.root.ID+`"]}`)
	qySameIDs(t, "replies of a deleted root", got, all)
	got = tr.thread(t, `{"depth_limit":3,"#e":["`+tr.root.ID+`"],"include_aux":true}`)
	check(t, got, replies3, append(slices.Clone(wantAux), del))

	// A deleted reply disappears; its replies stay reachable.
	pub(qyDelete(t, tr.bob, tr.b1, ts+11))
	got = tr.thread(t, `{"depth_limit":4,"#e":["`+tr.root.ID+`"]}`)
	qySameIDs(t, "after deleting b1", got, qySortAsc([]*nostr.Event{tr.a1, tr.a2, tr.a3, tr.b2, tr.c1, tr.d1}))
	got = tr.thread(t, `{"depth_limit":2,"#e":["`+tr.b1.ID+`"]}`)
	qySameIDs(t, "below deleted b1", got, []*nostr.Event{tr.c1, tr.d1})
}

// RL-20, RL-13: the root's channel decides; an unreadable or unknown root
// answers nothing; aux events of a private channel are dropped for those
// who may not read it.
func TestThreadPathAccess(t *testing.T) {
	s := startServer(t)
	p := qySetupPrivate(t, s)
	react := qyReact(t, p.member, p.msg, time.Now().Unix())
	mustPublish(t, p.c, react)
	body := `[{"depth_limit":2,"#e":["` + p.msg.ID + `"],"include_aux":true}]`
	for _, rq := range []struct {
		name string
		who  *testutil.Signer
		want []*nostr.Event
	}{
		{"anonymous", nil, nil},
		{"non-member", &p.outsider, nil},
		{"member", &p.member, []*nostr.Event{p.reply, react}},
		{"owner", &p.owner, []*nostr.Event{p.reply, react}},
	} {
		qySameIDs(t, rq.name, qyPostAs(t, s, rq.who, body).events(t), rq.want)
	}
	// The reply's own subtree (inner event) follows the same rule.
	inner := `[{"depth_limit":2,"#e":["` + p.reply.ID + `"],"include_aux":true}]`
	for _, who := range []*testutil.Signer{nil, &p.outsider, &p.member} {
		if evs := qyPostAs(t, s, who, inner).events(t); len(evs) != 0 {
			t.Fatalf("a leaf's subtree: %d events", len(evs))
		}
	}
	// Unknown root; a channel-less root.
	for _, root := range []string{randomID(t), strings.Repeat("0", 64)} {
		if evs := qyPost(t, s, `[{"depth_limit":4,"#e":["`+root+`"],"include_aux":true}]`, "").events(t); len(evs) != 0 {
			t.Fatalf("unknown root: %d events", len(evs))
		}
	}
	note := p.outsider.Event(t, 1, time.Now().Unix(), "no channel")
	mustPublish(t, p.c, note)
	mustPublish(t, p.c, qyReact(t, p.member, note, time.Now().Unix()))
	if evs := qyPost(t, s, `[{"depth_limit":4,"#e":["`+note.ID+`"]}]`, "").events(t); len(evs) != 0 {
		t.Fatalf("a channel-less root: %d events", len(evs))
	}
}

// --- RL-18 ---

// RL-18: the output is the window path's, then the thread path's, then
// the generic path's, whatever the order of the filters in the body.
func TestQueryDispatchOrder(t *testing.T) {
	s, c, a := startWithClient(t)
	t0 := time.Now().Unix() - 600
	w, th := newChannelID(t), newChannelID(t)
	for i := range 3 {
		mustPublish(t, c, qyMsg(t, a, w, t0+int64(i), fmt.Sprintf("window row %d", i), nil))
	}
	root := qyMsg(t, a, th, t0, "thread root", nil)
	mustPublish(t, c, root)
	for i := range 2 {
		mustPublish(t, c, qyMsg(t, a, th, t0+1+int64(i), fmt.Sprintf("reply %d", i), root))
	}
	for i := range 2 {
		mustPublish(t, c, a.Event(t, 1, t0+int64(i), fmt.Sprintf("note %d", i)))
	}
	window := `{"top_level":true,"#h":["` + w + `"]}`
	thread := `{"depth_limit":1,"#e":["` + root.ID + `"]}`
	generic := `{"kinds":[1],"authors":["` + a.PK + `"]}`

	alone := func(f string) []*nostr.Event { return qyPost(t, s, "["+f+"]", "").events(t) }
	wantW, wantT, wantG := alone(window), alone(thread), alone(generic)
	if len(wantW) != 4 || len(wantT) != 2 || len(wantG) != 2 {
		t.Fatalf("fixture: %d window, %d thread, %d generic events", len(wantW), len(wantT), len(wantG))
	}
	// The overlay is dated when served: compare it by kind and tags.
	key := func(ev *nostr.Event) string {
		if ev.Kind == buzz.KindWindowBounds {
			return fmt.Sprint(ev.Kind, ev.Tags)
		}
		return ev.ID
	}
	want := []string{}
	for _, ev := range slices.Concat(wantW, wantT, wantG) {
		want = append(want, key(ev))
	}
	orders := [][]string{
		{generic, thread, window},
		{thread, generic, window},
		{window, generic, thread},
		{generic, window, thread},
	}
	for _, order := range orders {
		got := []string{}
		for _, ev := range qyPost(t, s, "["+strings.Join(order, ",")+"]", "").events(t) {
			got = append(got, key(ev))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("body %v:\n got  %v\n want %v", order, got, want)
		}
	}
	// Two filters of a path keep their order within it.
	thread2 := `{"depth_limit":1,"#e":["` + root.ID + `"],"limit":1}`
	got := qyPost(t, s, "["+thread+","+generic+","+thread2+"]", "").events(t)
	qySameIDs(t, "two thread filters", got, slices.Concat(wantT, wantT[:1], wantG))
}

// --- RL-21 and NIP-11 ---

// qyNIP11 fetches the NIP-11 document of s.
func qyNIP11(t *testing.T, s *testServer) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.httpURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := qyClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("NIP-11: %v", err)
	}
	return doc
}

// RL-21: the overlays of a window are signed by the relay identity, whose
// pubkey is NIP-11 `self`, whether or not an operator pubkey is set.
func TestQueryOverlaySigning(t *testing.T) {
	operator := testutil.NewSigner(t).PK
	for _, tc := range []struct {
		name     string
		operator string
	}{{"no operator key", ""}, {"operator key", operator}} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, a := startWithClient(t, func(cfg *Config) { cfg.Info.PubKey = tc.operator })
			h := newChannelID(t)
			root := qyMsg(t, a, h, time.Now().Unix(), "root", nil)
			mustPublish(t, c, root)
			mustPublish(t, c, qyMsg(t, a, h, time.Now().Unix(), "reply", root))

			doc := qyNIP11(t, s)
			self, _ := doc["self"].(string)
			if self != s.relay.PubKey() {
				t.Fatalf("NIP-11 self %q, want the relay key %q", self, s.relay.PubKey())
			}
			wantPub := self
			if tc.operator != "" {
				wantPub = tc.operator
			}
			if doc["pubkey"] != wantPub {
				t.Fatalf("NIP-11 pubkey %v, want %s", doc["pubkey"], wantPub)
			}

			evs := qyPost(t, s, `[{"top_level":true,"#h":["`+h+`"],"include_summaries":true}]`, "").events(t)
			var summaries, bounds int
			for _, ev := range evs {
				switch ev.Kind {
				case buzz.KindThreadSummary:
					summaries++
				case buzz.KindWindowBounds:
					bounds++
				default:
					continue
				}
				if ev.PubKey != self {
					t.Fatalf("kind %d signed by %s, want self %s", ev.Kind, ev.PubKey, self)
				}
				if ok, err := ev.CheckSignature(); !ok || err != nil || !ev.CheckID() {
					t.Fatalf("kind %d: bad id or signature (%v)", ev.Kind, err)
				}
			}
			if summaries != 1 || bounds != 1 {
				t.Fatalf("%d summaries and %d bounds, want 1 and 1 (kinds %v)", summaries, bounds, qyKinds(evs))
			}
		})
	}
}

// RL-22: NIP-11 advertises the channel window extension.
func TestQueryNIP11Extension(t *testing.T) {
	s := startServer(t)
	doc := qyNIP11(t, s)
	list, _ := doc["supported_extensions"].([]any)
	if !slices.Contains(list, any("nip-cw")) {
		t.Fatalf("supported_extensions %v, want it to contain \"nip-cw\"", doc["supported_extensions"])
	}
}

// --- robustness ---

// qyManyTags is a filter with n tag names (never h) of each values one-letter
// values.
func qyManyTags(t *testing.T, n, each int) string {
	t.Helper()
	var names []string
	for c := 'a'; c <= 'z'; c++ {
		if c != 'h' {
			names = append(names, string(c))
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		names = append(names, string(c))
	}
	if n > len(names) {
		t.Fatalf("at most %d tag names", len(names))
	}
	vals := "[" + strings.TrimSuffix(strings.Repeat(`"a",`, each), ",") + "]"
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"#` + names[i] + `":` + vals
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// RL-16, RL-22: no body, however hostile, yields a 500 or hurts the
// server: each is served (200) or refused (400/413) with the error body.
func TestQueryHostileBodies(t *testing.T) {
	s, c, a := startWithClient(t)
	h := newChannelID(t)
	root := qyMsg(t, a, h, time.Now().Unix(), "root", nil)
	mustPublish(t, c, root)
	mustPublish(t, c, qyMsg(t, a, h, time.Now().Unix(), "reply", root))
	id := root.ID

	repeat := func(item string, n int) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	hexIDs := func(n int) string {
		list := make([]string, n)
		for i := range list {
			list[i] = fmt.Sprintf("%064x", i)
		}
		return qyJSON(t, list)
	}
	nullFields := []string{"ids", "authors", "kinds", "since", "until", "limit", "search", "#e", "#h", "#p", "#t",
		"top_level", "depth_limit", "before_id", "include_aux", "include_summaries",
		"thread_cursor", "thread_cursor_id", "threadCursor", "threadCursorId"}
	allNull := map[string]any{}
	for _, f := range nullFields {
		allNull[f] = nil
	}

	bodies := []string{
		// Nesting.
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		"[" + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + "]",
		`[{"kinds":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}]`,
		`[{"#e":[` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `]}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":{"a":{"b":[]}}}]`,
		// Numbers.
		`[{"limit":1e999}]`, `[{"limit":-1e999}]`, `[{"limit":99999999999999999999999}]`, `[{"limit":-1}]`, `[{"limit":1.5}]`,
		`[{"since":1e20}]`, `[{"until":-99999999999999999999}]`, `[{"since":-9223372036854775808}]`, `[{"until":9223372036854775807}]`,
		`[{"kinds":[99999999999999999999]}]`, `[{"kinds":[-1,0,65535,4294967296]}]`, `[{"kinds":[1.5]}]`,
		`[{"until":9223372036854775807,"before_id":"` + id + `"}]`,
		`[{"until":-1,"before_id":"` + id + `"}]`,
		`[{"depth_limit":99999999999999999999,"#e":["` + id + `"]}]`,
		`[{"depth_limit":4294967295,"#e":["` + id + `"],"limit":9223372036854775807}]`,
		`[{"depth_limit":4294967295,"#e":["` + id + `"],"limit":-9223372036854775808}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":9223372036854775807,"thread_cursor_id":"` + id + `"}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":-1}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":1e999}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":99999999999999999999}]`,
		`[{"top_level":true,"#h":["` + h + `"],"until":9223372036854775807,"before_id":"` + id + `"}]`,
		`[{"top_level":true,"#h":["` + h + `"],"until":-1,"before_id":"` + id + `"}]`,
		`[{"top_level":true,"#h":["` + h + `"],"until":1e999,"before_id":"` + id + `"}]`,
		`[{"top_level":true,"#h":["` + h + `"],"limit":9223372036854775807}]`,
		`[{"top_level":true,"#h":["` + h + `"],"limit":-9223372036854775808}]`,
		`[{"top_level":true,"#h":["` + h + `"],"kinds":[9223372036854775807,-1]}]`,
		// Unicode and odd strings.
		`[{"#t":["日本語","🎉","\u0000","\ud800","` + strings.Repeat("é", 1000) + `"]}]`,
		`[{"#h":["\u0000"]}]`, `[{"#ü":["x"]}]`, `[{"#":["x"]}]`, `[{"#ee":["x"]}]`, `[{"authors":["ÿ","\u0000"]}]`,
		`[{"ids":["` + strings.ToUpper(id) + `","\ud83d"]}]`,
		`[{"search":"x"}]`, `[{"search":"` + strings.Repeat("%", 1000) + `"}]`,
		`[{"top_level":true,"#h":["３f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"]}]`,
		`[{"top_level":true,"#h":["` + strings.ToUpper(h) + `"]}]`,
		`[{"top_level":true,"#h":["` + h + `","` + h + `"]}]`,
		`[{"depth_limit":1,"#e":["` + id + `\u0000"]}]`,
		"\ufeff[]", "[]\x00", "\x00", " ", "[{}]garbage", `[{"limit":1,"limit":2}]`,
		// Nulls in every field, and null values.
		"null", "[null]", "[null,{}]",
		"[" + qyJSON(t, allNull) + "]",
		`[{"#e":[null],"depth_limit":1}]`, `[{"kinds":[null]}]`, `[{"ids":[null]}]`, `[{"#h":[null]}]`,
		`[{"top_level":true,"#h":[null]}]`, `[{"top_level":true,"#h":null}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"thread_cursor":null,"thread_cursor_id":null,"limit":null,"include_aux":null}]`,
		`[{"top_level":true,"#h":["` + h + `"],"until":null,"before_id":null,"limit":null,"kinds":null}]`,
		// Types.
		`[{"kinds":"1"}]`, `[{"ids":{}}]`, `[{"#e":"abc"}]`, `[{"top_level":"true","#h":["` + h + `"]}]`,
		`[{"top_level":1,"#h":["` + h + `"]}]`, `[{"limit":"10"}]`, `[{"since":"yesterday"}]`, `[{"#h":{"a":1}}]`,
		`[{"top_level":true,"#h":["` + h + `"],"kinds":"all"}]`, `[{"top_level":true,"#h":["` + h + `"],"limit":"5"}]`,
		`[{"depth_limit":1,"#e":["` + id + `"],"limit":"5"}]`, `[{"depth_limit":1,"#e":["` + id + `"],"include_aux":{}}]`,
		`[{"#e":[]}]`, `[{"#h":[]}]`, `[{"ids":[]}]`, `[{"authors":[]}]`,
		// Long lists.
		`[{"kinds":[` + repeat("1", 40000) + `]}]`,
		`[{"kinds":[` + repeat("9", 40000) + `],"#h":["` + h + `"]}]`,
		`[{"#t":[` + repeat(`"a"`, 40000) + `]}]`,
		`[{"#e":[` + repeat(`"`+id+`"`, 12000) + `]}]`,
		`[{"ids":` + hexIDs(12000) + `}]`,
		`[{"authors":` + hexIDs(12000) + `}]`,
		`[{"top_level":true,"#h":["` + h + `"],"kinds":[` + repeat("9", 40000) + `]}]`,
		`[{"top_level":true,"#h":["` + h + `"],"include_aux":true,"include_summaries":true,"kinds":[` + repeat("9", 40000) + `]}]`,
		"[" + repeat(`{"#t":[`+repeat(`"a"`, 1000)+`],"kinds":[`+repeat("1", 1000)+`]}`, 32) + "]",
		"[" + qyManyTags(t, 40, 1000) + "]",
	}
	for i, body := range bodies {
		r := qyPost(t, s, body, "")
		switch r.status {
		case http.StatusOK:
			r.events(t)
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			r.errorMessage(t, r.status)
		default:
			t.Errorf("body %d (%s): status %d: %s", i, qyClip([]byte(body)), r.status, qyClip(r.body))
		}
	}
	// Lists too long for one statement are refused, not failed: each list
	// up to 1000 values, all of a filter's together up to 20000.
	for _, tc := range []struct{ body, msg string }{
		{`[{"kinds":[` + repeat("1", 1001) + `]}]`, "invalid filters: a filter list has more than 1000 values"},
		{`[{"#t":[` + repeat(`"a"`, 1001) + `]}]`, "invalid filters: a filter list has more than 1000 values"},
		{`[{"ids":` + hexIDs(1001) + `}]`, "invalid filters: a filter list has more than 1000 values"},
		{`[{"top_level":true,"#h":["` + h + `"],"kinds":[` + repeat("9", 1001) + `]}]`, "invalid filters: a filter list has more than 1000 values"},
		{"[" + qyManyTags(t, 21, 1000) + "]", "invalid filters: a filter has more than 20000 values"},
		{`[{"kinds":[1]},{"kinds":[` + repeat("1", 40000) + `]}]`, "invalid filters: a filter list has more than 1000 values"},
	} {
		qyPost(t, s, tc.body, "").wantError(t, http.StatusBadRequest, tc.msg)
	}
	for _, body := range []string{
		`[{"kinds":[` + repeat("1", 1000) + `]}]`,
		`[{"ids":` + hexIDs(1000) + `,"authors":` + hexIDs(1000) + `}]`,
		`[{"top_level":true,"#h":["` + h + `"],"kinds":[` + repeat("9", 1000) + `]}]`,
		"[" + qyManyTags(t, 20, 1000) + "]",
	} {
		qyPost(t, s, body, "").events(t)
	}
	// The same total bound on the WebSocket surface, where 51 tag names of
	// 1000 values each fit in one message.
	if _, closed := c.req("many-tags", qyManyTags(t, 40, 1000)); closed != "invalid: a filter has more than 20000 values" {
		t.Fatalf("REQ with 40000 tag values: CLOSED %q", closed)
	}

	// The server still serves, on both surfaces.
	evs := qyPost(t, s, `[{"depth_limit":1,"#e":["`+id+`"]}]`, "").events(t)
	if len(evs) != 1 {
		t.Fatalf("after the hostile bodies: %d replies, want 1", len(evs))
	}
	if got := fetch(t, c, nostr.Filter{IDs: []string{id}}); len(got) != 1 {
		t.Fatal("after the hostile bodies: the WebSocket surface does not serve")
	}
}

// RL-16: an answer that would pass 32 MiB refuses the whole request with a
// 400, instead of the relay holding it in memory.
func TestQueryResponseBounded(t *testing.T) {
	s, c, a := startWithClient(t)
	big := strings.Repeat("x", 100<<10)
	now := time.Now().Unix() // one clock reading: 12 distinct events, however slow the loop
	for i := range 12 {
		mustPublish(t, c, a.Event(t, 1, now-int64(i), big))
	}
	filters := make([]string, 32)
	for i := range filters {
		filters[i] = `{"kinds":[1],"authors":["` + a.PK + `"]}`
	}
	resp, err := http.Post(s.httpURL+"/query", "application/json", strings.NewReader("["+strings.Join(filters, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "exceed 32 MiB") {
		t.Fatalf("status %d, body %.200s", resp.StatusCode, body)
	}
}
