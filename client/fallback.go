package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file is the standard filter path (CW-24): the channel's events
// fetched over WebSocket with plain NIP-01 filters, every event verified
// (CL-3), and the top-level timeline assembled client-side by the row rule
// of CW-9..CW-14.

// burstLimit is the limit of the query of one second whose events do not
// fit in one batch; more than that in one second is an error rather than
// a silently short timeline.
const burstLimit = 1000

// idChunk bounds the values of one ids or #e filter (nipcw.MaxFilterValues).
const idChunk = 500

// wsConn is one plain NIP-01 WebSocket connection. go-nostr's Relay is not
// used: it races with itself when a connection closes.
type wsConn struct {
	conn *websocket.Conn
	sub  atomic.Int64
	stop func() bool
	// url and key answer the relay's NIP-42 challenge, the last one it
	// sent, when a subscription needs it (RL-13).
	url, key, challenge string
	authed              bool
}

func (c *Client) dial(ctx context.Context) (*wsConn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.DialContext(ctx, c.wsURL, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("client: websocket: %w", err)
	}
	w := &wsConn{conn: conn, url: c.wsURL, key: c.key}
	// Cancelling ctx closes the connection, which ends any read.
	w.stop = context.AfterFunc(ctx, func() { conn.Close() })
	return w, nil
}

func (w *wsConn) close() {
	w.stop()
	_ = w.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	w.conn.Close()
}

// req sends one REQ and returns the stored events up to EOSE, each
// verified (CL-3). A CLOSED is an error.
func (w *wsConn) req(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	id := "cw" + strconv.FormatInt(w.sub.Add(1), 10)
	if err := w.conn.WriteJSON([]any{"REQ", id, f}); err != nil {
		return nil, w.fail(ctx, err)
	}
	var evs []*nostr.Event
	for {
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			return nil, w.fail(ctx, err)
		}
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			continue
		}
		var label, sub string
		_ = json.Unmarshal(msg[0], &label)
		_ = json.Unmarshal(msg[1], &sub)
		if label == "AUTH" {
			w.challenge = sub
			continue
		}
		if sub != id {
			continue
		}
		switch label {
		case "EVENT":
			if len(msg) < 3 {
				continue
			}
			var ev nostr.Event
			if err := json.Unmarshal(msg[2], &ev); err != nil {
				return nil, fmt.Errorf("client: websocket: malformed event: %w", err)
			}
			if err := nipcw.VerifyEvents([]*nostr.Event{&ev}); err != nil {
				return nil, fmt.Errorf("client: websocket: event %s: %w", ev.ID, err)
			}
			if !nipcw.MatchesFilter(f, &ev) {
				return nil, fmt.Errorf("client: websocket: event %s does not match the filter", ev.ID)
			}
			evs = append(evs, &ev)
		case "EOSE":
			_ = w.conn.WriteJSON([]any{"CLOSE", id})
			return evs, nil
		case "CLOSED":
			reason := ""
			if len(msg) > 2 {
				_ = json.Unmarshal(msg[2], &reason)
			}
			if strings.HasPrefix(reason, "auth-required: ") && w.key != "" && !w.authed {
				if err := w.authenticate(ctx); err != nil {
					return nil, err
				}
				evs = nil
				if err := w.conn.WriteJSON([]any{"REQ", id, f}); err != nil {
					return nil, w.fail(ctx, err)
				}
				continue
			}
			return nil, &ClosedError{Where: "websocket", Reason: reason}
		}
	}
}

// authenticate answers the relay's NIP-42 challenge with the client's key
// and waits for the relay to accept it.
func (w *wsConn) authenticate(ctx context.Context) error {
	if w.challenge == "" {
		return errors.New("client: websocket: the relay asks for authentication but sent no challenge")
	}
	ev := nostr.Event{Kind: nostr.KindClientAuthentication, CreatedAt: nostr.Now(),
		Tags: nostr.Tags{{"relay", w.url}, {"challenge", w.challenge}}}
	if err := ev.Sign(w.key); err != nil {
		return fmt.Errorf("client: sign AUTH: %w", err)
	}
	if err := w.conn.WriteJSON([]any{"AUTH", ev}); err != nil {
		return w.fail(ctx, err)
	}
	for {
		label, id, msg, err := w.next(ctx)
		if err != nil {
			return err
		}
		if label != "OK" || id != ev.ID || len(msg) < 3 {
			continue
		}
		var ok bool
		if json.Unmarshal(msg[2], &ok) != nil || !ok {
			return fmt.Errorf("client: websocket: the relay refused our authentication: %s", msg)
		}
		w.authed = true
		return nil
	}
}

// next reads the relay's next message: its label, its second element as a
// string (a subscription id, an event id, a challenge) and the whole of
// it. What is not a JSON array of two elements at least is skipped.
func (w *wsConn) next(ctx context.Context) (label, second string, msg []json.RawMessage, err error) {
	for {
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			return "", "", nil, w.fail(ctx, err)
		}
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			continue
		}
		_ = json.Unmarshal(msg[0], &label)
		_ = json.Unmarshal(msg[1], &second)
		return label, second, msg, nil
	}
}

func (w *wsConn) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("client: websocket: %w", err)
}

// fetchAll returns every event matching base, paged by until with
// deduplication: a page continues at the oldest second it reached,
// inclusive, so the rest of that second is not lost; a second whose events
// fill a whole batch is fetched on its own.
func (w *wsConn) fetchAll(ctx context.Context, base nostr.Filter, batch int, into map[string]*nostr.Event) error {
	var until *nostr.Timestamp
	for {
		f := base
		f.Limit = batch
		f.Until = until
		evs, err := w.req(ctx, f)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		oldest := evs[0].CreatedAt
		for _, ev := range evs {
			into[ev.ID] = ev
			oldest = min(oldest, ev.CreatedAt)
		}
		newest := slices.MaxFunc(evs, func(a, b *nostr.Event) int { return cmp.Compare(a.CreatedAt, b.CreatedAt) }).CreatedAt
		if oldest < newest || (until != nil && oldest < *until) {
			// The page left second `oldest` possibly half read: continue
			// there, inclusive; what was seen is deduplicated.
			u := oldest
			until = &u
			continue
		}
		// The whole page is one second: read that second on its own.
		if len(evs) >= batch {
			s := base
			s.Since, s.Until, s.Limit = &oldest, &oldest, burstLimit
			burst, err := w.req(ctx, s)
			if err != nil {
				return err
			}
			if len(burst) >= burstLimit {
				return fmt.Errorf("client: more than %d events at one second (%d): the standard filter path cannot page them", burstLimit-1, oldest)
			}
			for _, ev := range burst {
				into[ev.ID] = ev
			}
		}
		if oldest == 0 {
			return nil
		}
		u := oldest - 1
		until = &u
	}
}

// fetchIDs fetches events by id, in chunks, into into.
func (w *wsConn) fetchIDs(ctx context.Context, ids []string, into map[string]*nostr.Event) error {
	for len(ids) > 0 {
		n := min(len(ids), idChunk)
		evs, err := w.req(ctx, nostr.Filter{IDs: ids[:n], Limit: n})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			into[ev.ID] = ev
		}
		ids = ids[n:]
	}
	return nil
}

// fetchDeletions returns the kind 5 deletions that name any of ids.
func (w *wsConn) fetchDeletions(ctx context.Context, ids []string, batch int) ([]*nostr.Event, error) {
	got := map[string]*nostr.Event{}
	for len(ids) > 0 {
		n := min(len(ids), idChunk)
		f := nostr.Filter{Kinds: []int{nostr.KindDeletion}, Tags: nostr.TagMap{"e": ids[:n]}}
		if err := w.fetchAll(ctx, f, batch, got); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return mapValues(got), nil
}

func mapValues(m map[string]*nostr.Event) []*nostr.Event {
	out := make([]*nostr.Event, 0, len(m))
	for _, ev := range m {
		out = append(out, ev)
	}
	return out
}

// fallbackRows fetches the channel over WebSocket and returns its rows in
// window order (CW-9..CW-15). projection is the row mode (CW-13).
func (c *Client) fallbackRows(ctx context.Context, ch string, projection bool) ([]*nostr.Event, error) {
	w, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()

	// The channel's events of the row kinds, the candidates.
	channel := map[string]*nostr.Event{}
	if err := w.fetchAll(ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}}, c.batch, channel); err != nil {
		return nil, err
	}
	all := make(map[string]*nostr.Event, len(channel))
	for id, ev := range channel {
		all[id] = ev
	}
	// Reply parents that were not among them, level by level.
	asked := map[string]bool{}
	for range buzz.MaxDepth + 1 {
		var missing []string
		for _, ev := range all {
			p := buzz.ParseThreadTags(ev.Tags).Parent
			if p != "" && all[p] == nil && !asked[p] {
				asked[p] = true
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			break
		}
		if err := w.fetchIDs(ctx, missing, all); err != nil {
			return nil, err
		}
	}
	// Deletions: kind 5 by the author of what it names (NIP-09, CW-14).
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dels, err := w.fetchDeletions(ctx, ids, c.batch)
	if err != nil {
		return nil, err
	}
	deleted := map[string]bool{}
	for _, d := range dels {
		for _, tag := range d.Tags {
			if len(tag) >= 2 && tag[0] == "e" {
				if t := all[strings.ToLower(tag[1])]; t != nil && t.PubKey == d.PubKey {
					deleted[t.ID] = true
				}
			}
		}
	}
	return assemble(ch, channel, all, deleted, projection), nil
}

// assemble applies the row rule to candidates (CW-9..CW-14): all holds the
// candidates and every reply parent that could be fetched, deleted the ids
// deleted by their author. Rows come in window order (CW-15).
func assemble(ch string, candidates, all map[string]*nostr.Event, deleted map[string]bool, projection bool) []*nostr.Event {
	type place struct {
		depth int
		root  string
		known bool
	}
	memo := map[string]place{}
	visiting := map[string]bool{}
	var classify func(ev *nostr.Event) place
	classify = func(ev *nostr.Event) place {
		if p, ok := memo[ev.ID]; ok {
			return p
		}
		if visiting[ev.ID] {
			return place{}
		}
		visiting[ev.ID] = true
		defer delete(visiting, ev.ID)
		p := place{depth: 0, root: ev.ID, known: true}
		h, _ := buzz.ChannelOf(ev.Tags)
		if nipcw.IsClassifiedKind(ev.Kind) && h != "" {
			tt := buzz.ParseThreadTags(ev.Tags)
			if tt.Parent != "" {
				// Fail-open (CW-12): a parent not fetched, in another
				// channel, of unknown place or past the depth bound, or a
				// root marker naming another root, leaves the event
				// unclassified: a row.
				p = place{}
				if parent := all[tt.Parent]; parent != nil {
					ph, _ := buzz.ChannelOf(parent.Tags)
					if pp := classify(parent); pp.known && ph == h && pp.depth < buzz.MaxDepth &&
						(tt.Root == "" || tt.Root == pp.root) {
						p = place{depth: pp.depth + 1, root: pp.root, known: true}
					}
				}
			}
		}
		memo[ev.ID] = p
		return p
	}

	var rows []*nostr.Event
	for _, ev := range candidates {
		if deleted[ev.ID] || nipcw.IsAuxKind(ev.Kind) || nipcw.IsOverlayKind(ev.Kind) || !inChannel(ev, ch) {
			continue
		}
		p := classify(ev)
		if projection || !p.known || p.depth == 0 ||
			(p.depth == 1 && buzz.ParseThreadTags(ev.Tags).Broadcast) {
			rows = append(rows, ev)
		}
	}
	slices.SortFunc(rows, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rows
}

// inChannel reports whether ev's h tags name ch: a UUID in any spelling,
// a NIP-29 group id as it is (CW-2).
func inChannel(ev *nostr.Event, ch string) bool {
	h, err := buzz.ChannelOf(ev.Tags)
	if err != nil {
		return false
	}
	c, ok := nipcw.ParseChannelID(h)
	return ok && c == ch
}

// pages cuts rows (window order) into pages of limit rows after cursor
// (nil: the head), each with bounds as the relay would compute them
// (CW-16, CW-17, CW-20), no overlays and no summaries.
func pages(ch string, rows []*nostr.Event, cursor *nipcw.Cursor, limit int, projection bool) []*nipcw.Page {
	limit = min(max(limit, 1), nipcw.MaxWindowLimit)
	if cursor != nil {
		i, _ := slices.BinarySearchFunc(rows, cursor, func(ev *nostr.Event, c *nipcw.Cursor) int {
			if !after(c, ev) {
				return -1
			}
			return 1
		})
		rows = rows[i:]
	}
	var out []*nipcw.Page
	req := cursor
	for {
		n := min(limit, len(rows))
		p := &nipcw.Page{
			Channel:   ch,
			Request:   req,
			Rows:      rows[:n:n],
			Summaries: map[string]nipcw.Summary{},
			Bounds:    nipcw.Bounds{HasMore: len(rows) > n, ThreadRepliesInChannel: projection},
		}
		rows = rows[n:]
		out = append(out, p)
		if !p.Bounds.HasMore {
			return out
		}
		last := p.Rows[n-1]
		p.Bounds.NextCursor = &nipcw.Cursor{CreatedAt: int64(last.CreatedAt), ID: strings.ToLower(last.ID)}
		req = p.Next()
	}
}

// after reports whether ev comes strictly after cursor c in window order
// (CW-15): older, or the same second and a greater id.
func after(c *nipcw.Cursor, ev *nostr.Event) bool {
	at := int64(ev.CreatedAt)
	return at < c.CreatedAt || (at == c.CreatedAt && strings.ToLower(ev.ID) > c.ID)
}
