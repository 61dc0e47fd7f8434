package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Window serves one window page from one read transaction, so that rows,
// aux events and summaries are one snapshot (issue 4), or the same page
// from the cache while no write has happened since it was read. The page
// is shared: callers must not modify it.
func (s *Store) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	var page *buzz.WindowPage
	err := s.pageBuild(ctx, func(tx directTx) (err error) {
		page = &buzz.WindowPage{}
		// The request's scope once more, on the channel of the snapshot
		// the page is read from: a removal or a 9002 private committed
		// since the caller asked must not let this page through (CW-3).
		c, err := s.communityDirect(ctx, tx)
		if err != nil {
			return err
		}
		scope := buzz.ScopeIn(q.Scope, q.Viewer, c)
		ch := c.Channel(q.Channel)
		if !scope.Reads(ch) {
			page.Unreadable = true
			return nil
		}
		cur := pagecache.Versions{Access: c.Version}
		if cur.Channel, err = tx.int64(pageVersionSQL, ch.Seq); err != nil {
			return fmt.Errorf("window: read page version: %w", err)
		}
		key := pagecache.Key(q)
		now := s.nowUnix()
		if cached, ok := s.pages.Get(key, cur, now); ok {
			page = cached
			return nil
		}
		read := cur                     // what the page is read at; foreign once judged so
		expires := int64(math.MaxInt64) // the first expiration on the page
		defer func() {
			if err == nil { // a page cut short by its request is not kept
				s.pages.Put(key, page, read, expires)
			}
		}()
		bound := newPageBound(q.MaxBytes)
		if err := s.windowRows(tx, ch.Seq, q, page, bound, &expires); err != nil {
			return err
		}
		if q.Aux && len(page.Rows) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			ids := make([][]byte, len(page.Rows))
			for i, ev := range page.Rows {
				ids[i], _ = hex.DecodeString(ev.ID)
			}
			if page.Aux, err = s.auxClosure(ctx, tx, c, scope, ids, ch, bound, &expires, read.Judged(ch.Seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// pageVersionSQL reads the page version of channel ?: 0 until a write
// touches the channel's pages (schema.sql).
const pageVersionSQL = `SELECT coalesce((SELECT version FROM page_versions WHERE channel = ?), 0)`

// windowRowsSQL selects window rows from an index whose order is the window
// order, so that a page costs the same in any channel, however many
// replies and aux events it holds (CW-9, CW-13, CW-15). The cursor keeps
// ?2 in both terms: written with separate parameters, the planner loses the
// created_at bound and deep pages scan from the head. With summaries, each
// row's counters come with it, one lookup by its number (CW-19): a
// statement of their own cost a sixth of a page, most of it turning the
// page's numbers into a list and back.
func windowRowsSQL(projection, cursor bool, kinds int, summaries bool) string {
	var b strings.Builder
	b.WriteString(`SELECT e.seq, e.created_at, e.id, ` + eventSQL + `, e.expires_at`)
	if summaries {
		b.WriteString(`, t.reply_count, t.descendant_count, t.last_reply_at, t.participants, coalesce(t.updated_at, 0)`)
	}
	b.WriteString(` FROM events e `)
	index, class := "events_toplevel", "e.row_class = 2"
	if projection {
		index, class = "events_projection", "e.row_class >= 1"
	}
	b.WriteString(`INDEXED BY ` + index)
	if summaries {
		b.WriteString(` LEFT JOIN thread_metadata t ON t.seq = e.seq AND t.descendant_count > 0`)
	}
	b.WriteString(` WHERE e.channel = ?1 AND ` + class + ` AND e.deleted_at IS NULL`)
	if cursor {
		b.WriteString(` AND e.created_at <= ?2 AND (e.created_at < ?2 OR e.id > ?3)`)
	}
	b.WriteString(` AND (e.expires_at IS NULL OR e.expires_at > ?4)`)
	if kinds > 0 {
		list := make([]string, kinds)
		for i := range list {
			list[i] = "?" + strconv.Itoa(6+i)
		}
		b.WriteString(` AND e.kind IN (` + strings.Join(list, ",") + `)`)
	}
	b.WriteString(` ORDER BY e.created_at DESC, e.id ASC LIMIT ?5`)
	return b.String()
}

// windowRows fills the rows of page, and their summaries when q asks for
// them: one per row with a non-deleted reply below, in row order (CW-19).
// It reads limit+1 rows: the extra one only says whether more follow
// (CW-16). The next cursor is the last row taken, decoded or not: a stored
// event that cannot be rebuilt is skipped without stalling the paging
// (CW-17).
func (s *Store) windowRows(tx directTx, channel int64, q buzz.WindowQuery, page *buzz.WindowPage, bound *pageBound, expires *int64) error {
	args := []any{channel, nil, nil, s.nowUnix(), q.Limit + 1} // ?1..?5, then the kinds
	if q.Before != nil {
		id, err := hex.DecodeString(q.Before.ID)
		if err != nil {
			return fmt.Errorf("window cursor id: %w", err)
		}
		args[1], args[2] = q.Before.CreatedAt, id
	}
	for _, k := range q.Kinds {
		args = append(args, k)
	}
	st, err := tx.query(windowRowsSQL(q.Projection, q.Before != nil, len(q.Kinds), q.Summaries), args...)
	if err != nil {
		return fmt.Errorf("window rows: %w", err)
	}
	defer st.reset()
	taken := 0
	var lastAt int64
	var lastID []byte // the last row taken, which the next cursor names
	for {
		more, err := st.step()
		if err != nil {
			return fmt.Errorf("window rows: %w", err)
		}
		if !more {
			break
		}
		if taken == q.Limit {
			page.HasMore = true
			if taken > 0 {
				page.Next = &buzz.Position{CreatedAt: lastAt, ID: hex.EncodeToString(lastID)}
			}
			break
		}
		seq, createdAt, id := st.int64(0), st.int64(1), st.bytes(2)
		if exp, ok := st.nullInt64(8); ok {
			*expires = min(*expires, exp)
		}
		taken++
		lastAt, lastID = createdAt, append(lastID[:0], id...)
		ev, err := storedEvent(st, 2, 1, 3).raw()
		if err != nil {
			s.log.Warn("window: skipping unreadable stored event", "seq", seq, "err", err)
			continue
		}
		if err := bound.take(len(ev.JSON)); err != nil {
			return err
		}
		page.Rows = append(page.Rows, ev)
		if q.Summaries {
			if sm, ok := summaryAt(st, 9, ev.ID); ok {
				page.Summaries = append(page.Summaries, sm)
			}
		}
	}
	return nil
}

// pageBound is what a window or thread page may still read of its
// query's MaxBytes: the page is refused as soon as it would pass the
// bound, not after it has been read whole (RL-27a). A nil bound is none.
type pageBound struct{ left int }

func newPageBound(maxBytes int) *pageBound {
	if maxBytes <= 0 {
		return nil
	}
	return &pageBound{left: maxBytes}
}

// take counts n bytes read; buzz.ErrTooLarge once they pass the bound.
func (b *pageBound) take(n int) error {
	if b == nil {
		return nil
	}
	if b.left -= n; b.left < 0 {
		return buzz.ErrTooLarge
	}
	return nil
}

// storedColumns are the columns of a stored event as SQLite holds them for
// the current row of a statement: valid until it steps.
type storedColumns struct {
	id, pubkey, sig []byte
	createdAt       int64
	kind            int
	tags, content   []byte
}

// storedEvent reads an event's columns from st: id at col, created_at at
// createdAt, then pubkey, kind, tags, content and sig from rest on.
func storedEvent(st *directStmt, col, createdAt, rest int) storedColumns {
	return storedColumns{
		id: st.bytes(col), createdAt: st.int64(createdAt),
		pubkey: st.bytes(rest), kind: int(st.int64(rest + 1)), tags: st.bytes(rest + 2),
		content: st.bytes(rest + 3), sig: st.bytes(rest + 4),
	}
}

// eventSQL are the columns storedEvent reads from rest on.
const eventSQL = `e.pubkey, e.kind, e.tags, e.content, e.sig`

// raw serves a stored event as its signed JSON, written straight from its
// columns: decoding it into a nostr.Event only to encode it again was a
// third of a page's time. Columns that cannot make a sound event are an
// error: the caller skips the event (CW-17).
func (r storedColumns) raw() (buzz.RawEvent, error) {
	if len(r.id) != 32 || len(r.pubkey) != 32 || len(r.sig) != 64 {
		return buzz.RawEvent{}, fmt.Errorf("stored event %x has malformed keys", r.id)
	}
	if !tagjson.Valid(transient(r.tags)) {
		return buzz.RawEvent{}, fmt.Errorf("stored event %x: %w", r.id, tagjson.ErrMalformed)
	}
	b := make([]byte, 0, buzz.RawEventFixedBytes+len(r.tags)+len(r.content)+len(r.content)/8)
	b = append(b, `{"id":"`...)
	b = hex.AppendEncode(b, r.id)
	hexID := string(b[len(b)-64:])
	b = append(b, `","pubkey":"`...)
	b = hex.AppendEncode(b, r.pubkey)
	b = append(b, `","created_at":`...)
	b = strconv.AppendInt(b, r.createdAt, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(r.kind), 10)
	b = append(b, `,"tags":`...)
	b = append(b, r.tags...)
	b = append(b, `,"content":`...)
	b = tagjson.AppendString(b, transient(r.content))
	b = append(b, `,"sig":"`...)
	b = hex.AppendEncode(b, r.sig)
	b = append(b, `"}`...)
	return buzz.RawEvent{ID: hexID, CreatedAt: r.createdAt, Kind: r.kind, JSON: b}, nil
}

// transient views b as a string for a call that does not keep it: b may be
// SQLite's memory, which changes once the statement steps.
func transient(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// summaryAt is the summary of row id from the counters windowRowsSQL reads
// from column col on: none when they are NULL, the row having no
// non-deleted reply below.
func summaryAt(st *directStmt, col int, id string) (buzz.Summary, bool) {
	if st.isNull(col + 1) {
		return buzz.Summary{}, false
	}
	sm := buzz.Summary{ID: id, UpdatedAt: st.int64(col + 4), Summary: nipcw.Summary{
		ReplyCount: st.int64(col), DescendantCount: st.int64(col + 1), Participants: threadcount.HexKeys(st.bytes(col + 3))}}
	if at, ok := st.nullInt64(col + 2); ok {
		sm.LastReplyAt = &at
	}
	return sm, true
}

// Aux closure bounds (CW-18).
const (
	auxPageSize = 1000
	auxMaxPages = 64
)

// auxSQL finds, one keyset page at a time, the events of some kinds whose
// `e` tag names one of a JSON list of hex ids: from tags_aux, which holds
// the aux kinds' `e` tags only (its WHERE is repeated word for word, or
// the planner may not use it), in its own order (target, created_at,
// event), so no page is sorted, and the statement text is the same for
// any list, so it is prepared once. Each event found says whether a
// deletion names it (events.named_by_deletion, which the writer keeps):
// hop 2 asks only for those, most pages none. It was a statement probing
// every reaction of the page, an eighth of its time, then a search of
// tags_aux for each, the largest part of the aux closure's seeks.
func auxSQL(kinds []int) string {
	list := make([]string, len(kinds))
	for i, k := range kinds {
		list[i] = strconv.Itoa(k)
	}
	return `SELECT e.seq, e.id, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?1), e.scope,
		e.created_at, e.expires_at, t.value, t.created_at,
		e.named_by_deletion,
		` + eventSQL + `
		FROM tags t INDEXED BY tags_aux JOIN events e ON e.seq = t.seq
		WHERE t.name = 'e' AND t.kind IN (5, 7, 9005, 40003) AND t.value IN (SELECT unhex(value) FROM json_each(?2))
		AND t.kind IN (` + strings.Join(list, ",") + `) AND (t.value, t.created_at, t.seq) > (?3, ?4, ?5)
		ORDER BY t.value, t.created_at, t.seq LIMIT ` + strconv.Itoa(auxPageSize)
}

var (
	hop1SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindReaction, buzz.KindGroupDelete, buzz.KindEdit})
	hop2SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindGroupDelete})
)

// auxClosure collects the aux events of targets (CW-18): hop 1, the
// deletions, reactions, group deletions and edits naming a target; hop 2,
// the deletions naming a hop-1 event. Each event is served once, only if
// it is neither deleted nor expired and reads, the request's scope, reads
// its channel in c, the access state of tx's snapshot. A deleted hop-1
// event is not served, but the deletion naming it is: that is what tells a
// client to drop a reaction or edit it shows. rows is the channel of the
// targets (nil: none), which decides whether channel-less aux events are
// served (buzz.AuxFits); the events served count against bound. judged,
// unless nil, hears of the scope of every event judged by the channels of
// c.
func (s *Store) auxClosure(ctx context.Context, tx directTx, c *buzz.Community, reads buzz.Scope, targets [][]byte, rows *buzz.Channel, bound *pageBound, expires *int64, judged func(scope int64)) ([]buzz.RawEvent, error) {
	served := map[int64]bool{}
	var out []buzz.RawEvent
	var hop1 [][]byte
	for hop, query := range []string{hop1SQL, hop2SQL} {
		names := targets
		if hop == 1 {
			names = hop1
			if len(names) == 0 {
				break
			}
		}
		err := s.drainAux(ctx, tx, query, names, hop+1, func(a auxRow) error {
			if !buzz.AuxFits(rows, a.scope.Int64, a.scope.Valid) {
				return nil
			}
			if a.scope.Valid {
				if judged != nil {
					judged(a.scope.Int64)
				}
				if !reads.Reads(c.ChannelBySeq(a.scope.Int64)) {
					return nil
				}
			}
			if hop == 0 && a.named {
				hop1 = append(hop1, bytes.Clone(a.id))
			}
			if a.live && !served[a.seq] {
				if err := bound.take(len(a.ev.JSON)); err != nil {
					return err
				}
				served[a.seq] = true
				out = append(out, a.ev)
			}
			if a.expires.Valid {
				*expires = min(*expires, a.expires.Int64)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// auxRow is an event found by an aux hop.
type auxRow struct {
	seq     int64
	id      []byte // SQLite's memory: valid during the call it is passed to
	live    bool
	named   bool // a deletion names it (hop 2)
	scope   sql.NullInt64
	expires sql.NullInt64
	ev      buzz.RawEvent // when live and readable from storage
}

// auxKey is a position in the tag index order of auxSQL. The first is
// before every id (a 32-byte blob sorts after the one-byte x'00').
type auxKey struct {
	value     []byte
	createdAt int64
	seq       int64
}

var auxStart = auxKey{value: []byte{0}, createdAt: math.MinInt64}

// drainAux calls fn with every event query finds for names: in keyset
// pages of auxPageSize, never "the newest N", at most auxMaxPages pages
// per hop; a hop that reaches the cap is logged and served as drained. An
// error of fn stops the draining and is returned.
func (s *Store) drainAux(ctx context.Context, tx directTx, query string, names [][]byte, hop int, fn func(auxRow) error) error {
	list := make([]byte, 0, 2+len(names)*(2*32+3))
	list = append(list, '[')
	for i, n := range names {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, '"')
		list = hex.AppendEncode(list, n)
		list = append(list, '"')
	}
	list = append(list, ']')
	now := s.nowUnix()
	after := auxKey{value: bytes.Clone(auxStart.value), createdAt: auxStart.createdAt, seq: auxStart.seq}
	for pages := 0; ; pages++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pages == auxMaxPages {
			s.log.Warn("aux closure reached its page cap; served what it drained", "hop", hop, "pages", pages)
			return nil
		}
		n, err := s.auxPage(tx, query, []any{now, string(list), after.value, after.createdAt, after.seq}, &after, fn)
		if err != nil {
			return err
		}
		if n < auxPageSize {
			return nil
		}
	}
}

// auxPage reads one keyset page of query, calls fn with each event and
// leaves last at the page's last position.
func (s *Store) auxPage(tx directTx, query string, args []any, last *auxKey, fn func(auxRow) error) (n int, err error) {
	st, err := tx.query(query, args...)
	if err != nil {
		return 0, fmt.Errorf("aux closure: %w", err)
	}
	defer st.reset()
	for {
		more, err := st.step()
		if err != nil {
			return 0, fmt.Errorf("aux closure: %w", err)
		}
		if !more {
			return n, nil
		}
		a := auxRow{seq: st.int64(0), id: st.bytes(1), live: st.int64(2) != 0, named: st.int64(8) != 0}
		a.scope.Int64, a.scope.Valid = st.nullInt64(3)
		a.expires.Int64, a.expires.Valid = st.nullInt64(5)
		n++
		last.value = append(last.value[:0], st.bytes(6)...)
		last.createdAt, last.seq = st.int64(7), a.seq
		if a.live {
			if a.ev, err = storedEvent(st, 1, 4, 9).raw(); err != nil {
				s.log.Warn("aux closure: skipping unreadable stored event", "seq", a.seq, "err", err)
				a.live = false
			}
		}
		if err := fn(a); err != nil {
			return 0, err
		}
	}
}

// Thread serves the replies below q.Root, down to q.DepthLimit levels,
// oldest first, from one read transaction. The root itself is never among
// them, and may be deleted: its replies are still served (RL-20). A root
// that the query's scope does not read, or that is not stored, has nothing
// below it.
func (s *Store) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	page := &buzz.ThreadPage{}
	id, ok := nipcw.ID32(q.Root)
	if !ok {
		return page, nil
	}
	err := s.pageBuild(ctx, func(tx directTx) error {
		page = &buzz.ThreadPage{}
		bound := newPageBound(q.MaxBytes)
		root, err := tx.query(`SELECT seq, depth, scope FROM events WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("thread root: %w", err)
		}
		found, err := root.step()
		if err != nil || !found {
			root.reset()
			if err != nil {
				return fmt.Errorf("thread root: %w", err)
			}
			return nil
		}
		seq := root.int64(0)
		depth, hasDepth := root.nullInt64(1)
		scope, hasScope := root.nullInt64(2)
		root.reset()
		c, err := s.communityDirect(ctx, tx)
		if err != nil {
			return err
		}
		reads := buzz.ScopeIn(q.Scope, q.Viewer, c)
		var rows *buzz.Channel
		if hasScope {
			if rows = c.ChannelBySeq(scope); !reads.Reads(rows) {
				return nil
			}
		}
		// A channel-less event has no replies (CW-10), but aux it may have.
		if hasScope && hasDepth && q.Limit > 0 && q.DepthLimit > 0 {
			if err := s.threadReplies(tx, seq, depth, q, page, bound); err != nil {
				return err
			}
		}
		if q.Aux {
			if err := ctx.Err(); err != nil {
				return err
			}
			targets := [][]byte{id}
			for _, ev := range page.Replies {
				rid, _ := hex.DecodeString(ev.ID)
				targets = append(targets, rid)
			}
			var expires int64
			if page.Aux, err = s.auxClosure(ctx, tx, c, reads, targets, rows, bound, &expires, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// threadReplies fills page with the replies below event seq at depth.
func (s *Store) threadReplies(tx directTx, seq, depth int64, q buzz.ThreadQuery, page *buzz.ThreadPage, bound *pageBound) error {
	query, args := threadSQL(seq, depth, q, s.nowUnix())
	st, err := tx.query(query, args...)
	if err != nil {
		return fmt.Errorf("thread replies: %w", err)
	}
	defer st.reset()
	for {
		more, err := st.step()
		if err != nil {
			return fmt.Errorf("thread replies: %w", err)
		}
		if !more {
			return nil
		}
		ev, err := storedEvent(st, 2, 1, 3).raw()
		if err != nil {
			s.log.Warn("thread: skipping unreadable stored event", "seq", st.int64(0), "err", err)
			continue
		}
		if err := bound.take(len(ev.JSON)); err != nil {
			return err
		}
		page.Replies = append(page.Replies, ev)
	}
}

// threadSQL selects the replies below event seq at depth: a thread root's
// from events_root, whose order is the thread order; an inner event's by
// walking its subtree, bounded by the depth limit.
func threadSQL(seq, depth int64, q buzz.ThreadQuery, now int64) (string, []any) {
	cols := `e.seq, e.created_at, e.id, ` + eventSQL
	var b strings.Builder
	args := []any{seq, depth + int64(q.DepthLimit), now}
	if depth == 0 {
		b.WriteString(`SELECT ` + cols + ` FROM events e INDEXED BY events_root
			WHERE e.root = ?1 AND e.depth <= ?2`)
	} else {
		args[1] = int64(q.DepthLimit)
		b.WriteString(`WITH RECURSIVE below(seq, lvl) AS (
				SELECT seq, 1 FROM events WHERE parent = ?1
				UNION ALL
				SELECT e.seq, b.lvl + 1 FROM events e JOIN below b ON e.parent = b.seq WHERE b.lvl < ?2
			)
			SELECT ` + cols + ` FROM below b CROSS JOIN events e ON e.seq = b.seq WHERE 1`)
	}
	b.WriteString(` AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?3)`)
	args = append(args, nil, nil)
	if q.After != nil {
		args[3] = q.After.CreatedAt
		if q.After.ID != "" {
			after, _ := hex.DecodeString(q.After.ID)
			args[4] = after
			b.WriteString(` AND e.created_at >= ?4 AND (e.created_at > ?4 OR e.id > ?5)`)
		} else {
			b.WriteString(` AND e.created_at > ?4`)
		}
	}
	b.WriteString(` ORDER BY e.created_at ASC, e.id ASC LIMIT ?6`)
	args = append(args, q.Limit)
	return b.String(), args
}

// Summaries reads the thread summaries of the events ids (hex), in their
// order, zero counters included: a summary whose count fell to 0 is news
// too (CW-21). Ids not stored are left out.
func (s *Store) Summaries(ctx context.Context, ids []string) ([]buzz.Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids))
	for _, id := range ids {
		if k, ok := nipcw.ID32(id); ok {
			args = append(args, k)
		}
	}
	byID := make(map[string]buzz.Summary, len(ids))
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) error {
		rows, err := tx.QueryContext(sctx, `SELECT e.id, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants, coalesce(t.updated_at, 0)
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq
			WHERE e.id IN (`+placeholders(len(args))+`)`, args...)
		if err != nil {
			return fmt.Errorf("summaries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, parts []byte
			var sm buzz.Summary
			if err := rows.Scan(&id, &sm.ReplyCount, &sm.DescendantCount, &sm.LastReplyAt, &parts, &sm.UpdatedAt); err != nil {
				return fmt.Errorf("summaries: %w", err)
			}
			sm.ID = hex.EncodeToString(id)
			sm.Participants = threadcount.HexKeys(parts)
			byID[sm.ID] = sm
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	out := make([]buzz.Summary, 0, len(byID))
	for _, id := range ids {
		if sm, ok := byID[strings.ToLower(id)]; ok {
			out = append(out, sm)
		}
	}
	return out, nil
}
