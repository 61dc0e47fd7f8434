package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/chunks"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/web"
)

// This file tests the HTTP side of RL-27 and RL-27a: header and body read
// time, connections per client IP, and what `/query` may cost: its rate
// per IP, the read slots, the memory budget all answers share, and the
// 32 MiB bound of one answer, enforced while it is read.

// loopbackFrom is a dialer whose connections come from the loopback
// address ip (127.0.0.2, ...), a client IP of its own.
func loopbackFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitTimeout}
}

// httpFrom is an HTTP client whose requests come from ip.
func httpFrom(ip string) *http.Client {
	return &http.Client{Timeout: 4 * waitTimeout, Transport: &http.Transport{DialContext: loopbackFrom(ip).DialContext}}
}

// postFrom posts body to s's /query from ip.
func postFrom(t *testing.T, s *testServer, ip, body string) qyResult {
	t.Helper()
	resp, err := httpFrom(ip).Post(qyURL(s), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST /query from %s: %v", ip, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return qyResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// readUntilClosed reads conn until the relay closes it and returns what
// it read; it fails the test if conn is still open after waitTimeout.
func readUntilClosed(t *testing.T, conn net.Conn, what string) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(waitTimeout))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection is still open after %v", what, waitTimeout)
	}
	return string(b)
}

// RL-27a (finding 8): a client that never finishes its headers is cut
// off after the header timeout.
func TestSlowHeadersCutOff(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.HeaderTimeout = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /query HTTP/1.1\r\nHost: "+s.addr+"\r\nContent-Type: application/json\r\n"); err != nil {
		t.Fatal(err)
	}
	readUntilClosed(t, conn, "headers never finished")
}

// trickle writes one byte to conn every 50 ms until it fails or stop is
// closed: a body that never ends, sent as slowly as finding 8's.
func trickle(conn net.Conn, stop <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// RL-27a (finding 8): a trickled body is cut off after the body timeout:
// /query answers 408 and closes the connection, and a body nobody reads
// (another path) is not read forever either.
func TestTrickledBodyCutOff(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.BodyTimeout = 300 * time.Millisecond })
	for _, path := range []string{"/query", "/"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[", path, s.addr); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go trickle(conn, stop)
			got := readUntilClosed(t, conn, "trickled body to "+path)
			if path != "/query" {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("no HTTP answer to a trickled body: %q", got)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			(qyResult{status: resp.StatusCode, header: resp.Header, body: b}).wantError(t, http.StatusRequestTimeout, "request body not received in time")
		})
	}
}

// dialed is what became of a WebSocket dial: the session when the relay
// kept it (its AUTH challenge came), else the HTTP status of a refused
// upgrade or the close code of a connection closed at once.
type dialed struct {
	c                 *session
	status, closeCode int
}

// dialFrom opens a WebSocket to s from ip.
func dialFrom(t *testing.T, s *testServer, ip string) (dialed, error) {
	d := websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: loopbackFrom(ip).DialContext}
	conn, resp, err := d.Dial(s.wsURL, nil)
	if err != nil {
		if resp == nil {
			return dialed{}, fmt.Errorf("dial from %s: %w", ip, err)
		}
		return dialed{status: resp.StatusCode}, nil
	}
	t.Cleanup(func() { conn.Close() })
	rc := &rawClient{t: t, conn: conn}
	msg, err := rc.read()
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return dialed{closeCode: ce.Code}, nil
	case err != nil:
		return dialed{}, fmt.Errorf("dial from %s: reading the AUTH challenge: %w", ip, err)
	case label(msg) != "AUTH":
		return dialed{}, fmt.Errorf("dial from %s: first message %s", ip, joinRaw(msg))
	}
	return dialed{c: &session{rawClient: rc, challenge: str(msg, 1)}}, nil
}

// mustDialFrom is dialFrom that fails the test on an error.
func mustDialFrom(t *testing.T, s *testServer, ip string) dialed {
	t.Helper()
	d, err := dialFrom(t, s, ip)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// RL-27 (finding 5): past 32 connections from one client IP the upgrade
// is refused with 429; another IP still connects, closing one connection
// frees a place, and exempt networks are not counted.
func TestConnectionsPerIP(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.Exempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")} })
	limit := DefaultLimits.MaxConnectionsPerIP
	var open []*session
	for i := range limit {
		d := mustDialFrom(t, s, "127.0.0.1")
		if d.c == nil {
			t.Fatalf("connection %d of %d refused: %+v", i+1, limit, d)
		}
		open = append(open, d.c)
	}
	refused := mustDialFrom(t, s, "127.0.0.1")
	if refused.c != nil || refused.status != http.StatusTooManyRequests {
		t.Fatalf("connection %d from one IP: %+v, want status 429", limit+1, refused)
	}
	if d := mustDialFrom(t, s, "127.0.0.2"); d.c == nil {
		t.Fatalf("another IP refused: %+v", d)
	}
	for i := range limit + 5 {
		if d := mustDialFrom(t, s, "127.0.0.4"); d.c == nil {
			t.Fatalf("exempt connection %d refused: %+v", i+1, d)
		}
	}

	// The relay sees the close when it next reads: until then a new
	// connection may still be refused.
	open[0].conn.Close()
	deadline := time.Now().Add(waitTimeout)
	for {
		d := mustDialFrom(t, s, "127.0.0.1")
		if d.c != nil {
			break
		}
		if d.status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after one connection closed: %+v", d)
		}
	}
}

// RL-27, RL-27a (finding 8): a `/query` request in flight is a connection
// of its client IP: past the cap, counted together with its WebSockets, a
// request is refused with 429 before its body is read, so that one IP
// cannot hold a megabyte of body in each of hundreds of trickled requests.
// Each request gives its place back when it ends, however it ends.
func TestQueryRequestsCountAsConnections(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.MaxConnectionsPerIP = 3 })
	const ip = "127.0.0.5"
	if d := mustDialFrom(t, s, ip); d.c == nil {
		t.Fatalf("WebSocket refused: %+v", d)
	}
	var trickled []net.Conn
	for range 2 {
		conn, err := loopbackFrom(ip).Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "POST /query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[", s.addr); err != nil {
			t.Fatal(err)
		}
		trickled = append(trickled, conn)
	}
	// Wait until the relay has read both trickled requests' headers: a
	// request sent before then would be in flight itself when the second
	// arrives, and the trickled one would be the request refused.
	deadline := time.Now().Add(waitTimeout)
	for n := perIPCount(s.relay, ip); n != 3; n = perIPCount(s.relay, ip) {
		if time.Now().After(deadline) {
			t.Fatalf("%d counted for %s with a WebSocket and two requests in flight, want 3", n, ip)
		}
		time.Sleep(10 * time.Millisecond)
	}
	body := `[{"kinds":[1]}]`
	postFrom(t, s, ip, body).wantError(t, http.StatusTooManyRequests, errTooManyConnections)
	if d := mustDialFrom(t, s, ip); d.status != http.StatusTooManyRequests {
		t.Fatalf("a WebSocket beside them: %+v, want status 429", d)
	}
	postFrom(t, s, "127.0.0.6", body).events(t)

	for _, conn := range trickled {
		conn.Close()
	}
	deadline = time.Now().Add(waitTimeout)
	for postFrom(t, s, ip, body).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the requests that ended did not give their places back")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A request gives its place back just after its answer is written.
	for n := perIPCount(s.relay, ip); n != 1; n = perIPCount(s.relay, ip) {
		if time.Now().After(deadline) {
			t.Fatalf("%d counted for %s once its requests ended, want 1 (its WebSocket)", n, ip)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// perIPCount is what the relay counts open for ip.
func perIPCount(r *Relay, ip string) int {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	return r.perIP[r.cfg.Limits.client(netip.MustParseAddr(ip))]
}

// RL-27: upgrades that arrive together are counted as they open: however
// many race past the first check, no more than the cap stay open, and the
// others are refused, by 429 or by close code 1013 (try again later).
func TestConnectionsPerIPConcurrent(t *testing.T) {
	s := startServer(t)
	limit := DefaultLimits.MaxConnectionsPerIP
	var mu sync.Mutex
	kept, refused := 0, 0
	var wg sync.WaitGroup
	for range limit + 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := dialFrom(t, s, "127.0.0.3")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case d.c != nil:
				kept++
			case d.status == http.StatusTooManyRequests || d.closeCode == websocket.CloseTryAgainLater:
				refused++
			default:
				t.Errorf("neither kept nor refused: %+v", d)
			}
		}()
	}
	wg.Wait()
	if kept != limit || refused != 16 {
		t.Fatalf("%d kept, %d refused; want %d and 16", kept, refused, limit)
	}
}

// RL-27 (finding 5): `/query` has a rate per client IP; past its burst a
// request is refused with 429, rate-limited: and Retry-After, while
// another IP is served and an exempt network is not limited.
func TestQueryRatePerIP(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Limits.Rates = &Rates{QueriesPerIP: Rate{PerSecond: 0.01, Burst: 3}}
		c.Limits.Exempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.3/32")}
	})
	body := `[{"kinds":[1]}]`
	for range 3 {
		postFrom(t, s, "127.0.0.1", body).events(t)
	}
	r := postFrom(t, s, "127.0.0.1", body)
	r.wantError(t, http.StatusTooManyRequests, errQueryRate)
	if got := r.header.Get("Retry-After"); got != "100" {
		t.Errorf("Retry-After %q, want 100 (one token at 0.01/s)", got)
	}
	postFrom(t, s, "127.0.0.2", body).events(t)
	for range 10 {
		postFrom(t, s, "127.0.0.3", body).events(t)
	}
}

// RL-27a: `/query` takes one of the read slots it shares with REQ and
// COUNT; when none comes free within the wait, it is refused with 429.
func TestQuerySlots(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.MaxConcurrentQueries = 1 })
	body := `[{"kinds":[1]}]`
	if !s.relay.reads.acquire(context.Background(), netip.Prefix{}) {
		t.Fatal("no free slot")
	}
	r := qyPost(t, s, body, "")
	r.wantError(t, http.StatusTooManyRequests, errBusy)
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	s.relay.reads.release(netip.Prefix{})
	qyPost(t, s, body, "").events(t)
}

// panickingStore is the real store whose generic reads of kind gatedKind
// panic, as a bug in a read would.
type panickingStore struct{ buzz.Store }

func (s panickingStore) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	if len(f.Kinds) == 1 && f.Kinds[0] == gatedKind {
		panic("a read that panics")
	}
	return s.Store.QueryBounded(ctx, f, v, beforeID, maxBytes)
}

// RL-27a: a `/query` whose read panics (net/http recovers it) gives its
// read slot and its memory back, as every other ending does: the relay's
// one slot stays usable.
func TestQueryPanicGivesSlotBack(t *testing.T) {
	s := startHooked(t, serverHooks{
		wrap: func(st buzz.Store) buzz.Store { return panickingStore{st} },
	}, func(c *Config) { c.Limits.MaxConcurrentQueries = 1 })
	req, err := http.NewRequest(http.MethodPost, qyURL(s), strings.NewReader(fmt.Sprintf(`[{"kinds":[%d]}]`, gatedKind)))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking /query answered %d", resp.StatusCode)
	}
	qyPost(t, s, `[{"kinds":[1]}]`, "").events(t)
	if free := budgetFree(s.relay); free != DefaultLimits.QueryMemoryBytes {
		t.Fatalf("after a panic, %d bytes of the budget free, want all", free)
	}
}

// budgetFree is what the relay's `/query` memory budget has not lent.
func budgetFree(r *Relay) int64 {
	b := r.queryMemory
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free
}

// RL-27a: the answers of running requests share a memory budget: an
// answer that does not fit in what is free is refused with 429, and every
// request gives back what it reserved, refused or not.
func TestQueryMemoryBudget(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.QueryMemoryBytes = 2 << 20 })
	a := testutil.NewSigner(t)
	big := strings.Repeat("x", 100<<10)
	t0 := time.Now().Unix()
	for i := range 30 {
		qyAdmit(t, s, a.Event(t, 1, t0-int64(i), big))
	}
	few := `[{"kinds":[1],"limit":5}]`
	all := `[{"kinds":[1]}]` // 3 MiB
	if got := len(qyPost(t, s, few, "").events(t)); got != 5 {
		t.Fatalf("%d events, want 5", got)
	}
	qyPost(t, s, all, "").wantError(t, http.StatusTooManyRequests, errBusy)
	if free := budgetFree(s.relay); free != 2<<20 {
		t.Fatalf("after the requests, %d bytes of the budget free, want all %d", free, 2<<20)
	}
	// Another request holding most of the budget leaves too little for
	// even a small answer.
	if !s.relay.queryMemory.take(context.Background(), netip.Prefix{}, (2<<20)-(512<<10)) {
		t.Fatal("budget not free")
	}
	qyPost(t, s, few, "").wantError(t, http.StatusTooManyRequests, errBusy)
	s.relay.queryMemory.give(netip.Prefix{}, (2<<20)-(512<<10))
	qyPost(t, s, few, "").events(t)
	// A failure gives back too.
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	qyPost(t, s, few, "").wantError(t, http.StatusInternalServerError, errInternal)
	if free := budgetFree(s.relay); free != 2<<20 {
		t.Fatalf("after a failure, %d bytes of the budget free, want all", free)
	}
}

// spyStore is the real store, with a record of the largest answer it
// handed the relay for one read.
type spyStore struct {
	buzz.Store
	mu      sync.Mutex
	largest int
}

func (s *spyStore) saw(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.largest = max(s.largest, n)
}

func (s *spyStore) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	page, err := s.Store.Window(ctx, q)
	if page != nil {
		s.saw(web.RawSize(page.Rows, page.Aux))
	}
	return page, err
}

func (s *spyStore) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	page, err := s.Store.Thread(ctx, q)
	if page != nil {
		s.saw(web.RawSize(page.Replies, page.Aux))
	}
	return page, err
}

func (s *spyStore) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	evs, truncated, err := s.Store.QueryBounded(ctx, f, v, beforeID, maxBytes)
	s.saw(web.RawSize(evs))
	return evs, truncated, err
}

// reactedRoot stores a root message in a new channel, and n reactions to
// it whose content is size bytes: an aux closure of any size (RL-8). It
// returns the channel, the root and the reactions.
func reactedRoot(t *testing.T, s *testServer, n, size int) (string, *nostr.Event, []*nostr.Event) {
	t.Helper()
	a := testutil.NewSigner(t)
	h := newChannelID(t)
	t0 := time.Now().Unix() - 1000
	root := qyMsg(t, a, h, t0, "root", nil)
	qyAdmit(t, s, root)
	big := strings.Repeat("x", size)
	reactions := make([]*nostr.Event, n)
	for i := range reactions {
		reactions[i] = a.Event(t, buzz.KindReaction, t0+int64(i), big, nostr.Tag{"e", root.ID}, nostr.Tag{"p", root.PubKey})
		qyAdmit(t, s, reactions[i])
	}
	return h, root, reactions
}

// RL-27a (finding 4): a window or thread page whose answer would pass 32
// MiB (here 300 reactions of 120 KiB on one row, its aux closure) is
// refused with 400 without the relay reading it whole: no read of the
// store hands over more than 32 MiB, and the request never reserves more
// than that (with a 33 MiB budget it is refused as too large, not as
// busy). The budget is whole again afterwards.
func TestQueryBoundedWhileReading(t *testing.T) {
	spy := &spyStore{}
	const budget = 33 << 20
	s := startHooked(t, serverHooks{wrap: func(st buzz.Store) buzz.Store { spy.Store = st; return spy }},
		func(c *Config) { c.Limits.QueryMemoryBytes = budget })
	h, root, _ := reactedRoot(t, s, 300, 120<<10)
	for name, body := range map[string]string{
		"window":  `[{"top_level":true,"#h":["` + h + `"],"include_aux":true}]`,
		"thread":  `[{"#e":["` + root.ID + `"],"depth_limit":1,"include_aux":true}]`,
		"generic": `[{"kinds":[7]}]`,
	} {
		t.Run(name, func(t *testing.T) {
			spy.mu.Lock()
			spy.largest = 0
			spy.mu.Unlock()
			qyPost(t, s, body, "").wantError(t, http.StatusBadRequest, errResponseTooLarge.Error())
			spy.mu.Lock()
			largest := spy.largest
			spy.mu.Unlock()
			if largest > maxResponseBytes {
				t.Errorf("the store handed over %d bytes in one read, more than %d", largest, maxResponseBytes)
			}
			if name == "generic" && largest > firstGrant {
				t.Errorf("a generic filter's read handed over %d bytes, more than the %d of a read", largest, firstGrant)
			}
			if free := budgetFree(s.relay); free != budget {
				t.Errorf("%d bytes of the budget free afterwards, want all %d", free, budget)
			}
		})
	}
}

// RL-19, RL-20, RL-27a: answers larger than a first read are served
// whole, in order and byte for byte as signed, across the answer's chunks:
// a generic filter read in pieces, each after the last, and a window page
// read again with a larger bound.
func TestQueryLargeAnswersWhole(t *testing.T) {
	s := startServer(t)
	h, _, reactions := reactedRoot(t, s, 15, 100<<10)
	a := testutil.NewSigner(t)
	t0 := time.Now().Unix()
	big := strings.Repeat("x", 100<<10)
	var notes []*nostr.Event
	for i := range 40 {
		// Same-second pairs: the pieces continue after (created_at, id).
		note := a.Event(t, 1, t0-int64(i/2), big+fmt.Sprint(i))
		qyAdmit(t, s, note)
		notes = append(notes, note)
	}
	whole := qyPost(t, s, `[{"kinds":[1]}]`, "").events(t)
	qySameIDs(t, "generic, 4 MiB", whole, qySortDesc(notes))
	for _, ev := range whole {
		if ok, err := ev.CheckSignature(); !ok {
			t.Fatalf("event %s of the 4 MiB answer is not as signed: %v", ev.ID, err)
		}
	}
	qySameIDs(t, "generic, limit 25", qyPost(t, s, `[{"kinds":[1],"limit":25}]`, "").events(t), qySortDesc(notes)[:25])
	evs := qyPost(t, s, `[{"top_level":true,"#h":["`+h+`"],"include_aux":true}]`, "").events(t)
	for _, r := range reactions {
		if !qyHas(evs, r.ID) {
			t.Fatalf("the 1.5 MiB window page lacks reaction %s", r.ID)
		}
	}
}

// RL-16, RL-27a: an answer is the events written to it, across chunk
// boundaries (an event that straddles one, one larger than a chunk), as
// one JSON array whose length is said; the chunks it holds are reserved
// whole, and they and the reservation go back once it is released.
func TestResponseAcrossChunks(t *testing.T) {
	pool := chunks.NewPool(2, 4)
	for name, sizes := range map[string][]int{
		"none":              nil,
		"one":               {10},
		"straddling":        {chunks.Size - 5, 20, 7},
		"larger than one":   {3, 2*chunks.Size + 11, chunks.Size},
		"filling one whole": {chunks.Size - 2},
	} {
		t.Run(name, func(t *testing.T) {
			budget := newByteBudget(64<<20, 0)
			out := newResponse(budget, pool, netip.Prefix{})
			var want []string
			for i, n := range sizes {
				ev := bytes.Repeat([]byte{'a' + byte(i)}, n)
				out.encoded(ev)
				want = append(want, string(ev))
			}
			// RL-27a: the answer holds its chunks whole, and the budget
			// says so, so that small answers stalled in writing cannot
			// hold more than it.
			if err := out.settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			budget.mu.Lock()
			taken := budget.size - budget.free
			budget.mu.Unlock()
			if want := int64(len(out.chunks)) * chunks.Size; taken != want || len(out.chunks) != (out.size+chunks.Size-1)/chunks.Size {
				t.Fatalf("the budget has %d bytes taken for %d bytes in %d chunks, want %d", taken, out.size, len(out.chunks), want)
			}
			rec := httptest.NewRecorder()
			if err := out.writeTo(rec); err != nil {
				t.Fatal(err)
			}
			out.release()
			wantBody := "[" + strings.Join(want, ",") + "]\n"
			if got := rec.Body.String(); got != wantBody {
				t.Fatalf("answer of %d bytes differs from the %d written", len(got), len(wantBody))
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(wantBody)) {
				t.Fatalf("Content-Length %s, want %d", cl, len(wantBody))
			}
			if out.chunks != nil || out.size != 0 || budget.free != budget.size {
				t.Fatal("the released answer still holds chunks or budget")
			}
		})
	}
}

// unreadQuery posts body to s's /query from ip over a connection with the
// smallest receive buffer, reads the answer's status and headers only,
// and leaves the rest unread, as a client that stalls on a large answer
// does. It returns the status; the connection stays open until the test
// ends.
func unreadQuery(t *testing.T, s *testServer, ip, body string) int {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: waitTimeout, Control: smallRecvBuffer}
	conn, err := d.Dial("tcp", strings.TrimPrefix(s.httpURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, err := http.NewRequest(http.MethodPost, qyURL(s), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(4 * waitTimeout))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), req)
	if err != nil {
		t.Fatalf("the answer's headers: %v", err)
	}
	return resp.StatusCode
}

// Issue 29 item 5, RL-27a: the answers one client leaves unread hold at
// most its share of the answers' budget (query_memory_bytes_per_ip):
// past it its requests are refused busy, and another client is answered
// from what is left. (Twelve unread 6 MB answers of one address filled
// the 64 MiB budget, and every other client waited.)
func TestAnswerBudgetPerClient(t *testing.T) {
	s := startHooked(t, serverHooks{
		listen: func(ln net.Listener) net.Listener { return meteredListener{Listener: ln, m: &memoryMeter{}} },
	}, func(c *Config) {
		c.Limits.QueryMemoryBytes = 3 << 20
		c.Limits.QueryMemoryBytesPerIP = 2 << 20
	})
	a := testutil.NewSigner(t)
	big := strings.Repeat("x", 100<<10)
	t0 := time.Now().Unix()
	for i := range 4 {
		qyAdmit(t, s, a.Event(t, 1, t0-int64(i), big))
	}
	// 400 KB, held in two chunks until read; each read reserves a
	// megabyte first.
	body := `[{"kinds":[1],"limit":4}]`
	var statuses []int
	for len(statuses) < 10 {
		status := unreadQuery(t, s, "127.0.0.2", body)
		statuses = append(statuses, status)
		if status != http.StatusOK {
			break
		}
	}
	if last := statuses[len(statuses)-1]; last != http.StatusTooManyRequests {
		t.Fatalf("unread answers from one client: %v, want refused 429 in the end", statuses)
	}
	if held := heldBy(s.relay, "127.0.0.2"); held > 2<<20 {
		t.Errorf("one client's unread answers hold %d bytes, past its share", held)
	}
	if got := len(postFrom(t, s, "127.0.0.3", body).events(t)); got != 4 {
		t.Fatalf("another client got %d events, want 4", got)
	}
}

// heldBy is what the answers of ip hold of the relay's answers' budget.
func heldBy(r *Relay, ip string) int64 {
	b := r.queryMemory
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[r.cfg.Limits.client(netip.MustParseAddr(ip))]
}

// budgetWriter is an http.ResponseWriter that notes, at each write, what
// a budget has lent.
type budgetWriter struct {
	http.ResponseWriter
	b     *byteBudget
	taken []int64
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	w.taken = append(w.taken, w.b.size-w.b.free)
	w.b.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

// Issue 29 item 5, RL-27a: an answer gives its memory back as it is
// written: a client slow to read holds only what it has not read. (A web
// page's part of this is web's TestPageGivesBackWhatIsWritten.)
func TestAnswerGivesBackWhatIsWritten(t *testing.T) {
	client := netip.MustParsePrefix("192.0.2.1/32")
	t.Run("query answer", func(t *testing.T) {
		budget := newByteBudget(64<<20, 40<<20)
		out := newResponse(budget, chunks.NewPool(4, 8), client)
		defer out.release()
		out.encoded(bytes.Repeat([]byte{'a'}, 3*chunks.Size-100))
		if err := out.settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		w := &budgetWriter{ResponseWriter: httptest.NewRecorder(), b: budget}
		if err := out.writeTo(w); err != nil {
			t.Fatal(err)
		}
		want := []int64{3 * chunks.Size, 2 * chunks.Size, chunks.Size, 0} // the last write closes the array
		if !slices.Equal(w.taken, want) {
			t.Fatalf("lent at each write: %v, want %v", w.taken, want)
		}
	})
}
