package relay

import (
	"net/http"
	"net/netip"
	"testing"
	"time"
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
