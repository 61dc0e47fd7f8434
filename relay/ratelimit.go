package relay

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyedLimiter is a token bucket per key (a client IP, a pubkey, a
// connection), each created full on first use. Buckets that have been
// idle long enough to be full again are forgotten, so that the memory it
// holds is bounded by the keys active within that time, not by every key
// ever seen.
type keyedLimiter struct {
	rate  rate.Limit
	burst int
	// idle is how long a bucket takes to refill from empty: after that
	// it is as good as new and need not be kept.
	idle time.Duration

	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	lim  *rate.Limiter
	used time.Time
}

// newKeyedLimiter returns buckets of r; nil when r allows nothing to be
// limited (a zero rate).
func newKeyedLimiter(r Rate) *keyedLimiter {
	if r.PerSecond <= 0 || r.Burst <= 0 {
		return nil
	}
	idle := time.Duration(float64(r.Burst) / r.PerSecond * float64(time.Second))
	return &keyedLimiter{rate: rate.Limit(r.PerSecond), burst: r.Burst, idle: idle, buckets: map[string]*bucket{}}
}

// allow takes a token from key's bucket at now, reporting false when there
// is none. A nil limiter allows everything.
func (k *keyedLimiter) allow(key string, now time.Time) bool {
	if k == nil {
		return true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweep(now)
	b := k.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(k.rate, k.burst)}
		k.buckets[key] = b
	}
	b.used = now
	return b.lim.AllowN(now, 1)
}

// sweep forgets, at most once per idle period, the buckets unused for a
// whole idle period: the cost is linear in the buckets, paid once per
// period, so constant per call on average.
func (k *keyedLimiter) sweep(now time.Time) {
	if now.Sub(k.swept) < k.idle {
		return
	}
	k.swept = now
	for key, b := range k.buckets {
		if now.Sub(b.used) >= k.idle {
			delete(k.buckets, key)
		}
	}
}
