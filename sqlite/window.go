package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
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
		c, err := s.communityDirect(ctx, tx)
		if err != nil {
			return err
		}
		scope, ch, ok := c.WindowScope(q)
		if !ok {
			page.Unreadable = true
			return nil
		}
		cur := pagecache.Versions{Access: c.Version}
		if cur.Channel, err = tx.int64(pageVersionSQL, ch.Seq); err != nil {
			return fmt.Errorf("window: read page version: %w", err)
		}
		key := pagecache.Key(q)
		if cached, ok := s.pages.Get(key, cur, s.nowUnix()); ok {
			page = cached
			return nil
		}
		read := cur // what the page is read at; foreign once judged so
		var expires int64
		if page, expires, err = c.ReadWindow(ctx, &pageReader{s: s, tx: tx}, q, scope, ch, read.Judged(ch.Seq)); err != nil {
			return err // a page cut short by its request is not kept
		}
		s.pages.Put(key, page, read, expires)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// pageReader reads window and thread pages in a direct read transaction
// (buzz.PageReader), keeping the position of the aux hop it reads.
type pageReader struct {
	s     *Store
	tx    directTx
	names []byte // the aux hop's names, a JSON list of hex ids
	after auxKey // where the aux hop's next page starts
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

// WindowRows reads the rows of channel, and their summaries when q asks
// for them: one per row with a non-deleted reply below, in row order
// (CW-19). It reads limit+1 rows, the extra one for rows.Row (CW-16); a
// stored event that cannot be rebuilt is counted and skipped (CW-17).
func (r *pageReader) WindowRows(channel int64, q buzz.WindowQuery, rows *buzz.WindowRows) error {
	args := []any{channel, nil, nil, r.s.nowUnix(), q.Limit + 1} // ?1..?5, then the kinds
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
	st, err := r.tx.query(windowRowsSQL(q.Projection, q.Before != nil, len(q.Kinds), q.Summaries), args...)
	if err != nil {
		return fmt.Errorf("window rows: %w", err)
	}
	defer st.reset()
	for {
		more, err := st.step()
		if err != nil {
			return fmt.Errorf("window rows: %w", err)
		}
		if !more {
			return nil
		}
		exp, expiring := st.nullInt64(8)
		if !rows.Row(st.int64(1), st.bytes(2), exp, expiring) {
			return nil
		}
		ev, err := storedEvent(st, 2, 1, 3).raw()
		if err != nil {
			r.s.log.Warn("window: skipping unreadable stored event", "seq", st.int64(0), "err", err)
			continue
		}
		if err := rows.Add(ev); err != nil {
			return err
		}
		if q.Summaries {
			if sm, ok := summaryAt(st, 9, ev.ID); ok {
				rows.Summary(sm)
			}
		}
	}
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

// raw serves a stored event as its signed JSON (buzz.NewRawEvent),
// reading tags and content in place.
func (r storedColumns) raw() (buzz.RawEvent, error) {
	return buzz.NewRawEvent(r.id, r.pubkey, r.sig, r.createdAt, r.kind, transient(r.tags), transient(r.content))
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
	at, hasReply := st.nullInt64(col + 2)
	return buzz.SummaryOf(id, st.int64(col), st.int64(col+1), at, hasReply, st.bytes(col+3), st.int64(col+4)), true
}

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
		ORDER BY t.value, t.created_at, t.seq LIMIT ` + strconv.Itoa(buzz.AuxPageSize)
}

var (
	hop1SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindReaction, buzz.KindGroupDelete, buzz.KindEdit})
	hop2SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindGroupDelete})
)

// auxKey is a position in the tag index order of auxSQL. The first is
// before every id (a 32-byte blob sorts after the one-byte x'00').
type auxKey struct {
	value     []byte
	createdAt int64
	seq       int64
}

var auxStart = auxKey{value: []byte{0}, createdAt: math.MinInt64}

// AuxPage reads one keyset page of hop (hop1SQL, hop2SQL) for names and
// leaves r at its last position. Page 0 writes names as the JSON list the
// statement reads and starts at auxStart.
func (r *pageReader) AuxPage(hop int, names []string, page int, fn func(buzz.AuxRow) error) (n int, err error) {
	if page == 0 {
		r.names = append(slices.Grow(r.names[:0], 2+len(names)*(64+3)), '[')
		for i, n := range names {
			if i > 0 {
				r.names = append(r.names, ',')
			}
			r.names = append(append(append(r.names, '"'), n...), '"')
		}
		r.names = append(r.names, ']')
		r.after = auxKey{value: append(r.after.value[:0], auxStart.value...), createdAt: auxStart.createdAt, seq: auxStart.seq}
	}
	query := hop1SQL
	if hop == buzz.AuxHopDeletions {
		query = hop2SQL
	}
	st, err := r.tx.query(query, r.s.nowUnix(), string(r.names), r.after.value, r.after.createdAt, r.after.seq)
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
		a := buzz.AuxRow{Ref: st.int64(0), ID: st.bytes(1), Live: st.int64(2) != 0, Named: st.int64(8) != 0}
		a.Scope, a.Scoped = st.nullInt64(3)
		a.Expires, a.Expiring = st.nullInt64(5)
		n++
		r.after.value = append(r.after.value[:0], st.bytes(6)...)
		r.after.createdAt, r.after.seq = st.int64(7), a.Ref
		if a.Live {
			if a.Event, err = storedEvent(st, 1, 4, 9).raw(); err != nil {
				r.s.log.Warn("aux closure: skipping unreadable stored event", "seq", a.Ref, "err", err)
				a.Live = false
			}
		}
		if err := fn(a); err != nil {
			return 0, err
		}
	}
}

// AuxCapped logs a hop that reached the aux closure's page cap.
func (r *pageReader) AuxCapped(hop, pages int) {
	r.s.log.Warn("aux closure reached its page cap; served what it drained", "hop", hop, "pages", pages)
}

// Thread serves the thread page q asks for (RL-20), as buzz reads it,
// from one read transaction.
func (s *Store) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	var page *buzz.ThreadPage
	err := s.pageBuild(ctx, func(tx directTx) error {
		c, err := s.communityDirect(ctx, tx)
		if err != nil {
			return err
		}
		page, err = c.ReadThread(ctx, &pageReader{s: s, tx: tx}, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// ThreadRoot reads the event of id a thread page reads below.
func (r *pageReader) ThreadRoot(id []byte) (root buzz.ThreadRoot, found bool, err error) {
	st, err := r.tx.query(`SELECT seq, depth, scope FROM events WHERE id = ?`, id)
	if err != nil {
		return root, false, fmt.Errorf("thread root: %w", err)
	}
	defer st.reset()
	if found, err = st.step(); err != nil {
		return root, false, fmt.Errorf("thread root: %w", err)
	}
	if !found {
		return root, false, nil
	}
	root.Ref = st.int64(0)
	root.Depth, root.HasDepth = st.nullInt64(1)
	root.Scope, root.Scoped = st.nullInt64(2)
	return root, true, nil
}

// ThreadReplies reads the replies below root (threadSQL).
func (r *pageReader) ThreadReplies(root buzz.ThreadRoot, q buzz.ThreadQuery, add func(buzz.RawEvent) error) error {
	query, args := threadSQL(root.Ref, root.Depth, q, r.s.nowUnix())
	st, err := r.tx.query(query, args...)
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
			r.s.log.Warn("thread: skipping unreadable stored event", "seq", st.int64(0), "err", err)
			continue
		}
		if err := add(ev); err != nil {
			return err
		}
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
			var replies, descendants, updatedAt int64
			var last sql.NullInt64
			if err := rows.Scan(&id, &replies, &descendants, &last, &parts, &updatedAt); err != nil {
				return fmt.Errorf("summaries: %w", err)
			}
			sm := buzz.SummaryOf(hex.EncodeToString(id), replies, descendants, last.Int64, last.Valid, parts, updatedAt)
			byID[sm.ID] = sm
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return buzz.SummariesIn(ids, byID), nil
}
