package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// maxQueryBody bounds a `/query` body (RL-16).
const maxQueryBody = 1 << 20

// queryTimeout bounds the database work of one `/query` request.
const queryTimeout = 15 * time.Second

// errInternal is the only thing a client hears of a failure of ours.
const errInternal = "internal server error"

// serveQuery is `POST /query` (RL-16..RL-20, CW-1..CW-22): NIP-98 auth,
// the body's filters each on one path (window, thread, generic, in that
// order), and the signed events they yield as one JSON array. Any error
// refuses the whole request, nothing partial.
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
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxQueryBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid filters: could not read the body")
		return
	}
	pubkey, err := r.nip98.verify(req.Header.Get("Authorization"), req.Method, queryURL(req, r.cfg.URL), body)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err.Error())
		return
	}
	filters, err := nipcw.ParseBody(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	plan, err := r.planQuery(filters, buzz.Viewer(pubkey))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), queryTimeout)
	defer cancel()
	out := &response{buf: make([]byte, 0, 64<<10)}
	if err := r.runQuery(ctx, plan, out); err != nil {
		if errors.Is(err, errResponseTooLarge) {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if ctx.Err() == nil {
			r.log.Error("query failed", "err", err)
		}
		writeError(w, http.StatusInternalServerError, errInternal)
		return
	}
	h.Set("Content-Type", "application/json")
	if _, err := w.Write(out.bytes()); err != nil {
		r.log.Debug("writing query response", "err", err)
	}
}

// response is the JSON array a `/query` answers, written as it is built:
// stored events as the store wrote them, overlays and generic results by
// their own encoder, each once (encoding/json would check and compact
// every byte again, a quarter of a page's time).
type response struct {
	buf []byte
	n   int
}

func (o *response) next() {
	if o.n == 0 {
		o.buf = append(o.buf, '[')
	} else {
		o.buf = append(o.buf, ',')
	}
	o.n++
}

func (o *response) raw(evs []buzz.RawEvent) {
	for _, ev := range evs {
		o.next()
		o.buf = append(o.buf, ev.JSON...)
	}
}

func (o *response) events(evs []*nostr.Event) error {
	for _, ev := range evs {
		j, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode event %s: %w", ev.ID, err)
		}
		o.next()
		o.buf = append(o.buf, j...)
	}
	return nil
}

func (o *response) bytes() []byte {
	if o.n == 0 {
		return append(o.buf, '[', ']', '\n')
	}
	return append(o.buf, ']', '\n')
}

// queryPlan is a request whose every filter has been checked: windows,
// threads and generic filters, each list in request order (RL-18).
type queryPlan struct {
	viewer    buzz.Viewer
	community *buzz.Community
	windows   []plannedWindow
	threads   []*nipcw.ThreadRequest
	generic   []*nipcw.GenericRequest
}

type plannedWindow struct {
	req    *nipcw.WindowRequest
	cursor *nipcw.Cursor
	// readable is false for a channel the viewer may not read or that does
	// not exist: no rows and no overlays (CW-3).
	readable bool
}

// planQuery sorts filters by path and checks what is checked only after
// access: a window's cursor, kinds and limit (CW-3, CW-5).
func (r *Relay) planQuery(filters []nipcw.Filter, v buzz.Viewer) (*queryPlan, error) {
	p := &queryPlan{viewer: v, community: r.store.Community()}
	for _, f := range filters {
		switch {
		case f.Window != nil:
			pw := plannedWindow{req: f.Window, readable: p.community.CanReadChannel(v, f.Window.Channel)}
			if pw.readable {
				var err error
				if pw.cursor, err = f.Window.Check(); err != nil {
					return nil, err
				}
			}
			p.windows = append(p.windows, pw)
		case f.Thread != nil:
			p.threads = append(p.threads, f.Thread)
		default:
			p.generic = append(p.generic, f.Generic)
		}
	}
	return p, nil
}

// maxResponseBytes bounds what one request may make the relay hold: 32
// filters of 1,000 large events each would be gigabytes.
const maxResponseBytes = 32 << 20

// errResponseTooLarge refuses a request whose answer would pass
// maxResponseBytes; like every error it refuses the whole request.
var errResponseTooLarge = errors.New("invalid filters: the answer would exceed 32 MiB; ask for fewer events")

func (r *Relay) runQuery(ctx context.Context, p *queryPlan, out *response) error {
	for _, pw := range p.windows {
		if !pw.readable {
			continue
		}
		if err := r.window(ctx, p, pw, out); err != nil {
			return err
		}
		if len(out.buf) > maxResponseBytes {
			return errResponseTooLarge
		}
	}
	for _, t := range p.threads {
		q := buzz.ThreadQuery{Root: t.Root, DepthLimit: t.DepthLimit, Limit: t.Limit, Aux: t.IncludeAux, Viewer: p.viewer}
		if t.After != nil {
			q.After = &buzz.Position{CreatedAt: t.After.CreatedAt, ID: t.After.ID}
		}
		page, err := r.store.Thread(ctx, q)
		if err != nil {
			return err
		}
		out.raw(page.Replies)
		out.raw(page.Aux)
		if len(out.buf) > maxResponseBytes {
			return errResponseTooLarge
		}
	}
	for _, g := range p.generic {
		if g.Filter.LimitZero {
			continue
		}
		evs, truncated, err := r.store.QueryBounded(ctx, g.Filter, p.viewer, g.BeforeID, maxResponseBytes-len(out.buf))
		if err != nil {
			return err
		}
		if truncated {
			return errResponseTooLarge
		}
		if err := out.events(evs); err != nil {
			return err
		}
		if len(out.buf) > maxResponseBytes {
			return errResponseTooLarge
		}
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
		Viewer:     p.viewer,
	}
	if pw.cursor != nil {
		q.Before = &buzz.Position{CreatedAt: pw.cursor.CreatedAt, ID: pw.cursor.ID}
	}
	page, err := r.store.Window(ctx, q)
	if err != nil {
		return err
	}
	if page.Unreadable {
		return nil // access changed since planQuery: as for any unreadable channel
	}
	now := r.now().Unix()
	out.raw(page.Rows)
	out.raw(page.Aux)
	overlays := make([]*nostr.Event, 0, len(page.Summaries)+1)
	for _, sm := range page.Summaries {
		ev, err := summaryEvent(pw.req.Channel, sm, now)
		if err != nil {
			return err
		}
		if err := r.overlays.sign(ev); err != nil {
			return err
		}
		overlays = append(overlays, ev)
	}
	bounds := nipcw.Bounds{HasMore: page.HasMore, ThreadRepliesInChannel: projection}
	if page.Next != nil {
		bounds.NextCursor = &nipcw.Cursor{CreatedAt: page.Next.CreatedAt, ID: page.Next.ID}
	}
	ev, err := boundsEvent(pw.req.Channel, pw.cursor, bounds, now)
	if err != nil {
		return err
	}
	if err := r.overlays.sign(ev); err != nil {
		return err
	}
	return out.events(append(overlays, ev))
}

// writeError writes the error body of RL-16: {"error":"<message>"}.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
