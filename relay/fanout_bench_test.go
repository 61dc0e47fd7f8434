package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/khatru"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// The cost of the live-delivery access check (RL-13) on fan-out: one event
// broadcast to 1,000 subscribers of one channel. Issue 3 asks that the check
// cost no more than 20% of fan-out throughput against delivery with no
// check. Sub-benchmarks:
//
//   - open: an open channel, anonymous subscribers (the check runs, and
//     passes at once);
//   - private: a private channel, 1,000 authenticated members (the full
//     check: a role lookup per subscriber);
//   - nocheck: the private setup with khatru's DeliverTo hook removed;
//   - paired: the private setup, alternating rounds with and without the
//     check on the same connections, which compares the two under the same
//     machine load (on a shared machine, separate runs of private and
//     nocheck differ by more than the check costs); check/nocheck is the
//     ratio of their ns/delivery;
//   - checkonly: the check alone, as live delivery runs it (DeliverTo once
//     per event, then its answer once per subscriber), for 1,000 members
//     of a private channel, without connections: ns/check is its cost per
//     subscriber, to set against ns/delivery.
//
// Delivery is driven by khatru's BroadcastEvent with one pre-signed event,
// which leaves ingest out; the subscribers are real WebSocket connections
// read continuously, and every round waits until all of them received all
// of it, so ns/delivery is the cost of real delivery, end to end. Rounds of
// at most fanoutRound events keep a connection's queue within khatru's byte
// budget (past it the connection is dropped).
//
//	go test -run '^$' -bench Fanout -benchtime 2000x ./relay

const (
	fanoutSubscribers = 1000
	fanoutRound       = 128
	fanoutWait        = 60 * time.Second
)

func BenchmarkFanout(b *testing.B) {
	for _, mode := range []string{"open", "private", "nocheck", "paired", "checkonly"} {
		b.Run(mode, func(b *testing.B) { benchFanout(b, mode) })
	}
}

func benchFanout(b *testing.B, mode string) {
	if mode == "checkonly" {
		benchCheckOnly(b)
		return
	}
	private := mode != "open"
	srv := startFanoutServer(b, mode == "nocheck")

	owner := testutil.NewSigner(b)
	h := newChannelID(b)
	admin := dialFanout(b, srv.wsURL)
	create := []nostr.Tag{{"h", h}}
	if private {
		create = append(create, nostr.Tag{"private"})
	}
	publishFanout(b, admin, owner.Event(b, buzz.KindCreateChannel, time.Now().Unix(), "", create...))

	members := make([]testutil.Signer, fanoutSubscribers)
	put := []nostr.Tag{{"h", h}}
	for i := range members {
		members[i] = testutil.NewSigner(b)
		put = append(put, nostr.Tag{"p", members[i].PK})
	}
	if private {
		publishFanout(b, admin, owner.Event(b, buzz.KindPutUser, time.Now().Unix(), "", put...))
	}
	admin.conn.Close()

	// The subscribers, connected in parallel.
	subs := make([]*fanoutConn, fanoutSubscribers)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		next     atomic.Int64
	)
	filter := fmt.Sprintf(`{"#h":[%q],"limit":0}`, h)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= fanoutSubscribers {
					return
				}
				var who *testutil.Signer
				if private {
					who = &members[i]
				}
				c, err := subscribeFanout(srv.wsURL, who, filter)
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("subscriber %d: %w", i, err)
					}
					errMu.Unlock()
					return
				}
				subs[i] = c
			}
		}()
	}
	wg.Wait()
	b.Cleanup(func() {
		for _, c := range subs {
			if c != nil {
				c.conn.Close()
			}
		}
	})
	if firstErr != nil {
		b.Fatal(firstErr)
	}

	// Readers: count EVENTs, signal when the round's total is reached.
	var total, target atomic.Int64
	reached := make(chan struct{}, 1)
	for _, c := range subs {
		go c.read(&total, &target, reached)
	}

	ev := owner.Event(b, 9, time.Now().Unix(), "fan-out benchmark message, a line of chat of ordinary length", nostr.Tag{"h", h})
	kh := srv.relay.kh
	check := kh.DeliverTo

	// One round untimed, so that every reader and writer is running.
	sent := int64(fanoutRound)
	target.Store(sent * fanoutSubscribers)
	for range fanoutRound {
		kh.BroadcastEvent(ev)
	}
	select {
	case <-reached:
	case <-time.After(fanoutWait):
		b.Fatalf("warm-up: %d of %d deliveries arrived", total.Load(), target.Load())
	}

	// spent is the time of the rounds with the check ([1]) and without
	// ([0]), and delivered their deliveries, for the paired mode.
	var spent [2]time.Duration
	var delivered [2]int64
	b.ReportAllocs()
	b.ResetTimer()
	for round, left := 0, b.N; left > 0; round++ {
		k := min(fanoutRound, left)
		left -= k
		sent += int64(k)
		withCheck := check != nil
		if mode == "paired" {
			// Alternate rounds with and without the check on the same
			// connections, so that both see the same machine.
			withCheck = round%2 == 0
			if withCheck {
				kh.DeliverTo = check
			} else {
				kh.DeliverTo = nil
			}
		}
		target.Store(sent * fanoutSubscribers)
		start := time.Now()
		for range k {
			if n := kh.BroadcastEvent(ev); n != fanoutSubscribers {
				b.Fatalf("broadcast to %d listeners, want %d", n, fanoutSubscribers)
			}
		}
		select {
		case <-reached:
		case <-time.After(fanoutWait):
			b.Fatalf("after %v: %d of %d deliveries arrived", fanoutWait, total.Load(), target.Load())
		}
		i := map[bool]int{false: 0, true: 1}[withCheck]
		spent[i] += time.Since(start)
		delivered[i] += int64(k) * fanoutSubscribers
	}
	b.StopTimer()
	kh.DeliverTo = check
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*fanoutSubscribers), "ns/delivery")
	if mode == "paired" && delivered[0] > 0 && delivered[1] > 0 {
		with := float64(spent[1].Nanoseconds()) / float64(delivered[1])
		without := float64(spent[0].Nanoseconds()) / float64(delivered[0])
		b.ReportMetric(with, "ns/delivery-check")
		b.ReportMetric(without, "ns/delivery-nocheck")
		b.ReportMetric(with/without, "check/nocheck")
	}
	for i, c := range subs {
		if n := c.events.Load(); n != sent {
			b.Fatalf("subscriber %d received %d events, want %d", i, n, sent)
		}
	}
}

// fanoutServer is a relay for the benchmark, as startServerWith makes one
// for tests (which takes a *testing.T).
type fanoutServer struct {
	relay *Relay
	wsURL string
}

// startFanoutServer starts a relay on a fresh store; noCheck removes the
// live-delivery access check before it serves anyone.
func startFanoutServer(b *testing.B, noCheck bool) *fanoutServer {
	b.Helper()
	key := nostr.GeneratePrivateKey()
	store, err := sqlite.Open(context.Background(), sqlite.Options{
		Path: filepath.Join(b.TempDir(), "buzz-lite.db"), Schema: testutil.Schema(b), RelayKey: key,
	})
	if err != nil {
		b.Fatal(err)
	}
	// A thousand subscribers from one address: loopback is exempt from the
	// per-IP connection cap, as `buzz-lite bench` makes its own address.
	limits := Limits{Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	r, err := New(Config{Key: key, Info: Info{Name: "buzz-lite bench", Version: "test"}, Limits: limits}, store)
	if err != nil {
		store.Close()
		b.Fatal(err)
	}
	if noCheck {
		r.kh.DeliverTo = nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				b.Errorf("Serve: %v", err)
			}
		case <-time.After(shutdownGrace + waitTimeout):
			b.Error("Serve did not return")
		}
		if err := store.Close(); err != nil {
			b.Errorf("closing store: %v", err)
		}
	})
	return &fanoutServer{relay: r, wsURL: "ws://" + ln.Addr().String()}
}

// fanoutConn is one subscriber of the benchmark.
type fanoutConn struct {
	conn   *websocket.Conn
	events atomic.Int64
}

func dialFanout(b *testing.B, url string) *fanoutConn {
	b.Helper()
	c, err := dialFanoutErr(url)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func dialFanoutErr(url string) (*fanoutConn, error) {
	d := websocket.Dialer{HandshakeTimeout: waitTimeout}
	conn, _, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	return &fanoutConn{conn: conn}, nil
}

// await reads messages until match accepts one.
func (c *fanoutConn) await(match func([]json.RawMessage) bool) ([]json.RawMessage, error) {
	c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	defer c.conn.SetReadDeadline(time.Time{})
	for {
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			return nil, err
		}
		var msg []json.RawMessage
		if err := json.Unmarshal(b, &msg); err != nil || len(msg) == 0 {
			return nil, fmt.Errorf("not a JSON array: %s", b)
		}
		if match(msg) {
			return msg, nil
		}
	}
}

func (c *fanoutConn) send(v ...any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	return c.conn.WriteMessage(websocket.TextMessage, b)
}

// okOf sends ev with label and returns the relay's OK.
func (c *fanoutConn) okOf(verb string, ev *nostr.Event) error {
	if err := c.send(verb, ev); err != nil {
		return err
	}
	msg, err := c.await(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
	if err != nil {
		return err
	}
	var ok bool
	if len(msg) < 3 || json.Unmarshal(msg[2], &ok) != nil || !ok {
		return fmt.Errorf("%s refused: %s", verb, joinRaw(msg))
	}
	return nil
}

func publishFanout(b *testing.B, c *fanoutConn, ev *nostr.Event) {
	b.Helper()
	if err := c.okOf("EVENT", ev); err != nil {
		b.Fatalf("kind %d: %v", ev.Kind, err)
	}
}

// subscribeFanout connects, authenticates as who (nil: anonymous), and
// opens one subscription for filter.
func subscribeFanout(url string, who *testutil.Signer, filter string) (*fanoutConn, error) {
	c, err := dialFanoutErr(url)
	if err != nil {
		return nil, err
	}
	msg, err := c.await(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	if err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("AUTH challenge: %w", err)
	}
	if who != nil {
		ev := &nostr.Event{
			PubKey: who.PK, CreatedAt: nostr.Now(), Kind: nostr.KindClientAuthentication,
			Tags: nostr.Tags{{"relay", url}, {"challenge", str(msg, 1)}},
		}
		if err := ev.Sign(who.SK); err != nil {
			c.conn.Close()
			return nil, err
		}
		if err := c.okOf("AUTH", ev); err != nil {
			c.conn.Close()
			return nil, err
		}
	}
	c.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(`["REQ","fan",`+filter+`]`)); err != nil {
		c.conn.Close()
		return nil, err
	}
	msg, err = c.await(func(m []json.RawMessage) bool { return str(m, 1) == "fan" })
	if err == nil && label(msg) != "EOSE" {
		err = fmt.Errorf("REQ answered %s", joinRaw(msg))
	}
	if err != nil {
		c.conn.Close()
		return nil, err
	}
	return c, nil
}

var eventPrefix = []byte(`["EVENT"`)

// read counts the EVENTs c receives until its connection closes; the one
// whose count reaches target signals reached.
func (c *fanoutConn) read(total, target *atomic.Int64, reached chan<- struct{}) {
	for {
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			return // closed; a round's wait reports deliveries that went missing
		}
		if !bytes.HasPrefix(b, eventPrefix) {
			continue
		}
		c.events.Add(1)
		if total.Add(1) == target.Load() {
			select {
			case reached <- struct{}{}:
			default:
			}
		}
	}
}

// benchCheckOnly measures the live-delivery check without connections: the
// relay's DeliverTo for one event of a private channel, then its answer for
// each of 1,000 authenticated members.
func benchCheckOnly(b *testing.B) {
	ctx := context.Background()
	key := nostr.GeneratePrivateKey()
	store, err := sqlite.Open(ctx, sqlite.Options{
		Path: filepath.Join(b.TempDir(), "buzz-lite.db"), Schema: testutil.Schema(b), RelayKey: key,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	r, err := New(Config{Key: key}, store)
	if err != nil {
		b.Fatal(err)
	}
	owner := testutil.NewSigner(b)
	h := newChannelID(b)
	admit := func(ev *nostr.Event) {
		if _, err := store.Admit(ctx, ev); err != nil {
			b.Fatalf("kind %d: %v", ev.Kind, err)
		}
	}
	admit(owner.Event(b, buzz.KindCreateChannel, time.Now().Unix(), "", nostr.Tag{"h", h}, nostr.Tag{"private"}))
	put := []nostr.Tag{{"h", h}}
	conns := make([]*khatru.WebSocket, fanoutSubscribers)
	for i := range conns {
		pk := testutil.NewSigner(b).PK
		put = append(put, nostr.Tag{"p", pk})
		conns[i] = &khatru.WebSocket{AuthedPublicKey: pk}
	}
	admit(owner.Event(b, buzz.KindPutUser, time.Now().Unix(), "", put...))
	ev := owner.Event(b, 9, time.Now().Unix(), "checked", nostr.Tag{"h", h})

	b.ReportAllocs()
	b.ResetTimer()
	allowed := 0
	for range b.N {
		deliver := r.deliverTo(ev)
		for _, ws := range conns {
			if deliver(ws) {
				allowed++
			}
		}
	}
	b.StopTimer()
	if allowed != b.N*fanoutSubscribers {
		b.Fatalf("%d deliveries allowed, want %d", allowed, b.N*fanoutSubscribers)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fanoutSubscribers), "ns/check")
}
