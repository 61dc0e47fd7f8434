package relay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// nip98Error is a refused NIP-98 token (RL-17). Its message is what the
// client is told with the 401, word for word, so it never carries a server
// URL, an internal error or any part of the token (RL-26): it is as safe to
// log as to send.
type nip98Error struct{ msg string }

func (e *nip98Error) Error() string { return e.msg }

// The reasons a token is refused (RL-17).
var (
	errNIP98Replay    = &nip98Error{"NIP-98: replay detected"}
	errNIP98URL       = &nip98Error{"NIP-98: URL mismatch"}
	errNIP98Method    = &nip98Error{"NIP-98: method mismatch"}
	errNIP98Payload   = &nip98Error{"NIP-98: payload mismatch"}
	errNIP98Timestamp = &nip98Error{"NIP-98: timestamp out of range"}
	errNIP98Signature = &nip98Error{"NIP-98: invalid signature"}
	errNIP98Kind      = &nip98Error{"NIP-98: wrong kind"}
	errNIP98Base64    = &nip98Error{"invalid base64 in Nostr auth"}
	errNIP98JSON      = &nip98Error{"invalid NIP-98 event JSON"}
)

const (
	// nip98Kind is the kind of a NIP-98 HTTP auth event.
	nip98Kind = 27235
	// nip98Skew is how far created_at may be from now, either way.
	nip98Skew = 60 * time.Second
	// nip98Remember is how long an accepted token's signature is kept: a
	// token is valid for 2*nip98Skew in all, so it cannot outlive the
	// memory of its first use, however early in its window that came.
	nip98Remember = 2 * nip98Skew
)

// tokenSpender keeps the tokens accepted (buzz.Store.SpendToken).
type tokenSpender interface {
	SpendToken(ctx context.Context, key []byte, expires int64) (bool, error)
}

// nip98Verifier checks NIP-98 Authorization headers (RL-17) and has the
// store remember the tokens it accepted, so that each is used once, also
// after a restart and on every process sharing the database. It is safe
// for concurrent use.
type nip98Verifier struct {
	now    func() time.Time
	tokens tokenSpender
}

// newNIP98Verifier returns a verifier reading the time from now and
// keeping the tokens in tokens.
func newNIP98Verifier(now func() time.Time, tokens tokenSpender) *nip98Verifier {
	return &nip98Verifier{now: now, tokens: tokens}
}

// nip98Event is a NIP-98 event as sent. It is decoded with encoding/json
// rather than go-nostr's generated decoder, which fails on an unknown field
// whose value is not a string.
type nip98Event struct {
	ID        string     `json:"id"`
	PubKey    string     `json:"pubkey"`
	CreatedAt int64      `json:"created_at"`
	Kind      int        `json:"kind"`
	Tags      nostr.Tags `json:"tags"`
	Content   string     `json:"content"`
	Sig       string     `json:"sig"`
}

// verify checks the Authorization header of a request for method on
// requestURL (as queryURL gives it) with body, and returns the public key
// it proves. No header, or one of another scheme, is an anonymous
// requester: ("", nil), as on WebSocket. Every refusal is a *nip98Error;
// any other error is the store's failure to remember the token.
func (v *nip98Verifier) verify(ctx context.Context, authorization, method, requestURL string, body []byte) (string, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	if !strings.EqualFold(scheme, "Nostr") {
		return "", nil
	}
	raw, err := decodeBase64(strings.TrimSpace(token))
	if err != nil || len(raw) == 0 {
		return "", errNIP98Base64
	}
	var in *nip98Event
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		return "", errNIP98JSON
	}
	ev := nostr.Event{
		ID:        in.ID,
		PubKey:    in.PubKey,
		CreatedAt: nostr.Timestamp(in.CreatedAt),
		Kind:      in.Kind,
		Tags:      in.Tags,
		Content:   in.Content,
		Sig:       in.Sig,
	}

	if ev.Kind != nip98Kind {
		return "", errNIP98Kind
	}
	// The public key must be lower-case hex, the one spelling that names
	// a member: CheckSignature accepts any case.
	if !nostr.IsValid32ByteHex(ev.PubKey) || !ev.CheckID() {
		return "", errNIP98Signature
	}
	if ok, _ := ev.CheckSignature(); !ok {
		return "", errNIP98Signature
	}
	now := v.now()
	if d := now.Sub(time.Unix(int64(ev.CreatedAt), 0)); d > nip98Skew || d < -nip98Skew {
		return "", errNIP98Timestamp
	}
	signed, ok := normalizeURL(tagValue(ev.Tags, "u"))
	if want, wantOK := normalizeURL(requestURL); !ok || !wantOK || signed != want {
		return "", errNIP98URL
	}
	if !strings.EqualFold(tagValue(ev.Tags, "method"), method) {
		return "", errNIP98Method
	}
	if hash, ok := tagLookup(ev.Tags, "payload"); ok {
		sum := sha256.Sum256(body)
		if !strings.EqualFold(hash, hex.EncodeToString(sum[:])) {
			return "", errNIP98Payload
		}
	}
	fresh, err := v.tokens.SpendToken(ctx, tokenKey(ev.Sig), now.Add(nip98Remember).Unix())
	switch {
	case err != nil:
		return "", fmt.Errorf("NIP-98 replay check: %w", err)
	case !fresh:
		return "", errNIP98Replay
	}
	return ev.PubKey, nil
}

// tokenKey is what the store keeps of a token: the first 16 bytes of the
// SHA-256 of its signature's lower-case hex. The signature is checked
// whatever its case, and a replay must not pass by changing it; base64
// re-encodings of a token are caught the same way, as the key comes from
// the decoded event. Keyed on the signature, not the event id: two
// payload-less tokens of one second have one id and two signatures, both
// honest (RL-17). 16 bytes keep the table small; a collision, which would
// take ~2^64 signatures to make on purpose, only refuses the token that
// collides.
func tokenKey(sig string) []byte {
	sum := sha256.Sum256([]byte(strings.ToLower(sig)))
	return sum[:16]
}

// decodeBase64 decodes a token in any of the base64 spellings clients
// produce: standard or URL-safe alphabet, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// tagLookup returns the first value of the first tag named name, and
// whether there is such a tag; a tag without a value has the value "".
func tagLookup(tags nostr.Tags, name string) (string, bool) {
	for _, tag := range tags {
		if len(tag) > 0 && tag[0] == name {
			if len(tag) > 1 {
				return tag[1], true
			}
			return "", true
		}
	}
	return "", false
}

// tagValue is tagLookup's value alone, for tags that must be present.
func tagValue(tags nostr.Tags, name string) string {
	v, _ := tagLookup(tags, name)
	return v
}

// defaultPorts are the ports a URL may leave out.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}

// normalizeURL puts an absolute URL in the form in which a NIP-98 `u` tag
// and the URL of the request are compared (RL-17): scheme and host lower
// case, IP literals in canonical form, localhost, 127.0.0.1 and ::1 one
// host, the default port left out and any other kept, no trailing slash,
// the query as is, no fragment. Clients differ on each of these while
// meaning the same URL. It reports false for anything but an absolute URL
// with a host and no user information.
func normalizeURL(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if addr, err := netip.ParseAddr(host); err == nil {
		host = addr.String()
		if a := addr.Unmap(); a == netip.IPv6Loopback() || a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			host = "localhost"
		}
	}
	port := u.Port()
	if port == defaultPorts[scheme] {
		port = ""
	}
	hostport := host
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	out := scheme + "://" + hostport + strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out, true
}

// queryURL is the URL a client should have signed for r: the relay's
// public URL (RL-28), ws and wss becoming http and https, with its path
// (a prefix that a proxy strips) before the request's path. The request's
// own scheme and host never count: they are whatever the client or a proxy
// says. A public URL that is not absolute gives "", which no token names.
func queryURL(r *http.Request, publicURL string) string {
	pub, err := url.Parse(publicURL)
	if err != nil || pub.Host == "" {
		return ""
	}
	u := url.URL{
		Scheme:   strings.ToLower(pub.Scheme),
		Host:     pub.Host,
		Path:     strings.TrimSuffix(pub.Path, "/") + r.URL.Path,
		RawPath:  strings.TrimSuffix(pub.EscapedPath(), "/") + r.URL.EscapedPath(),
		RawQuery: r.URL.RawQuery,
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	return u.String()
}
