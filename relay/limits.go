package relay

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Limits bound what one client may make the relay send, hold and do
// (RL-27, RL-27a). A zero field takes its value from DefaultLimits.
type Limits struct {
	MaxMessageBytes int64 // one WebSocket message
	MaxEventBytes   int   // one event, as serialized
	MaxEventTags    int   // tags of one event
	MaxLimit        int   // clamp of a REQ filter's limit

	MaxSubscriptions    int // open subscriptions of one connection
	MaxFilters          int // filters of one REQ
	MaxConnectionsPerIP int // WebSockets and `/query` requests in flight of one client IP

	// ConnectionBufferBytes bounds the answers and live events queued for
	// one connection: past it the relay stops querying for that
	// connection, and closes it if it stays full.
	ConnectionBufferBytes int64
	// MaxConcurrentQueries bounds the REQ/COUNT handlers and `/query`
	// requests that run at once; the surplus waits briefly, then is
	// refused with rate-limited.
	MaxConcurrentQueries int
	// MaxConcurrentQueriesPerIP is the share of those one client IP may
	// hold at once.
	MaxConcurrentQueriesPerIP int
	// QueryMemoryBytes bounds the answers all running `/query` requests
	// and web pages hold together, QueryMemoryBytesPerIP those of one
	// client (Limits.client) until they are written.
	QueryMemoryBytes      int64
	QueryMemoryBytesPerIP int64

	// MaxSyncSessions bounds the NIP-77 sync sessions one client
	// (Limits.client, over all its connections) may hold open, MaxSyncItems the events one session reconciles, and
	// SyncMemoryBytes what all sessions hold together (RL-34).
	MaxSyncSessions int
	MaxSyncItems    int
	SyncMemoryBytes int64

	// HeaderTimeout and BodyTimeout bound how long the relay waits for an
	// HTTP request's headers and for its body.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration

	// Rates are the token buckets of RL-27; nil turns every rate limit off
	// (`[limits] rates = false`), while the size and count limits stay.
	Rates *Rates
	// IPv6Prefix is how many leading bits of an IPv6 address make one
	// client for every limit per client IP (48 to 128; 64 by default).
	IPv6Prefix int
	// Exempt are client networks to which no rate or connection limit
	// applies; empty by default, so loopback clients are limited too.
	Exempt []netip.Prefix
}

// Rate is a token bucket: PerSecond tokens a second, at most Burst at once.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Rates are the token buckets of RL-27.
type Rates struct {
	EventsPerIP       Rate // EVENTs from one client IP
	EventsPerPubkey   Rate // EVENTs signed by one pubkey
	ReqsPerConnection Rate // REQs and COUNTs on one connection
	QueriesPerIP      Rate // `/query` requests from one client IP
	ChannelsPerPubkey Rate // channels created by one pubkey (9007 and implicit)
}

// DefaultRates are RL-27's defaults: generous for a community, tight
// enough that one client cannot take the machine.
var DefaultRates = Rates{
	EventsPerIP:       Rate{PerSecond: 10, Burst: 50},
	EventsPerPubkey:   Rate{PerSecond: 5, Burst: 30},
	ReqsPerConnection: Rate{PerSecond: 20, Burst: 100},
	QueriesPerIP:      Rate{PerSecond: 20, Burst: 100},
	ChannelsPerPubkey: Rate{PerSecond: 10.0 / 3600, Burst: 5},
}

// DefaultLimits are the limits of RL-27 and RL-27a. Rates are off here:
// the configuration turns them on (config.Default).
var DefaultLimits = Limits{
	MaxMessageBytes:           512 << 10,
	MaxEventBytes:             128 << 10,
	MaxEventTags:              2000,
	MaxLimit:                  1000,
	MaxSubscriptions:          50,
	MaxFilters:                10,
	MaxConnectionsPerIP:       32,
	ConnectionBufferBytes:     4 << 20,
	MaxConcurrentQueries:      16,
	MaxConcurrentQueriesPerIP: 2,
	QueryMemoryBytes:          64 << 20,
	QueryMemoryBytesPerIP:     40 << 20,
	MaxSyncSessions:           4,
	MaxSyncItems:              100_000,
	SyncMemoryBytes:           64 << 20,
	HeaderTimeout:             10 * time.Second,
	BodyTimeout:               30 * time.Second,
	IPv6Prefix:                64,
}

// withDefaults fills every zero field of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	fill(&l.MaxMessageBytes, d.MaxMessageBytes)
	fill(&l.MaxEventBytes, d.MaxEventBytes)
	fill(&l.MaxEventTags, d.MaxEventTags)
	fill(&l.MaxLimit, d.MaxLimit)
	fill(&l.MaxSubscriptions, d.MaxSubscriptions)
	fill(&l.MaxFilters, d.MaxFilters)
	fill(&l.MaxConnectionsPerIP, d.MaxConnectionsPerIP)
	fill(&l.ConnectionBufferBytes, d.ConnectionBufferBytes)
	fill(&l.MaxConcurrentQueries, d.MaxConcurrentQueries)
	fill(&l.MaxConcurrentQueriesPerIP, d.MaxConcurrentQueriesPerIP)
	fill(&l.QueryMemoryBytes, d.QueryMemoryBytes)
	fill(&l.QueryMemoryBytesPerIP, d.QueryMemoryBytesPerIP)
	fill(&l.MaxSyncSessions, d.MaxSyncSessions)
	fill(&l.MaxSyncItems, d.MaxSyncItems)
	fill(&l.SyncMemoryBytes, d.SyncMemoryBytes)
	fill(&l.HeaderTimeout, d.HeaderTimeout)
	fill(&l.BodyTimeout, d.BodyTimeout)
	fill(&l.IPv6Prefix, d.IPv6Prefix)
	return l
}

// fill sets *v to def when it is zero.
func fill[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// exempt reports whether ip is in a network no rate or connection limit
// applies to.
func (l Limits) exempt(ip netip.Addr) bool { return inAny(ip, l.Exempt) }

// The bounds of Limits.IPv6Prefix: a /48 is a whole site, and past 128
// bits there is no address.
const (
	MinIPv6Prefix = 48
	MaxIPv6Prefix = 128
)

// check refuses limits the relay cannot count by.
func (l Limits) check() error {
	if l.IPv6Prefix < MinIPv6Prefix || l.IPv6Prefix > MaxIPv6Prefix {
		return fmt.Errorf("limits.ipv6_prefix: want %d to %d bits, got %d", MinIPv6Prefix, MaxIPv6Prefix, l.IPv6Prefix)
	}
	return nil
}

// readSlots are the REQ/COUNT store reads and `/query` requests that may
// run at once (RL-27a): at most MaxConcurrentQueries in all, and at most
// MaxConcurrentQueriesPerIP of one client (Limits.client), so that one address can take
// neither every slot nor the CPU the slots share: on a 2-core machine
// eight concurrent heavy COUNTs of one client made everyone else's REQs
// wait over a second.
type readSlots struct {
	all   chan struct{}
	perIP int

	mu   sync.Mutex
	byIP map[netip.Prefix]*ipSlots
}

// ipSlots are one client IP's share; refs counts who holds or waits for
// one, so that an IP nobody reads for is forgotten.
type ipSlots struct {
	held chan struct{}
	refs int
}

func newReadSlots(all, perIP int) *readSlots {
	return &readSlots{all: make(chan struct{}, all), perIP: perIP, byIP: map[netip.Prefix]*ipSlots{}}
}

// slotWait is how long a request waits for a slot before it is refused.
const slotWait = 2 * time.Second

// acquire takes a slot for a read of client ip, waiting up to slotWait in
// all; false when none came free in time or ctx ended. An invalid ip (an
// exempt network's) takes from the relay's slots only. A true acquire must
// be followed by release with the same ip.
func (s *readSlots) acquire(ctx context.Context, ip netip.Prefix) bool {
	t := time.NewTimer(slotWait)
	defer t.Stop()
	var mine *ipSlots
	if ip.IsValid() {
		mine = s.join(ip)
		if !take(ctx, mine.held, t.C) {
			s.leave(ip, mine)
			return false
		}
	}
	if !take(ctx, s.all, t.C) {
		if mine != nil {
			<-mine.held
			s.leave(ip, mine)
		}
		return false
	}
	return true
}

// release gives back a slot acquire took for ip.
func (s *readSlots) release(ip netip.Prefix) {
	<-s.all
	if !ip.IsValid() {
		return
	}
	s.mu.Lock()
	mine := s.byIP[ip]
	s.mu.Unlock()
	<-mine.held
	s.leave(ip, mine)
}

func (s *readSlots) join(ip netip.Prefix) *ipSlots {
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.byIP[ip]
	if mine == nil {
		mine = &ipSlots{held: make(chan struct{}, s.perIP)}
		s.byIP[ip] = mine
	}
	mine.refs++
	return mine
}

func (s *readSlots) leave(ip netip.Prefix, mine *ipSlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mine.refs--; mine.refs == 0 {
		delete(s.byIP, ip)
	}
}

// take puts a token into sem, at once if there is room, else waiting
// until timeout fires or ctx ends.
func take(ctx context.Context, sem chan struct{}, timeout <-chan time.Time) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-timeout:
		return false
	case <-ctx.Done():
		return false
	}
}
