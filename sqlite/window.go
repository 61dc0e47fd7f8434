package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Window serves one window page from one read transaction, so that rows,
// aux events and summaries are one snapshot (issue 4), or the same page
// from the cache while no write has happened since it was read. The page
// is shared: callers must not modify it.
func (s *Store) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	page := &buzz.WindowPage{}
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) (err error) {
		// Access once more, in the snapshot the page is read from: a
		// removal or a 9002 private committed since the caller asked must
		// not let this page through (CW-3).
		c, err := s.communityIn(sctx, tx)
		if err != nil {
			return err
		}
		ch := c.Channel(q.Channel)
		if !c.CanRead(q.Viewer, ch) {
			page.Unreadable = true
			return nil
		}
		cur := pageVersions{access: c.Version}
		st, err := s.prepared(sctx, tx, pageVersionSQL)
		if err != nil {
			return fmt.Errorf("window: %w", err)
		}
		if err := st.QueryRowContext(sctx, ch.Seq).Scan(&cur.channel); err != nil {
			return fmt.Errorf("window: read page version: %w", err)
		}
		key := pageKey(q)
		now := s.nowUnix()
		if cached, ok := s.pages.get(key, cur, now); ok {
			s.pages.hits.Add(1)
			page = cached
			return nil
		}
		read := cur                     // what the page is read at; foreign once judged so
		expires := int64(math.MaxInt64) // the first expiration on the page
		defer func() {
			if err == nil { // a page cut short by its request is not kept
				s.pages.misses.Add(1)
				s.pages.put(key, page, read, expires)
			}
		}()
		bound := newPageBound(q.MaxBytes)
		seqs, err := s.windowRows(sctx, tx, ch.Seq, q, page, bound, &expires)
		if err != nil {
			return err
		}
		if q.Summaries && len(seqs) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			ids := make([]string, len(page.Rows))
			for i, ev := range page.Rows {
				ids[i] = ev.ID
			}
			if page.Summaries, err = s.summaries(sctx, tx, seqs, ids); err != nil {
				return err
			}
		}
		if q.Aux && len(page.Rows) > 0 {
			ids := make([][]byte, len(page.Rows))
			for i, ev := range page.Rows {
				ids[i], _ = hex.DecodeString(ev.ID)
			}
			if page.Aux, err = s.auxClosure(ctx, sctx, tx, c, ids, q.Viewer, bound, &expires, auxJudged(ch.Seq, &read.foreign)); err != nil {
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

// auxJudged returns the judged hook of a window page of channel seq: it
// sets *foreign once an aux event scoped to another channel is judged.
func auxJudged(seq int64, foreign *bool) func(scope int64) {
	return func(scope int64) {
		if scope != seq {
			*foreign = true
		}
	}
}

// windowRowsSQL selects window rows from an index whose order is the window
// order, so that a page costs the same in any channel, however many
// replies and aux events it holds (CW-9, CW-13, CW-15). The cursor keeps
// ?2 in both terms: written with separate parameters, the planner loses the
// created_at bound and deep pages scan from the head.
func windowRowsSQL(projection, cursor bool, kinds int) string {
	var b strings.Builder
	b.WriteString(`SELECT e.seq, e.created_at, e.id, e.pubkey, e.kind, e.tags, e.content, e.sig, e.expires_at FROM events e `)
	if projection {
		b.WriteString(`INDEXED BY events_projection WHERE e.channel = ?1 AND e.row_class >= 1 AND e.deleted_at IS NULL`)
	} else {
		b.WriteString(`INDEXED BY events_toplevel WHERE e.channel = ?1 AND e.row_class = 2 AND e.deleted_at IS NULL`)
	}
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

// windowRows fills the rows of page and returns their event numbers. It
// reads limit+1 rows: the extra one only says whether more follow (CW-16).
// The next cursor is the last row taken, decoded or not: a stored event
// that cannot be rebuilt is skipped without stalling the paging (CW-17).
func (s *Store) windowRows(ctx context.Context, tx *sql.Tx, channel int64, q buzz.WindowQuery, page *buzz.WindowPage, bound *pageBound, expires *int64) ([]int64, error) {
	args := []any{channel, nil, nil, s.nowUnix(), q.Limit + 1} // ?1..?5, then the kinds
	if q.Before != nil {
		id, err := hex.DecodeString(q.Before.ID)
		if err != nil {
			return nil, fmt.Errorf("window cursor id: %w", err)
		}
		args[1], args[2] = q.Before.CreatedAt, id
	}
	for _, k := range q.Kinds {
		args = append(args, k)
	}
	st, err := s.prepared(ctx, tx, windowRowsSQL(q.Projection, q.Before != nil, len(q.Kinds)))
	if err != nil {
		return nil, fmt.Errorf("window rows: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("window rows: %w", err)
	}
	defer rows.Close()
	var seqs []int64
	taken := 0
	for rows.Next() {
		if taken == q.Limit {
			page.HasMore = true
			break
		}
		var seq, createdAt int64
		var id sql.RawBytes
		var rest eventRest
		var exp sql.NullInt64
		if err := rows.Scan(&seq, &createdAt, &id, &rest.pubkey, &rest.kind, &rest.tags, &rest.content, &rest.sig, &exp); err != nil {
			return nil, fmt.Errorf("window rows: %w", err)
		}
		if exp.Valid {
			*expires = min(*expires, exp.Int64)
		}
		taken++
		page.Next = &buzz.Position{CreatedAt: createdAt, ID: hex.EncodeToString(id)}
		ev, err := rest.raw(id, createdAt)
		if err != nil {
			s.log.Warn("window: skipping unreadable stored event", "seq", seq, "err", err)
			continue
		}
		if err := bound.take(len(ev.JSON)); err != nil {
			return nil, err
		}
		page.Rows = append(page.Rows, ev)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("window rows: %w", err)
	}
	if !page.HasMore {
		page.Next = nil
	}
	return seqs, nil
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

// eventRest are the columns of a stored event besides id and created_at.
// The keys are scanned as sql.RawBytes, valid until the next row: they are
// hex-encoded at once, and a copy of each would be garbage (the collector's
// work was a fifth of a page's).
type eventRest struct {
	pubkey, sig   sql.RawBytes
	kind          int
	tags, content string
}

// raw serves a stored event as its signed JSON, written straight from its
// columns: decoding it into a nostr.Event only to encode it again was a
// third of a page's time. Columns that cannot make a sound event are an
// error: the caller skips the event (CW-17).
func (r eventRest) raw(id []byte, createdAt int64) (buzz.RawEvent, error) {
	if len(id) != 32 || len(r.pubkey) != 32 || len(r.sig) != 64 {
		return buzz.RawEvent{}, fmt.Errorf("stored event %x has malformed keys", id)
	}
	if !validTags(r.tags) {
		return buzz.RawEvent{}, fmt.Errorf("stored event %x: %w", id, errTagsJSON)
	}
	b := make([]byte, 0, 300+len(r.tags)+len(r.content)+len(r.content)/8)
	b = append(b, `{"id":"`...)
	b = hex.AppendEncode(b, id)
	hexID := string(b[len(b)-64:])
	b = append(b, `","pubkey":"`...)
	b = hex.AppendEncode(b, r.pubkey)
	b = append(b, `","created_at":`...)
	b = strconv.AppendInt(b, createdAt, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(r.kind), 10)
	b = append(b, `,"tags":`...)
	b = append(b, r.tags...)
	b = append(b, `,"content":`...)
	b = appendString(b, r.content)
	b = append(b, `,"sig":"`...)
	b = hex.AppendEncode(b, r.sig)
	b = append(b, `"}`...)
	return buzz.RawEvent{ID: hexID, CreatedAt: createdAt, Kind: r.kind, JSON: b}, nil
}

// summariesSQL reads the counters of the rows in a JSON list of event
// numbers: one statement text, so prepared once, for any page.
const summariesSQL = `SELECT t.seq, t.reply_count, t.descendant_count, t.last_reply_at, t.participants,
	coalesce(t.updated_at, 0)
	FROM thread_metadata t
	WHERE t.seq IN (SELECT value FROM json_each(?)) AND t.descendant_count > 0`

// summaries reads the thread summaries of rows, numbered seqs with hex ids
// ids, in their order, in one batched query (CW-19); rows without a
// non-deleted reply below get none.
func (s *Store) summaries(ctx context.Context, tx *sql.Tx, seqs []int64, ids []string) ([]buzz.Summary, error) {
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	st, err := s.prepared(ctx, tx, summariesSQL)
	if err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	rows, err := st.QueryContext(ctx, string(list))
	if err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	defer rows.Close()
	bySeq := make(map[int64]buzz.Summary, len(seqs))
	for rows.Next() {
		var seq int64
		var parts sql.RawBytes
		var sm buzz.Summary
		if err := rows.Scan(&seq, &sm.ReplyCount, &sm.DescendantCount, &sm.LastReplyAt, &parts, &sm.UpdatedAt); err != nil {
			return nil, fmt.Errorf("summaries: %w", err)
		}
		sm.Participants = participantKeys(parts)
		bySeq[seq] = sm
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	out := make([]buzz.Summary, 0, len(bySeq))
	for i, seq := range seqs {
		if sm, ok := bySeq[seq]; ok {
			sm.ID = ids[i]
			out = append(out, sm)
		}
	}
	return out, nil
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
// any list, so it is prepared once.
func auxSQL(kinds []int) string {
	list := make([]string, len(kinds))
	for i, k := range kinds {
		list[i] = strconv.Itoa(k)
	}
	return `SELECT e.seq, e.id, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?1), e.scope,
		e.pubkey, e.kind, e.tags, e.content, e.sig, e.created_at, e.expires_at, t.value, t.created_at
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
// it is neither deleted nor expired and v may read it. A deleted hop-1
// event is not served, but the deletion naming it is: that is what tells a
// client to drop a reaction or edit it shows. c is the access state of
// tx's snapshot; the events served count against bound. judged, unless
// nil, hears of the scope of every event judged by c's access rules.
func (s *Store) auxClosure(ctx, sctx context.Context, tx *sql.Tx, c *buzz.Community, targets [][]byte, v buzz.Viewer, bound *pageBound, expires *int64, judged func(scope int64)) ([]buzz.RawEvent, error) {
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
		err := s.drainAux(ctx, sctx, tx, query, names, hop+1, func(a auxRow) error {
			if a.scope.Valid {
				if judged != nil {
					judged(a.scope.Int64)
				}
				if !c.CanReadSeq(v, a.scope.Int64) {
					return nil
				}
			}
			if hop == 0 {
				hop1 = append(hop1, a.id)
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
	id      []byte
	live    bool
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
func (s *Store) drainAux(ctx, sctx context.Context, tx *sql.Tx, query string, names [][]byte, hop int, fn func(auxRow) error) error {
	hexNames := make([]string, len(names))
	for i, n := range names {
		hexNames[i] = hex.EncodeToString(n)
	}
	list, err := json.Marshal(hexNames)
	if err != nil {
		return fmt.Errorf("aux closure: %w", err)
	}
	st, err := s.prepared(sctx, tx, query)
	if err != nil {
		return fmt.Errorf("aux closure: %w", err)
	}
	now := s.nowUnix()
	after := auxStart
	for pages := 0; ; pages++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pages == auxMaxPages {
			s.log.Warn("aux closure reached its page cap; served what it drained", "hop", hop, "pages", pages)
			return nil
		}
		n, last, err := s.auxPage(sctx, st, []any{now, string(list), after.value, after.createdAt, after.seq}, fn)
		if err != nil {
			return err
		}
		if n < auxPageSize {
			return nil
		}
		after = last
	}
}

func (s *Store) auxPage(ctx context.Context, st *sql.Stmt, args []any, fn func(auxRow) error) (n int, last auxKey, err error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return 0, last, fmt.Errorf("aux closure: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a auxRow
		var rest eventRest
		var createdAt int64
		if err := rows.Scan(&a.seq, &a.id, &a.live, &a.scope, &rest.pubkey, &rest.kind, &rest.tags, &rest.content, &rest.sig, &createdAt,
			&a.expires, &last.value, &last.createdAt); err != nil {
			return 0, last, fmt.Errorf("aux closure: %w", err)
		}
		n++
		last.seq = a.seq
		if a.live {
			if a.ev, err = rest.raw(a.id, createdAt); err != nil {
				s.log.Warn("aux closure: skipping unreadable stored event", "seq", a.seq, "err", err)
				a.live = false
			}
		}
		if err := fn(a); err != nil {
			return 0, last, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, last, fmt.Errorf("aux closure: %w", err)
	}
	return n, last, nil
}

// Thread serves the replies below q.Root, down to q.DepthLimit levels,
// oldest first, from one read transaction. The root itself is never among
// them, and may be deleted: its replies are still served (RL-20). A root
// that v may not read, or that is not stored, has nothing below it.
func (s *Store) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	page := &buzz.ThreadPage{}
	id, ok := idKey(q.Root)
	if !ok {
		return page, nil
	}
	bound := newPageBound(q.MaxBytes)
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) error {
		var seq int64
		var depth, scope sql.NullInt64
		err := tx.QueryRowContext(sctx, `SELECT seq, depth, scope FROM events WHERE id = ?`, id).Scan(&seq, &depth, &scope)
		switch {
		case err == sql.ErrNoRows:
			return nil
		case err != nil:
			return fmt.Errorf("thread root: %w", err)
		}
		c, err := s.communityIn(sctx, tx)
		if err != nil {
			return err
		}
		if scope.Valid && !c.CanReadSeq(q.Viewer, scope.Int64) {
			return nil
		}
		// A channel-less event has no replies (CW-10), but aux it may have.
		if scope.Valid && depth.Valid && q.Limit > 0 && q.DepthLimit > 0 {
			query, args := threadSQL(seq, depth.Int64, q, s.nowUnix())
			st, err := s.prepared(sctx, tx, query)
			if err != nil {
				return fmt.Errorf("thread replies: %w", err)
			}
			rows, err := st.QueryContext(sctx, args...)
			if err != nil {
				return fmt.Errorf("thread replies: %w", err)
			}
			defer rows.Close()
			for rows.Next() {
				var rseq, createdAt int64
				var rid sql.RawBytes
				var rest eventRest
				if err := rows.Scan(&rseq, &createdAt, &rid, &rest.pubkey, &rest.kind, &rest.tags, &rest.content, &rest.sig); err != nil {
					return fmt.Errorf("thread replies: %w", err)
				}
				ev, err := rest.raw(rid, createdAt)
				if err != nil {
					s.log.Warn("thread: skipping unreadable stored event", "seq", rseq, "err", err)
					continue
				}
				if err := bound.take(len(ev.JSON)); err != nil {
					return err
				}
				page.Replies = append(page.Replies, ev)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("thread replies: %w", err)
			}
		}
		if q.Aux {
			targets := [][]byte{id}
			for _, ev := range page.Replies {
				rid, _ := hex.DecodeString(ev.ID)
				targets = append(targets, rid)
			}
			var expires int64
			if page.Aux, err = s.auxClosure(ctx, sctx, tx, c, targets, q.Viewer, bound, &expires, nil); err != nil {
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

// threadSQL selects the replies below event seq at depth: a thread root's
// from events_root, whose order is the thread order; an inner event's by
// walking its subtree, bounded by the depth limit.
func threadSQL(seq, depth int64, q buzz.ThreadQuery, now int64) (string, []any) {
	cols := `e.seq, e.created_at, e.id, e.pubkey, e.kind, e.tags, e.content, e.sig`
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
		if k, ok := idKey(id); ok {
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
			sm.Participants = participantKeys(parts)
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

// participantKeys decodes a participants blob into hex pubkeys.
func participantKeys(blob []byte) []string {
	keys := []string{}
	for _, p := range decodeParticipants(blob) {
		keys = append(keys, hex.EncodeToString(p.PubKey))
	}
	return keys
}
