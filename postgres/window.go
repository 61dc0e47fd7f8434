package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Window serves one window page from one read transaction, so that rows,
// aux events and summaries are one snapshot (issue 4), judged by the
// access state of that snapshot (CW-3); or the same page from the cache
// while the snapshot shows no write to its channel since it was read. The
// page is shared: callers must not modify it.
func (s *Store) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	var page *buzz.WindowPage
	key := pagecache.Key(q)
	var read pagecache.Versions     // what the page is read at; foreign once judged so
	expires := int64(math.MaxInt64) // the first expiration on the page
	cached := false
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		page = &buzz.WindowPage{}
		scope := buzz.ScopeIn(q.Scope, q.Viewer, c)
		ch := c.Channel(q.Channel)
		if !scope.Reads(ch) {
			page.Unreadable = true
			return nil
		}
		cur := pagecache.Versions{Access: c.Version}
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT version FROM page_versions WHERE channel = $1), 0)`,
			ch.Seq).Scan(&cur.Channel); err != nil {
			return fmt.Errorf("window: read page version: %w", err)
		}
		if p, ok := s.pages.Get(key, cur, s.nowUnix()); ok {
			page, cached = p, true
			return nil
		}
		read = cur
		bound := newPageBound(q.MaxBytes)
		if err := s.windowRows(ctx, tx, ch.Seq, q, page, bound, &expires); err != nil {
			return err
		}
		if q.Aux && len(page.Rows) > 0 {
			ids := make([]string, len(page.Rows))
			for i, ev := range page.Rows {
				ids[i] = ev.ID
			}
			var err error
			if page.Aux, err = s.auxClosure(ctx, tx, c, scope, ids, ch, bound, &expires, read.Judged(ch.Seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !cached && !page.Unreadable {
		s.pages.Put(key, page, read, expires)
	}
	return page, nil
}

// rowColumns are the columns a page row is read with: its number, the
// event (eventSelect), then what the query adds.
const rowColumns = `e.seq, ` + eventSelect

// windowRows fills the rows of page from the window index of its row
// mode, in window order, and their summaries when q asks for them (CW-9,
// CW-13, CW-15, CW-19). It reads limit+1 rows: the extra one only says
// whether more follow (CW-16). The next cursor is the last row taken,
// decoded or not (CW-17).
func (s *Store) windowRows(ctx context.Context, tx pgx.Tx, channel int64, q buzz.WindowQuery, page *buzz.WindowPage, bound *pageBound, expires *int64) error {
	sq, err := windowSQL(channel, q, s.nowUnix())
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, sq.sql, sq.args...)
	if err != nil {
		return fmt.Errorf("window rows: %w", err)
	}
	defer rows.Close()
	taken := 0
	var lastAt int64
	var lastID []byte // the last row taken, which the next cursor names
	for rows.Next() {
		if taken == q.Limit {
			page.HasMore = true
			if taken > 0 {
				page.Next = &buzz.Position{CreatedAt: lastAt, ID: hex.EncodeToString(lastID)}
			}
			break
		}
		var seq int64
		var cols eventColumns
		var sm counterColumns
		var exp *int64
		dest := append([]any{&seq}, cols.dest()...)
		dest = append(dest, &exp)
		if q.Summaries {
			dest = append(dest, sm.dest()...)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("window rows: %w", err)
		}
		taken++
		if exp != nil {
			*expires = min(*expires, *exp)
		}
		lastAt, lastID = cols.createdAt, append(lastID[:0], cols.id...)
		ev, err := cols.raw()
		if err != nil {
			s.log.Warn("window: skipping unreadable stored event", "seq", seq, "err", err)
			continue
		}
		if err := bound.take(len(ev.JSON)); err != nil {
			return err
		}
		page.Rows = append(page.Rows, ev)
		if q.Summaries && sm.descendants != nil {
			page.Summaries = append(page.Summaries, sm.summary(ev.ID))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("window rows: %w", err)
	}
	return nil
}

// windowSQL selects the rows of a window page of channel at now, from the
// partial index of the row mode (events_toplevel, events_projection) whose
// order is the window order, so that a page costs the same in any
// channel, however many replies and aux events it holds (CW-9, CW-13,
// CW-15), with each row's counters when q asks for summaries (CW-19).
func windowSQL(channel int64, q buzz.WindowQuery, now int64) (sqlQuery, error) {
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
		kinds := make([]int64, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = int64(k)
		}
		b.WriteString(` AND e.kind = ANY(` + sq.arg(kinds) + `::bigint[])`)
	}
	b.WriteString(` ORDER BY e.created_at DESC, e.id ASC LIMIT ` + sq.arg(int64(q.Limit+1)))
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
	return buzz.Summary{ID: id, UpdatedAt: c.updatedAt, Summary: nipcw.Summary{
		ReplyCount: value(c.replies), DescendantCount: value(c.descendants),
		LastReplyAt: c.lastReplyAt, Participants: threadcount.HexKeys(c.participants)}}
}

// pageBound is what a window or thread page may still read of its
// query's MaxBytes: the page is refused as soon as it would pass the
// bound (RL-27a). A nil bound is none.
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

// Aux closure bounds (CW-18).
const (
	auxPageSize = 1000
	auxMaxPages = 64
)

// auxSQL finds, one keyset page at a time, the events of kinds whose `e`
// tag names one of a list of ids, in the order of tags_aux (target,
// created_at, event). Each event found says whether a deletion names it:
// hop 2 asks only for those.
func auxSQL(kinds []int) string {
	list := make([]string, len(kinds))
	for i, k := range kinds {
		list[i] = strconv.Itoa(k)
	}
	return `SELECT ` + rowColumns + `, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $1), e.scope, e.expires_at,
		t.value, t.created_at,
		EXISTS (SELECT 1 FROM tags d WHERE d.name = 'e' AND d.kind IN (5, 7, 9005, 40003)
			AND d.value = convert_to(encode(e.id, 'hex'), 'UTF8') AND d.kind IN (5, 9005))
		FROM tags t JOIN events e ON e.seq = t.seq
		WHERE t.name = 'e' AND t.kind IN (5, 7, 9005, 40003) AND t.value = ANY($2::bytea[])
		AND t.kind IN (` + strings.Join(list, ",") + `) AND (t.value, t.created_at, t.seq) > ($3, $4, $5)
		ORDER BY t.value, t.created_at, t.seq LIMIT ` + strconv.Itoa(auxPageSize)
}

var (
	hop1SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindReaction, buzz.KindGroupDelete, buzz.KindEdit})
	hop2SQL = auxSQL([]int{buzz.KindDeletion, buzz.KindGroupDelete})
)

// auxClosure collects the aux events of targets (hex ids, CW-18): hop 1,
// the deletions, reactions, group deletions and edits naming a target;
// hop 2, the deletions naming a hop-1 event. Each event is served once,
// only if it is neither deleted nor expired and reads, the request's
// scope, reads its channel in c, the access state of tx's snapshot. A
// deleted hop-1 event is not served, but the deletion naming it is. rows
// is the channel of the targets (nil: none), which decides whether
// channel-less aux events are served (buzz.AuxFits). expires is lowered to
// the first expiration of the events found; judged, unless nil, hears of
// the scope of every event judged by the channels of c.
func (s *Store) auxClosure(ctx context.Context, tx pgx.Tx, c *buzz.Community, reads buzz.Scope, targets []string, rows *buzz.Channel, bound *pageBound,
	expires *int64, judged func(scope int64)) ([]buzz.RawEvent, error) {
	served := map[int64]bool{}
	var out []buzz.RawEvent
	var hop1 []string
	for hop, query := range []string{hop1SQL, hop2SQL} {
		names := targets
		if hop == 1 {
			if names = hop1; len(names) == 0 {
				break
			}
		}
		err := s.drainAux(ctx, tx, query, names, hop+1, func(a auxRow) error {
			var scope int64
			if a.scope != nil {
				scope = *a.scope
			}
			if !buzz.AuxFits(rows, scope, a.scope != nil) {
				return nil
			}
			if a.scope != nil {
				if judged != nil {
					judged(*a.scope)
				}
				if !reads.Reads(c.ChannelBySeq(*a.scope)) {
					return nil
				}
			}
			if a.expires != nil {
				*expires = min(*expires, *a.expires)
			}
			if hop == 0 && a.named {
				hop1 = append(hop1, hex.EncodeToString(a.cols.id))
			}
			if !a.live || served[a.seq] {
				return nil
			}
			ev, err := a.cols.raw()
			if err != nil {
				s.log.Warn("aux closure: skipping unreadable stored event", "seq", a.seq, "err", err)
				return nil
			}
			if err := bound.take(len(ev.JSON)); err != nil {
				return err
			}
			served[a.seq] = true
			out = append(out, ev)
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
	cols    eventColumns
	live    bool
	named   bool // a deletion names it (hop 2)
	scope   *int64
	expires *int64
}

// drainAux calls fn with every event query finds for names: in keyset
// pages of auxPageSize, at most auxMaxPages pages per hop; a hop that
// reaches the cap is logged and served as drained.
func (s *Store) drainAux(ctx context.Context, tx pgx.Tx, query string, names []string, hop int, fn func(auxRow) error) error {
	keys := make([][]byte, len(names))
	for i, n := range names {
		keys[i] = tagKey(n)
	}
	now := s.nowUnix()
	lastValue, lastAt, lastSeq := []byte{}, int64(math.MinInt64), int64(math.MinInt64)
	for pages := 0; ; pages++ {
		if pages == auxMaxPages {
			s.log.Warn("aux closure reached its page cap; served what it drained", "hop", hop, "pages", pages)
			return nil
		}
		rows, err := tx.Query(ctx, query, now, keys, lastValue, lastAt, lastSeq)
		if err != nil {
			return fmt.Errorf("aux closure: %w", err)
		}
		n := 0
		for rows.Next() {
			var a auxRow
			dest := append([]any{&a.seq}, a.cols.dest()...)
			dest = append(dest, &a.live, &a.scope, &a.expires, &lastValue, &lastAt, &a.named)
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return fmt.Errorf("aux closure: %w", err)
			}
			n++
			lastSeq = a.seq
			if err := fn(a); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("aux closure: %w", err)
		}
		if n < auxPageSize {
			return nil
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
	bound := newPageBound(q.MaxBytes)
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		var seq int64
		var depth *int32
		var scope *int64
		err := tx.QueryRow(ctx, `SELECT seq, depth, scope FROM events WHERE id = $1`, id).Scan(&seq, &depth, &scope)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("thread root: %w", err)
		}
		reads := buzz.ScopeIn(q.Scope, q.Viewer, c)
		var rows *buzz.Channel
		if scope != nil {
			if rows = c.ChannelBySeq(*scope); !reads.Reads(rows) {
				return nil
			}
		}
		// A channel-less event has no replies (CW-10), but aux it may have.
		if scope != nil && depth != nil && q.Limit > 0 && q.DepthLimit > 0 {
			if err := s.threadReplies(ctx, tx, seq, int64(*depth), q, page, bound); err != nil {
				return err
			}
		}
		if q.Aux {
			targets := []string{hex.EncodeToString(id)}
			for _, ev := range page.Replies {
				targets = append(targets, ev.ID)
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
func (s *Store) threadReplies(ctx context.Context, tx pgx.Tx, seq, depth int64, q buzz.ThreadQuery, page *buzz.ThreadPage, bound *pageBound) error {
	sq := threadSQL(seq, depth, q, s.nowUnix())
	rows, err := tx.Query(ctx, sq.sql, sq.args...)
	if err != nil {
		return fmt.Errorf("thread replies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var cols eventColumns
		if err := rows.Scan(append([]any{&seq}, cols.dest()...)...); err != nil {
			return fmt.Errorf("thread replies: %w", err)
		}
		ev, err := cols.raw()
		if err != nil {
			s.log.Warn("thread: skipping unreadable stored event", "seq", seq, "err", err)
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
	return nil
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
		rows, err := tx.Query(ctx, `SELECT e.id, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants, coalesce(t.updated_at, 0)
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq
			WHERE e.id = ANY($1)`, keys)
		if err != nil {
			return fmt.Errorf("summaries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id []byte
			var c counterColumns
			if err := rows.Scan(append([]any{&id}, c.dest()...)...); err != nil {
				return fmt.Errorf("summaries: %w", err)
			}
			sm := c.summary(hex.EncodeToString(id))
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
