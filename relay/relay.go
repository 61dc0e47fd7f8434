// Package relay is buzz-lite's server: a khatru relay for WebSocket clients
// with the hooks that put every event through the store's ingest
// transaction and check every read against the one access rule, the
// `POST /query` surface with NIP-98 and the channel window, the overlays
// signed with the relay key, the NIP-11 document, and a graceful shutdown;
// it mounts the web view (web/) on its store and limits. It knows khatru
// and HTTP and asks the store (sqlite/) for data through buzz.Store.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/time/rate"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/chunks"
	"github.com/buzz-lite/buzz-lite/internal/khatru"
	"github.com/buzz-lite/buzz-lite/internal/sign"
	"github.com/buzz-lite/buzz-lite/nipcw"
	"github.com/buzz-lite/buzz-lite/web"
)

// Config is what the relay is told at start.
type Config struct {
	// Info fills the NIP-11 document.
	Info Info
	// URL is the public ws(s):// URL of the relay, which NIP-42 AUTH events
	// and NIP-98 tokens must name; empty: derived by Serve from a loopback
	// listener, and refused on any other (RL-28, PublicURL).
	URL string
	// Key is the relay identity secret key (hex), whose public key is NIP-11
	// `self` (RL-21).
	Key string
	// Limits bound what one client may send (RL-27).
	Limits Limits
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// IP (RL-28).
	TrustedProxies []netip.Prefix
	// Metrics serves `GET /metrics` (RL-30); off, it answers 404.
	Metrics bool
	// MetricsAllow are the networks of the clients (RL-28's client IP)
	// that `/metrics` answers; any other gets 404. Empty: loopback only
	// (DefaultMetricsAllow).
	MetricsAllow []netip.Prefix
	// Web serves the HTML view of the open channels to browsers (CW-25);
	// off, `/` answers a line of text and the pages 404.
	Web bool
	// WebConnectAllow are the origins beyond its own (web.ConnectOrigin's
	// form) the web view's pages may connect to, such as a member's
	// NIP-46 bunker relay (CW-26).
	WebConnectAllow []string
	// Logger receives the relay's structured log; nil discards it.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Relay is a running buzz-lite relay.
type Relay struct {
	cfg    Config
	store  buzz.Store
	kh     *khatru.Relay
	log    *slog.Logger
	now    func() time.Time
	pubkey string

	// conns are the open WebSocket connections, closed with 1012 on
	// shutdown; once connsClosed, a connection that still arrives is closed
	// at once.
	connsMu     sync.Mutex
	conns       map[*khatru.WebSocket]*connState
	connsClosed bool
	// perIP counts the open connections of each client IP outside the
	// exempt networks: its WebSockets and its `/query` requests in flight
	// (RL-27).
	perIP map[netip.Prefix]int

	// url is the URL NIP-42 AUTH events and NIP-98 tokens must name, set
	// by Serve (RL-28); see publicURL.
	url atomic.Pointer[string]

	// nip98 checks `/query` authorization; overlays signs 39005 and 39006.
	nip98    *nip98Verifier
	overlays *overlaySigner

	// ready runs the round trips of `GET /readyz`.
	ready readiness

	// reads are the slots of the REQ/COUNT handlers and `/query`
	// requests running at once (RL-27a).
	reads *readSlots
	// events are the token buckets of EVENTs (RL-27).
	events eventRates
	// queryMemory is what the answers of running `/query` requests and
	// web pages may hold together, and each client's share of it;
	// queryRate their rate per client IP, nil when rates
	// are off (RL-27a, RL-27).
	queryMemory *byteBudget
	queryRate   *keyedLimiter
	// answerChunks hold the answers of `/query` requests.
	answerChunks *chunks.Pool
	// syncMemory is what the NIP-77 sync sessions hold together, syncIdle
	// how long one is kept without a message and syncLifetime how long
	// one is kept at all (RL-34).
	syncMemory *byteBudget
	syncIdle   time.Duration
	// syncShares are the sync shares of the clients with a connection
	// open (RL-34).
	syncMu       sync.Mutex
	syncShares   map[netip.Prefix]*syncShare
	syncLifetime time.Duration
	// maxSyncRounds is how many messages one session reconciles, from
	// Limits.MaxSyncItems; tests lower it.
	maxSyncRounds int

	// metrics are what `/metrics` reports (RL-30).
	metrics *metrics

	// web serves the web view, nil when Config.Web is off (CW-25).
	web *web.View

	// writes counts ingests in flight; shutdown waits for them.
	writesMu sync.RWMutex
	closing  bool
	writes   sync.WaitGroup
}

// New builds a relay on store.
func New(cfg Config, store buzz.Store) (*Relay, error) {
	if !nostr.IsValid32ByteHex(cfg.Key) {
		return nil, errors.New("relay identity key: want 64 hex characters")
	}
	key, err := sign.NewKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("relay identity key: %w", err)
	}
	pubkey := key.PubKey()
	cfg.Limits = cfg.Limits.withDefaults()
	if err := cfg.Limits.check(); err != nil {
		return nil, err
	}
	r := &Relay{
		cfg:    cfg,
		store:  store,
		log:    cfg.Logger,
		now:    cfg.Now,
		pubkey: pubkey,
		conns:  make(map[*khatru.WebSocket]*connState),
		perIP:  make(map[netip.Prefix]int),
		reads:  newReadSlots(cfg.Limits.MaxConcurrentQueries, cfg.Limits.MaxConcurrentQueriesPerIP),
		events: newEventRates(cfg.Limits.Rates),

		queryMemory:   newByteBudget(cfg.Limits.QueryMemoryBytes, cfg.Limits.QueryMemoryBytesPerIP),
		answerChunks:  newAnswerChunks(cfg.Limits),
		syncMemory:    newByteBudget(cfg.Limits.SyncMemoryBytes, 0),
		syncShares:    map[netip.Prefix]*syncShare{},
		syncIdle:      syncIdle,
		syncLifetime:  syncLifetime,
		maxSyncRounds: maxSyncRounds(cfg.Limits.MaxSyncItems),
	}
	if cfg.Limits.Rates != nil {
		r.queryRate = newKeyedLimiter(cfg.Limits.Rates.QueriesPerIP)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.metrics = r.newMetrics()
	r.nip98 = newNIP98Verifier(r.now, store)
	r.overlays = newOverlaySigner(key)
	if cfg.Web {
		if r.web, err = r.newWebView(); err != nil {
			return nil, err
		}
	}
	r.kh = khatru.NewRelay()
	r.wire()
	return r, nil
}

// PubKey is the relay identity (NIP-11 `self`).
func (r *Relay) PubKey() string { return r.pubkey }

func (r *Relay) wire() {
	kh := r.kh
	kh.Log = log.New(slogWriter{r.log}, "", 0)
	kh.ValidateAuth = r.validateAuth
	kh.MaxMessageSize = r.cfg.Limits.MaxMessageBytes

	kh.RejectUnverifiedEvent = append(kh.RejectUnverifiedEvent, r.rejectFromIP)
	kh.RejectEvent = append(kh.RejectEvent, r.rejectEvent)
	kh.SaveEvent = r.ingest
	kh.StreamEvents = append(kh.StreamEvents, r.streamEvents)
	kh.QueueBytes = r.cfg.Limits.ConnectionBufferBytes
	kh.CountEvents = append(kh.CountEvents, r.countEvents)
	kh.RejectRequest = append(kh.RejectRequest, r.rejectRequest)
	kh.RejectFilter = append(kh.RejectFilter, r.rejectFilter)
	kh.RejectCountFilter = append(kh.RejectCountFilter, r.rejectCountFilter)
	kh.OnConnect = append(kh.OnConnect, r.onConnect)
	kh.OnDisconnect = append(kh.OnDisconnect, r.onDisconnect)
	kh.OnEventResult = append(kh.OnEventResult, r.eventResult)
	kh.DeliverTo = r.deliverTo
	// A live subscription's #h names channels as its stored query does
	// (CW-2): a UUID in any spelling, however the event's h spells it.
	kh.FilterChannels = buzz.FilterChannels
	kh.EventChannel = buzz.EventChannel
	kh.NegentropyMessage = r.negentropyMessage
	r.store.OnPublish(func(evs []*nostr.Event) {
		for _, ev := range evs {
			kh.BroadcastEvent(ev)
		}
	})
	if shared, ok := r.store.(buzz.SharedStore); ok {
		shared.OnRemote(r.deliverRemote)
		// A subscription never receives twice an event another process
		// stored while the subscription's stored events were read.
		kh.LiveCaughtUp = shared.CaughtUp
		kh.OnEphemeralEvent = append(kh.OnEphemeralEvent, r.shareEphemeral(shared))
	}
}

// rejectFromIP takes a token for an event from its client IP's bucket
// before khatru verifies it (RL-27): a flood past the rate then costs the
// relay a JSON parse per event, not a signature check. The IP is the
// connection's, which the sender cannot choose, so forged events spend
// only the forger's own allowance.
func (r *Relay) rejectFromIP(ctx context.Context, _ *nostr.Event) (bool, string) {
	if msg := r.events.fromIP(r.connOf(ctx), r.cfg.Limits, r.now()); msg != "" {
		r.metrics.limited(limitIPEvents)
		return true, msg
	}
	return false, ""
}

// rejectEvent applies the checks that need no database (RL-9, RL-27,
// RL-29, CW-22), before khatru looks further at the event: khatru has
// verified its id and signature by now. The store applies the write policy
// again in its ingest transaction, with what it finds stored; here it
// keeps refused events off the writer, and is the whole check of the
// ephemeral events, which never reach the store.
func (r *Relay) rejectEvent(ctx context.Context, ev *nostr.Event) (bool, string) {
	now := r.now()
	conn := r.connOf(ctx)
	if err := buzz.CheckSubmission(ev, now); err != nil {
		return true, err.Error()
	}
	if len(ev.Tags) > r.cfg.Limits.MaxEventTags {
		return true, fmt.Sprintf("invalid: too many tags (limit %d)", r.cfg.Limits.MaxEventTags)
	}
	if n := buzz.EventSize(ev); n > r.cfg.Limits.MaxEventBytes {
		return true, fmt.Sprintf("invalid: event too large (%d bytes, limit %d)", n, r.cfg.Limits.MaxEventBytes)
	}
	h, _ := buzz.ChannelOf(ev.Tags) // CheckSubmission refused a bad h
	// An ephemeral event is judged here alone, the store never sees it:
	// always by the access state the database has now. The write policy
	// runs once per state it is judged by: the verdict communityFor asked
	// for is kept when that state is the one it returns.
	var judged *buzz.Community
	var refused error
	check := func(c *buzz.Community) bool {
		judged, refused = c, c.CheckEvent(ev, h)
		return !buzz.IsEphemeralKind(ev.Kind) && refused == nil
	}
	c := r.communityFor(ctx, check)
	if c != judged {
		check(c)
	}
	if refused != nil {
		return true, refused.Error()
	}
	if msg := r.events.fromPubkey(conn, r.cfg.Limits, c, ev, h, now); msg != "" {
		if msg == tooManyChannels {
			r.metrics.limited(limitChannels)
		} else {
			r.metrics.limited(limitPubkeyEvents)
		}
		return true, msg
	}
	return false, ""
}

// ingestTimeout bounds how long one event may wait for the writer.
const ingestTimeout = 30 * time.Second

// errShuttingDown refuses writes that arrive while the relay stops.
var errShuttingDown = errors.New("error: relay is shutting down, try again shortly")

// ingest is khatru's SaveEvent hook: it stores ev and returns who may
// receive it live, from what the store said of it (RL-8, RL-13).
func (r *Relay) ingest(ctx context.Context, ev *nostr.Event) (func(*khatru.WebSocket) bool, error) {
	r.writesMu.RLock()
	if r.closing {
		r.writesMu.RUnlock()
		return nil, errShuttingDown
	}
	r.writes.Add(1)
	r.writesMu.RUnlock()
	defer r.writes.Done()

	// A verified event is stored even if its sender's connection closes
	// meanwhile (khatru's ctx is the connection's): the sender may have
	// moved on, and a relay that accepted the bytes should not drop them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ingestTimeout)
	defer cancel()
	start := time.Now()
	a, err := r.store.Admit(ctx, ev)
	since(r.metrics.ingest, start)
	switch {
	case err == nil:
		if len(a.Threads) > 0 {
			// After the reply itself, as far as khatru's broadcast, which
			// follows this hook, comes first.
			// Shutdown waits for it as for the write.
			r.writes.Add(1)
			go func() {
				defer r.writes.Done()
				r.pushSummaries(a.Threads)
			}()
		}
		if a.Applied {
			return deliverToNobody, nil
		}
		return r.readersOf(a.Scope), nil
	case errors.Is(err, buzz.ErrDuplicate), errors.Is(err, buzz.ErrNewerVersionStored):
		return nil, eventstore.ErrDupEvent
	}
	if rej, ok := buzz.AsRejection(err); ok {
		return nil, rej
	}
	r.log.Error("storing event failed", "id", ev.ID, "kind", ev.Kind, "err", err)
	return nil, errors.New("error: could not store event")
}

// chunkBytes bounds the stored events one REQ filter reads at a time
// (RL-27a): with the connection's queue, all that a REQ holds in memory.
const chunkBytes = 256 << 10

// streamEvents is khatru's StreamEvents hook: a REQ filter's stored events,
// the same as one query would answer (order, limit, access), read in
// chunks of at most chunkBytes, each in a short read transaction of its
// own. A chunk is read in the connection's turn and one of the relay's
// read slots, and queued for the client before the next is read, so that a
// client that does not read stops the reading; the next chunk continues
// after the composite cursor (created_at, id) of the last event sent.
func (r *Relay) streamEvents(ctx context.Context, f nostr.Filter, send func(id string, event []byte) error) error {
	conn := r.connOf(ctx)
	if conn == nil {
		return nil // the connection is gone
	}
	if f.Limit <= 0 || f.Limit > r.cfg.Limits.MaxLimit {
		f.Limit = r.cfg.Limits.MaxLimit
	}
	c := &chunkCursor{filter: f, viewer: viewer(ctx)}
	for !c.done {
		if err := r.streamChunk(ctx, conn, c, send); err != nil {
			if ctx.Err() != nil || errors.Is(err, errConnectionClosed) {
				return nil // the subscription or connection is gone
			}
			r.refusedRequest(ctx, "REQ", err.Error())
			return err
		}
	}
	return nil
}

// chunkCursor is where a REQ filter's stored events continue: the filter
// with what is left of its limit and, once a chunk was sent, its until
// and beforeID at the last event sent.
type chunkCursor struct {
	filter   nostr.Filter
	viewer   buzz.Viewer
	beforeID string
	done     bool
}

// streamChunk reads the next chunk of c and sends it, in the connection's
// turn. An error of send (the subscription or connection ended) is
// returned as it is.
func (r *Relay) streamChunk(ctx context.Context, conn *connState, c *chunkCursor, send func(id string, event []byte) error) error {
	if !conn.readTurn(ctx) {
		return ctx.Err()
	}
	defer conn.endTurn()
	if ws := khatru.GetConnection(ctx); ws != nil && ws.Context.Err() != nil {
		// Closed while this request waited for its turn (a peer that
		// stopped reading): its request context ends only once the
		// reader notices, and every filter of it would read a chunk
		// for nothing meanwhile (RL-27a).
		return errConnectionClosed
	}
	evs, more, err := r.readChunk(ctx, r.cfg.Limits.limitedClient(conn.ip), c)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := send(ev.ID, ev.JSON); err != nil {
			return err
		}
	}
	c.filter.Limit -= len(evs)
	if !more || c.filter.Limit <= 0 {
		c.done = true
		return nil
	}
	last := evs[len(evs)-1]
	until := nostr.Timestamp(last.CreatedAt)
	c.filter.Until = &until
	c.beforeID = last.ID
	return nil
}

// errConnectionClosed ends a request whose connection closed.
var errConnectionClosed = errors.New("connection closed")

// readChunk reads the next chunk of c in one of the relay's read slots;
// more says events may follow it. An event larger than a chunk is read
// alone.
func (r *Relay) readChunk(ctx context.Context, ip netip.Prefix, c *chunkCursor) (evs []buzz.RawEvent, more bool, err error) {
	if !r.reads.acquire(ctx, ip) {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		r.metrics.limited(limitBusy)
		return nil, false, errQueryBusy
	}
	defer r.reads.release(ip)
	defer since(r.metrics.queryReq, time.Now())
	evs, more, err = r.store.QueryBounded(ctx, c.filter, c.viewer, c.beforeID, chunkBytes)
	if err == nil && more && len(evs) == 0 {
		one := c.filter
		one.Limit = 1
		evs, _, err = r.store.QueryBounded(ctx, one, c.viewer, c.beforeID, 0)
		more = len(evs) == 1
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		r.log.Error("query failed", "filter", logFilter(c.filter), "err", err)
		return nil, false, errors.New("error: could not query events")
	}
	return evs, more, nil
}

// countEvents counts in the connection's turn and one of the relay's read
// slots (RL-27a); a COUNT that finds no slot in time is refused busy.
func (r *Relay) countEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	conn := r.connOf(ctx)
	if conn == nil || !conn.readTurn(ctx) {
		return 0, nil // the connection is gone: the answer would go nowhere
	}
	defer conn.endTurn()
	ip := r.cfg.Limits.limitedClient(conn.ip)
	if !r.reads.acquire(ctx, ip) {
		r.metrics.limited(limitBusy)
		r.refusedRequest(ctx, "COUNT", errBusy)
		return 0, errQueryBusy
	}
	start := time.Now()
	n, err := r.store.Count(ctx, f, viewer(ctx))
	since(r.metrics.queryCount, start)
	r.reads.release(ip)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil // the connection is gone: the answer would go nowhere
		}
		r.log.Error("count failed", "filter", logFilter(f), "err", err)
		err = errors.New("error: could not count events")
		r.refusedRequest(ctx, "COUNT", err.Error())
		return 0, err
	}
	return n, nil
}

// errTooManyRequests refuses a REQ, COUNT, NEG-OPEN or NEG-MSG past the
// connection's rate (RL-27).
const errTooManyRequests = "rate-limited: too many requests, slow down"

// rejectRequest applies RL-27's limits to a whole REQ or COUNT: the REQ
// and COUNT rate of the connection, the filters one message may carry and
// the subscriptions one connection may hold open.
func (r *Relay) rejectRequest(ctx context.Context, req khatru.Request) (bool, string) {
	var msg string
	switch conn := r.connOf(ctx); {
	case conn != nil && conn.reqs != nil && !conn.reqs.AllowN(r.now(), 1):
		r.metrics.limited(limitRequests)
		msg = errTooManyRequests
	case req.Filters > r.cfg.Limits.MaxFilters:
		msg = fmt.Sprintf("invalid: too many filters (limit %d)", r.cfg.Limits.MaxFilters)
	case req.Label == "REQ" && req.Open >= r.cfg.Limits.MaxSubscriptions:
		r.metrics.limited(limitSubscriptions)
		msg = fmt.Sprintf("rate-limited: too many open subscriptions (limit %d)", r.cfg.Limits.MaxSubscriptions)
	default:
		return false, ""
	}
	r.refusedRequest(ctx, req.Label, msg)
	return true, msg
}

// maxFilterValues bounds each list of a filter (ids, authors, kinds, each
// tag): far more than any client asks for, far less than SQLite's limit of
// bound variables. nipcw.TooManyValues also bounds their sum, which with
// up to 51 tag names could pass that limit.
const maxFilterValues = nipcw.MaxFilterValues

// rejectFilter refuses filters no index can serve sensibly, and an
// anonymous REQ for a channel it may not read, which must authenticate
// first (RL-13).
func (r *Relay) rejectFilter(ctx context.Context, f nostr.Filter) (bool, string) {
	msg := unservedFilter(f)
	if msg == "" && r.needsAuth(ctx, f) {
		msg = authRequired
	}
	if msg == "" {
		return false, ""
	}
	r.refusedRequest(ctx, "REQ", msg)
	return true, msg
}

// rejectCountFilter refuses filters no index can serve sensibly. A COUNT
// of a channel its requester may not read is not refused: it counts what
// the requester may read (nothing), as for a nonexistent channel (RL-13).
func (r *Relay) rejectCountFilter(ctx context.Context, f nostr.Filter) (bool, string) {
	msg := unservedFilter(f)
	if msg == "" {
		return false, ""
	}
	r.refusedRequest(ctx, "COUNT", msg)
	return true, msg
}

// unservedFilter says why no index can serve f sensibly; "" when one can.
func unservedFilter(f nostr.Filter) string {
	if f.Search != "" {
		return "unsupported: search (NIP-50) is not supported"
	}
	if why := nipcw.TooManyValues(f); why != "" {
		return "invalid: " + why
	}
	return ""
}

// refusedRequest tells the log, at debug level, and the metrics of a REQ
// or COUNT answered CLOSED with reason (RL-30).
func (r *Relay) refusedRequest(ctx context.Context, label, reason string) {
	// Only when the line is written: a flood of refusals is the hot path
	// the rate limits keep cheap.
	if r.log.Enabled(ctx, slog.LevelDebug) {
		r.log.Debug("request refused", "request", label, "ip", r.logIP(ctx), "reason", reason)
	}
	r.metrics.refusedTotal.WithLabelValues(strings.ToLower(label), reasonPrefix(reason)).Inc()
}

// eventResult is khatru's OnEventResult hook: the answer to every EVENT,
// which the metrics count and, for a refusal, the log tells at debug
// level with its reason (RL-30).
func (r *Relay) eventResult(ctx context.Context, ev *nostr.Event, ok bool, reason string) {
	if ok {
		r.metrics.accepted.Inc()
		return
	}
	r.metrics.rejected.WithLabelValues(reasonPrefix(reason)).Inc()
	if r.log.Enabled(ctx, slog.LevelDebug) {
		r.log.Debug("event refused", "id", ev.ID, "kind", ev.Kind, "ip", r.logIP(ctx), "reason", reason)
	}
}

// logIP is the client IP of ctx's connection as the log names it
// (RL-28); "" when the connection is gone.
func (r *Relay) logIP(ctx context.Context) string {
	if conn := r.connOf(ctx); conn != nil {
		return conn.ip.String()
	}
	return ""
}

// logFilter is a filter as the log shows it: never more than a line.
func logFilter(f nostr.Filter) string {
	s := f.String()
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (r *Relay) onConnect(ctx context.Context) {
	ws := khatru.GetConnection(ctx)
	if ws == nil {
		return
	}
	ip := clientIP(ws.Request, r.cfg.TrustedProxies)
	r.connsMu.Lock()
	closed := r.connsClosed
	// Handler refuses the upgrade past the cap; upgrades that raced past
	// that check together are refused here, where they are counted.
	full := !closed && !r.enterIP(ip)
	if !closed && !full {
		r.conns[ws] = r.newConnState(ip)
	}
	r.connsMu.Unlock()
	switch {
	case closed:
		ws.Close(websocket.CloseServiceRestart, restartReason)
		return
	case full:
		r.refusedConnection(ip)
		ws.Close(websocket.CloseTryAgainLater, errTooManyConnections)
		return
	}
	r.log.Info("connection opened", "ip", ip.String())
	// The NIP-42 challenge comes first, so that a client may authenticate
	// before it asks for a private channel (RL-13).
	khatru.RequestAuth(ctx)
}

// connState is what the relay keeps of one WebSocket connection.
type connState struct {
	// ip is the client IP limits count by (RL-28).
	ip netip.Addr
	// opened is when the connection was registered; the log tells how
	// long it lasted (RL-30).
	opened time.Time
	// reqs is the bucket of the connection's REQs, COUNTs, NEG-OPENs and
	// NEG-MSGs together; nil when rates are off or ip is exempt (RL-27).
	reqs *rate.Limiter
	// turn is held by the one store read of the connection (readTurn).
	turn chan struct{}
	// sync are its open NIP-77 sync sessions, syncShare what they hold
	// with those of its client's other connections (RL-34).
	sync      syncSessions
	syncShare *syncShare
}

func (r *Relay) newConnState(ip netip.Addr) *connState {
	c := &connState{ip: ip, opened: time.Now(), turn: make(chan struct{}, 1),
		sync: syncSessions{byID: map[string]*syncSession{}}, syncShare: r.joinSyncShare(ip)}
	if rates := r.cfg.Limits.Rates; rates != nil && !r.cfg.Limits.exempt(c.ip) {
		if rr := rates.ReqsPerConnection; rr.PerSecond > 0 && rr.Burst > 0 {
			c.reqs = rate.NewLimiter(rate.Limit(rr.PerSecond), rr.Burst)
		}
	}
	return c
}

// readTurn waits for the connection's turn to read from the store and
// queue what it read: one read at a time per connection, so that one
// connection takes at most one of the relay's read slots, and holds at
// most one chunk of answers beside its queue (RL-27a). False when ctx
// ended first; a true readTurn must be followed by endTurn.
func (c *connState) readTurn(ctx context.Context) bool {
	select {
	case c.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *connState) endTurn() { <-c.turn }

// connOf is the state of the connection of ctx; nil when it is gone or
// was never registered.
func (r *Relay) connOf(ctx context.Context) *connState {
	ws := khatru.GetConnection(ctx)
	if ws == nil {
		return nil
	}
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	return r.conns[ws]
}

// restartReason goes with close code 1012 (service restart).
const restartReason = "relay restarting"

// errTooManyConnections refuses a connection past
// Limits.MaxConnectionsPerIP (RL-27).
const errTooManyConnections = "rate-limited: too many connections from your address"

// atConnectionCap reports whether ip has as many connections open as it
// may; r.connsMu must be held.
func (r *Relay) atConnectionCap(ip netip.Addr) bool {
	return !r.cfg.Limits.exempt(ip) && r.perIP[r.cfg.Limits.client(ip)] >= r.cfg.Limits.MaxConnectionsPerIP
}

// enterIP counts one more connection of ip (a WebSocket, or a `/query`
// request in flight), unless ip is at its cap: then it returns false and
// counts nothing. A true enterIP must be followed by one leaveIP.
// r.connsMu must be held.
func (r *Relay) enterIP(ip netip.Addr) bool {
	if r.atConnectionCap(ip) {
		return false
	}
	if !r.cfg.Limits.exempt(ip) {
		r.perIP[r.cfg.Limits.client(ip)]++
	}
	return true
}

// leaveIP uncounts a connection of ip that enterIP counted; r.connsMu
// must be held.
func (r *Relay) leaveIP(ip netip.Addr) {
	if r.cfg.Limits.exempt(ip) {
		return
	}
	c := r.cfg.Limits.client(ip)
	r.perIP[c]--
	if r.perIP[c] == 0 {
		delete(r.perIP, c)
	}
}

func (r *Relay) onDisconnect(ctx context.Context) {
	ws := khatru.GetConnection(ctx)
	if ws == nil {
		return
	}
	r.connsMu.Lock()
	st, ok := r.conns[ws]
	if ok {
		delete(r.conns, ws)
		r.leaveIP(st.ip)
	}
	r.connsMu.Unlock()
	if !ok {
		return // refused by onConnect, never counted
	}
	r.closeAllSync(st)
	r.leaveSyncShare(st.ip)
	r.log.Info("connection closed", "ip", st.ip.String(), "duration", time.Since(st.opened))
}

// refusedConnection tells the log, at debug level, and the metrics of a
// WebSocket connection refused at the cap of its client IP (RL-27, RL-30).
func (r *Relay) refusedConnection(ip netip.Addr) {
	r.metrics.limited(limitConnections)
	r.log.Debug("connection refused", "ip", ip.String(), "reason", errTooManyConnections)
}

// Handler serves WebSocket clients, the NIP-11 document, `/query`,
// `/metrics` (when Config.Metrics, to Config.MetricsAllow), `/healthz`,
// `/readyz`, and for browsers the web view (when Config.Web) or a line of
// text. Only WebSocket upgrades reach khatru: its other HTTP surfaces
// (NIP-86 management) are not offered.
func (r *Relay) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		if strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
			ip := clientIP(req, r.cfg.TrustedProxies)
			r.connsMu.Lock()
			full := r.atConnectionCap(ip)
			r.connsMu.Unlock()
			if full {
				r.refusedConnection(ip)
				writeError(w, http.StatusTooManyRequests, errTooManyConnections)
				return
			}
			r.kh.HandleWebsocket(w, req)
			return
		}
		// A body must arrive within BodyTimeout, whether /query reads it or
		// net/http discards it after another handler: a trickled body is
		// cut off (RL-27a). A WebSocket sets deadlines of its own.
		if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.cfg.Limits.BodyTimeout)); err != nil {
			r.log.Warn("cannot bound the time to read a request body", "err", err)
		}
		switch {
		case req.URL.Path == "/query":
			r.serveQuery(w, req)
		case req.URL.Path == "/metrics":
			if !r.metricsAllowed(req) {
				http.NotFound(w, req)
				return
			}
			r.metrics.handler.ServeHTTP(w, req)
		case req.URL.Path == "/healthz":
			serveHealth(w, req)
		case req.URL.Path == "/readyz":
			r.serveReady(w, req)
		case strings.Contains(req.Header.Get("Accept"), "application/nostr+json"):
			varyAccept(w)
			r.serveInfo(w, req)
		case r.web != nil && web.Wants(req):
			varyAccept(w)
			r.web.ServeHTTP(w, req)
		case req.URL.Path == "/" && (req.Method == http.MethodGet || req.Method == http.MethodHead):
			varyAccept(w)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintf(w, "%s is a nostr relay (buzz-lite %s). Connect a nostr client to this address over WebSocket.\n",
				r.cfg.Info.Name, r.cfg.Info.Version)
		default:
			varyAccept(w)
			http.NotFound(w, req)
		}
	})
	return mux
}

// varyAccept tells caches that the answer depends on the Accept header:
// from here on a path answers NIP-11, a web page (Cache-Control: public)
// or a line of text by Accept alone, and a shared cache that kept one
// would serve it to a client that asked for another.
func varyAccept(w http.ResponseWriter) { w.Header().Add("Vary", "Accept") }

// Serve serves on ln until ctx ends, then shuts down gracefully (RL-24):
// stop accepting, close every WebSocket with 1012 (service restart) so that
// clients reconnect at once, and wait for the writes in flight. The caller
// closes the store afterwards.
//
// Without Config.URL it serves only on a loopback address, whose ws:// URL
// is then the one NIP-42 AUTH events and NIP-98 tokens must name; on any
// other it closes ln and returns ErrRelayURLRequired (RL-28).
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	u, err := PublicURL(r.cfg.URL, ln.Addr().String())
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	r.url.Store(&u)
	srv := &http.Server{
		Handler: r.Handler(),
		// Headers must arrive within HeaderTimeout (RL-27a). No
		// ReadTimeout: it would bound WebSocket connections too; Handler
		// bounds each request's body instead.
		ReadHeaderTimeout: r.cfg.Limits.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(slogWriter{r.log}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return r.shutdown(srv)
}

// shutdownGrace bounds how long a shutdown waits for writes and requests.
const shutdownGrace = 10 * time.Second

func (r *Relay) shutdown(srv *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(ctx) }()

	// First refuse new writes and let the ones in flight finish, so that
	// their OKs are queued before the connections close.
	r.writesMu.Lock()
	r.closing = true
	r.writesMu.Unlock()
	writesDone := make(chan struct{})
	go func() { r.writes.Wait(); close(writesDone) }()
	var errs []error
	select {
	case <-writesDone:
	case <-ctx.Done():
		errs = append(errs, errors.New("shutdown: writes still in flight after grace period"))
	}

	r.connsMu.Lock()
	r.connsClosed = true
	conns := make([]*khatru.WebSocket, 0, len(r.conns))
	for ws := range r.conns {
		conns = append(conns, ws)
	}
	r.connsMu.Unlock()
	// In parallel: a close frame to a peer that stopped reading waits up to
	// a second, and one stalled client must not hold up the others.
	var wg sync.WaitGroup
	for _, ws := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws.Close(websocket.CloseServiceRestart, restartReason)
		}()
	}
	wg.Wait()

	if err := <-httpDone; err != nil {
		errs = append(errs, fmt.Errorf("shutdown: %w", err))
	}
	return errors.Join(errs...)
}
