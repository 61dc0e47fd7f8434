package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/chunks"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// maxQueryBody bounds a `/query` body (RL-16).
const maxQueryBody = 1 << 20

// queryTimeout bounds the database work of one `/query` request.
const queryTimeout = 15 * time.Second

// queryWriteTimeout bounds how long a client may take to read an answer,
// which holds its share of the memory budget until then (RL-27a).
const queryWriteTimeout = 30 * time.Second

// errInternal is the only thing a client hears of a failure of ours.
const errInternal = "internal server error"

// The refusals of RL-27 and RL-27a, each a 429 with Retry-After.
const (
	errQueryRate = "rate-limited: too many queries, slow down"
	errBusy      = "rate-limited: the relay is busy, try again shortly"
)

// errBodyTooLarge is the 413 of a body over maxQueryBody (RL-16), with the
// prefix RL-27 gives a 413.
const errBodyTooLarge = "rate-limited: request body too large (limit 1 MiB)"

// errQueryBusy is errBusy as an error: a REQ, COUNT or `/query` for
// which no read slot or no memory came free in time.
var errQueryBusy = errors.New(errBusy)

// serveQuery is `POST /query` (RL-16..RL-20, RL-35, CW-1..CW-22): NIP-98
// auth, the body's filters each on one path (window, feed, thread,
// generic, in that order), and the signed events they yield as one JSON
// array. Any error refuses the whole request, nothing partial. Its cost
// is bounded: by the connections and the rate per client IP before the
// body is read, then by a read slot shared with REQ and COUNT, and by the
// memory budget all answers share, from which the answer reserves before
// each read (RL-27, RL-27a).
func (r *Relay) serveQuery(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Allow-Methods", "POST")
	switch req.Method {
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		h.Set("Allow", "POST, OPTIONS")
		r.queryError(w, req, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	limited, leave, ok := r.admitRequest(w, req, func(status int, msg string) { r.queryError(w, req, status, msg) })
	if !ok {
		return
	}
	defer leave()
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxQueryBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			r.queryError(w, req, http.StatusRequestEntityTooLarge, errBodyTooLarge)
		case errors.Is(err, os.ErrDeadlineExceeded):
			h.Set("Connection", "close")
			r.queryError(w, req, http.StatusRequestTimeout, "request body not received in time")
		default:
			r.queryError(w, req, http.StatusBadRequest, "invalid filters: could not read the body")
		}
		return
	}
	// The body is in: a read deadline left running would cancel the
	// request's context when it passed, while the query works.
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Time{}); err != nil {
		r.log.Warn("clearing the body read deadline", "err", err)
	}
	pubkey, err := r.nip98.verify(req.Context(), req.Header.Get("Authorization"), req.Method, queryURL(req, r.publicURL()), body)
	var refused *nip98Error
	switch {
	case errors.As(err, &refused):
		r.queryError(w, req, http.StatusUnauthorized, refused.Error())
		return
	case err != nil:
		if req.Context().Err() == nil {
			r.log.Error("checking a NIP-98 token", "err", err)
		}
		r.queryError(w, req, http.StatusInternalServerError, errInternal)
		return
	}
	filters, err := nipcw.ParseBody(body)
	if err != nil {
		r.queryError(w, req, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), queryTimeout)
	defer cancel()
	// The request's scope is decided once, by the access state it is
	// planned with: a window it may not read is judged again by the state
	// the database has now, when other processes share it.
	v := buzz.Viewer(pubkey)
	var plan *queryPlan
	c := r.communityFor(ctx, func(c *buzz.Community) bool {
		plan = planQuery(filters, c.ScopeOf(v), c)
		return plan.readsAll()
	})
	if plan == nil || plan.community != c { // not asked, or another state
		plan = planQuery(filters, c.ScopeOf(v), c)
	}
	if err := plan.err; err != nil {
		r.queryError(w, req, http.StatusBadRequest, err.Error())
		return
	}
	out := newResponse(r.queryMemory, r.answerChunks, limited)
	defer out.release()
	start := time.Now()
	err = r.runInSlot(ctx, limited, plan, out)
	since(r.metrics.queryHTTP, start)
	switch {
	case err == nil:
	case errors.Is(err, errResponseTooLarge):
		r.queryError(w, req, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, errQueryBusy) && ctx.Err() == nil:
		r.metrics.limited(limitBusy)
		h.Set("Retry-After", "1")
		r.queryError(w, req, http.StatusTooManyRequests, errBusy)
		return
	default:
		if ctx.Err() == nil {
			r.log.Error("query failed", "err", err)
		}
		r.queryError(w, req, http.StatusInternalServerError, errInternal)
		return
	}
	h.Set("Content-Type", "application/json")
	if err := rc.SetWriteDeadline(time.Now().Add(queryWriteTimeout)); err != nil {
		r.log.Warn("bounding the time to write an answer", "err", err)
	}
	if err := out.writeTo(w); err != nil {
		r.log.Debug("writing query response", "err", err)
	}
}

// admitRequest admits an HTTP request that reads the store (`/query`, the
// web view): while it runs it is a connection of its client IP, so that
// one IP cannot hold a body in each of hundreds of trickled requests, and
// it takes a token of the `/query` rate of that IP (RL-27, RL-27a). A
// refusal is answered through refuse, with Retry-After for the rate, and
// ok is false; otherwise leave must be called once the request is done.
// limited is the IP the request's read slot counts by.
func (r *Relay) admitRequest(w http.ResponseWriter, req *http.Request, refuse func(status int, msg string)) (limited netip.Prefix, leave func(), ok bool) {
	ip := clientIP(req, r.cfg.TrustedProxies)
	r.connsMu.Lock()
	entered := r.enterIP(ip)
	r.connsMu.Unlock()
	if !entered {
		r.metrics.limited(limitConnections)
		refuse(http.StatusTooManyRequests, errTooManyConnections)
		return netip.Prefix{}, nil, false
	}
	leave = func() {
		r.connsMu.Lock()
		r.leaveIP(ip)
		r.connsMu.Unlock()
	}
	limited = r.cfg.Limits.limitedClient(ip)
	if limited.IsValid() && !r.queryRate.allow(limited.String(), r.now()) {
		leave()
		r.metrics.limited(limitQueries)
		w.Header().Set("Retry-After", retryAfter(r.cfg.Limits.Rates.QueriesPerIP))
		refuse(http.StatusTooManyRequests, errQueryRate)
		return netip.Prefix{}, nil, false
	}
	return limited, leave, true
}

// runInSlot runs plan in one of the relay's read slots, errQueryBusy when
// none comes free in time. The slot is given back however the query ends,
// a panic included: net/http recovers it, and the slot would be lost to
// every later request (RL-27a).
func (r *Relay) runInSlot(ctx context.Context, ip netip.Prefix, plan *queryPlan, out *response) error {
	if !r.reads.acquire(ctx, ip) {
		return errQueryBusy
	}
	defer r.reads.release(ip)
	return r.runQuery(ctx, plan, out)
}

// retryAfter is the Retry-After of a refusal by rate: the whole seconds
// until its bucket holds a token again.
func retryAfter(rate Rate) string {
	return strconv.Itoa(max(1, int(math.Ceil(1/rate.PerSecond))))
}

// response is the JSON array a `/query` answers, written as it is built:
// stored events as the store wrote them, overlays and generic results by
// their own encoder, each once (encoding/json would check and compact
// every byte again, a quarter of a page's time). What it holds, and what
// it is about to read, is reserved from budget first (RL-27a). Its bytes
// are in chunks of the relay's pool, outside the Go heap: a buffer grown
// by doubling copied a 32 MiB answer twice over and left the collector
// 64 MiB of garbage for each.
type response struct {
	chunks []chunks.Chunk // the last one is being filled
	size   int
	n      int
	pool   *chunks.Pool

	budget   *byteBudget
	client   netip.Prefix // whose share of budget it holds
	reserved int64
}

// keptAnswerChunks is how many chunks the pool keeps for later answers
// (8 MiB): as many as the answers of busy window reading use at once, and
// not what a burst of large answers took.
const keptAnswerChunks = 32

// newAnswerChunks is the pool of the answers' chunks: enough outside the
// heap for what the budget lets answers hold, and a chunk for each read
// slot, whose writes run ahead of its reservation until it settles.
func newAnswerChunks(l Limits) *chunks.Pool {
	return chunks.NewPool(keptAnswerChunks, int(l.QueryMemoryBytes/chunks.Size)+l.MaxConcurrentQueries)
}

// newResponse is an empty answer whose memory is reserved from budget, in
// client's share of it, and held in chunks of pool.
func newResponse(budget *byteBudget, pool *chunks.Pool, client netip.Prefix) *response {
	return &response{budget: budget, pool: pool, client: client}
}

// reserve takes n bytes of the budget for the answer; errQueryBusy when
// they do not come free in time.
func (o *response) reserve(ctx context.Context, n int64) error {
	if !o.budget.take(ctx, o.client, n) {
		return errQueryBusy
	}
	o.reserved += n
	return nil
}

// settle makes the reservation what the answer holds, its chunks whole
// (an answer of a few bytes holds a chunk while a stalled client is slow
// to take it): it gives back what was reserved for a read beyond what the
// read brought, and reserves what was written beyond the reservation (the
// overlays).
func (o *response) settle(ctx context.Context) error {
	d := int64(len(o.chunks))*chunks.Size - o.reserved
	if d > 0 {
		return o.reserve(ctx, d)
	}
	o.budget.give(o.client, -d)
	o.reserved += d
	return nil
}

// keep gives back what is reserved beyond n bytes.
func (o *response) keep(n int64) {
	if spare := o.reserved - n; spare > 0 {
		o.budget.give(o.client, spare)
		o.reserved = n
	}
}

// release gives the whole reservation and every chunk back, once the
// answer is written or refused.
func (o *response) release() {
	o.budget.give(o.client, o.reserved)
	o.reserved = 0
	for _, c := range o.chunks {
		o.pool.Put(c)
	}
	o.chunks, o.size = nil, 0
}

// left is how many bytes the answer may still grow by.
func (o *response) left() int { return maxResponseBytes - o.size }

// write appends p, across chunks.
func (o *response) write(p []byte) {
	o.size += len(p)
	for len(p) > 0 {
		if len(o.chunks) == 0 || len(o.chunks[len(o.chunks)-1].B) == chunks.Size {
			o.chunks = append(o.chunks, o.pool.Get())
		}
		c := &o.chunks[len(o.chunks)-1]
		k := copy(c.B[len(c.B):chunks.Size], p)
		c.B = c.B[:len(c.B)+k]
		p = p[k:]
	}
}

var (
	arrayOpen  = []byte{'['}
	arrayComma = []byte{','}
)

func (o *response) next() {
	if o.n == 0 {
		o.write(arrayOpen)
	} else {
		o.write(arrayComma)
	}
	o.n++
}

func (o *response) raw(evs []buzz.RawEvent) {
	for _, ev := range evs {
		o.encoded(ev.JSON)
	}
}

// encoded adds an event already encoded.
func (o *response) encoded(ev []byte) {
	o.next()
	o.write(ev)
}

func (o *response) events(evs []*nostr.Event) error {
	for _, ev := range evs {
		j, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode event %s: %w", ev.ID, err)
		}
		o.encoded(j)
	}
	return nil
}

// writeTo writes the whole answer, closing the array, with its length
// said first. Each chunk written goes back to the pool and its bytes to
// the budget at once: a client slow to read a large answer holds only
// what it has not read yet (RL-27a).
func (o *response) writeTo(w http.ResponseWriter) error {
	end := []byte("]\n")
	if o.n == 0 {
		end = []byte("[]\n")
	}
	w.Header().Set("Content-Length", strconv.Itoa(o.size+len(end)))
	for len(o.chunks) > 0 {
		c := o.chunks[0]
		if _, err := w.Write(c.B); err != nil {
			return err
		}
		o.chunks = o.chunks[1:]
		o.pool.Put(c)
		o.keep(int64(len(o.chunks)) * chunks.Size)
	}
	_, err := w.Write(end)
	return err
}

// queryPlan is a request whose every filter has been checked: windows,
// feeds, threads and generic filters, each list in request order (RL-18),
// read with one scope, decided in community.
type queryPlan struct {
	scope     buzz.Scope
	community *buzz.Community
	windows   []plannedWindow
	feeds     []*nipcw.FeedRequest
	threads   []*nipcw.ThreadRequest
	generic   []*nipcw.GenericRequest
	// err refuses the request: the first window the scope reads whose
	// cursor, kinds or limit is wrong.
	err error
}

type plannedWindow struct {
	req    *nipcw.WindowRequest
	cursor *nipcw.Cursor
	// readable is false for a channel the viewer may not read or that does
	// not exist: no rows and no overlays (CW-3).
	readable bool
}

// planQuery sorts filters by path and checks what is checked only after
// access, by scope in c: a window's cursor, kinds and limit (CW-3, CW-5).
func planQuery(filters []nipcw.Filter, scope buzz.Scope, c *buzz.Community) *queryPlan {
	p := &queryPlan{scope: scope, community: c}
	for _, f := range filters {
		switch {
		case f.Window != nil:
			pw := plannedWindow{req: f.Window, readable: scope.Reads(c.Channel(f.Window.Channel))}
			if pw.readable {
				var err error
				if pw.cursor, err = f.Window.Check(); err != nil && p.err == nil {
					p.err = err
				}
			}
			p.windows = append(p.windows, pw)
		case f.Feed != nil:
			p.feeds = append(p.feeds, f.Feed)
		case f.Thread != nil:
			p.threads = append(p.threads, f.Thread)
		default:
			p.generic = append(p.generic, f.Generic)
		}
	}
	return p
}

// readsAll reports whether the plan's scope reads every window it names.
func (p *queryPlan) readsAll() bool {
	for _, pw := range p.windows {
		if !pw.readable {
			return false
		}
	}
	return true
}

// maxResponseBytes bounds what one request may make the relay hold: 32
// filters of 1,000 large events each would be gigabytes.
const maxResponseBytes = 32 << 20

// errResponseTooLarge refuses a request whose answer would pass
// maxResponseBytes; like every error it refuses the whole request.
var errResponseTooLarge = errors.New("invalid filters: the answer would exceed 32 MiB; ask for fewer events")

// firstGrant is the byte bound of a window's or thread's first read (most
// pages fit) and of each read of a generic filter.
const firstGrant = 1 << 20

func (r *Relay) runQuery(ctx context.Context, p *queryPlan, out *response) error {
	// After each path, the answer must still be within maxResponseBytes,
	// and its reservation is made what it holds.
	step := func(err error) error {
		switch {
		case err != nil:
			return err
		case out.left() < 0:
			return errResponseTooLarge
		}
		return out.settle(ctx)
	}
	for _, pw := range p.windows {
		if !pw.readable {
			continue
		}
		if err := step(r.window(ctx, p, pw, out)); err != nil {
			return err
		}
	}
	for _, f := range p.feeds {
		if err := step(r.feed(ctx, p, f, out)); err != nil {
			return err
		}
	}
	for _, t := range p.threads {
		if err := step(r.thread(ctx, p, t, out)); err != nil {
			return err
		}
	}
	for _, g := range p.generic {
		if g.Filter.LimitZero {
			continue
		}
		if err := step(r.generic(ctx, p, g, out)); err != nil {
			return err
		}
	}
	return nil
}

// readBounded calls read, for a page the store reads whole (a window, a
// thread), with a byte bound that out reserves first: while the page does
// not fit (buzz.ErrTooLarge) the bound doubles, up to what is left of
// maxResponseBytes, past which the request is refused. So nothing is read
// beyond the bound, and most pages are read once (RL-27a). The bound
// stays reserved until out settles.
func readBounded[T any](ctx context.Context, out *response, read func(maxBytes int) (T, error)) (T, error) {
	var none T
	for grant := min(firstGrant, out.left()); ; grant = min(2*grant, out.left()) {
		if grant <= 0 {
			return none, errResponseTooLarge
		}
		if err := out.reserve(ctx, int64(grant)); err != nil {
			return none, err
		}
		page, err := read(grant)
		if !errors.Is(err, buzz.ErrTooLarge) {
			return page, err
		}
		if err := out.settle(ctx); err != nil {
			return none, err
		}
		if grant == out.left() {
			return none, errResponseTooLarge
		}
	}
}

// thread serves one thread filter (RL-20): replies, then their aux
// closure and the root's.
func (r *Relay) thread(ctx context.Context, p *queryPlan, t *nipcw.ThreadRequest, out *response) error {
	q := buzz.ThreadQuery{Root: t.Root, DepthLimit: t.DepthLimit, Limit: t.Limit, After: t.After, Aux: t.IncludeAux,
		Viewer: p.scope.Viewer, Scope: &p.scope}
	page, err := readBounded(ctx, out, func(maxBytes int) (*buzz.ThreadPage, error) {
		q.MaxBytes = maxBytes
		return r.store.Thread(ctx, q)
	})
	if err != nil {
		return err
	}
	out.raw(page.Replies)
	out.raw(page.Aux)
	return nil
}

// generic serves one NIP-01 filter (RL-19) in reads of at most firstGrant
// bytes, each reserved first and each continuing after the last event of
// the one before, until the filter is served or the answer would pass
// maxResponseBytes (RL-27a); a larger read only for an event that a read
// did not fit alone. A read's events are garbage once in the answer:
// reads of doubling bounds, the last of 16 MiB, made the collector's work
// grow with the answer.
func (r *Relay) generic(ctx context.Context, p *queryPlan, g *nipcw.GenericRequest, out *response) error {
	f, before := g.Filter, g.BeforeID
	for grant := firstGrant; f.Limit > 0; {
		grant = min(grant, out.left())
		if grant <= 0 {
			return errResponseTooLarge
		}
		if err := out.reserve(ctx, int64(grant)); err != nil {
			return err
		}
		evs, truncated, err := r.store.QueryBounded(ctx, f, p.scope.Viewer, before, grant)
		if err != nil {
			return err
		}
		out.raw(evs)
		if err := out.settle(ctx); err != nil {
			return err
		}
		switch {
		case !truncated:
			return nil
		case len(evs) == 0 && grant == out.left():
			return errResponseTooLarge
		case len(evs) == 0:
			grant *= 2 // the next event alone is larger than the grant
			continue
		}
		tail := evs[len(evs)-1]
		until := nostr.Timestamp(tail.CreatedAt)
		f.Until, before = &until, tail.ID
		f.Limit -= len(evs)
		grant = firstGrant
	}
	return nil
}

// window serves one window page (CW-9..CW-21): rows, aux closure,
// summaries, and exactly one bounds overlay, in that order.
func (r *Relay) window(ctx context.Context, p *queryPlan, pw plannedWindow, out *response) error {
	projection := p.community.ThreadRepliesInChannel
	q := buzz.WindowQuery{
		Channel:    pw.req.Channel,
		Kinds:      pw.req.Kinds,
		Limit:      pw.req.Limit,
		Projection: projection,
		Summaries:  pw.req.IncludeSummaries,
		Aux:        pw.req.IncludeAux,
		Before:     pw.cursor,
		Viewer:     p.scope.Viewer,
		Scope:      &p.scope,
	}
	page, err := readBounded(ctx, out, func(maxBytes int) (*buzz.WindowPage, error) {
		q.MaxBytes = maxBytes
		return r.store.Window(ctx, q)
	})
	if err != nil {
		return err
	}
	if page.Unreadable {
		return nil // access changed since planQuery: as for any unreadable channel
	}
	bounds := nipcw.Bounds{HasMore: page.HasMore, NextCursor: page.Next, ThreadRepliesInChannel: projection}
	summaries, boundsJSON, err := r.overlays.windowOverlays(pw.req.Channel, pw.cursor, page, bounds, r.now().Unix())
	if err != nil {
		return err
	}
	out.raw(page.Rows)
	out.raw(page.Aux)
	for _, j := range summaries {
		out.encoded(j)
	}
	out.encoded(boundsJSON)
	return nil
}

// queryError answers a `/query` request with an error (writeError), which
// the log tells at debug level and the metrics count (RL-30).
func (r *Relay) queryError(w http.ResponseWriter, req *http.Request, status int, msg string) {
	if r.log.Enabled(req.Context(), slog.LevelDebug) {
		r.log.Debug("query refused", "ip", clientIP(req, r.cfg.TrustedProxies), "status", status, "reason", msg)
	}
	r.metrics.refusedTotal.WithLabelValues("query", reasonPrefix(msg)).Inc()
	writeError(w, status, msg)
}

// writeError writes the error body of RL-16: {"error":"<message>"}.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
