package relay

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

func withMetrics(c *Config) { c.Metrics = true }

// scrape reads the relay's /metrics and parses it with the client
// library's text parser.
func scrape(t *testing.T, s *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.httpURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricValue is the value of the metric of family name with the label
// pairs given (name, value, ...): a counter's or gauge's value, a
// histogram's sample count; 0 when there is no such metric.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// RL-30: /metrics is the Prometheus text format of the client library:
// the counters of accepted and refused events move as events are
// accepted and refused, by the prefix of the reason (khatru's own
// signature check included, khatru patch 19), a rate-limit refusal moves
// its limit's counter, and the gauges count open connections and
// subscriptions; the store's numbers are there.
func TestMetrics(t *testing.T) {
	const burst = 4
	s := startServer(t, withMetrics, withRates(Rate{PerSecond: never, Burst: burst}, plenty, plenty))
	fams := scrape(t, s)
	if n := metricValue(fams, "buzz_lite_connections"); n != 0 {
		t.Fatalf("connections before any: %v", n)
	}
	for _, name := range []string{"go_goroutines", "buzz_lite_writer_queue", "buzz_lite_page_cache_bytes", "buzz_lite_database_bytes", "buzz_lite_wal_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}

	c := s.raw(t)
	a := testutil.NewSigner(t)
	ev := a.Event(t, 1, now(), "counted")
	mustPublish(t, c, ev)
	mustPublish(t, c, ev) // a duplicate is answered OK true (NIP-01)
	future := publish(t, c, a.Event(t, 1, now()+86400, "from tomorrow"))
	if future == nil || reasonPrefix(future.Error()) != "invalid" {
		t.Fatalf("an event from tomorrow: %v, want invalid:", future)
	}
	forged := a.Event(t, 1, now(), "forged")
	forged.Content = "changed after signing"
	forged.ID = forged.GetID()
	mustReject(t, c, forged, "invalid: signature is invalid")
	if _, closed := c.req("open", `{"kinds":[1],"limit":1}`); closed != "" {
		t.Fatal(closed)
	}
	fams = scrape(t, s)
	for _, want := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"buzz_lite_events_accepted_total", nil, 2},
		{"buzz_lite_events_rejected_total", []string{"reason", "invalid"}, 2},
		{"buzz_lite_rate_limited_total", []string{"limit", limitIPEvents}, 0},
		{"buzz_lite_connections", nil, 1},
		{"buzz_lite_subscriptions", nil, 1},
		{"buzz_lite_ingest_seconds", nil, 2},
	} {
		if got := metricValue(fams, want.name, want.labels...); got != want.value {
			t.Errorf("%s%v = %v, want %v", want.name, want.labels, got, want.value)
		}
	}
	if metricValue(fams, "buzz_lite_writer_batch_size") < 1 || metricValue(fams, "buzz_lite_database_bytes") <= 0 {
		t.Errorf("the store's numbers did not move: batches %v, database bytes %v",
			metricValue(fams, "buzz_lite_writer_batch_size"), metricValue(fams, "buzz_lite_database_bytes"))
	}

	// The burst is spent (4 events so far); the next is refused for the
	// client IP's rate.
	mustReject(t, c, a.Event(t, 1, now(), "one too many"), tooManyEvents)
	c.send("CLOSE", "open")
	c.count("after-close", `{"kinds":[1]}`) // the CLOSE is handled before it
	second := s.raw(t)
	if _, closed := second.req("x", `{"kinds":[1],"limit":1}`); closed != "" {
		t.Fatal(closed)
	}
	fams = scrape(t, s)
	if got := metricValue(fams, "buzz_lite_rate_limited_total", "limit", limitIPEvents); got != 1 {
		t.Errorf("rate-limit refusals of the IP's events: %v, want 1", got)
	}
	if got := metricValue(fams, "buzz_lite_events_rejected_total", "reason", "rate-limited"); got != 1 {
		t.Errorf("events refused rate-limited: %v, want 1", got)
	}
	if got := metricValue(fams, "buzz_lite_connections"); got != 2 {
		t.Errorf("connections: %v, want 2", got)
	}
	if got := metricValue(fams, "buzz_lite_subscriptions"); got != 1 {
		t.Errorf("subscriptions after a CLOSE and a REQ: %v, want 1", got)
	}
	for _, request := range []string{"req", "count"} {
		if metricValue(fams, "buzz_lite_query_seconds", "request", request) < 1 {
			t.Errorf("no %s in the query latency histogram", request)
		}
	}
}

// RL-30: with metrics off, /metrics is 404; /healthz answers 200 either
// way.
func TestMetricsOff(t *testing.T) {
	s := startServer(t)
	for path, want := range map[string]int{"/metrics": http.StatusNotFound, "/healthz": http.StatusOK} {
		resp, err := http.Get(s.httpURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
}

// getStatus is the status of GET path on h.
func getStatus(h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// RL-30: /readyz is 200 while a write round trip through the writer
// succeeds, 503 while the writer is stuck (another connection holds the
// database's write lock) and 200 again once it is released.
func TestReadyWhenTheWriterIsStuck(t *testing.T) {
	s := startServer(t)
	ready := func() int {
		resp, err := http.Get(s.httpURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != http.StatusOK {
		t.Fatalf("/readyz of a serving relay: %d", got)
	}
	db, err := sql.Open("sqlite", "file:"+s.sqlitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while the writer waits for the write lock: %d, want 503", got)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got != http.StatusOK {
		t.Errorf("/readyz once the lock is released: %d, want 200", got)
	}
}

// heldStore holds every Admit until release is closed.
type heldStore struct {
	buzz.Store
	held    atomic.Int64
	release chan struct{}
}

func (s *heldStore) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	s.held.Add(1)
	<-s.release
	return s.Store.Admit(ctx, ev)
}

// RL-30: /readyz answers 503 once the shutdown drain begins, while a
// write is still in flight. The listener is closed by then, so the
// relay's handler is asked directly.
func TestNotReadyWhileDraining(t *testing.T) {
	held := &heldStore{release: make(chan struct{})}
	s := startHooked(t, serverHooks{wrap: func(st buzz.Store) buzz.Store { held.Store = st; return held }})
	h := s.relay.Handler()
	if got := getStatus(h, "/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d", got)
	}
	c := s.raw(t)
	c.send("EVENT", testutil.NewSigner(t).Event(t, 1, now(), "in flight"))
	deadline := time.Now().Add(waitTimeout)
	for held.held.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the event never reached the store")
		}
		time.Sleep(time.Millisecond)
	}
	s.cancel()
	for getStatus(h, "/readyz") != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz never answered 503 during the drain")
		}
		time.Sleep(time.Millisecond)
	}
	if got := getStatus(h, "/healthz"); got != http.StatusOK {
		t.Errorf("/healthz during the drain: %d", got)
	}
	close(held.release)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}

// RL-30, RL-26: the JSON log is one object a line; it holds one info line
// for each connection opened and closed, with its client IP and, closed,
// its duration, and one debug line for each refusal (an event, a REQ, a
// `/query`) with its reason.
func TestConnectionAndRefusalLog(t *testing.T) {
	var sink syncBuffer
	s := startServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := s.rawFrom(t, "127.0.0.2")
	forged := testutil.NewSigner(t).Event(t, 1, now(), "forged")
	forged.Content = "changed"
	forged.ID = forged.GetID()
	mustReject(t, c, forged, "invalid: signature is invalid")
	if _, closed := c.req("s", `{"search":"x"}`); closed == "" {
		t.Fatal("a search REQ was not refused")
	}
	resp, err := http.Post(s.httpURL+"/query", "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.conn.Close()
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(sink.String(), "connection closed") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	type record struct {
		Level    string  `json:"level"`
		Msg      string  `json:"msg"`
		IP       string  `json:"ip"`
		Duration float64 `json:"duration"`
		Reason   string  `json:"reason"`
	}
	seen := map[string]record{}
	for _, line := range strings.Split(strings.TrimSpace(sink.String()), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		seen[r.Msg] = r
	}
	for _, want := range []struct{ msg, level, ip string }{
		{"connection opened", "INFO", "127.0.0.2"},
		{"connection closed", "INFO", "127.0.0.2"},
		{"event refused", "DEBUG", "127.0.0.2"},
		{"request refused", "DEBUG", "127.0.0.2"},
		{"query refused", "DEBUG", "127.0.0.1"},
	} {
		r, ok := seen[want.msg]
		switch {
		case !ok:
			t.Errorf("no %q line in the log:\n%s", want.msg, sink.String())
		case r.Level != want.level || r.IP != want.ip:
			t.Errorf("%q: level %s, ip %q; want %s, %q", want.msg, r.Level, r.IP, want.level, want.ip)
		}
	}
	if r := seen["connection closed"]; r.Duration <= 0 {
		t.Errorf("connection closed without a duration: %+v", r)
	}
	for _, msg := range []string{"event refused", "request refused", "query refused"} {
		if seen[msg].Reason == "" {
			t.Errorf("%q without a reason", msg)
		}
	}
}

// pingGate holds every Ping until gate is closed, counting them.
type pingGate struct {
	buzz.Store
	gate  chan struct{}
	pings atomic.Int64
}

func (p *pingGate) Ping(ctx context.Context) error {
	p.pings.Add(1)
	<-p.gate
	return p.Store.Ping(ctx)
}

// RL-27a, RL-30: /readyz requests that arrive while a write round trip
// runs share its answer, so a flood of them queues one writer job, not
// one each.
func TestReadyRoundTripsShared(t *testing.T) {
	gated := &pingGate{gate: make(chan struct{})}
	s := startHooked(t, serverHooks{wrap: func(st buzz.Store) buzz.Store { gated.Store = st; return gated }})
	const n = 20
	codes := make(chan int, n)
	for range n {
		go func() {
			resp, err := http.Get(s.httpURL + "/readyz")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	deadline := time.Now().Add(waitTimeout)
	for gated.pings.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the other requests arrive and wait
	close(gated.gate)
	for range n {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("/readyz: %d", code)
		}
	}
	if got := gated.pings.Load(); got > 2 {
		t.Errorf("%d write round trips for %d concurrent /readyz, want the running one shared", got, n)
	}
}

// findMetric is the metric of family name with the label pairs given
// (name, value, ...), nil when there is none.
func findMetric(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
next:
	for _, m := range fams[name].GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
				return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}) {
				continue next
			}
		}
		return m
	}
	return nil
}

// RL-30, issue 29 item 4: before any event, every series whose labels are
// known is exported at 0: refused events by reason, refused requests by
// request and reason, rate-limit refusals by limit, the latency
// histograms, the window pages by source. A series that appears with its
// first event breaks an alert on its rate.
func TestMetricsExportedAtZero(t *testing.T) {
	s := startServer(t, withMetrics)
	fams := scrape(t, s)
	type series struct {
		name   string
		labels []string
	}
	want := []series{{"buzz_lite_events_accepted_total", nil}, {"buzz_lite_ingest_seconds", nil},
		{"buzz_lite_window_pages_total", []string{"source", "cache"}}, {"buzz_lite_window_pages_total", []string{"source", "database"}}}
	for _, reason := range append(slices.Clone(reasonPrefixes), "other") {
		want = append(want, series{"buzz_lite_events_rejected_total", []string{"reason", reason}})
		for _, request := range []string{"req", "count", "neg-open", "neg-msg", "neg-close", "query"} {
			want = append(want, series{"buzz_lite_requests_refused_total", []string{"request", request, "reason", reason}})
		}
	}
	for _, limit := range []string{limitConnections, limitIPEvents, limitPubkeyEvents, limitChannels, limitRequests,
		limitSubscriptions, limitQueries, limitBusy, limitSyncSessions, limitSyncItems, limitSyncMemory, limitSyncRounds} {
		want = append(want, series{"buzz_lite_rate_limited_total", []string{"limit", limit}})
	}
	for _, request := range []string{"req", "count", "query"} {
		want = append(want, series{"buzz_lite_query_seconds", []string{"request", request}})
	}
	for _, w := range want {
		m := findMetric(fams, w.name, w.labels...)
		if m == nil {
			t.Errorf("%s%v is not exported before its first event", w.name, w.labels)
			continue
		}
		if v := metricValue(fams, w.name, w.labels...); v != 0 {
			t.Errorf("%s%v = %v before any event, want 0", w.name, w.labels, v)
		}
	}
}

// RL-30, RL-28, issue 29 item 4: /metrics answers only the clients in
// metrics_allow, loopback by default, judged on the client IP of RL-28:
// behind a trusted proxy the forwarded address, from any other peer the
// peer, whatever its headers say. Everyone else gets the 404 of a path
// that does not exist.
func TestMetricsAllow(t *testing.T) {
	nets := func(cidrs ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, c := range cidrs {
			out = append(out, netip.MustParsePrefix(c))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		off      bool
		allow    []netip.Prefix
		trusted  []netip.Prefix
		from     string
		xff      string
		wantOpen bool
	}{
		{name: "default, loopback", from: "127.0.0.1", wantOpen: true},
		{name: "default, another loopback address", from: "127.0.0.2", wantOpen: true},
		{name: "a list without loopback", allow: nets("10.0.0.0/8"), from: "127.0.0.1"},
		{name: "a list naming the client", allow: nets("127.0.0.3/32"), from: "127.0.0.3", wantOpen: true},
		{name: "a list naming another client", allow: nets("127.0.0.3/32"), from: "127.0.0.4"},
		{name: "behind a trusted proxy, a forwarded client", trusted: nets("127.0.0.1/32"), from: "127.0.0.1", xff: "203.0.113.7"},
		{name: "behind a trusted proxy, an allowed forwarded client", trusted: nets("127.0.0.1/32"),
			allow: nets("203.0.113.0/24"), from: "127.0.0.1", xff: "203.0.113.7", wantOpen: true},
		{name: "behind a trusted proxy, a forwarded loopback scraper", trusted: nets("127.0.0.1/32"), from: "127.0.0.1", xff: "127.0.0.9", wantOpen: true},
		{name: "forwarded by an untrusted peer", allow: nets("203.0.113.0/24"), from: "127.0.0.2", xff: "203.0.113.7"},
		{name: "metrics off", off: true, from: "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, func(c *Config) {
				c.Metrics = !tc.off
				c.MetricsAllow = tc.allow
				c.TrustedProxies = tc.trusted
			})
			get := func(path string) (int, string) {
				t.Helper()
				req, err := http.NewRequest(http.MethodGet, s.httpURL+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.xff != "" {
					req.Header.Set("X-Forwarded-For", tc.xff)
				}
				resp, err := httpFrom(tc.from).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, string(b)
			}
			status, body := get("/metrics")
			if tc.wantOpen {
				if status != http.StatusOK || !strings.Contains(body, "buzz_lite_events_accepted_total") {
					t.Fatalf("/metrics: %d %.80q, want the metrics", status, body)
				}
				return
			}
			nfStatus, nfBody := get("/no-such-path")
			if status != http.StatusNotFound || body != nfBody || nfStatus != http.StatusNotFound {
				t.Fatalf("/metrics: %d %.80q, want the 404 of a path that does not exist: %d %q", status, body, nfStatus, nfBody)
			}
		})
	}
}
