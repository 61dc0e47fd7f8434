package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
)

// Window serves one window page from one read transaction, so that rows,
// aux events and summaries are one snapshot (issue 4), judged by the
// access state of that snapshot (CW-3); or the same page from the cache
// while the snapshot shows no write to its channel since it was read. The
// page is shared: callers must not modify it.
//
// The transaction is read ahead (readahead.go): its access version, page
// version and, unless the cache holds a page of the request, the page's
// rows, the first page of each hop of its aux closure (auxAheadSQL) and
// its COMMIT go with its BEGIN in one round trip. A page whose closure
// needs more than those (errBehind: a hop of more than a page) is read
// again in a transaction of its own.
func (s *Store) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	key := pagecache.Key(q)
	c := s.Community()
	if _, ch, ok := c.WindowScope(q); ok {
		now := s.nowUnix()
		var rows, aux sqlQuery
		ahead := !s.pages.Holds(key)
		if ahead {
			var err error
			if rows, err = windowSQL(ch.Seq, q, now, q.Limit+1); err != nil {
				return nil, err
			}
			if q.Aux {
				if aux, err = auxAheadSQL(ch.Seq, q, now); err != nil {
					return nil, err
				}
			}
		}
		var page *buzz.WindowPage
		done := false
		err := s.readAhead(ctx, func(b *pgx.Batch) {
			b.Queue(beginRead)
			b.Queue(accessVersionSQL)
			b.Queue(pageVersionSQL, ch.Seq)
			if ahead {
				b.Queue(rows.sql, rows.args...)
				if q.Aux {
					b.Queue(aux.sql, aux.args...)
				}
				b.Queue(`COMMIT`)
			}
		}, func(br pgx.BatchResults, conn *pgxpool.Conn) error {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("window: begin read: %w", err)
			}
			var err error
			if done, err = current(br, c); err != nil || !done {
				return err
			}
			cur := pagecache.Versions{Access: c.Version}
			if err := br.QueryRow().Scan(&cur.Channel); err != nil {
				return fmt.Errorf("window: read page version: %w", err)
			}
			r := &pageReader{s: s, ctx: ctx, tx: conn}
			if ahead {
				r.ahead = br
			} else if err := br.Close(); err != nil {
				return fmt.Errorf("window: %w", err)
			}
			page, err = s.windowIn(ctx, c, r, q, key, cur, now)
			return err
		})
		if (err != nil || done) && !errors.Is(err, errBehind) {
			return page, err
		}
	}
	// Unreadable by the published access state, or that state is older
	// than the snapshot's, or the page needs more than was read ahead: the
	// page is read in a transaction, judged by the snapshot's state.
	var page *buzz.WindowPage
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		if _, _, ok := c.WindowScope(q); !ok {
			page = &buzz.WindowPage{Unreadable: true}
			return nil
		}
		cur := pagecache.Versions{Access: c.Version}
		if err := tx.QueryRow(ctx, pageVersionSQL, c.Channel(q.Channel).Seq).Scan(&cur.Channel); err != nil {
			return fmt.Errorf("window: read page version: %w", err)
		}
		var err error
		page, err = s.windowIn(ctx, c, &pageReader{s: s, ctx: ctx, tx: tx}, q, key, cur, s.nowUnix())
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// errBehind says that a page needs a statement its read ahead did not
// send, once the read ahead's transaction has ended.
var errBehind = errors.New("the page needs more than its read ahead")

// pageVersionSQL is the page version of a channel (page_versions).
const pageVersionSQL = `SELECT coalesce((SELECT version FROM page_versions WHERE channel = $1), 0)`

// windowIn serves the window page q of a channel c's scope reads, in the
// snapshot r reads, whose access state is c and whose page version of the
// channel is in cur: from the cache when it holds the page at cur, else
// read through r and kept in the cache.
func (s *Store) windowIn(ctx context.Context, c *buzz.Community, r *pageReader, q buzz.WindowQuery, key string,
	cur pagecache.Versions, now int64) (*buzz.WindowPage, error) {
	if p, ok := s.pages.Get(key, cur, now); ok {
		return p, nil
	}
	scope, ch, _ := c.WindowScope(q)
	read := cur // what the page is read at; foreign once judged so
	page, expires, err := c.ReadWindow(ctx, r, q, scope, ch, read.Judged(ch.Seq))
	if err != nil {
		return nil, err
	}
	s.pages.Put(key, page, read, expires)
	return page, nil
}

// pageReader reads window and thread pages in a read transaction
// (buzz.PageReader), keeping the position of the aux hop it reads.
type pageReader struct {
	s   *Store
	ctx context.Context
	tx  queryer
	// ahead, when set, holds the rest of a read ahead (Window): the rows
	// of the window page WindowRows reads, then, when the page asks for
	// its aux events, the first page of each hop for every name it may be
	// asked for (auxAheadSQL), then the COMMIT. aheadAux are those pages,
	// by hop, once AuxPage has read them.
	ahead    pgx.BatchResults
	aheadAux map[int][]aheadRow
	// The aux hop's names as tags_aux holds them, and the last position
	// its pages read.
	names           [][]byte
	lastValue       []byte
	lastAt, lastSeq int64
}

// rowColumns are the columns a page row is read with: its number, the
// event (eventSelect), then what the query adds.
const rowColumns = `e.seq, ` + eventSelect

// WindowRows reads the rows of channel from the window index of its row
// mode, in window order, and their summaries when q asks for them (CW-9,
// CW-13, CW-15, CW-19). It reads limit+1 rows, the extra one for rows.Row
// (CW-16); a stored event that cannot be rebuilt is counted and skipped
// (CW-17).
func (r *pageReader) WindowRows(channel int64, q buzz.WindowQuery, page *buzz.WindowRows) error {
	var err error
	var seq int64
	var cols eventColumns
	var sm counterColumns
	var exp *int64
	dest := append([]any{&seq}, cols.dest()...)
	dest = append(dest, &exp)
	if q.Summaries {
		dest = append(dest, sm.dest()...)
	}
	var rows pgx.Rows
	if r.ahead != nil {
		rows, err = r.ahead.Query()
	} else {
		var sq sqlQuery
		if sq, err = windowSQL(channel, q, r.s.nowUnix(), q.Limit+1); err != nil {
			return err
		}
		rows, err = r.tx.Query(r.ctx, sq.sql, sq.args...)
	}
	return eachRow(rows, err, "window rows", dest, func() error {
		if !page.Row(cols.createdAt, cols.id, value(exp), exp != nil) {
			return errStop
		}
		ev, err := cols.raw()
		if err != nil {
			r.s.log.Warn("window: skipping unreadable stored event", "seq", seq, "err", err)
			return nil
		}
		if err := page.Add(ev); err != nil {
			return err
		}
		if q.Summaries && sm.descendants != nil {
			page.Summary(sm.summary(ev.ID))
		}
		return nil
	})
}

// windowSQL selects the first limit rows of a window page of channel at
// now, from the partial index of the row mode (events_toplevel,
// events_projection) whose order is the window order, so that a page
// costs the same in any channel, however many replies and aux events it
// holds (CW-9, CW-13, CW-15), with each row's counters when q asks for
// summaries (CW-19).
func windowSQL(channel int64, q buzz.WindowQuery, now int64, limit int) (sqlQuery, error) {
	var sq sqlQuery
	var b strings.Builder
	b.WriteString(`SELECT ` + rowColumns + `, e.expires_at`)
	if q.Summaries {
		b.WriteString(`, t.reply_count, t.descendant_count, t.last_reply_at, t.participants, coalesce(t.updated_at, 0)`)
	}
	b.WriteString(` FROM events e`)
	if q.Summaries {
		b.WriteString(` LEFT JOIN thread_metadata t ON t.seq = e.seq AND t.descendant_count > 0`)
	}
	class := "e.row_class = 2"
	if q.Projection {
		class = "e.row_class >= 1"
	}
	b.WriteString(` WHERE e.channel = ` + sq.arg(channel) + ` AND ` + class + ` AND e.deleted_at IS NULL`)
	if q.Before != nil {
		id, err := hex.DecodeString(q.Before.ID)
		if err != nil {
			return sq, fmt.Errorf("window cursor id: %w", err)
		}
		at := sq.arg(q.Before.CreatedAt)
		b.WriteString(` AND e.created_at <= ` + at + ` AND (e.created_at < ` + at + ` OR e.id > ` + sq.arg(id) + `)`)
	}
	b.WriteString(` AND (e.expires_at IS NULL OR e.expires_at > ` + sq.arg(now) + `)`)
	if len(q.Kinds) > 0 {
		b.WriteString(` AND e.kind = ANY(` + sq.arg(q.Kinds) + `::bigint[])`)
	}
	b.WriteString(` ORDER BY e.created_at DESC, e.id ASC LIMIT ` + sq.arg(int64(limit)))
	sq.sql = b.String()
	return sq, nil
}

// counterColumns are a row's thread counters as a page reads them: NULL
// when it has no non-deleted reply below.
type counterColumns struct {
	replies, descendants, lastReplyAt *int64
	participants                      []byte
	updatedAt                         int64
}

func (c *counterColumns) dest() []any {
	return []any{&c.replies, &c.descendants, &c.lastReplyAt, &c.participants, &c.updatedAt}
}

// summary is the thread summary of row id (CW-19).
func (c *counterColumns) summary(id string) buzz.Summary {
	return buzz.SummaryOf(id, value(c.replies), value(c.descendants), value(c.lastReplyAt), c.lastReplyAt != nil, c.participants, c.updatedAt)
}

// auxSQL finds, one keyset page at a time, the events of kinds whose `e`
// tag names one of names (the SQL of a bytea[]), in the order of tags_aux
// (target, created_at, event), live at now, after the position after puts
// in SQL ("": the first page). Each event found says whether a deletion
// names it: hop 2 asks only for those.
func auxSQL(kinds []int, now, names, after string) string {
	list := make([]string, len(kinds))
	for i, k := range kinds {
		list[i] = strconv.Itoa(k)
	}
	return `SELECT ` + rowColumns + `, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ` + now + `) AS live, e.scope, e.expires_at,
		t.value, t.created_at AS tagged_at,
		EXISTS (SELECT 1 FROM tags d WHERE d.name = 'e' AND d.kind IN (5, 7, 9005, 40003)
			AND d.value = convert_to(encode(e.id, 'hex'), 'UTF8') AND d.kind IN (5, 9005)) AS named
		FROM tags t JOIN events e ON e.seq = t.seq
		WHERE t.name = 'e' AND t.kind IN (5, 7, 9005, 40003) AND t.value = ANY(` + names + `)
		AND t.kind IN (` + strings.Join(list, ",") + `)` + after + `
		ORDER BY t.value, t.created_at, t.seq LIMIT ` + strconv.Itoa(buzz.AuxPageSize)
}

var (
	hop1Kinds = []int{buzz.KindDeletion, buzz.KindReaction, buzz.KindGroupDelete, buzz.KindEdit}
	hop2Kinds = []int{buzz.KindDeletion, buzz.KindGroupDelete}
	auxAfter  = ` AND (t.value, t.created_at, t.seq) > ($3, $4, $5)`
	hop1SQL   = auxSQL(hop1Kinds, "$1", "$2::bytea[]", auxAfter)
	hop2SQL   = auxSQL(hop2Kinds, "$1", "$2::bytea[]", auxAfter)
)

// auxAheadSQL is the first page of each hop of the aux closure of the
// window page q of channel at now, as Window reads it ahead, before the
// page's rows are known, in one statement, each event with its hop, in
// hop and tags_aux order: hop 1's for every row the page may serve, hop
// 2's for every event of hop 1 a deletion names. What the closure asks for
// is among these (a row that cannot be rebuilt is not served, an event
// of hop 1 another scope hides names nothing); AuxPage keeps the events
// that name what it asks for.
func auxAheadSQL(channel int64, q buzz.WindowQuery, now int64) (sqlQuery, error) {
	q.Summaries = false
	rows, err := windowSQL(channel, q, now, q.Limit)
	if err != nil {
		return rows, err
	}
	aux := rows
	at := aux.arg(now)
	hop1 := auxSQL(hop1Kinds, at, `ARRAY(SELECT convert_to(encode(w.id, 'hex'), 'UTF8') FROM (`+rows.sql+`) w)`, "")
	hop2 := auxSQL(hop2Kinds, at, `ARRAY(SELECT convert_to(encode(h1.id, 'hex'), 'UTF8') FROM h1 WHERE h1.named)`, "")
	aux.sql = `WITH h1 AS MATERIALIZED (` + hop1 + `)
		SELECT ` + strconv.Itoa(buzz.AuxHopTargets) + ` AS hop, * FROM h1
		UNION ALL SELECT ` + strconv.Itoa(buzz.AuxHopDeletions) + `, * FROM (` + hop2 + `) h2
		ORDER BY hop, value, tagged_at, seq`
	return aux, nil
}

// aheadRow is an event of an aux hop read ahead, with the name it was
// found by (tagKey form).
type aheadRow struct {
	name []byte
	row  buzz.AuxRow
}

// AuxPage reads one keyset page of hop (hop1SQL, hop2SQL) for names and
// leaves r at its last position. Page 0 turns names into the values
// tags_aux holds and starts before every one. Read ahead, page 0 is the
// hop's page of auxAheadSQL with the events of other names left out; a
// later page, or a page 0 that may not hold all of names' events, is
// errBehind.
func (r *pageReader) AuxPage(hop int, names []string, page int, fn func(buzz.AuxRow) error) (n int, err error) {
	if page == 0 {
		r.names = r.names[:0]
		for _, n := range names {
			r.names = append(r.names, tagKey(n))
		}
		r.lastValue, r.lastAt, r.lastSeq = []byte{}, math.MinInt64, math.MinInt64
	}
	if r.ahead != nil {
		return r.auxAhead(hop, page, fn)
	}
	query := hop1SQL
	if hop == buzz.AuxHopDeletions {
		query = hop2SQL
	}
	rows, err := r.tx.Query(r.ctx, query, r.s.nowUnix(), r.names, r.lastValue, r.lastAt, r.lastSeq)
	err = r.eachAux(rows, err, nil, func(a buzz.AuxRow) error {
		n++
		r.lastSeq = a.Ref
		return fn(a)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// auxAhead is AuxPage read ahead: the first time, it reads the hops'
// pages of auxAheadSQL from r.ahead.
func (r *pageReader) auxAhead(hop, page int, fn func(buzz.AuxRow) error) (int, error) {
	if page > 0 {
		return 0, errBehind
	}
	if r.aheadAux == nil {
		r.aheadAux = map[int][]aheadRow{}
		var at int
		rows, err := r.ahead.Query()
		err = r.eachAux(rows, err, &at, func(a buzz.AuxRow) error {
			a.ID = slices.Clone(a.ID)
			r.aheadAux[at] = append(r.aheadAux[at], aheadRow{name: slices.Clone(r.lastValue), row: a})
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	found := r.aheadAux[hop]
	if len(found) == buzz.AuxPageSize {
		return 0, errBehind
	}
	want := make(map[string]bool, len(r.names))
	for _, n := range r.names {
		want[string(n)] = true
	}
	n := 0
	for _, a := range found {
		if want[string(a.name)] {
			n++
			if err := fn(a.row); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// eachAux calls fn with each event of an aux hop's rows (rows and err as
// Query returns them), each row's name and position left in r; hop, when
// set, is the first column, the hop of auxAheadSQL.
func (r *pageReader) eachAux(rows pgx.Rows, err error, hop *int, fn func(buzz.AuxRow) error) error {
	var ref int64
	var live, named bool
	var cols eventColumns
	var scope, expires *int64
	var dest []any
	if hop != nil {
		dest = append(dest, hop)
	}
	dest = append(dest, &ref)
	dest = append(dest, cols.dest()...)
	dest = append(dest, &live, &scope, &expires, &r.lastValue, &r.lastAt, &named)
	return eachRow(rows, err, "aux closure", dest, func() (err error) {
		a := buzz.AuxRow{Ref: ref, ID: cols.id, Live: live, Named: named,
			Scope: value(scope), Scoped: scope != nil, Expires: value(expires), Expiring: expires != nil}
		if a.Live {
			if a.Event, err = cols.raw(); err != nil {
				r.s.log.Warn("aux closure: skipping unreadable stored event", "seq", a.Ref, "err", err)
				a.Live = false
			}
		}
		return fn(a)
	})
}

// AuxCapped logs a hop that reached the aux closure's page cap.
func (r *pageReader) AuxCapped(hop, pages int) {
	r.s.log.Warn("aux closure reached its page cap; served what it drained", "hop", hop, "pages", pages)
}

// Thread serves the thread page q asks for (RL-20), as buzz reads it,
// from one read transaction.
func (s *Store) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	var page *buzz.ThreadPage
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		var err error
		page, err = c.ReadThread(ctx, &pageReader{s: s, ctx: ctx, tx: tx}, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// ThreadRoot reads the event of id a thread page reads below.
func (r *pageReader) ThreadRoot(id []byte) (root buzz.ThreadRoot, found bool, err error) {
	var depth *int32
	var scope *int64
	err = r.tx.QueryRow(r.ctx, `SELECT seq, depth, scope FROM events WHERE id = $1`, id).Scan(&root.Ref, &depth, &scope)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return root, false, nil
	case err != nil:
		return root, false, fmt.Errorf("thread root: %w", err)
	}
	if depth != nil {
		root.Depth, root.HasDepth = int64(*depth), true
	}
	root.Scope, root.Scoped = value(scope), scope != nil
	return root, true, nil
}

// ThreadReplies reads the replies below root (threadSQL).
func (r *pageReader) ThreadReplies(root buzz.ThreadRoot, q buzz.ThreadQuery, add func(buzz.RawEvent) error) error {
	sq := threadSQL(root.Ref, root.Depth, q, r.s.nowUnix())
	var seq int64
	var cols eventColumns
	rows, err := r.tx.Query(r.ctx, sq.sql, sq.args...)
	return eachRow(rows, err, "thread replies", append([]any{&seq}, cols.dest()...), func() error {
		ev, err := cols.raw()
		if err != nil {
			r.s.log.Warn("thread: skipping unreadable stored event", "seq", seq, "err", err)
			return nil
		}
		return add(ev)
	})
}

// threadSQL selects the replies below event seq at depth, live at now: a
// thread root's from events_root, an inner event's by walking its subtree
// down to the depth limit.
func threadSQL(seq, depth int64, q buzz.ThreadQuery, now int64) sqlQuery {
	var sq sqlQuery
	var b strings.Builder
	// depth is an integer column: a limit past its range (a client may ask
	// for 2^32-1 levels) is every level there is.
	levels := min(int64(q.DepthLimit), math.MaxInt32-depth)
	if depth == 0 {
		b.WriteString(`SELECT ` + rowColumns + ` FROM events e WHERE e.root = ` + sq.arg(seq) +
			` AND e.depth <= ` + sq.arg(depth+levels))
	} else {
		b.WriteString(`WITH RECURSIVE below(seq, lvl) AS (
				SELECT seq, 1 FROM events WHERE parent = ` + sq.arg(seq) + `
				UNION ALL
				SELECT e.seq, b.lvl + 1 FROM events e JOIN below b ON e.parent = b.seq WHERE b.lvl < ` + sq.arg(levels) + `
			)
			SELECT ` + rowColumns + ` FROM below b JOIN events e ON e.seq = b.seq WHERE true`)
	}
	b.WriteString(` AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ` + sq.arg(now) + `)`)
	if q.After != nil {
		at := sq.arg(q.After.CreatedAt)
		if q.After.ID != "" {
			after, _ := hex.DecodeString(q.After.ID)
			b.WriteString(` AND e.created_at >= ` + at + ` AND (e.created_at > ` + at + ` OR e.id > ` + sq.arg(after) + `)`)
		} else {
			b.WriteString(` AND e.created_at > ` + at)
		}
	}
	b.WriteString(` ORDER BY e.created_at ASC, e.id ASC LIMIT ` + sq.arg(int64(q.Limit)))
	sq.sql = b.String()
	return sq
}

// Summaries reads the thread summaries of the events ids (hex), in their
// order, zero counters included: a summary whose count fell to 0 is news
// too (CW-21). Ids not stored are left out.
func (s *Store) Summaries(ctx context.Context, ids []string) ([]buzz.Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := hexKeys(ids)
	byID := make(map[string]buzz.Summary, len(ids))
	err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
		var id []byte
		var c counterColumns
		rows, err := tx.Query(ctx, `SELECT e.id, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants, coalesce(t.updated_at, 0)
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq
			WHERE e.id = ANY($1)`, keys)
		return eachRow(rows, err, "summaries", append([]any{&id}, c.dest()...), func() error {
			sm := c.summary(hex.EncodeToString(id))
			byID[sm.ID] = sm
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return buzz.SummariesIn(ids, byID), nil
}
