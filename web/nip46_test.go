package web

import (
	"strings"
	"testing"
)

// CW-26: server.web_connect_allow takes WebSocket origins only, brought to
// the one form a CSP source has; anything else (a path, a wildcard, other
// schemes, what could end the directive) is refused.
func TestConnectOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"wss://relay.example.com":      "wss://relay.example.com",
		" WSS://Relay.Example.COM/ ":   "wss://relay.example.com",
		"ws://127.0.0.1:7777":          "ws://127.0.0.1:7777",
		"wss://[::1]:8443":             "wss://[::1]:8443",
		"wss://bunker.example.org:443": "wss://bunker.example.org:443",
	} {
		got, err := ConnectOrigin(in)
		if err != nil || got != want {
			t.Errorf("ConnectOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "relay.example.com", "https://relay.example.com", "wss://", "wss://relay.example.com/nip46",
		"wss://relay.example.com?x=1", "wss://relay.example.com?", "wss://relay.example.com#f", "wss://*.example.com",
		"wss://user:pw@relay.example.com", "wss://relay.example.com;script-src", "wss://a b", "wss://relay.example.com:port",
		"wss://relay.example.com,wss://b",
	} {
		if got, err := ConnectOrigin(in); err == nil {
			t.Errorf("ConnectOrigin(%q) = %q, want an error", in, got)
		}
	}
}

// CW-26: the default policy lets a page connect to no third-party origin;
// the operator's origins are added to connect-src, every other directive
// stays as it was.
func TestCSPWith(t *testing.T) {
	const relayURL = "ws://127.0.0.1:7777"
	base := CSP(relayURL)
	for _, scheme := range []string{"wss:", "http", "*", "example"} {
		if strings.Contains(base, scheme) {
			t.Errorf("CSP %q names %q: the default policy allows no third-party origin", base, scheme)
		}
	}
	if got := CSPWith(relayURL, nil); got != base {
		t.Errorf("CSPWith(nil) = %q, want CSP %q", got, base)
	}
	allow := []string{"wss://bunker.example.com", "ws://127.0.0.1:7777", "wss://bunker.example.com"}
	got := CSPWith(relayURL, allow)
	for _, o := range []string{"wss://bunker.example.com", "ws://127.0.0.1:7777"} {
		if strings.Count(got, o) != 1 {
			t.Errorf("CSPWith(%q) = %q: want %s once", allow, got, o)
		}
	}
	for _, d := range strings.Split(base, ";") {
		if d = strings.TrimSpace(d); !strings.HasPrefix(d, "connect-src") && !strings.Contains(got, d) {
			t.Errorf("CSPWith lost directive %q: %q", d, got)
		}
	}

	for _, c := range []struct{ policy, want string }{
		{"default-src 'none'; style-src 'self'",
			"default-src 'none'; style-src 'self'; connect-src wss://bunker.example.com ws://127.0.0.1:7777"},
		{"default-src 'none'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
			"default-src 'none'; script-src 'self'; connect-src 'self' wss://bunker.example.com ws://127.0.0.1:7777; frame-ancestors 'none'"},
		{"default-src 'self'; img-src 'self';",
			"default-src 'self'; img-src 'self'; connect-src 'self' wss://bunker.example.com ws://127.0.0.1:7777"},
		{"connect-src wss://bunker.example.com", "connect-src wss://bunker.example.com ws://127.0.0.1:7777"},
		{"style-src 'self'", "style-src 'self'"},
	} {
		if got := cspWith(c.policy, allow); got != c.want {
			t.Errorf("cspWith(%q)\n got %q\nwant %q", c.policy, got, c.want)
		}
	}
}
