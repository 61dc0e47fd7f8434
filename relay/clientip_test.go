package relay

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-28: the client IP is the TCP peer, unless the peer is a trusted
// proxy: then the right-most address of X-Forwarded-For that is not a
// trusted proxy, or X-Real-IP. Headers from anyone else are ignored.
func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name    string
		peer    string
		trusted []netip.Prefix
		xff     []string
		realIP  string
		want    string
	}{
		{"no proxies: the peer", "203.0.113.5:4000", nil, []string{"198.51.100.1"}, "198.51.100.2", "203.0.113.5"},
		{"untrusted peer's headers ignored", "203.0.113.5:4000", trusted, []string{"198.51.100.1"}, "", "203.0.113.5"},
		{"trusted peer, one hop", "10.0.0.2:4000", trusted, []string{"198.51.100.1"}, "", "198.51.100.1"},
		{"right-most untrusted of a chain", "10.0.0.2:4000", trusted, []string{"1.1.1.1, 198.51.100.1, 10.0.0.3"}, "", "198.51.100.1"},
		{"repeated headers are one list", "10.0.0.2:4000", trusted, []string{"1.1.1.1", "198.51.100.7"}, "", "198.51.100.7"},
		{"spoofed left part does not win", "10.0.0.2:4000", trusted, []string{"6.6.6.6,198.51.100.1"}, "", "198.51.100.1"},
		{"all trusted: the left-most", "10.0.0.2:4000", trusted, []string{"10.1.1.1, 10.0.0.3"}, "", "10.1.1.1"},
		{"garbage hop stops there", "10.0.0.2:4000", trusted, []string{"198.51.100.1, bogus"}, "", "10.0.0.2"},
		{"X-Real-IP without X-Forwarded-For", "[::1]:4000", trusted, nil, "198.51.100.9", "198.51.100.9"},
		{"trusted peer, no headers", "[::1]:4000", trusted, nil, "", "::1"},
		{"IPv4-mapped peer", "[::ffff:203.0.113.5]:4000", nil, nil, "", "203.0.113.5"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://relay/", nil)
		req.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		if tc.realIP != "" {
			req.Header.Set("X-Real-IP", tc.realIP)
		}
		if got := clientIP(req, tc.trusted); got.String() != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// RL-27: a bucket per key, full at first; one key's use does not touch
// another's; buckets idle long enough to be full again are forgotten.
func TestKeyedLimiter(t *testing.T) {
	k := newKeyedLimiter(Rate{PerSecond: 1, Burst: 3})
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		if !k.allow("a", now) {
			t.Fatalf("token %d of a full bucket refused", i+1)
		}
	}
	if k.allow("a", now) {
		t.Fatal("an empty bucket gave a token")
	}
	if !k.allow("b", now) {
		t.Fatal("another key's bucket is empty too")
	}
	if !k.allow("a", now.Add(time.Second)) {
		t.Fatal("a second later no token came back")
	}
	later := now.Add(10 * time.Second)
	k.allow("c", later)
	if len(k.buckets) != 1 {
		t.Fatalf("%d buckets kept after everyone else idled, want 1", len(k.buckets))
	}
	if newKeyedLimiter(Rate{}) != nil || !(*keyedLimiter)(nil).allow("x", now) {
		t.Fatal("a zero rate should be no limiter, which allows everything")
	}
}

// Issue 29 item 2, RL-27, RL-28: every limit per client IP counts an IPv6
// client by its prefix of limits.ipv6_prefix bits (a /64 by default),
// whether the address is the TCP peer (a relay listening on [::]) or taken
// from X-Forwarded-For; an IPv4 client is its address.
func TestClientKey(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, tc := range []struct {
		name   string
		peer   string
		xff    string
		prefix int
		want   string
	}{
		{"IPv4 peer", "203.0.113.5:4000", "", 64, "203.0.113.5/32"},
		{"IPv4-mapped peer", "[::ffff:203.0.113.5]:4000", "", 64, "203.0.113.5/32"},
		{"IPv6 peer: its /64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4000", "", 64, "2001:db8:1:2::/64"},
		{"another address of that /64", "[2001:db8:1:2::9]:4000", "", 64, "2001:db8:1:2::/64"},
		{"IPv6 peer with a zone", "[fe80::1%eth0]:4000", "", 64, "fe80::/64"},
		{"IPv6 peer at /48", "[2001:db8:1:2::9]:4000", "", 48, "2001:db8:1::/48"},
		{"IPv6 peer at /128", "[2001:db8:1:2::9]:4000", "", 128, "2001:db8:1:2::9/128"},
		{"forwarded IPv6: its /64", "127.0.0.1:4000", "2001:db8:5:6::1234", 64, "2001:db8:5:6::/64"},
		{"forwarded IPv4 at any prefix", "127.0.0.1:4000", "198.51.100.7", 48, "198.51.100.7/32"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://relay/", nil)
		req.RemoteAddr = tc.peer
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		l := Limits{IPv6Prefix: tc.prefix}
		if got := l.client(clientIP(req, trusted)); got.String() != tc.want {
			t.Errorf("%s: counted as %s, want %s", tc.name, got, tc.want)
		}
		if got := l.limitedClient(clientIP(req, trusted)); got.String() != tc.want {
			t.Errorf("%s: limited as %s, want %s", tc.name, got, tc.want)
		}
	}
	exempt := Limits{IPv6Prefix: 64, Exempt: []netip.Prefix{netip.MustParsePrefix("2001:db8::1/128")}}
	if got := exempt.limitedClient(netip.MustParseAddr("2001:db8::1")); got.IsValid() {
		t.Errorf("an exempt address is limited as %s", got)
	}
	if got := exempt.limitedClient(netip.MustParseAddr("2001:db8::2")); got.String() != "2001:db8::/64" {
		t.Errorf("a neighbour of an exempt address is limited as %s, want its /64", got)
	}
	// Whoever hands client an address still mapped is not answered with
	// the /64 every IPv4 client would share.
	if got := exempt.client(netip.MustParseAddr("::ffff:203.0.113.5")); got.String() != "203.0.113.5/32" {
		t.Errorf("a mapped IPv4 address counts as %s, want 203.0.113.5/32", got)
	}
}

// Issue 29 item 2: a prefix outside 48 to 128 bits is refused when the
// relay is built.
func TestIPv6PrefixChecked(t *testing.T) {
	for _, bits := range []int{-1, 8, 47, 129} {
		_, err := New(Config{Key: strings.Repeat("1", 64), Limits: Limits{IPv6Prefix: bits}}, nil)
		if err == nil || !strings.Contains(err.Error(), "limits.ipv6_prefix: want 48 to 128 bits") {
			t.Errorf("ipv6_prefix %d: %v, want refused", bits, err)
		}
	}
}

// forwardedFrom is a proxy's request header naming addr as the client.
func forwardedFrom(addr string) http.Header {
	return http.Header{"X-Forwarded-For": {addr}}
}

// dialForwarded opens a WebSocket to s through a proxy that names addr
// as the client, and says whether the relay kept it open: refused
// connections are answered 429, or closed with 1013 when they raced past
// the first check. An open one stays open until the test ends.
func dialForwarded(t *testing.T, s *testServer, addr string) bool {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(s.wsURL, forwardedFrom(addr))
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			return false
		}
		t.Fatalf("dial as %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	msg, err := (&rawClient{t: t, conn: conn}).read()
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code == websocket.CloseTryAgainLater:
		return false
	case err != nil:
		t.Fatalf("dial as %s: reading the AUTH challenge: %v", addr, err)
	case label(msg) != "AUTH":
		t.Fatalf("dial as %s: first message %s", addr, joinRaw(msg))
	}
	return true
}

// Issue 29 item 2, RL-27, RL-28: behind a trusted proxy, the addresses of
// one IPv6 /64 are one client: they share its connections, `/query` rate
// and event rate, while an address of the next /64 is another client.
// At limits.ipv6_prefix = 128 every address is a client of its own.
func TestIPv6ClientsCountPerPrefix(t *testing.T) {
	// Each limit is shown on a /64 of its own, so that none of them is
	// reached through another's count.
	const burst = 3
	const cap = burst + 1
	for _, tc := range []struct {
		prefix  int
		refused bool // the fourth address of the /64 is refused
	}{{64, true}, {128, false}} {
		s := startServer(t, func(c *Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			c.Limits.IPv6Prefix = tc.prefix
			c.Limits.MaxConnectionsPerIP = cap
			r := DefaultRates
			r.QueriesPerIP = Rate{PerSecond: never, Burst: burst}
			r.EventsPerIP = Rate{PerSecond: never, Burst: burst}
			c.Limits.Rates = &r
		})
		in := func(net string, i int) string { return fmt.Sprintf("2001:db8:0:%s::%x", net, i+1) }
		for i := range cap {
			if !dialForwarded(t, s, in("7", i)) {
				t.Fatalf("/%d: connection %d refused", tc.prefix, i+1)
			}
		}
		if got := dialForwarded(t, s, in("7", cap)); got == tc.refused {
			t.Fatalf("/%d: connection %d from another address of the /64: opened %v", tc.prefix, cap+1, got)
		}
		if !dialForwarded(t, s, "2001:db8:0:8::1") {
			t.Fatalf("/%d: an address of another /64 refused", tc.prefix)
		}

		post := func(addr string) int {
			req, err := http.NewRequest(http.MethodPost, qyURL(s), strings.NewReader(`[{"kinds":[1]}]`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = forwardedFrom(addr)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		statuses := make([]int, burst+1)
		for i := range statuses {
			statuses[i] = post(in("9", i))
		}
		if last := statuses[burst]; (last == http.StatusTooManyRequests) != tc.refused {
			t.Errorf("/%d: /query from %d addresses of one /64: %v", tc.prefix, burst+1, statuses)
		}

		var results []string
		for i := range burst + 1 {
			conn, _, err := websocket.DefaultDialer.Dial(s.wsURL, forwardedFrom(in("a", i)))
			if err != nil {
				t.Fatalf("/%d: events from address %d: %v", tc.prefix, i, err)
			}
			t.Cleanup(func() { conn.Close() })
			_, reason := (&rawClient{t: t, conn: conn}).publish(testutil.NewSigner(t).Event(t, 1, now(), "note"))
			results = append(results, reason)
		}
		if last := results[burst]; (last == tooManyEvents) != tc.refused {
			t.Errorf("/%d: events from %d addresses of one /64: %q", tc.prefix, burst+1, results)
		}
	}
}
