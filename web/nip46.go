package web

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// A member who signs in with a NIP-46 remote signer (assets/nip46.js)
// talks to it through the relays its bunker:// URL names. The page may
// connect to its own origin only (CSP), so a bunker whose relay is this
// relay needs nothing more; a bunker on another relay needs that relay's
// origin in the operator's server.web_connect_allow, which CSPWith adds
// to the policy. The default policy names no third-party origin (CW-26).

// ConnectOrigin checks that s is a WebSocket origin a page may be let
// connect to, ws:// or wss:// and a host with an optional port, nothing
// else, and returns it as the CSP source CSPWith takes: scheme and host
// in lowercase, without a trailing slash.
func ConnectOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || !sourceHost(u.Host) {
		return "", fmt.Errorf("want a ws:// or wss:// origin such as wss://relay.example.com (no path, no wildcard), got %q", s)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// sourceHost reports whether host (with its port) is made only of what a
// host name, an IPv6 literal and a port are made of: nothing that could
// end or extend a CSP directive, and no wildcard.
func sourceHost(host string) bool {
	for _, c := range strings.ToLower(host) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return false
		}
	}
	return true
}

// CSPWith is the Content-Security-Policy of the web view's answers, CSP
// of the relay whose public URL is relayURL, when its pages may also
// connect to connectAllow: origins as ConnectOrigin returns them, added to
// what CSP's connect-src allows. With none it is CSP(relayURL).
func CSPWith(relayURL string, connectAllow []string) string {
	return cspWith(CSP(relayURL), connectAllow)
}

// cspWith is policy with connectAllow added to what it lets a page
// connect to.
func cspWith(policy string, connectAllow []string) string {
	if len(connectAllow) == 0 {
		return policy
	}
	var directives [][]string
	at, fallback := -1, -1
	for _, d := range strings.Split(policy, ";") {
		f := strings.Fields(d)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "connect-src":
			at = len(directives)
		case "default-src":
			fallback = len(directives)
		}
		directives = append(directives, f)
	}
	from := at
	if from < 0 {
		from = fallback
	}
	if from < 0 {
		// Neither directive: connecting is not restricted at all.
		return policy
	}
	var sources []string
	for _, src := range directives[from][1:] {
		if src != "'none'" {
			sources = append(sources, src)
		}
	}
	for _, o := range connectAllow {
		if !slices.Contains(sources, o) {
			sources = append(sources, o)
		}
	}
	connect := append([]string{"connect-src"}, sources...)
	if at < 0 {
		directives = append(directives, connect)
	} else {
		directives[at] = connect
	}
	out := make([]string, len(directives))
	for i, d := range directives {
		out[i] = strings.Join(d, " ")
	}
	return strings.Join(out, "; ")
}
