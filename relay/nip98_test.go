package relay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// nip98T0 is the injected clock's time in these tests.
var nip98T0 = time.Unix(1_700_000_000, 0)

const nip98URL = "http://relay.example/query"

// nip98Ev is the event a client signs for a POST to u at created.
func nip98Ev(u, method string, created time.Time, extra ...nostr.Tag) nostr.Event {
	return nostr.Event{
		Kind:      nip98Kind,
		CreatedAt: nostr.Timestamp(created.Unix()),
		Tags:      append(nostr.Tags{{"u", u}, {"method", method}}, extra...),
	}
}

// nip98Sign signs ev with sk as nostr-tools does, with fresh randomness
// in the nonce: go-nostr's Sign derives the nonce from the key and the
// message alone, so it cannot make two signatures of one event. It keeps
// ev.PubKey when set, to sign events spelling it oddly.
func nip98Sign(t testing.TB, ev *nostr.Event, sk string) {
	t.Helper()
	b, err := hex.DecodeString(sk)
	if err != nil {
		t.Fatal(err)
	}
	priv, pub := btcec.PrivKeyFromBytes(b)
	if ev.PubKey == "" {
		ev.PubKey = hex.EncodeToString(schnorr.SerializePubKey(pub))
	}
	h := sha256.Sum256(ev.Serialize())
	var aux [32]byte
	if _, err := rand.Read(aux[:]); err != nil {
		t.Fatal(err)
	}
	sig, err := schnorr.Sign(priv, h[:], schnorr.CustomNonce(aux))
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = hex.EncodeToString(h[:])
	ev.Sig = hex.EncodeToString(sig.Serialize())
}

// nip98Header is the Authorization header carrying ev.
func nip98Header(t testing.TB, ev nostr.Event) string {
	t.Helper()
	return "Nostr " + base64.StdEncoding.EncodeToString(nip98JSON(t, ev))
}

func nip98JSON(t testing.TB, ev nostr.Event) []byte {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nip98Signed is a header for a token signed by sk, edited first by edit
// (on a copy of its tags), with a fresh nonce: every header a test makes
// is a token of its own, however alike their events.
func nip98Signed(t testing.TB, sk string, ev nostr.Event, edit ...func(*nostr.Event)) string {
	t.Helper()
	ev.Tags = nip98CloneTags(ev.Tags)
	for _, e := range edit {
		e(&ev)
	}
	nip98Sign(t, &ev, sk)
	return nip98Header(t, ev)
}

func nip98CloneTags(tags nostr.Tags) nostr.Tags {
	out := make(nostr.Tags, len(tags))
	for i, tag := range tags {
		out[i] = slices.Clone(tag)
	}
	return out
}

func nip98Hash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

func nip98Clock(at *time.Time) func() time.Time { return func() time.Time { return *at } }

// nip98Store is a fresh SQLite store in a temporary directory to keep a
// verifier's tokens. Its clock stands at nip98T0, so that its purge,
// should it run, forgets none of the tokens of these tests.
func nip98Store(t testing.TB) buzz.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{
		Path:   filepath.Join(t.TempDir(), "tokens.db"),
		Schema: testutil.Schema(t),
		Now:    func() time.Time { return nip98T0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// TestNIP98Verify covers each outcome of a single verification: accepted,
// anonymous, and every refusal with the exact message the client is told.
func TestNIP98Verify(t *testing.T) {
	tokens := nip98Store(t)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	other := nostr.GeneratePrivateKey()
	post := nip98Ev(nip98URL, "POST", nip98T0)
	body := `{"kinds":[1]}`
	withU := func(u string) func(*nostr.Event) {
		return func(ev *nostr.Event) { ev.Tags[0][1] = u }
	}
	at := func(d time.Duration) func(*nostr.Event) {
		return func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(nip98T0.Add(d).Unix()) }
	}
	tags := func(tags ...nostr.Tag) func(*nostr.Event) {
		return func(ev *nostr.Event) { ev.Tags = tags }
	}
	payload := func(h string) func(*nostr.Event) {
		return func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"payload", h}) }
	}
	encoded := func(enc *base64.Encoding) string {
		ev := post
		nip98Sign(t, &ev, sk)
		return "Nostr " + enc.EncodeToString(nip98JSON(t, ev))
	}
	// resigned is a header whose event was edited after signing.
	resigned := func(edit func(*nostr.Event)) string {
		ev := post
		ev.Tags = nip98CloneTags(ev.Tags)
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		edit(&ev)
		return nip98Header(t, ev)
	}
	rawB64 := func(s string) string { return "Nostr " + base64.StdEncoding.EncodeToString([]byte(s)) }

	signedPost := post
	if err := signedPost.Sign(sk); err != nil {
		t.Fatal(err)
	}
	extraField := rawB64(strings.Replace(string(nip98JSON(t, signedPost)), "{", `{"extra":{"n":[1]},`, 1))

	upperPub := post
	upperPub.PubKey = strings.ToUpper(pk)
	nip98Sign(t, &upperPub, sk)

	const (
		urlMis    = "NIP-98: URL mismatch"
		methodMis = "NIP-98: method mismatch"
		payMis    = "NIP-98: payload mismatch"
		timeOut   = "NIP-98: timestamp out of range"
		badSig    = "NIP-98: invalid signature"
		wrongKind = "NIP-98: wrong kind"
		badB64    = "invalid base64 in Nostr auth"
		badJSON   = "invalid NIP-98 event JSON"
	)
	for _, tc := range []struct {
		name    string
		header  string
		method  string // "POST" when empty
		url     string // nip98URL when empty
		body    string
		wantPub string // pk unless wantErr or anonymous
		anon    bool
		wantErr string
	}{
		// Accepted (RL-17).
		{name: "no payload tag", header: nip98Signed(t, sk, post)},
		{name: "payload", header: nip98Signed(t, sk, post, payload(nip98Hash(body))), body: body},
		{name: "payload hash upper case", header: nip98Signed(t, sk, post, payload(strings.ToUpper(nip98Hash(body)))), body: body},
		{name: "payload of empty body", header: nip98Signed(t, sk, post, payload(nip98Hash("")))},
		{name: "method post lower case (nostr-tools)", header: nip98Signed(t, sk, nip98Ev(nip98URL, "post", nip98T0))},
		{name: "request method lower case", header: nip98Signed(t, sk, post), method: "post"},
		{name: "scheme nostr lower case", header: strings.Replace(nip98Signed(t, sk, post), "Nostr", "nostr", 1)},
		{name: "base64 unpadded", header: encoded(base64.RawStdEncoding)},
		{name: "base64 URL-safe", header: encoded(base64.URLEncoding)},
		{name: "base64 URL-safe unpadded", header: encoded(base64.RawURLEncoding)},
		{name: "u with trailing slash", header: nip98Signed(t, sk, post, withU(nip98URL+"/"))},
		{name: "request with trailing slash", header: nip98Signed(t, sk, post), url: nip98URL + "/"},
		{name: "root without and with slash", header: nip98Signed(t, sk, post, withU("http://relay.example")), url: "http://relay.example/"},
		{name: "default port explicit", header: nip98Signed(t, sk, post, withU("http://relay.example:80/query"))},
		{name: "https default port explicit", header: nip98Signed(t, sk, post, withU("https://relay.example:443/query")), url: "https://relay.example/query"},
		{name: "upper-case scheme and host", header: nip98Signed(t, sk, post, withU("HTTP://Relay.EXAMPLE/query"))},
		{name: "localhost = 127.0.0.1", header: nip98Signed(t, sk, post, withU("http://localhost:3334/query")), url: "http://127.0.0.1:3334/query"},
		{name: "[::1] = localhost", header: nip98Signed(t, sk, post, withU("http://[::1]:3334/query")), url: "http://localhost:3334/query"},
		{name: "127.0.0.1 = [::1]", header: nip98Signed(t, sk, post, withU("http://127.0.0.1:3334/query")), url: "http://[::1]:3334/query"},
		{name: "same query string", header: nip98Signed(t, sk, post, withU(nip98URL+"?a=1&b=2")), url: nip98URL + "?a=1&b=2"},
		{name: "fragment ignored", header: nip98Signed(t, sk, post, withU(nip98URL+"#top"))},
		{name: "created 59 s ago", header: nip98Signed(t, sk, post, at(-59*time.Second))},
		{name: "created 59 s ahead", header: nip98Signed(t, sk, post, at(59*time.Second))},
		{name: "created 60 s ago", header: nip98Signed(t, sk, post, at(-60*time.Second))},
		{name: "created 60 s ahead", header: nip98Signed(t, sk, post, at(60*time.Second))},
		{name: "extra unknown fields", header: extraField},

		// Anonymous: no NIP-98 at all (RL-17: public reads only).
		{name: "no header", header: "", anon: true},
		{name: "blank header", header: "   ", anon: true},
		{name: "other scheme", header: "Bearer abc.def", anon: true},
		{name: "Basic", header: "Basic dXNlcjpwYXNz", anon: true},

		// Refused, in the order of the checks.
		{name: "wrong kind", header: nip98Signed(t, sk, post, func(ev *nostr.Event) { ev.Kind = 1 }), wantErr: wrongKind},
		{name: "wrong kind before signature", header: resigned(func(ev *nostr.Event) { ev.Kind = 27236 }), wantErr: wrongKind},
		{name: "tampered tag", header: resigned(func(ev *nostr.Event) { ev.Tags[1][1] = "PUT" }), wantErr: badSig},
		{name: "tampered content", header: resigned(func(ev *nostr.Event) { ev.Content = "x" }), wantErr: badSig},
		{name: "wrong id", header: resigned(func(ev *nostr.Event) { ev.ID = strings.Repeat("ab", 32) }), wantErr: badSig},
		{name: "id upper case", header: resigned(func(ev *nostr.Event) { ev.ID = strings.ToUpper(ev.ID) }), wantErr: badSig},
		{name: "signature of another key", header: resigned(func(ev *nostr.Event) {
			o := *ev
			_ = o.Sign(other)
			ev.Sig = o.Sig
		}), wantErr: badSig},
		{name: "pubkey of another key", header: resigned(func(ev *nostr.Event) {
			ev.PubKey, _ = nostr.GetPublicKey(other)
			ev.ID = ev.GetID()
		}), wantErr: badSig},
		{name: "no signature", header: resigned(func(ev *nostr.Event) { ev.Sig = "" }), wantErr: badSig},
		{name: "signature not hex", header: resigned(func(ev *nostr.Event) { ev.Sig = strings.Repeat("zz", 64) }), wantErr: badSig},
		{name: "no pubkey", header: resigned(func(ev *nostr.Event) { ev.PubKey = "" }), wantErr: badSig},
		{name: "pubkey upper case, validly signed", header: nip98Header(t, upperPub), wantErr: badSig},
		{name: "created 61 s ago", header: nip98Signed(t, sk, post, at(-61*time.Second)), wantErr: timeOut},
		{name: "created 61 s ahead", header: nip98Signed(t, sk, post, at(61*time.Second)), wantErr: timeOut},
		{name: "created at 0", header: nip98Signed(t, sk, post, func(ev *nostr.Event) { ev.CreatedAt = 0 }), wantErr: timeOut},
		{name: "timestamp before URL", header: nip98Signed(t, sk, post, at(-61*time.Second), withU("http://elsewhere/")), wantErr: timeOut},
		{name: "different port", header: nip98Signed(t, sk, post, withU("http://relay.example:8080/query")), wantErr: urlMis},
		{name: "port 443 on http", header: nip98Signed(t, sk, post, withU("http://relay.example:443/query")), wantErr: urlMis},
		{name: "different path", header: nip98Signed(t, sk, post, withU("http://relay.example/other")), wantErr: urlMis},
		{name: "different host", header: nip98Signed(t, sk, post, withU("http://relay.evil/query")), wantErr: urlMis},
		{name: "different scheme", header: nip98Signed(t, sk, post, withU("https://relay.example/query")), wantErr: urlMis},
		{name: "ws scheme", header: nip98Signed(t, sk, post, withU("ws://relay.example/query")), wantErr: urlMis},
		{name: "other loopback address", header: nip98Signed(t, sk, post, withU("http://127.0.0.2:3334/query")), url: "http://127.0.0.1:3334/query", wantErr: urlMis},
		{name: "different query", header: nip98Signed(t, sk, post, withU(nip98URL+"?a=1")), url: nip98URL + "?a=2", wantErr: urlMis},
		{name: "query dropped", header: nip98Signed(t, sk, post), url: nip98URL + "?a=1", wantErr: urlMis},
		{name: "relative u", header: nip98Signed(t, sk, post, withU("/query")), wantErr: urlMis},
		{name: "u with user", header: nip98Signed(t, sk, post, withU("http://me@relay.example/query")), wantErr: urlMis},
		{name: "no u tag", header: nip98Signed(t, sk, post, tags(nostr.Tag{"method", "POST"})), wantErr: urlMis},
		{name: "u tag without value", header: nip98Signed(t, sk, post, tags(nostr.Tag{"u"}, nostr.Tag{"method", "POST"})), wantErr: urlMis},
		{name: "URL before method", header: nip98Signed(t, sk, nip98Ev("http://relay.evil/", "GET", nip98T0)), wantErr: urlMis},
		{name: "method GET", header: nip98Signed(t, sk, nip98Ev(nip98URL, "GET", nip98T0)), wantErr: methodMis},
		{name: "no method tag", header: nip98Signed(t, sk, post, tags(nostr.Tag{"u", nip98URL})), wantErr: methodMis},
		{name: "method before payload", header: nip98Signed(t, sk, nip98Ev(nip98URL, "PUT", nip98T0), payload("00")), body: body, wantErr: methodMis},
		{name: "payload of another body", header: nip98Signed(t, sk, post, payload(nip98Hash(body+" "))), body: body, wantErr: payMis},
		{name: "payload tag without value", header: nip98Signed(t, sk, post, tags(nostr.Tag{"u", nip98URL}, nostr.Tag{"method", "POST"}, nostr.Tag{"payload"})), body: body, wantErr: payMis},
		{name: "payload not hex", header: nip98Signed(t, sk, post, payload("not a hash")), body: body, wantErr: payMis},
		{name: "JSON garbage", header: rawB64("this is not json"), wantErr: badJSON},
		{name: "JSON truncated", header: rawB64(`{"kind":27235,"tags":[`), wantErr: badJSON},
		{name: "JSON null", header: rawB64("null"), wantErr: badJSON},
		{name: "JSON array", header: rawB64(`[27235]`), wantErr: badJSON},
		{name: "JSON kind as string", header: rawB64(`{"kind":"27235"}`), wantErr: badJSON},
		{name: "JSON tag of numbers", header: rawB64(`{"kind":27235,"tags":[[1,2]]}`), wantErr: badJSON},
		{name: "JSON empty object", header: rawB64(`{}`), wantErr: wrongKind},
		{name: "base64 garbage", header: "Nostr !!!not-base64!!!", wantErr: badB64},
		{name: "base64 mixed alphabets", header: "Nostr ab+c-d", wantErr: badB64},
		{name: "scheme without token", header: "Nostr", wantErr: badB64},
		{name: "scheme with blank token", header: "Nostr   ", wantErr: badB64},
		{name: "token of padding", header: "Nostr ====", wantErr: badB64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newNIP98Verifier(func() time.Time { return nip98T0 }, tokens)
			method, u := tc.method, tc.url
			if method == "" {
				method = "POST"
			}
			if u == "" {
				u = nip98URL
			}
			got, err := v.verify(context.Background(), tc.header, method, u, []byte(tc.body))
			switch {
			case tc.wantErr != "":
				var nerr *nip98Error
				if err == nil || !errors.As(err, &nerr) || err.Error() != tc.wantErr {
					t.Fatalf("verify = %q, %v; want error %q", got, err, tc.wantErr)
				}
				if got != "" {
					t.Errorf("refused token gave pubkey %q", got)
				}
			case tc.anon:
				if got != "" || err != nil {
					t.Fatalf("verify = %q, %v; want anonymous", got, err)
				}
			default:
				if got != pk || err != nil {
					t.Fatalf("verify = %q, %v; want %q", got, err, pk)
				}
			}
		})
	}
}

// TestNIP98Replay: a token is used once, keyed on its signature (RL-17).
func TestNIP98Replay(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	now := nip98T0
	v := newNIP98Verifier(nip98Clock(&now), nip98Store(t))
	check := func(header, method, want string) {
		t.Helper()
		got, err := v.verify(context.Background(), header, method, nip98URL, nil)
		switch {
		case want == "" && (got != pk || err != nil):
			t.Fatalf("verify = %q, %v; want accepted", got, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Fatalf("verify = %q, %v; want %q", got, err, want)
		}
	}

	// Two payload-less tokens for one URL in one second, as nostr-tools
	// signs them: one id, two signatures, both honest.
	a := nip98Ev(nip98URL, "POST", nip98T0)
	b := a
	nip98Sign(t, &a, sk)
	nip98Sign(t, &b, sk)
	if a.ID != b.ID || a.Sig == b.Sig {
		t.Fatalf("want one id and two signatures: ids %s %s, sigs %s %s", a.ID, b.ID, a.Sig, b.Sig)
	}
	check(nip98Header(t, a), "POST", "")
	check(nip98Header(t, b), "POST", "")

	// The same token again, however it is spelt.
	check(nip98Header(t, a), "POST", "NIP-98: replay detected")
	check("Nostr "+base64.RawURLEncoding.EncodeToString(nip98JSON(t, b)), "POST", "NIP-98: replay detected")
	upper := a
	upper.Sig = strings.ToUpper(a.Sig)
	check(nip98Header(t, upper), "POST", "NIP-98: replay detected")

	// A refused token is not used up.
	c := nip98Ev(nip98URL, "POST", nip98T0)
	nip98Sign(t, &c, sk)
	check(nip98Header(t, c), "GET", "NIP-98: method mismatch")
	check(nip98Header(t, c), "POST", "")

	// Remembered for as long as a token can be valid: one created 60 s
	// ahead and used at once stays valid, and refused, 120 s later.
	d := nip98Ev(nip98URL, "POST", nip98T0.Add(60*time.Second))
	nip98Sign(t, &d, sk)
	check(nip98Header(t, d), "POST", "")
	now = nip98T0.Add(120 * time.Second)
	check(nip98Header(t, d), "POST", "NIP-98: replay detected")
}

// TestNIP98VerifyConcurrent verifies from many goroutines at once (run it
// with -race): distinct tokens are all accepted, each once, and one token
// shared by all is accepted exactly once.
func TestNIP98VerifyConcurrent(t *testing.T) {
	const workers, each = 8, 16
	v := newNIP98Verifier(func() time.Time { return nip98T0 }, nip98Store(t))
	sk := nostr.GeneratePrivateKey()
	shared := nip98Ev(nip98URL, "POST", nip98T0)
	nip98Sign(t, &shared, sk)
	sharedHeader := nip98Header(t, shared)

	headers := make([][]string, workers)
	for w := range headers {
		wsk := nostr.GeneratePrivateKey()
		for i := range each {
			ev := nip98Ev(nip98URL, "POST", nip98T0, nostr.Tag{"n", fmt.Sprint(i)})
			nip98Sign(t, &ev, wsk)
			headers[w] = append(headers[w], nip98Header(t, ev))
		}
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	sharedOK, sharedReplay := 0, 0
	for w := range workers {
		wg.Go(func() {
			for _, h := range headers[w] {
				if _, err := v.verify(context.Background(), h, "POST", nip98URL, nil); err != nil {
					t.Errorf("worker %d: %v", w, err)
				}
			}
			_, err := v.verify(context.Background(), sharedHeader, "POST", nip98URL, nil)
			mu.Lock()
			defer mu.Unlock()
			switch err {
			case nil:
				sharedOK++
			case errNIP98Replay:
				sharedReplay++
			default:
				t.Errorf("worker %d, shared token: %v", w, err)
			}
		})
	}
	wg.Wait()
	if sharedOK != 1 || sharedReplay != workers-1 {
		t.Fatalf("shared token accepted %d times, replay %d times", sharedOK, sharedReplay)
	}
	for w := range headers {
		for _, h := range headers[w] {
			if _, err := v.verify(context.Background(), h, "POST", nip98URL, nil); err != errNIP98Replay {
				t.Fatalf("worker %d's token again: %v, want replay", w, err)
			}
		}
	}
}

// TestNIP98NormalizeURL: the forms compared for the u tag (RL-17).
func TestNIP98NormalizeURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"http://relay.example/query", "http://relay.example/query"},
		{"HTTP://RELAY.Example/Query", "http://relay.example/Query"},
		{"http://relay.example/query/", "http://relay.example/query"},
		{"http://relay.example", "http://relay.example"},
		{"http://relay.example/", "http://relay.example"},
		{"http://relay.example:80/", "http://relay.example"},
		{"https://relay.example:443/q", "https://relay.example/q"},
		{"ws://relay.example:80", "ws://relay.example"},
		{"wss://relay.example:443", "wss://relay.example"},
		{"https://relay.example:80/q", "https://relay.example:80/q"},
		{"http://relay.example:8080/q", "http://relay.example:8080/q"},
		{"http://localhost:3334/q", "http://localhost:3334/q"},
		{"http://LocalHost/q", "http://localhost/q"},
		{"http://127.0.0.1:3334/q", "http://localhost:3334/q"},
		{"http://[::1]:3334/q", "http://localhost:3334/q"},
		{"http://[0:0:0:0:0:0:0:1]/q", "http://localhost/q"},
		{"http://[::ffff:127.0.0.1]/q", "http://localhost/q"},
		{"http://[2001:DB8::0001]:8080/q", "http://[2001:db8::1]:8080/q"},
		{"http://[2001:db8::1]/q", "http://[2001:db8::1]/q"},
		{"http://10.0.0.1:80/q", "http://10.0.0.1/q"},
		{"http://relay.example/q?b=2&a=1", "http://relay.example/q?b=2&a=1"},
		{"http://relay.example/q/?a=1", "http://relay.example/q?a=1"},
		{"http://relay.example/q?", "http://relay.example/q"},
		{"http://relay.example/q#frag", "http://relay.example/q"},
		{"http://relay.example/a%2Fb", "http://relay.example/a%2Fb"},
	} {
		got, ok := normalizeURL(tc.in)
		if !ok || got != tc.want {
			t.Errorf("normalizeURL(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
			continue
		}
		if again, ok := normalizeURL(got); !ok || again != got {
			t.Errorf("normalizeURL(%q) = %q, %v; not idempotent", got, again, ok)
		}
	}
	for _, in := range []string{"", "/query", "relay.example/query", "http://", "http:///q", "mailto:a@b", "http://u:p@relay.example/", "http://[::1/", "%"} {
		if got, ok := normalizeURL(in); ok {
			t.Errorf("normalizeURL(%q) = %q, want not ok", in, got)
		}
	}
}

// TestNIP98QueryURL: the URL a client signs is the relay's public URL
// with the request's path, whatever the request's Host and TLS say
// (RL-17, RL-28).
func TestNIP98QueryURL(t *testing.T) {
	for _, tc := range []struct {
		name, target, public string
		tls                  bool
		want                 string
	}{
		{"loopback", "http://127.0.0.1:3334/query?x=1", "ws://127.0.0.1:3334", false, "http://127.0.0.1:3334/query?x=1"},
		{"another Host", "http://evil.example/query", "ws://127.0.0.1:3334", false, "http://127.0.0.1:3334/query"},
		{"TLS to us, ws public URL", "https://relay.example/query", "ws://relay.example", true, "http://relay.example/query"},
		{"escaped path", "http://relay.example/a%2Fb", "ws://relay.example", false, "http://relay.example/a%2Fb"},
		{"ws public URL", "http://10.0.0.5:3334/query", "ws://relay.example:7777", false, "http://relay.example:7777/query"},
		{"wss public URL", "http://10.0.0.5:3334/query?x=1", "wss://relay.example", false, "https://relay.example/query?x=1"},
		{"wss public URL, TLS to us too", "https://10.0.0.5/query", "wss://relay.example/", true, "https://relay.example/query"},
		{"upper-case public scheme", "http://10.0.0.5/query", "WSS://relay.example", false, "https://relay.example/query"},
		{"path prefix", "http://10.0.0.5/query", "wss://relay.example/buzz", false, "https://relay.example/buzz/query"},
		{"path prefix with slash", "http://10.0.0.5/query", "wss://relay.example/buzz/", false, "https://relay.example/buzz/query"},
		{"path prefix, escaped path", "http://10.0.0.5/a%2Fb", "wss://relay.example/buzz", false, "https://relay.example/buzz/a%2Fb"},
		{"public URL without host", "http://relay.example/query", "relay.example", false, ""},
		{"no public URL", "http://relay.example/query", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", tc.target, nil)
			r.TLS = nil
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if got := queryURL(r, tc.public); got != tc.want {
				t.Fatalf("queryURL = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzNIP98Verify feeds arbitrary Authorization headers and bodies: verify
// never panics, refuses with one of the RL-17 messages or accepts a
// lower-case public key, and never accepts the same header twice.
func FuzzNIP98Verify(f *testing.F) {
	sk := nostr.GeneratePrivateKey()
	valid := nip98Ev(nip98URL, "POST", nip98T0, nostr.Tag{"payload", nip98Hash("{}")})
	if err := valid.Sign(sk); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		nip98Header(f, valid),
		"Nostr " + base64.RawURLEncoding.EncodeToString(nip98JSON(f, valid)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"tags":[["u"],["method"],["payload"]]}`)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`null`)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"created_at":-9223372036854775808}`)),
		"Nostr " + base64.StdEncoding.EncodeToString([]byte(`{"kind":27235,"pubkey":"\"","id":"","sig":"zz"}`)),
		"Nostr ",
		"Nostr ===",
		"nostr\t abc",
		"Bearer x",
		"",
		"\x00\xff",
	} {
		f.Add(seed, []byte("{}"))
	}
	messages := map[string]bool{}
	for _, e := range []*nip98Error{errNIP98Replay, errNIP98URL, errNIP98Method, errNIP98Payload,
		errNIP98Timestamp, errNIP98Signature, errNIP98Kind, errNIP98Base64, errNIP98JSON} {
		messages[e.Error()] = true
	}
	v := newNIP98Verifier(func() time.Time { return nip98T0 }, nip98Store(f))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		pk, err := v.verify(context.Background(), header, "POST", nip98URL, body)
		if err != nil {
			var nerr *nip98Error
			if !errors.As(err, &nerr) || !messages[err.Error()] || pk != "" {
				t.Fatalf("verify(%q) = %q, %v", header, pk, err)
			}
			return
		}
		if pk == "" {
			return
		}
		if !nostr.IsValid32ByteHex(pk) {
			t.Fatalf("verify(%q) accepted pubkey %q", header, pk)
		}
		if _, err := v.verify(context.Background(), header, "POST", nip98URL, body); err != errNIP98Replay {
			t.Fatalf("verify(%q) again: %v, want replay", header, err)
		}
	})
}
