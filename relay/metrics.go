package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/buzz-lite/buzz-lite/internal/khatru"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// metrics are what `GET /metrics` reports (RL-30), in a registry of the
// relay's own: several relays in one process (tests) keep apart.
type metrics struct {
	registry *prometheus.Registry
	// handler serves the registry as `GET /metrics`.
	handler http.Handler

	accepted     prometheus.Counter
	rejected     *prometheus.CounterVec // by reason prefix
	rateLimited  *prometheus.CounterVec // by limit
	ingest       prometheus.Histogram
	query        *prometheus.HistogramVec // by request: req, count, query
	refusedTotal *prometheus.CounterVec   // REQ/COUNT CLOSED and /query errors, by request and reason prefix
	// queryReq, queryCount and queryHTTP are query's three series.
	queryReq, queryCount, queryHTTP prometheus.Observer
}

// DefaultMetricsAllow are the clients `/metrics` answers unless the
// configuration names others: loopback only, as the event counters and the
// WAL size let a scraper watch a private channel's activity (RL-30).
var DefaultMetricsAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// metricsAllowed says whether req may read `/metrics`: metrics are on and
// its client, as RL-28 determines it (behind a trusted proxy, the
// forwarded address), is in Config.MetricsAllow. Anyone else is answered
// as for a path that does not exist.
func (r *Relay) metricsAllowed(req *http.Request) bool {
	if !r.cfg.Metrics {
		return false
	}
	allow := r.cfg.MetricsAllow
	if len(allow) == 0 {
		allow = DefaultMetricsAllow
	}
	return inAny(clientIP(req, r.cfg.TrustedProxies), allow)
}

// The limits a rate-limit refusal names in buzz_lite_rate_limited_total.
const (
	limitConnections   = "connections"
	limitIPEvents      = "ip_events"
	limitPubkeyEvents  = "pubkey_events"
	limitChannels      = "channel_creation"
	limitRequests      = "requests"
	limitSubscriptions = "subscriptions"
	limitQueries       = "queries"
	limitBusy          = "busy"
	limitSyncSessions  = "sync_sessions"
	limitSyncItems     = "sync_items"
	limitSyncMemory    = "sync_client_memory"
	limitSyncRounds    = "sync_rounds"
)

// rateLimits are every limit above: each is exported at 0 before its
// first refusal, so that an alert on its rate has a series to watch.
var rateLimits = []string{limitConnections, limitIPEvents, limitPubkeyEvents, limitChannels, limitRequests,
	limitSubscriptions, limitQueries, limitBusy, limitSyncSessions, limitSyncItems, limitSyncMemory, limitSyncRounds}

// refusedRequests are the requests buzz_lite_requests_refused_total
// counts: REQ, COUNT and the NIP-77 messages by their label in lower
// case, and POST /query.
var refusedRequests = []string{"req", "count", "neg-open", "neg-msg", "neg-close", "query"}

// reasonPrefixes are the machine-readable prefixes of NIP-01 OK and CLOSED
// messages (and of `/query` errors) that label refusals; any other reason
// counts as "other".
var reasonPrefixes = []string{"invalid", "restricted", "blocked", "rate-limited", "duplicate",
	"error", "auth-required", "pow", "mute", "unsupported"}

// reasonPrefix is the label of a refusal's reason.
func reasonPrefix(reason string) string {
	prefix, _, ok := strings.Cut(reason, ":")
	if ok {
		for _, p := range reasonPrefixes {
			if prefix == p {
				return p
			}
		}
	}
	return "other"
}

// latencyBuckets span a cached page (well under a millisecond) to a batch
// waiting behind a checkpoint (seconds).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func (r *Relay) newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "buzz_lite_events_accepted_total",
			Help: "EVENTs answered OK true.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "buzz_lite_events_rejected_total",
			Help: "EVENTs answered OK false, by the prefix of the reason.",
		}, []string{"reason"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "buzz_lite_rate_limited_total",
			Help: "Refusals by a rate or a cap of RL-27, by limit.",
		}, []string{"limit"}),
		ingest: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "buzz_lite_ingest_seconds",
			Help:    "Time to store a verified event (its ingest transaction, waiting for its batch included).",
			Buckets: latencyBuckets,
		}),
		query: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "buzz_lite_query_seconds",
			Help:    "Time of store reads: a REQ chunk (req), a COUNT (count), a POST /query (query).",
			Buckets: latencyBuckets,
		}, []string{"request"}),
		refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "buzz_lite_requests_refused_total",
			Help: "REQs and COUNTs answered CLOSED and POST /query requests answered an error, by the prefix of the reason.",
		}, []string{"request", "reason"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.accepted, m.rejected, m.rateLimited, m.ingest, m.query, m.refusedTotal,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "buzz_lite_connections",
			Help: "Open WebSocket connections.",
		}, func() float64 {
			r.connsMu.Lock()
			defer r.connsMu.Unlock()
			return float64(len(r.conns))
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "buzz_lite_subscriptions",
			Help: "Open subscriptions (REQs) of all connections.",
		}, func() float64 {
			// Not under connsMu: a REQ's RejectRequest hook takes connsMu
			// under the connection's subscription lock.
			r.connsMu.Lock()
			conns := make([]*khatru.WebSocket, 0, len(r.conns))
			for ws := range r.conns {
				conns = append(conns, ws)
			}
			r.connsMu.Unlock()
			n := 0
			for _, ws := range conns {
				n += ws.Subscriptions()
			}
			return float64(n)
		}),
		storeCollector{r.store},
	)
	m.queryReq, m.queryCount, m.queryHTTP = m.query.WithLabelValues("req"), m.query.WithLabelValues("count"), m.query.WithLabelValues("query")
	// Every series whose labels are known is there from the start, at 0
	// (RL-30): a series that appears only with its first event hides the
	// rise from 0 from rate() and from an alert on it.
	for _, reason := range append(slices.Clone(reasonPrefixes), "other") {
		m.rejected.WithLabelValues(reason)
		for _, request := range refusedRequests {
			m.refusedTotal.WithLabelValues(request, reason)
		}
	}
	for _, limit := range rateLimits {
		m.rateLimited.WithLabelValues(limit)
	}
	// A collector that fails (the database file cannot be read) costs its
	// own metrics, logged, not the whole scrape.
	m.handler = promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorLog: metricsLog{r.log}, ErrorHandling: promhttp.ContinueOnError})
	return m
}

// limited counts a refusal by limit.
func (m *metrics) limited(limit string) { m.rateLimited.WithLabelValues(limit).Inc() }

// since observes the seconds since start in h.
func since(h prometheus.Observer, start time.Time) { h.Observe(time.Since(start).Seconds()) }

// storeCollector reports the store's numbers (Store.Stats) at each scrape.
type storeCollector struct{ store buzz.Store }

var (
	descWriterQueue = prometheus.NewDesc("buzz_lite_writer_queue",
		"Writes waiting for the writer.", nil, nil)
	descBatchSize = prometheus.NewDesc("buzz_lite_writer_batch_size",
		"Jobs per batch (one transaction, one commit) the writer took.", nil, nil)
	descPages = prometheus.NewDesc("buzz_lite_window_pages_total",
		"Window pages served, from the page cache (cache) or read from the database (database).", []string{"source"}, nil)
	descPageCacheBytes = prometheus.NewDesc("buzz_lite_page_cache_bytes",
		"Bytes of the window pages the page cache keeps, against storage.page_cache_bytes.", nil, nil)
	descDatabaseBytes = prometheus.NewDesc("buzz_lite_database_bytes",
		"Size of the database file.", nil, nil)
	descWALBytes = prometheus.NewDesc("buzz_lite_wal_bytes",
		"Size of the database's write-ahead log.", nil, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWriterQueue, descBatchSize, descPages, descPageCacheBytes, descDatabaseBytes, descWALBytes} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.store.Stats()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descDatabaseBytes, err)
		return
	}
	buckets := make(map[float64]uint64, len(st.BatchSizes))
	var batches uint64
	for i, n := range st.BatchSizes {
		batches += n
		buckets[float64(buzz.BatchSizeBounds[i])] = batches
	}
	ch <- prometheus.MustNewConstMetric(descWriterQueue, prometheus.GaugeValue, float64(st.WriterQueue))
	ch <- prometheus.MustNewConstHistogram(descBatchSize, batches, float64(st.BatchJobs), buckets)
	ch <- prometheus.MustNewConstMetric(descPages, prometheus.CounterValue, float64(st.PagesFromCache), "cache")
	ch <- prometheus.MustNewConstMetric(descPages, prometheus.CounterValue, float64(st.PagesFromDatabase), "database")
	ch <- prometheus.MustNewConstMetric(descPageCacheBytes, prometheus.GaugeValue, float64(st.PageCacheBytes))
	ch <- prometheus.MustNewConstMetric(descDatabaseBytes, prometheus.GaugeValue, float64(st.DatabaseBytes))
	ch <- prometheus.MustNewConstMetric(descWALBytes, prometheus.GaugeValue, float64(st.WALBytes))
}

// metricsLog carries promhttp's errors (a collector that failed) into the
// relay's log.
type metricsLog struct{ log *slog.Logger }

func (l metricsLog) Println(v ...any) {
	l.log.Error("serving /metrics", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}

// readyTimeout bounds the write round trip of `GET /readyz` (RL-30).
const readyTimeout = 2 * time.Second

// serveHealth is `GET /healthz`: the process serves.
func serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// readiness runs the write round trips of `GET /readyz` one at a time:
// requests that arrive while one is running share its answer, so that
// anyone who can reach /readyz cannot queue writer jobs at will (RL-27a),
// and the log says when readiness changes, not on every request.
type readiness struct {
	mu       sync.Mutex
	flight   *readyFlight
	notReady bool
}

type readyFlight struct {
	done chan struct{}
	err  error
}

// check joins the round trip running now, or starts one.
func (rd *readiness) check(r *Relay) error {
	rd.mu.Lock()
	f := rd.flight
	if f == nil {
		f = &readyFlight{done: make(chan struct{})}
		rd.flight = f
		go rd.fly(r, f)
	}
	rd.mu.Unlock()
	<-f.done
	return f.err
}

func (rd *readiness) fly(r *Relay, f *readyFlight) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	f.err = r.store.Ping(ctx)
	rd.mu.Lock()
	rd.flight = nil
	changed := (f.err != nil) != rd.notReady
	rd.notReady = f.err != nil
	rd.mu.Unlock()
	switch {
	case changed && f.err != nil:
		r.log.Warn("not ready: the write round trip failed", "err", f.err)
	case changed:
		r.log.Info("ready again: the write round trip succeeds")
	}
	close(f.done)
}

// serveReady is `GET /readyz` (RL-30): 200 while the store is open and a
// write round trip through its writer succeeds within readyTimeout; 503
// when it does not, and once shutdown has begun.
func (r *Relay) serveReady(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	r.writesMu.RLock()
	closing := r.closing
	r.writesMu.RUnlock()
	if closing {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("shutting down\n"))
		return
	}
	if err := r.ready.check(r); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("not ready: the database does not take writes\n"))
		return
	}
	w.Write([]byte("ready\n"))
}
