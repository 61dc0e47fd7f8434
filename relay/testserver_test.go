package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/postgres"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// testChannel is a channel id (NIP-29 group, a UUID) used by the tests.
const testChannel = "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"

// waitTimeout bounds every wait of these tests: long enough for a loaded CI
// machine running -race, short enough that a hang fails fast.
const waitTimeout = 5 * time.Second

// relayStoreVar picks the store the relay tests run on: unset or
// "sqlite", an SQLite file in a temporary directory; "postgres", a fresh
// database on the server of BUZZ_LITE_TEST_POSTGRES, so that every
// relay-level behaviour is shown on both stores (RL-33). The tests that
// look into the SQLite file itself skip on PostgreSQL.
const relayStoreVar = "BUZZ_LITE_TEST_RELAY_STORE"

// onPostgres reports whether the relay tests run on PostgreSQL.
func onPostgres(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv(relayStoreVar); v {
	case "", "sqlite":
		return false
	case "postgres":
		if os.Getenv(pgtest.URLVar) == "" {
			t.Fatalf("%s=postgres needs %s (a PostgreSQL server)", relayStoreVar, pgtest.URLVar)
		}
		return true
	default:
		t.Fatalf("%s=%q: want sqlite or postgres", relayStoreVar, v)
		return false
	}
}

// testStore is a test relay's store: either store, with what the tests
// ask of it beyond the relay's interface.
type testStore interface {
	buzz.Store
	ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
	Close() error
}

// testStoreOptions are the store settings a test may change, on either
// store.
type testStoreOptions struct {
	Admins                 []string
	Policy                 *buzz.Policy
	ThreadRepliesInChannel *bool
	// PageCacheBytes as the stores take it: 0 the default, negative off.
	PageCacheBytes int64
}

// testServer is a real buzz-lite relay on a loopback port, on a store of
// its own (relayStoreVar).
type testServer struct {
	t        *testing.T
	relay    *Relay
	store    testStore
	dbPath   string // the SQLite file; "" on PostgreSQL
	pgURL    string // the PostgreSQL database; "" on SQLite
	opts     testStoreOptions
	key      string
	addr     string // host:port
	wsURL    string // ws://host:port
	httpURL  string // http://host:port
	cancel   context.CancelFunc
	served   chan error
	stopped  bool
	serveErr error
}

// startServer starts a relay; edit may adjust its configuration. Cleanup
// stops it and closes the store.
func startServer(t *testing.T, edit ...func(*Config)) *testServer {
	t.Helper()
	return startServerWith(t, nil, edit...)
}

// startServerWith is startServer with store options adjusted by storeEdit
// (access policy, admins, settings). The store signs group state with the
// relay key, as in `buzz-lite serve`.
func startServerWith(t *testing.T, storeEdit func(*testStoreOptions), edit ...func(*Config)) *testServer {
	t.Helper()
	return startHooked(t, serverHooks{store: storeEdit}, edit...)
}

// serverHooks adjust a test relay beyond its Config; each may be nil.
type serverHooks struct {
	store func(*testStoreOptions) // the store's options
	// wrap is the store as the relay sees it.
	wrap func(buzz.Store) buzz.Store
	// listen is the listener the relay serves on.
	listen func(net.Listener) net.Listener
	// relay adjusts the relay before it serves.
	relay func(*Relay)
	// twin is a relay whose database, key and store options this one
	// shares: its PostgreSQL database, as a second process of the same
	// community (RL-33), or, once it is stopped, its SQLite file, as the
	// same relay restarted.
	twin *testServer
}

// startHooked is startServer adjusted by h.
func startHooked(t *testing.T, h serverHooks, edit ...func(*Config)) *testServer {
	t.Helper()
	key := nostr.GeneratePrivateKey()
	var opts testStoreOptions
	if h.store != nil {
		h.store(&opts)
	}
	pgURL, dbPath := "", ""
	switch {
	case h.twin != nil:
		key, opts, pgURL, dbPath = h.twin.key, h.twin.opts, h.twin.pgURL, h.twin.dbPath
	case onPostgres(t):
		pgURL = pgtest.FreshDatabase(t)
	}
	store, dbPath := openTestStore(t, key, pgURL, dbPath, opts)
	cfg := Config{Key: key, Info: Info{Name: "buzz-lite test", Description: "test relay", Version: "test"}}
	for _, e := range edit {
		e(&cfg)
	}
	var relayStore buzz.Store = store
	if h.wrap != nil {
		relayStore = h.wrap(store)
	}
	r, err := New(cfg, relayStore)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	if h.relay != nil {
		h.relay(r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	if h.listen != nil {
		ln = h.listen(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{
		t:       t,
		relay:   r,
		store:   store,
		dbPath:  dbPath,
		pgURL:   pgURL,
		opts:    opts,
		key:     key,
		addr:    ln.Addr().String(),
		wsURL:   "ws://" + ln.Addr().String(),
		httpURL: "http://" + ln.Addr().String(),
		cancel:  cancel,
		served:  make(chan error, 1),
	}
	go func() { s.served <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// openTestStore opens the PostgreSQL database at pgURL, or without one the
// SQLite file at path (a fresh one when path is ""), as a store that signs
// group state with key, as `buzz-lite serve` does; dbPath is its SQLite
// file, "" on PostgreSQL.
func openTestStore(t *testing.T, key, pgURL, path string, o testStoreOptions) (store testStore, dbPath string) {
	t.Helper()
	var err error
	if pgURL != "" {
		store, err = postgres.Open(context.Background(), postgres.Options{
			URL: pgURL, RelayKey: key,
			Admins: o.Admins, Policy: o.Policy, ThreadRepliesInChannel: o.ThreadRepliesInChannel, PageCacheBytes: o.PageCacheBytes,
		})
	} else {
		dbPath = path
		if dbPath == "" {
			dbPath = filepath.Join(t.TempDir(), "buzz-lite.db")
		}
		store, err = sqlite.Open(context.Background(), sqlite.Options{
			Path: dbPath, Schema: testutil.Schema(t), RelayKey: key,
			Admins: o.Admins, Policy: o.Policy, ThreadRepliesInChannel: o.ThreadRepliesInChannel, PageCacheBytes: o.PageCacheBytes,
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return store, dbPath
}

// startTwin starts a second relay on s's PostgreSQL database, with its key
// and store options, as a second `serve` process of one community does
// (RL-33); the test skips on SQLite, where one process serves a database.
func (s *testServer) startTwin(t *testing.T, edit ...func(*Config)) *testServer {
	t.Helper()
	if s.pgURL == "" {
		t.Skipf("two relays share a database on PostgreSQL only; %s=postgres runs this test", relayStoreVar)
	}
	return startHooked(t, serverHooks{twin: s}, edit...)
}

// restart stops s and starts the relay again on its database (SQLite file
// or PostgreSQL database), with its key and store options, as a restart of
// `buzz-lite serve` on the same data does; it listens on another port.
func (s *testServer) restart(t *testing.T, edit ...func(*Config)) *testServer {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("stopping the relay to restart it: %v", err)
	}
	return startHooked(t, serverHooks{twin: s}, edit...)
}

// sqlitePath is the SQLite file of the relay, for the tests that look
// into it; they skip on PostgreSQL.
func (s *testServer) sqlitePath(t *testing.T) string {
	t.Helper()
	if s.dbPath == "" {
		t.Skipf("looks into the SQLite file; %s=postgres", relayStoreVar)
	}
	return s.dbPath
}

// ingest stores ev through the store, past the relay.
func (s *testServer) ingest(ctx context.Context, ev *nostr.Event) error {
	_, err := s.store.Admit(ctx, ev)
	return err
}

// startWithClient starts a relay (startServer), connects one client to it
// and makes one signer: the opening of most tests.
func startWithClient(t *testing.T, edit ...func(*Config)) (*testServer, *rawClient, testutil.Signer) {
	t.Helper()
	s := startServer(t, edit...)
	return s, s.client(t), testutil.NewSigner(t)
}

// stop cancels the server's context, waits for Serve to return and closes
// the store; it returns what Serve returned. Idempotent.
func (s *testServer) stop() error {
	s.t.Helper()
	if s.stopped {
		return s.serveErr
	}
	s.stopped = true
	s.cancel()
	select {
	case s.serveErr = <-s.served:
	case <-time.After(shutdownGrace + waitTimeout):
		s.t.Fatal("Serve did not return after its context was cancelled")
	}
	if err := s.store.Close(); err != nil {
		s.t.Errorf("closing store: %v", err)
	}
	return s.serveErr
}

// client is a raw client for the tests that speak plain NIP-01 (go-nostr's
// own client races with itself when a connection closes, which -race
// reports; see interop_test.go for the test that uses it).
func (s *testServer) client(t *testing.T) *rawClient { t.Helper(); return s.raw(t) }

// publish sends ev and returns the relay's verdict: nil for OK true, else
// an error whose text is the OK reason.
func publish(t *testing.T, c *rawClient, ev *nostr.Event) error {
	t.Helper()
	if ok, reason := c.publish(ev); !ok {
		return errors.New(reason)
	}
	return nil
}

// mustPublish publishes ev and fails the test unless the relay says OK true.
func mustPublish(t *testing.T, c *rawClient, ev *nostr.Event) {
	t.Helper()
	if err := publish(t, c, ev); err != nil {
		t.Fatalf("publish kind %d: %v", ev.Kind, err)
	}
}

// mustReject publishes ev and fails the test unless the relay answers OK
// false with exactly reason.
func mustReject(t *testing.T, c *rawClient, ev *nostr.Event, reason string) {
	t.Helper()
	err := publish(t, c, ev)
	if err == nil {
		t.Fatalf("kind %d accepted, want %q", ev.Kind, reason)
	}
	if got := err.Error(); got != reason {
		t.Fatalf("kind %d: got %q, want %q", ev.Kind, got, reason)
	}
}

// publishMayRefuse publishes ev, a deleted or superseded event sent again:
// the relay may accept it or refuse it as blocked:/duplicate:, any other
// refusal fails the test with what.
func publishMayRefuse(t *testing.T, c *rawClient, ev *nostr.Event, what string) {
	t.Helper()
	if err := publish(t, c, ev); err != nil && !isBlockedOrDuplicate(err) {
		t.Fatalf("%s: %v", what, err)
	}
}

// isBlockedOrDuplicate accepts the answers a relay may give to a deleted
// event sent again: OK false with blocked:/duplicate:.
func isBlockedOrDuplicate(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "blocked:") || strings.Contains(msg, "duplicate:")
}

// mustNotServe fails the test with why when a REQ by id returns anything.
func mustNotServe(t *testing.T, c *rawClient, id, why string) {
	t.Helper()
	if got := fetch(t, c, nostr.Filter{IDs: []string{id}}); len(got) != 0 {
		t.Fatal(why)
	}
}

var subCounter atomic.Int64

// fetch runs a REQ for f and returns the stored events up to EOSE, then
// closes the subscription.
func fetch(t *testing.T, c *rawClient, f nostr.Filter) []*nostr.Event {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("fetch-%d", subCounter.Add(1))
	evs, closed := c.req(id, string(b))
	if closed != "" {
		t.Fatalf("REQ %s: CLOSED %q", b, closed)
	}
	c.send("CLOSE", id)
	return evs
}

// countFilter runs a COUNT for f.
func countFilter(t *testing.T, c *rawClient, f nostr.Filter) int64 {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return c.count(fmt.Sprintf("count-%d", subCounter.Add(1)), string(b))
}

// ids lists the ids of evs.
func ids(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// rawClient is a bare WebSocket client that sends whatever it is told.
type rawClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func (s *testServer) raw(t *testing.T) *rawClient {
	t.Helper()
	return s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout})
}

// rawFrom is raw dialling from the loopback address ip (127.0.0.2, ...),
// so that the relay counts the client as another client IP (RL-27).
func (s *testServer) rawFrom(t *testing.T, ip string) *rawClient {
	t.Helper()
	local := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return s.dial(t, websocket.Dialer{HandshakeTimeout: waitTimeout, NetDialContext: local.DialContext})
}

func (s *testServer) dial(t *testing.T, d websocket.Dialer) *rawClient {
	t.Helper()
	conn, _, err := d.Dial(s.wsURL, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", s.wsURL, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawClient{t: t, conn: conn}
}

// sendText writes one text message as is.
func (c *rawClient) sendText(msg string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		c.t.Fatalf("write %q: %v", msg, err)
	}
}

// send writes v as one JSON message.
func (c *rawClient) send(v ...any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendText(string(b))
}

// read returns the next message, parsed as a JSON array.
func (c *rawClient) read() ([]json.RawMessage, error) { return c.readWithin(waitTimeout) }

// readWithin is read with a deadline d from now. A connection whose read
// timed out is unusable.
func (c *rawClient) readWithin(d time.Duration) ([]json.RawMessage, error) {
	c.conn.SetReadDeadline(time.Now().Add(d))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	var msg []json.RawMessage
	if err := json.Unmarshal(b, &msg); err != nil || len(msg) == 0 {
		return nil, errors.New("not a JSON array: " + string(b))
	}
	return msg, nil
}

// label is the first element of a message.
func label(msg []json.RawMessage) string {
	var s string
	json.Unmarshal(msg[0], &s)
	return s
}

// str decodes element i of msg as a string ("" when absent or not one).
func str(msg []json.RawMessage, i int) string {
	if i >= len(msg) {
		return ""
	}
	var s string
	json.Unmarshal(msg[i], &s)
	return s
}

// await reads messages until match accepts one, skipping the rest (NOTICEs
// and answers to earlier messages); it fails the test on a read error.
func (c *rawClient) await(what string, match func(msg []json.RawMessage) bool) []json.RawMessage {
	c.t.Helper()
	for {
		msg, err := c.read()
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(msg) {
			return msg
		}
	}
}

// count sends a COUNT and returns the count of its answer.
func (c *rawClient) count(subID string, filter string) int64 {
	c.t.Helper()
	c.sendText(`["COUNT",` + strconvQuote(subID) + `,` + filter + `]`)
	msg := c.await("COUNT "+subID, func(m []json.RawMessage) bool {
		return (label(m) == "COUNT" || label(m) == "CLOSED") && str(m, 1) == subID
	})
	if label(msg) != "COUNT" || len(msg) < 3 {
		c.t.Fatalf("COUNT %s %s: answered %s", subID, filter, joinRaw(msg))
	}
	var res struct {
		Count *int64 `json:"count"`
	}
	if err := json.Unmarshal(msg[2], &res); err != nil || res.Count == nil {
		c.t.Fatalf("COUNT %s: bad answer %s", subID, joinRaw(msg))
	}
	return *res.Count
}

// req sends a REQ with the given raw filters and returns the events up to
// EOSE, or the CLOSED reason.
func (c *rawClient) req(subID string, filters ...string) (evs []*nostr.Event, closed string) {
	c.t.Helper()
	c.sendText(`["REQ",` + strconvQuote(subID) + `,` + strings.Join(filters, ",") + `]`)
	for {
		msg := c.await("REQ "+subID, func(m []json.RawMessage) bool { return str(m, 1) == subID })
		switch label(msg) {
		case "EVENT":
			var ev nostr.Event
			if len(msg) < 3 || json.Unmarshal(msg[2], &ev) != nil {
				c.t.Fatalf("bad EVENT %s", joinRaw(msg))
			}
			evs = append(evs, &ev)
		case "EOSE":
			return evs, ""
		case "CLOSED":
			return evs, str(msg, 2)
		}
	}
}

// publish sends an EVENT and returns its OK (ok, reason).
func (c *rawClient) publish(ev *nostr.Event) (bool, string) {
	c.t.Helper()
	c.send("EVENT", ev)
	msg := c.await("OK", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
	var ok bool
	if len(msg) < 4 || json.Unmarshal(msg[2], &ok) != nil {
		c.t.Fatalf("bad OK %s", joinRaw(msg))
	}
	return ok, str(msg, 3)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func joinRaw(msg []json.RawMessage) string {
	parts := make([]string, len(msg))
	for i, m := range msg {
		parts[i] = string(m)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// newChannelID returns a fresh channel id: a canonical lowercase UUID.
func newChannelID(t testing.TB) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	if !buzz.IsCanonicalUUID(h) {
		t.Fatalf("%q is not a canonical UUID", h)
	}
	return h
}

func now() int64 { return time.Now().Unix() }

// randomID is 64 random lowercase hex characters: an id no event has.
func randomID(t testing.TB) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}
