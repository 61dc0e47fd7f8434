package relay

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the address rate and connection limits count by, and logs
// name (RL-28): the TCP peer, or, when the peer is a trusted proxy, the
// right-most address of X-Forwarded-For that is not a trusted proxy (or
// X-Real-IP when there is no X-Forwarded-For). Headers from any other peer
// are ignored: a client cannot choose the address it is counted as.
func clientIP(req *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := remoteAddr(req.RemoteAddr)
	if !inAny(peer, trusted) {
		return peer
	}
	if xff := req.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		// The header may be repeated; its values are one list, in order.
		hops := strings.Split(strings.Join(xff, ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				// A hop we cannot read ends what we may believe: the
				// nearest trusted proxy's view is the best we have.
				return peer
			}
			ip = ip.Unmap()
			if !inAny(ip, trusted) {
				return ip
			}
			peer = ip
		}
		return peer
	}
	if ip, err := netip.ParseAddr(strings.TrimSpace(req.Header.Get("X-Real-IP"))); err == nil {
		return ip.Unmap()
	}
	return peer
}

// client is who a limit per client IP counts ip as (RL-27, RL-34): an
// IPv4 address alone, an IPv6 address by its prefix of Limits.IPv6Prefix
// bits (a /64 by default). One IPv6 host is handed a /64 or more and
// picks any address of it, so counting addresses would give it billions
// of shares of every limit. Logs still name the whole address.
func (l Limits) client(ip netip.Addr) netip.Prefix {
	// An IPv4 client written as IPv6 (::ffff:a.b.c.d) is that IPv4
	// address, not one /64 shared by every IPv4 client.
	ip = ip.Unmap()
	bits := ip.BitLen()
	if ip.Is6() {
		bits = l.IPv6Prefix
	}
	// New checked the bits, the only way Prefix fails.
	p, _ := ip.Prefix(bits)
	return p
}

// limitedClient is client(ip) when limits per client apply to ip, and
// the invalid prefix, which no such limit counts, for an exempt network.
func (l Limits) limitedClient(ip netip.Addr) netip.Prefix {
	if l.exempt(ip) {
		return netip.Prefix{}
	}
	return l.client(ip)
}

// remoteAddr parses an http.Request's RemoteAddr ("ip:port").
func remoteAddr(s string) netip.Addr {
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}

func inAny(ip netip.Addr, nets []netip.Prefix) bool {
	for _, p := range nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
