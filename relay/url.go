package relay

import (
	"errors"
	"net"
	"net/netip"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"
)

// ErrRelayURLRequired refuses to serve on an address other clients can
// reach without a configured relay URL (RL-28).
var ErrRelayURLRequired = errors.New("set --relay-url to the ws:// or wss:// URL clients use to reach this relay")

// PublicURL is the URL that NIP-42 AUTH events and NIP-98 tokens must name
// (RL-28): configured, the relay's URL as its operator gave it; else, for
// a loopback listen address, ws:// and that address. Any other listen
// address without a configured URL is ErrRelayURLRequired: the relay
// cannot know how the world reaches it, and request headers (Host,
// X-Forwarded-Host, X-Forwarded-Proto) are the client's to choose, so a
// token signed for another relay would pass. `serve` checks its listen
// address with it before it creates anything; Serve derives the URL from
// the address it actually listens on.
func PublicURL(configured, listen string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil || !isLoopbackHost(host) {
		return "", ErrRelayURLRequired
	}
	return "ws://" + listen, nil
}

// isLoopbackHost reports whether host names only this machine: localhost
// or a loopback address. "" and the unspecified addresses listen on every
// interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// publicURL is the URL NIP-42 AUTH events and NIP-98 tokens must name:
// the one Serve derived; "" before Serve, which nothing names.
func (r *Relay) publicURL() string {
	if u := r.url.Load(); u != nil {
		return *u
	}
	return ""
}

// sameURL reports whether a URL a client signed names the relay's URL u,
// in the normal form of RL-17: clients spell one URL in several ways.
func sameURL(signed, u string) bool {
	a, ok := normalizeURL(signed)
	b, okU := normalizeURL(u)
	return ok && okU && a == b
}

// validateAuth checks a NIP-42 AUTH event for challenge (khatru's
// ValidateAuth hook): its relay tag must name the public URL (RL-28),
// whatever the request's headers said; go-nostr checks the rest (kind,
// challenge, time, signature).
func (r *Relay) validateAuth(ev *nostr.Event, challenge string) (string, bool) {
	signed := tagValue(ev.Tags, "relay")
	if !sameURL(signed, r.publicURL()) {
		return "", false
	}
	return nip42.ValidateAuthEvent(ev, challenge, signed)
}
