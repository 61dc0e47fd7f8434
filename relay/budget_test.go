package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// memoryMeter counts, deterministically, what the relay holds of the
// answers to its clients: the bytes of the events the store handed it
// (their JSON, or buzz.EventSize, which is at least that, for decoded
// events) less the bytes it wrote to its sockets. What it wrote waits in the kernel, not in the relay.
type memoryMeter struct {
	read    atomic.Int64
	written atomic.Int64

	mu      sync.Mutex
	maxHeld int64
}

// sample notes what the relay holds now.
func (m *memoryMeter) sample() {
	held := m.read.Load() - m.written.Load()
	m.mu.Lock()
	m.maxHeld = max(m.maxHeld, held)
	m.mu.Unlock()
}

func (m *memoryMeter) peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxHeld
}

func (m *memoryMeter) readEvents(evs []*nostr.Event) {
	for _, ev := range evs {
		m.read.Add(int64(buzz.EventSize(ev)))
	}
	m.sample()
}

// meteredStore is the store as the relay sees it, counting what its
// queries hand over.
type meteredStore struct {
	buzz.Store
	m *memoryMeter
}

func (s meteredStore) Query(ctx context.Context, f nostr.Filter, v buzz.Viewer) ([]*nostr.Event, error) {
	evs, err := s.Store.Query(ctx, f, v)
	s.m.readEvents(evs)
	return evs, err
}

func (s meteredStore) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	evs, truncated, err := s.Store.QueryBounded(ctx, f, v, beforeID, maxBytes)
	for _, ev := range evs {
		s.m.read.Add(int64(len(ev.JSON)))
	}
	s.m.sample()
	return evs, truncated, err
}

// meteredListener counts the bytes written to the connections it accepts,
// each with a small send buffer, so that a client that stops reading backs
// up the relay's queue after a few kilobytes rather than megabytes of
// kernel buffers.
type meteredListener struct {
	net.Listener
	m *memoryMeter
}

func (l meteredListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetWriteBuffer(8 << 10); err != nil {
			return nil, err
		}
	}
	return meteredConn{Conn: c, m: l.m}, nil
}

type meteredConn struct {
	net.Conn
	m *memoryMeter
}

func (c meteredConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.written.Add(int64(n))
	return n, err
}

// startMetered starts a relay whose queue per connection is budget bytes,
// which gives up on a peer after a write stalled for writeWait, metered by
// the returned memoryMeter.
func startMetered(t *testing.T, budget int64, writeWait time.Duration) (*testServer, *memoryMeter) {
	t.Helper()
	m := &memoryMeter{}
	s := startHooked(t, serverHooks{
		wrap:   func(st buzz.Store) buzz.Store { return meteredStore{Store: st, m: m} },
		listen: func(ln net.Listener) net.Listener { return meteredListener{Listener: ln, m: m} },
		relay:  func(r *Relay) { r.kh.WriteWait = writeWait },
	}, func(c *Config) { c.Limits.ConnectionBufferBytes = budget })
	return s, m
}

// stalledClient connects with the smallest receive buffer and is never
// read from.
func (s *testServer) stalledClient(t *testing.T) *rawClient {
	t.Helper()
	nd := net.Dialer{Control: smallRecvBuffer}
	return s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: nd.DialContext})
}

// openConns is how many WebSocket connections the relay holds open.
func (s *testServer) openConns() int {
	s.relay.connsMu.Lock()
	defer s.relay.connsMu.Unlock()
	return len(s.relay.conns)
}

// RL-27a: a client that sends a REQ for many large stored events and
// never reads makes the relay hold no more than its connection's byte
// budget and one chunk of stored events, and is closed once it stays full.
// (Finding 4: one 500-byte REQ of 30 filters over 300 events of 100 KiB,
// never read, took 1.0 GB.)
func TestUnreadAnswersStayWithinBudget(t *testing.T) {
	const budget = 1 << 20
	s, m := startMetered(t, budget, time.Second)
	a := testutil.NewSigner(t)
	content := strings.Repeat("x", 100<<10)
	now := time.Now().Unix()
	for i := range 40 {
		if err := s.ingest(t.Context(), a.Event(t, 1, now-int64(i), content)); err != nil {
			t.Fatal(err)
		}
	}
	c := s.stalledClient(t)
	// The challenge comes once the relay knows the connection; nothing is
	// read after it.
	c.await("AUTH", func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	// Ten filters of four events each: a REQ sends an event once however
	// many of its filters match it (issue 29 item 8b), so each its own.
	var fs []string
	for j := range int64(10) {
		fs = append(fs, fmt.Sprintf(`{"kinds":[1],"since":%d,"until":%d}`, now-4*j-3, now-4*j))
	}
	c.sendText(`["REQ","huge",` + strings.Join(fs, ",") + `]`)

	// The relay gives up on the client once a write stalled for a second.
	deadline := time.Now().Add(waitTimeout + 2*time.Second)
	for s.openConns() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a client that never reads its answers is still connected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("read %d bytes of events from the store, wrote %d to the socket, held at most %d", m.read.Load(), m.written.Load(), m.peak())
	if peak, bound := m.peak(), int64(budget+chunkBytes); peak > bound {
		t.Fatalf("the relay held %d bytes of answers for a client that does not read, over its budget and one chunk (%d)", peak, bound)
	}
	if m.read.Load() == 0 {
		t.Fatal("nothing was read from the store: the test measured nothing")
	}
}

// RL-23, RL-27a: a subscriber that stops reading while large live events
// arrive is dropped once its queue would pass its byte budget, while
// another subscriber receives every event. (Finding 4: 20 stalled
// subscribers of 500 events of 100 KiB took 1.18 GB: the live queue was
// 512 messages, not a byte budget.)
func TestStalledSubscriberDroppedByBytes(t *testing.T) {
	s, _ := startMetered(t, 256<<10, 10*time.Second)
	stalled := s.stalledClient(t)
	if _, closed := stalled.req("stalled", `{"kinds":[1],"limit":0}`); closed != "" {
		t.Fatal(closed)
	}
	healthy := s.raw(t)
	if _, closed := healthy.req("healthy", `{"kinds":[1],"limit":0}`); closed != "" {
		t.Fatal(closed)
	}
	pub := s.raw(t)
	a := testutil.NewSigner(t)
	content := strings.Repeat("x", 100<<10)
	now := time.Now().Unix()
	const events = 30
	for i := range events {
		ev := a.Event(t, 1, now-int64(i), content)
		mustPublish(t, pub, ev)
		healthy.await("live event "+ev.ID, func(m []json.RawMessage) bool {
			return label(m) == "EVENT" && str(m, 1) == "healthy" && strings.Contains(string(m[2]), ev.ID)
		})
	}
	got := 0
	for {
		msg, err := stalled.read()
		if err != nil {
			if got == events {
				t.Fatalf("the stalled subscriber was kept: it received all %d events (%v)", events, err)
			}
			return // dropped, with the events its budget held
		}
		if label(msg) == "EVENT" {
			got++
		}
	}
}

// RL-27a, RL-13: a REQ's stored events, read in chunks, are exactly what
// one query answers: the same events in the same order (created_at
// descending, id ascending among equal dates) up to the same limit, also
// for an event larger than a chunk.
func TestChunkedAnswerEqualsOneQuery(t *testing.T) {
	s, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	now := time.Now().Unix()
	for i := range 36 {
		signer := a
		if i%3 == 0 {
			signer = b
		}
		// Four events per second: the chunks end among equal dates.
		at := now - int64(i/4)
		for _, ev := range []*nostr.Event{
			signer.Event(t, 1, at, strings.Repeat("c", 40<<10)+fmt.Sprint(i)),
			signer.Event(t, 7, at, "+", nostr.Tag{"e", randomID(t)}),
		} {
			if err := s.ingest(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	big := a.Event(t, 1, now-3, strings.Repeat("B", chunkBytes+1000))
	if err := s.ingest(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	until := nostr.Timestamp(now - 2)
	since := nostr.Timestamp(now - 6)
	for _, f := range []nostr.Filter{
		{Kinds: []int{1}},
		{Kinds: []int{1}, Limit: 13},
		{Kinds: []int{1, 7}, Limit: 50},
		{Authors: []string{a.PK}},
		{Authors: []string{b.PK}, Kinds: []int{1}, Limit: 5},
		{Kinds: []int{1}, Until: &until, Limit: 9},
		{Kinds: []int{1}, Since: &since},
		{IDs: []string{big.ID}},
	} {
		want := f
		want.Limit = min(max(f.Limit, 0), s.relay.cfg.Limits.MaxLimit)
		if want.Limit == 0 {
			want.Limit = s.relay.cfg.Limits.MaxLimit
		}
		expected, err := s.store.Query(t.Context(), want, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		got := fetch(t, c, f)
		if strings.Join(ids(got), ",") != strings.Join(ids(expected), ",") {
			t.Fatalf("REQ %v: %d events %v, one query answers %d: %v", f, len(got), ids(got), len(expected), ids(expected))
		}
	}
}

// RL-27a: a REQ or COUNT that finds none of the relay's read slots free
// within the wait is refused busy, and served once one is free.
func TestReqAndCountRefusedWhenRelayBusy(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.MaxConcurrentQueries = 1 })
	req, count := s.raw(t), s.raw(t)
	s.relay.reads.all <- struct{}{} // the one slot, taken
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if got := count.countClosed("busy", `{"kinds":[1]}`); got != relayBusy {
			t.Errorf("COUNT with no slot free: CLOSED %q, want %q", got, relayBusy)
		}
	}()
	if _, closed := req.req("busy", `{"kinds":[1]}`); closed != relayBusy {
		t.Errorf("REQ with no slot free: CLOSED %q, want %q", closed, relayBusy)
	}
	wg.Wait()
	<-s.relay.reads.all
	if _, closed := req.req("free", `{"kinds":[1]}`); closed != "" {
		t.Fatalf("REQ with a slot free: CLOSED %q", closed)
	}
	if n := count.count("free", `{"kinds":[1]}`); n != 0 {
		t.Fatalf("COUNT: %d", n)
	}
}

// gatedStore holds every COUNT of kind gatedKind until gate is closed.
type gatedStore struct {
	buzz.Store
	gate    chan struct{}
	waiting atomic.Int64
}

const gatedKind = 9999

func (s *gatedStore) Count(ctx context.Context, f nostr.Filter, v buzz.Viewer) (int64, error) {
	if len(f.Kinds) == 1 && f.Kinds[0] == gatedKind {
		s.waiting.Add(1)
		<-s.gate
	}
	return s.Store.Count(ctx, f, v)
}

// RL-27, RL-27a: one connection's REQs and COUNTs take one of the relay's
// read slots at a time, so that a connection flooding slow reads leaves
// the other slots to others. (Finding 5: 300 COUNTs from one socket took
// every read and pushed other users' REQs to seconds.)
func TestOneConnectionTakesOneReadSlot(t *testing.T) {
	gated := &gatedStore{gate: make(chan struct{})}
	s := startHooked(t, serverHooks{
		wrap: func(st buzz.Store) buzz.Store { gated.Store = st; return gated },
	}, func(c *Config) { c.Limits.MaxConcurrentQueries = 2 })
	flood := s.raw(t)
	for i := range 10 {
		flood.sendText(fmt.Sprintf(`["COUNT","slow-%d",{"kinds":[%d]}]`, i, gatedKind))
	}
	deadline := time.Now().Add(waitTimeout)
	for gated.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the flood's first COUNT never reached the store")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// One COUNT of the flood holds a slot; the other slot is free for
	// another connection, which the flood's waiting COUNTs do not take.
	other := s.raw(t)
	if n := other.count("other", `{"kinds":[1]}`); n != 0 {
		t.Fatalf("COUNT: %d", n)
	}
	if _, closed := other.req("other-req", `{"kinds":[1]}`); closed != "" {
		t.Fatalf("REQ beside a flood: CLOSED %q", closed)
	}
	if n := gated.waiting.Load(); n != 1 {
		t.Fatalf("%d COUNTs of one connection read at once, want 1", n)
	}
	close(gated.gate)
	for range 10 {
		flood.await("flood COUNT", func(m []json.RawMessage) bool { return label(m) == "COUNT" })
	}
}

// RL-27a: a client that sends without waiting for answers has at most
// khatru's 32 messages handled at once; the rest wait in TCP, costing the
// relay neither a goroutine nor their bytes each. (Finding 5: a goroutine
// per message.)
func TestMessagesHandledAtOncePerConnectionBounded(t *testing.T) {
	const handlers = 32 // khatru's maxHandlers
	gated := &gatedStore{gate: make(chan struct{})}
	s := startHooked(t, serverHooks{
		wrap: func(st buzz.Store) buzz.Store { gated.Store = st; return gated },
	})
	c := s.raw(t)
	c.await("AUTH", func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	base := runtime.NumGoroutine()
	const sent = 300
	for i := range sent {
		c.sendText(fmt.Sprintf(`["COUNT","slow-%d",{"kinds":[%d]}]`, i, gatedKind))
	}
	// Each COUNT past the first waits for the connection's read turn; had
	// each its own goroutine, they would all be there within milliseconds.
	most := 0
	for range 100 {
		most = max(most, runtime.NumGoroutine()-base)
		time.Sleep(10 * time.Millisecond)
	}
	if most > handlers+8 {
		t.Fatalf("%d more goroutines for %d COUNTs in flight, want about %d", most, sent, handlers)
	}
	close(gated.gate)
	for range sent {
		c.await("COUNT", func(m []json.RawMessage) bool { return label(m) == "COUNT" })
	}
}

// RL-27, RL-27a: one client IP holds at most its share of the read slots
// however many connections it opens, so that its slow reads leave both
// slots and CPU to other addresses; exempt networks are not held to it.
func TestReadSlotsSharePerIP(t *testing.T) {
	gated := &gatedStore{gate: make(chan struct{})}
	s := startHooked(t, serverHooks{
		wrap: func(st buzz.Store) buzz.Store { gated.Store = st; return gated },
	}, func(c *Config) {
		c.Limits.MaxConcurrentQueriesPerIP = 2
		c.Limits.Exempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")}
	})
	waitFor := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for gated.waiting.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d COUNTs reached the store, want %d", gated.waiting.Load(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var flood []*rawClient
	for i := range 4 {
		c := s.rawFrom(t, "127.0.0.2")
		c.sendText(fmt.Sprintf(`["COUNT","slow-%d",{"kinds":[%d]}]`, i, gatedKind))
		flood = append(flood, c)
	}
	waitFor(2)
	// Another address is served while the flood's other two wait.
	other := s.rawFrom(t, "127.0.0.3")
	if n := other.count("other", `{"kinds":[1]}`); n != 0 {
		t.Fatalf("COUNT: %d", n)
	}
	if n := gated.waiting.Load(); n != 2 {
		t.Fatalf("%d COUNTs of one address read at once, want its share of 2", n)
	}
	// An exempt address is held to no share.
	for i := range 3 {
		c := s.rawFrom(t, "127.0.0.4")
		c.sendText(fmt.Sprintf(`["COUNT","exempt-%d",{"kinds":[%d]}]`, i, gatedKind))
		flood = append(flood, c)
	}
	waitFor(5)
	close(gated.gate)
	for _, c := range flood {
		c.await("COUNT", func(m []json.RawMessage) bool { return label(m) == "COUNT" })
	}
	if n := len(s.relay.reads.byIP); n != 0 {
		t.Errorf("%d addresses still kept after every read ended", n)
	}
}

// RL-27a: the messages of one connection handled at once are bounded in
// bytes, not only in number: a client that sends large messages without
// waiting has about one message size of them handled at a time (the rest
// wait in TCP), not khatru's 32 of 512 KiB each, 16 MiB per connection.
func TestMessageBytesHandledAtOncePerConnectionBounded(t *testing.T) {
	gated := &gatedStore{gate: make(chan struct{})}
	s := startHooked(t, serverHooks{
		wrap: func(st buzz.Store) buzz.Store { gated.Store = st; return gated },
	})
	c := s.raw(t)
	c.await("AUTH", func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	const sent, size = 16, 300 << 10 // each more than half of the 512 KiB message size
	pad := strings.Repeat("x", size)
	base := runtime.NumGoroutine()
	wrote := make(chan error, 1)
	go func() {
		for i := range sent {
			msg := fmt.Sprintf(`["COUNT","big-%d",{"kinds":[%d],"#t":["%s"]}]`, i, gatedKind, pad)
			if err := c.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	most := 0
	for range 100 {
		most = max(most, runtime.NumGoroutine()-base)
		time.Sleep(10 * time.Millisecond)
	}
	// The writer above, and a handler or two.
	if most > 5 {
		t.Errorf("%d more goroutines for %d COUNTs of %d KiB in flight, want at most 5", most, sent, size>>10)
	}
	close(gated.gate)
	for range sent {
		c.await("COUNT", func(m []json.RawMessage) bool { return label(m) == "COUNT" })
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// blockingStore is the real store whose reads of kind gatedKind wait until
// their subscription ends; entered hears of each such read.
type blockingStore struct {
	buzz.Store
	entered chan struct{}
}

func (s blockingStore) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	if len(f.Kinds) == 1 && f.Kinds[0] == gatedKind {
		s.entered <- struct{}{}
		<-ctx.Done()
		return nil, false, ctx.Err()
	}
	return s.Store.QueryBounded(ctx, f, v, beforeID, maxBytes)
}

// RL-22 (NIP-01): a subscription replaced by a REQ with its id says nothing
// more: the EOSE of the old one, whose stored events were still being
// read, would reach the client as the new one's and end its stored events
// early.
func TestReplacedSubscriptionSendsNoEOSE(t *testing.T) {
	st := blockingStore{entered: make(chan struct{}, 1)}
	s := startHooked(t, serverHooks{
		wrap: func(sq buzz.Store) buzz.Store { st.Store = sq; return st },
	})
	c := s.raw(t)
	c.sendText(fmt.Sprintf(`["REQ","a",{"kinds":[%d]}]`, gatedKind))
	select {
	case <-st.entered:
	case <-time.After(waitTimeout):
		t.Fatal("the first REQ never read")
	}
	if evs, closed := c.req("a", `{"kinds":[1]}`); len(evs) != 0 || closed != "" {
		t.Fatalf("the replacing REQ: %d events, CLOSED %q", len(evs), closed)
	}
	c.sendText(`["COUNT","barrier",{"kinds":[1]}]`)
	more := 0
	c.await("COUNT barrier", func(m []json.RawMessage) bool {
		if str(m, 1) == "a" {
			more++
		}
		return label(m) == "COUNT"
	})
	if more != 0 {
		t.Fatalf("%d more messages for subscription a after its replacement's EOSE, want none", more)
	}
}
