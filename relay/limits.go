package relay

import (
	"context"
	"net/netip"
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
	// QueryMemoryBytes bounds the answers all running `/query` requests
	// hold together.
	QueryMemoryBytes int64

	// HeaderTimeout and BodyTimeout bound how long the relay waits for an
	// HTTP request's headers and for its body.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration

	// Rates are the token buckets of RL-27; nil turns every rate limit off
	// (`[limits] rates = false`), while the size and count limits stay.
	Rates *Rates
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
	MaxMessageBytes:       512 << 10,
	MaxEventBytes:         128 << 10,
	MaxEventTags:          2000,
	MaxLimit:              1000,
	MaxSubscriptions:      50,
	MaxFilters:            10,
	MaxConnectionsPerIP:   32,
	ConnectionBufferBytes: 4 << 20,
	MaxConcurrentQueries:  16,
	QueryMemoryBytes:      64 << 20,
	HeaderTimeout:         10 * time.Second,
	BodyTimeout:           30 * time.Second,
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
	fill(&l.QueryMemoryBytes, d.QueryMemoryBytes)
	fill(&l.HeaderTimeout, d.HeaderTimeout)
	fill(&l.BodyTimeout, d.BodyTimeout)
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

// slots is a counting semaphore: the REQ/COUNT handlers and `/query`
// requests that may run at once (RL-27a).
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// slotWait is how long a request waits for a slot before it is refused.
const slotWait = 2 * time.Second

// acquire takes a slot, waiting up to slotWait; false when none came free
// in time or ctx ended. A true acquire must be released.
func (s slots) acquire(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(slotWait)
	defer t.Stop()
	select {
	case s <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }
