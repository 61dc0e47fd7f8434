package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/khatru"
)

// NIP-77 (negentropy) sync with the read rule (RL-34). A NEG-OPEN's filter
// is answered with the set of events the same filter would give a REQ of
// the connection: the same refusals (auth-required for a channel only an
// authenticated connection might read), the same store query and viewer
// scoping, read as (created_at, id) pairs only, in chunks of
// Limits.MaxLimit in the connection's turn and the relay's read slots as a
// REQ's chunks are (the NEG-OPEN took one token of the connection's
// request rate, as a REQ does). The set is then held,
// for the session's NEG-MSG rounds: at most Limits.MaxSyncItems of them,
// in at most Limits.MaxSyncSessions sessions per client (Limits.client:
// all connections of one IPv4 address or IPv6 /64 together), the sessions
// of one client within its share of Limits.SyncMemoryBytes
// (syncClientShare) and all sessions of the relay within the whole of
// it. Each NEG-MSG takes a token of the connection's request rate and runs
// in the connection's turn and the relay's read slots, as a chunk of a REQ
// does, so that one client IP reconciles with no more than its share of
// the CPU (RL-27a); a session is closed after maxSyncRounds(items) rounds,
// syncLifetime after it opened, syncIdle without a message, and as soon as
// its reconciliation is finished. go-nostr's negentropy package does the
// reconciliation; its envelopes are parsed here (go-nostr's
// nip77.ParseNegMessage recognises none, and answers NEG-ERROR where
// NIP-77 says NEG-ERR).

// syncIdle is how long a sync session is kept without a NEG-MSG (the
// relay's syncIdle, which tests shorten).
const syncIdle = 30 * time.Second

// syncLifetime is how long a sync session is kept at all (the relay's
// syncLifetime, which tests shorten): a sync that moves sync_items ids in
// maxSyncRounds rounds takes seconds, and a session kept alive by a
// NEG-MSG within every syncIdle would otherwise hold its memory forever.
const syncLifetime = 5 * time.Minute

// syncItemBytes is what one (created_at, id) pair of a session holds at
// worst: its 64-character id string (one 64-byte allocation) and the
// vector's 24-byte item, three times over, since the vector's slice grows
// by append, which leaves up to half of it unused and, while it grows,
// keeps the old array beside the new one twice its size.
const syncItemBytes = 64 + 3*24

// syncClientShare is the part of Limits.SyncMemoryBytes the sessions of
// one client may hold together, however many connections it opens: a
// quarter, so that one client still syncs a whole set of the default
// sync_items (100,000 x 136 B, 13 MB, of a 16 MiB share) while four
// clients at least hold sets that large at once, and no one client holds
// the relay's whole sync memory (RL-34; one address with 5 sockets of 4
// sessions each held all of it, and every other sync was refused busy).
const syncClientShare = 4

// errSyncShare refuses a sync past its client's share of the sync memory,
// of the limit's number of events.
const errSyncShare = "blocked: your sync sessions hold too many events (limit %d), close one or narrow the filter"

// syncDone is the negentropy message of a finished reconciliation: the
// protocol version byte with no ranges after it.
const syncDone = "61"

// maxSyncRounds is how many NEG-MSG rounds a session of a set of at most
// items ids may take. An honest reconciliation moves ids 32 bytes each in
// frames of syncFrameBytes, both ways in the worst case, and descends the
// ranges of the set 16 at a time, about log16(items) rounds (5 for
// 100,000); the 16 rounds beyond the ids' rounds are that descent three
// times over. Past it, a client is making the relay fingerprint the set
// for nothing.
func maxSyncRounds(items int) int {
	return 2*(items*32/syncFrameBytes+1) + 16
}

// syncFrameBytes bounds one NEG-MSG the relay sends (the negentropy frame
// size limit, in bytes before hex encoding).
const syncFrameBytes = 128 << 10

// maxSubscriptionID is NIP-01's longest subscription id.
const maxSubscriptionID = 64

// negEnvelope is one NIP-77 message of a client.
type negEnvelope struct {
	label   string // NEG-OPEN, NEG-MSG or NEG-CLOSE
	id      string // the subscription id
	filter  nostr.Filter
	message string // the negentropy message (hex), of NEG-OPEN and NEG-MSG
}

// errNotNegentropy says a message is not a NIP-77 one.
var errNotNegentropy = errors.New("not a NIP-77 message")

// parseNegEnvelope reads a NIP-77 client message. It returns
// errNotNegentropy for a message whose label is not NEG-OPEN, NEG-MSG or
// NEG-CLOSE; for one that is but is malformed, an error and, when it could
// be read, the subscription id to answer it on.
func parseNegEnvelope(message string) (negEnvelope, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(message), &parts); err != nil || len(parts) == 0 {
		return negEnvelope{}, errNotNegentropy
	}
	var env negEnvelope
	if err := json.Unmarshal(parts[0], &env.label); err != nil {
		return negEnvelope{}, errNotNegentropy
	}
	want := map[string]int{"NEG-OPEN": 4, "NEG-MSG": 3, "NEG-CLOSE": 2}[env.label]
	if want == 0 {
		return negEnvelope{}, errNotNegentropy
	}
	if len(parts) < 2 || json.Unmarshal(parts[1], &env.id) != nil || env.id == "" {
		return negEnvelope{label: env.label}, fmt.Errorf("%s: want a subscription id", env.label)
	}
	if len(env.id) > maxSubscriptionID {
		return negEnvelope{label: env.label}, fmt.Errorf("%s: subscription id longer than %d characters", env.label, maxSubscriptionID)
	}
	if len(parts) != want {
		return env, fmt.Errorf("%s: want %d elements, got %d", env.label, want, len(parts))
	}
	if env.label == "NEG-OPEN" {
		if err := env.filter.UnmarshalJSON(parts[2]); err != nil {
			return env, fmt.Errorf("NEG-OPEN: filter: %w", err)
		}
	}
	if env.label != "NEG-CLOSE" {
		if err := json.Unmarshal(parts[len(parts)-1], &env.message); err != nil {
			return env, fmt.Errorf("%s: the negentropy message must be a string: %w", env.label, err)
		}
		if err := buzz.CheckNegentropyMessage(env.message); err != nil {
			return env, fmt.Errorf("%s: %w", env.label, err)
		}
	}
	return env, nil
}

// syncSession is one NEG-OPEN's reconciliation.
type syncSession struct {
	// mu is held while the session reads its set and while it reconciles
	// a message: one at a time. NIP-77 is lockstep (a client sends its
	// next message once it has the relay's answer), and each message runs
	// in its own goroutine, so the order of messages a client sends
	// without waiting is not kept.
	mu  sync.Mutex
	neg *negentropy.Negentropy
	// rounds counts the messages reconciled.
	rounds int
	// ctx ends when the session is closed; cancel closes it.
	ctx    context.Context
	cancel context.CancelFunc
	// held is what the session took from the relay's sync memory and its
	// client's share of it.
	held int64
	// idle closes the session after syncIdle without a message, lifetime
	// syncLifetime after it opened.
	idle, lifetime *time.Timer
}

// syncSessions are the open sync sessions of one connection.
type syncSessions struct {
	mu   sync.Mutex
	byID map[string]*syncSession
}

// syncShare is what the sync sessions of one client hold: how many are
// open and the bytes they hold, within Limits.MaxSyncSessions and the
// client's part of Limits.SyncMemoryBytes. conns counts the connections
// that use it, under the relay's syncMu, so that a client with none is
// forgotten.
type syncShare struct {
	mu       sync.Mutex
	sessions int
	held     int64
	conns    int
}

// joinSyncShare is the sync share of a new connection of ip: its client's,
// or for an exempt network, to which limits per client do not apply, one
// of the connection's own. A share joined must be left once the
// connection's sessions are closed.
func (r *Relay) joinSyncShare(ip netip.Addr) *syncShare {
	client := r.cfg.Limits.limitedClient(ip)
	if !client.IsValid() {
		return &syncShare{}
	}
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	share := r.syncShares[client]
	if share == nil {
		share = &syncShare{}
		r.syncShares[client] = share
	}
	share.conns++
	return share
}

// leaveSyncShare gives up a closed connection's part in its client's share.
func (r *Relay) leaveSyncShare(ip netip.Addr) {
	client := r.cfg.Limits.limitedClient(ip)
	if !client.IsValid() {
		return
	}
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	if share := r.syncShares[client]; share != nil {
		if share.conns--; share.conns == 0 {
			delete(r.syncShares, client)
		}
	}
}

// ended uncounts n sessions unregistered from a connection.
func (s *syncShare) ended(n int) {
	s.mu.Lock()
	s.sessions -= n
	s.mu.Unlock()
}

// negentropyMessage is khatru's NegentropyMessage hook, in the
// connection's reader: it opens and closes sessions in the order the
// client sent them, and returns the work of reading and reconciling.
func (r *Relay) negentropyMessage(ctx context.Context, message string) (func(), bool) {
	env, err := parseNegEnvelope(message)
	if errors.Is(err, errNotNegentropy) {
		return nil, false
	}
	conn := r.connOf(ctx)
	ws := khatru.GetConnection(ctx)
	if conn == nil || ws == nil {
		return nil, true // the connection is gone
	}
	if err != nil {
		msg := "invalid: " + err.Error()
		r.refusedRequest(ctx, env.label, msg)
		if env.id == "" {
			return func() { ws.WriteJSON(nostr.NoticeEnvelope(msg)) }, true
		}
		if env.label != "NEG-OPEN" {
			r.closeSync(conn, env.id)
		}
		return func() { negError(ws, env.id, msg) }, true
	}
	switch env.label {
	case "NEG-OPEN":
		s, refused := r.openSync(ctx, conn, env.id)
		if refused != "" {
			return func() { negError(ws, env.id, refused) }, true
		}
		return func() { r.startSync(ctx, conn, ws, s, env) }, true
	case "NEG-MSG":
		conn.sync.mu.Lock()
		s := conn.sync.byID[env.id]
		conn.sync.mu.Unlock()
		if s == nil {
			return func() { negError(ws, env.id, "closed: no open sync session with this id") }, true
		}
		if conn.reqs != nil && !conn.reqs.AllowN(r.now(), 1) {
			r.metrics.limited(limitRequests)
			r.refusedRequest(ctx, "NEG-MSG", errTooManyRequests)
			r.dropSync(conn, env.id, s)
			return func() { negError(ws, env.id, errTooManyRequests) }, true
		}
		return func() { r.reconcile(conn, ws, s, env.id, env.message) }, true
	default: // NEG-CLOSE
		r.closeSync(conn, env.id)
		return nil, true
	}
}

// negError answers a sync session with NEG-ERR. Like every answer, it
// fails only when the connection is gone, and then there is no one to
// tell.
func negError(ws *khatru.WebSocket, id, reason string) {
	ws.WriteJSON([]any{"NEG-ERR", id, reason})
}

// openSync registers a new session id on conn, replacing one of the same
// id, unless the connection's REQ rate or its client's session cap
// refuses it.
func (r *Relay) openSync(ctx context.Context, conn *connState, id string) (*syncSession, string) {
	if conn.reqs != nil && !conn.reqs.AllowN(r.now(), 1) {
		r.metrics.limited(limitRequests)
		r.refusedRequest(ctx, "NEG-OPEN", errTooManyRequests)
		return nil, errTooManyRequests
	}
	r.closeSync(conn, id)
	conn.sync.mu.Lock()
	defer conn.sync.mu.Unlock()
	share := conn.syncShare
	share.mu.Lock()
	full := share.sessions >= r.cfg.Limits.MaxSyncSessions
	if !full {
		share.sessions++
	}
	share.mu.Unlock()
	if full {
		r.metrics.limited(limitSyncSessions)
		msg := fmt.Sprintf("rate-limited: too many open sync sessions (limit %d)", r.cfg.Limits.MaxSyncSessions)
		r.refusedRequest(ctx, "NEG-OPEN", msg)
		return nil, msg
	}
	s := &syncSession{}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.mu.Lock() // until startSync has read the set
	conn.sync.byID[id] = s
	ws := khatru.GetConnection(ctx)
	s.lifetime = time.AfterFunc(r.syncLifetime, func() {
		if r.dropSync(conn, id, s) {
			negError(ws, id, fmt.Sprintf("closed: sync session open for %s", r.syncLifetime))
		}
	})
	return s, ""
}

// closeSync ends conn's session id, if open, and gives back its memory.
func (r *Relay) closeSync(conn *connState, id string) {
	conn.sync.mu.Lock()
	s := conn.sync.byID[id]
	delete(conn.sync.byID, id)
	conn.sync.mu.Unlock()
	if s != nil {
		conn.syncShare.ended(1)
		r.endSync(conn, s)
	}
}

// dropSync ends session s of id, and unregisters it unless a NEG-OPEN of
// the same id has replaced it meanwhile; it reports whether s was still
// the session of id.
func (r *Relay) dropSync(conn *connState, id string, s *syncSession) bool {
	conn.sync.mu.Lock()
	current := conn.sync.byID[id] == s
	if current {
		delete(conn.sync.byID, id)
	}
	conn.sync.mu.Unlock()
	if current {
		conn.syncShare.ended(1)
	}
	r.endSync(conn, s)
	return current
}

// closeAllSync ends every session of a connection that closed.
func (r *Relay) closeAllSync(conn *connState) {
	conn.sync.mu.Lock()
	sessions := conn.sync.byID
	conn.sync.byID = map[string]*syncSession{}
	conn.sync.mu.Unlock()
	conn.syncShare.ended(len(sessions))
	for _, s := range sessions {
		r.endSync(conn, s)
	}
}

// endSync cancels a session removed from conn's sessions and, once it is
// not reading or reconciling, gives back its memory.
func (r *Relay) endSync(conn *connState, s *syncSession) {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Stop()
	}
	if s.lifetime != nil {
		s.lifetime.Stop()
	}
	s.neg = nil
	r.syncMemory.give(netip.Prefix{}, s.held)
	conn.syncShare.mu.Lock()
	conn.syncShare.held -= s.held
	conn.syncShare.mu.Unlock()
	s.held = 0
}

// startSync reads the set env's filter gives the connection's REQ and
// answers the first message. s.mu is held, from openSync.
func (r *Relay) startSync(ctx context.Context, conn *connState, ws *khatru.WebSocket, s *syncSession, env negEnvelope) {
	vec, refused := r.syncSet(s, conn, env.filter)
	if refused != "" {
		s.mu.Unlock()
		if s.ctx.Err() == nil {
			r.refusedRequest(ctx, "NEG-OPEN", refused)
			r.dropSync(conn, env.id, s)
			negError(ws, env.id, refused)
		}
		return
	}
	s.neg = negentropy.New(vec, syncFrameBytes)
	s.mu.Unlock()
	r.reconcile(conn, ws, s, env.id, env.message)
}

// syncSet is the (created_at, id) set of f for the viewer of s's
// connection, read as a REQ of f reads it, and taken from the relay's
// sync memory as it grows; refused is the NEG-ERR reason when it cannot
// be served. A filter's limit takes the newest events, as a REQ's does,
// without REQ's max_limit clamp: Limits.MaxSyncItems bounds a sync.
func (r *Relay) syncSet(s *syncSession, conn *connState, f nostr.Filter) (*vector.Vector, string) {
	ctx := s.ctx
	if msg := unservedFilter(f); msg != "" {
		return nil, msg
	}
	if f.LimitZero {
		return nil, "invalid: a sync of limit 0 has nothing to reconcile"
	}
	if r.needsAuth(ctx, f) {
		khatru.RequestAuth(ctx)
		return nil, authRequired
	}
	maxItems := r.cfg.Limits.MaxSyncItems
	limited := f.Limit > 0 && f.Limit <= maxItems
	if !limited {
		f.Limit = maxItems + 1 // one more tells the set is too large
	}
	vec := vector.New()
	c := &chunkCursor{filter: f, viewer: viewer(ctx)}
	for !c.done {
		ps, err := r.syncChunk(ctx, conn, c)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "closed: sync session closed"
			}
			return nil, err.Error()
		}
		if vec.Size()+len(ps) > maxItems {
			r.metrics.limited(limitSyncItems)
			return nil, fmt.Sprintf("blocked: too many events to sync (limit %d), narrow the filter", maxItems)
		}
		if msg := r.holdSyncItems(s, conn, len(ps)); msg != "" {
			return nil, msg
		}
		for _, p := range ps {
			vec.Insert(nostr.Timestamp(p.CreatedAt), p.ID)
		}
	}
	vec.Seal()
	return vec, ""
}

// holdSyncItems takes the memory of n more items of session s from its
// client's share and the relay's sync memory; refused is the NEG-ERR
// reason when either has no room.
func (r *Relay) holdSyncItems(s *syncSession, conn *connState, n int) (refused string) {
	bytes := int64(n) * syncItemBytes
	limit := r.cfg.Limits.SyncMemoryBytes / syncClientShare
	share := conn.syncShare
	share.mu.Lock()
	fits := share.held+bytes <= limit
	if fits {
		share.held += bytes
	}
	share.mu.Unlock()
	if !fits {
		r.metrics.limited(limitSyncMemory)
		return fmt.Sprintf(errSyncShare, limit/syncItemBytes)
	}
	if !r.syncMemory.take(s.ctx, netip.Prefix{}, bytes) {
		share.mu.Lock()
		share.held -= bytes
		share.mu.Unlock()
		r.metrics.limited(limitBusy)
		return errBusy
	}
	s.held += bytes
	return ""
}

// syncChunk reads the positions of the next chunk of c, at most
// Limits.MaxLimit, in the connection's turn and one of the relay's read
// slots, as a REQ's chunk is read (RL-27a), and moves c past it.
func (r *Relay) syncChunk(ctx context.Context, conn *connState, c *chunkCursor) ([]buzz.Position, error) {
	if !conn.readTurn(ctx) {
		return nil, ctx.Err()
	}
	defer conn.endTurn()
	ip := r.cfg.Limits.limitedClient(conn.ip)
	if !r.reads.acquire(ctx, ip) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.metrics.limited(limitBusy)
		return nil, errQueryBusy
	}
	defer r.reads.release(ip)
	f := c.filter
	f.Limit = min(f.Limit, r.cfg.Limits.MaxLimit)
	ps, err := r.store.Positions(ctx, f, c.viewer, c.beforeID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.log.Error("sync query failed", "filter", logFilter(f), "err", err)
		return nil, errors.New("error: could not query events")
	}
	c.filter.Limit -= len(ps)
	if len(ps) < f.Limit || c.filter.Limit <= 0 {
		c.done = true
		return ps, nil
	}
	last := ps[len(ps)-1]
	until := nostr.Timestamp(last.CreatedAt)
	c.filter.Until = &until
	c.beforeID = last.ID
	return ps, nil
}

// reconcile answers one negentropy message of session s (id) and
// restarts its idle timer. A message the reconciliation refuses, one past
// the session's rounds, and one that finds no read slot in time close the
// session with NEG-ERR; an answer that finishes the reconciliation closes
// it too, so that its memory is free at once.
func (r *Relay) reconcile(conn *connState, ws *khatru.WebSocket, s *syncSession, id, message string) {
	out, refused := r.reconcileRound(conn, ws, s, id, message)
	switch {
	case refused != "":
		if r.dropSync(conn, id, s) {
			negError(ws, id, refused)
		}
	case out != "":
		if out == syncDone {
			r.dropSync(conn, id, s)
		}
		ws.WriteJSON([]any{"NEG-MSG", id, out})
	}
}

// reconcileRound reconciles one message of session s in the connection's
// turn and one of the relay's read slots (RL-27a): out is the answer,
// refused the NEG-ERR reason, both empty when the session was closed
// meanwhile.
func (r *Relay) reconcileRound(conn *connState, ws *khatru.WebSocket, s *syncSession, id, message string) (out, refused string) {
	// The session first, then the turn and a slot, in the order the
	// reading of its set takes them (startSync holds s.mu while its chunks
	// take turns): a NEG-MSG sent right after its NEG-OPEN waits for the
	// set holding neither, instead of holding the turn the set waits for.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.neg == nil {
		return "", ""
	}
	if !conn.readTurn(s.ctx) {
		return "", ""
	}
	defer conn.endTurn()
	ip := r.cfg.Limits.limitedClient(conn.ip)
	if !r.reads.acquire(s.ctx, ip) {
		if s.ctx.Err() != nil {
			return "", ""
		}
		r.metrics.limited(limitBusy)
		return "", errBusy
	}
	defer r.reads.release(ip)
	if s.rounds++; s.rounds > r.maxSyncRounds {
		r.metrics.limited(limitSyncRounds)
		return "", fmt.Sprintf("blocked: too many sync rounds (limit %d)", r.maxSyncRounds)
	}
	out, err := s.neg.Reconcile(message)
	if err != nil {
		return "", "invalid: " + err.Error()
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	s.idle = time.AfterFunc(r.syncIdle, func() { r.expireSync(conn, ws, id, s) })
	return out, ""
}

// expireSync closes session s (id) after r.syncIdle without a message,
// unless it was closed or replaced since.
func (r *Relay) expireSync(conn *connState, ws *khatru.WebSocket, id string, s *syncSession) {
	if r.dropSync(conn, id, s) {
		negError(ws, id, fmt.Sprintf("closed: sync session idle for %s", r.syncIdle))
	}
}
