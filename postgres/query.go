package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// DefaultLimit is what a filter without a limit gets.
const DefaultLimit = 1000

// read runs fn in one read-only transaction: one snapshot for everything
// fn reads, judged by the access state of that snapshot. Bounded by
// queryTimeout.
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx, c *buzz.Community) error) error {
	return s.readFor(ctx, queryTimeout, fn)
}

// readFor is read bounded by timeout instead; 0 leaves the bound to ctx
// (operator commands that read the whole database).
func (s *Store) readFor(ctx context.Context, timeout time.Duration, fn func(tx pgx.Tx, c *buzz.Community) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			c, err := s.communityIn(ctx, tx)
			if err != nil {
				return err
			}
			return fn(tx, c)
		})
}

// Query returns the stored, non-deleted, unexpired events that match f
// and v may read, in `created_at DESC, id ASC` order, at most f.Limit
// (DefaultLimit when f has none), with NIP-01 semantics.
func (s *Store) Query(ctx context.Context, f nostr.Filter, v buzz.Viewer) ([]*nostr.Event, error) {
	raws, _, err := s.QueryBounded(ctx, f, v, "", 0)
	if err != nil {
		return nil, err
	}
	return buzz.Decode(raws)
}

// QueryBounded is Query continuing after the composite cursor (f.Until,
// beforeID) of RL-19, serving each event as its signed JSON, that stops
// reading once the JSON read would pass maxBytes (0: no bound), saying so
// with truncated (RL-27a).
func (s *Store) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) (evs []buzz.RawEvent, truncated bool, err error) {
	if matchesNothing(f) {
		return nil, false, nil
	}
	before, err := cursorKey(f, beforeID)
	if err != nil {
		return nil, false, err
	}
	size := 0
	err = s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		q, ok := s.translate(f, c, v, before, eventSelect)
		if !ok {
			return nil
		}
		rows, err := tx.Query(ctx, q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("query events: %w", err)
		}
		defer rows.Close()
		var cols eventColumns
		for rows.Next() {
			if err := rows.Scan(cols.dest()...); err != nil {
				return fmt.Errorf("query events: %w", err)
			}
			ev, err := cols.raw()
			if err != nil {
				s.log.Warn("skipping unreadable stored event", "err", err)
				continue
			}
			if size += len(ev.JSON); maxBytes > 0 && size > maxBytes {
				truncated = true
				return nil
			}
			evs = append(evs, ev)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("query events: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return evs, truncated, nil
}

// Positions is QueryBounded reading only the (created_at, id) of each
// event: the set of a NIP-77 sync (RL-34).
func (s *Store) Positions(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string) ([]buzz.Position, error) {
	if matchesNothing(f) {
		return nil, nil
	}
	before, err := cursorKey(f, beforeID)
	if err != nil {
		return nil, err
	}
	var out []buzz.Position
	err = s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		q, ok := s.translate(f, c, v, before, positionSelect)
		if !ok {
			return nil
		}
		rows, err := tx.Query(ctx, q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("query event positions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var p buzz.Position
			var id []byte
			if err := rows.Scan(&p.CreatedAt, &id); err != nil {
				return fmt.Errorf("read event position: %w", err)
			}
			p.ID = hex.EncodeToString(id)
			out = append(out, p)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("query event positions: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Count returns how many stored events match f, with the semantics of
// Query and no limit (NIP-45), counting only events v may read (RL-13).
func (s *Store) Count(ctx context.Context, f nostr.Filter, v buzz.Viewer) (int64, error) {
	if matchesNothing(f) {
		return 0, nil
	}
	var n int64
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		q, ok := s.translate(f, c, v, nil, countSelect)
		if !ok {
			return nil
		}
		if err := tx.QueryRow(ctx, q.sql, q.args...).Scan(&n); err != nil {
			return fmt.Errorf("count events: %w", err)
		}
		return nil
	})
	return n, err
}

// cursorKey is the stored form of the composite cursor (f.Until,
// beforeID) of RL-19; nil for no beforeID.
func cursorKey(f nostr.Filter, beforeID string) ([]byte, error) {
	if beforeID == "" {
		return nil, nil
	}
	before, ok := nipcw.ID32(beforeID)
	if !ok || f.Until == nil {
		return nil, fmt.Errorf("before_id %q needs a 64-hex id and until", beforeID)
	}
	return before, nil
}

// matchesNothing spots, without the database, filters that can match no
// event: an empty list, a tag name that is not one indexed letter, a
// search term.
func matchesNothing(f nostr.Filter) bool {
	if f.Search != "" || (f.IDs != nil && len(f.IDs) == 0) ||
		(f.Authors != nil && len(f.Authors) == 0) || (f.Kinds != nil && len(f.Kinds) == 0) {
		return true
	}
	for name, values := range f.Tags {
		if values != nil && (len(values) == 0 || !buzz.IsTagName(name)) {
			return true
		}
	}
	return false
}

// The projections translate selects: a count, whole events, positions.
const (
	countSelect    = "count(*)"
	positionSelect = "e.created_at, e.id"
)

// sqlQuery is a statement with its numbered arguments.
type sqlQuery struct {
	sql  string
	args []any
}

// arg adds a value and returns its placeholder.
func (q *sqlQuery) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// translate turns a NIP-01 filter into one SQL statement selecting
// projection; all but the count in Query's order within the filter's
// limit. ok is false when the filter can match nothing.
func (s *Store) translate(f nostr.Filter, c *buzz.Community, v buzz.Viewer, before []byte, projection string) (q sqlQuery, ok bool) {
	var where []string
	where = append(where, "e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > "+q.arg(s.nowUnix())+")")
	if c.MayHide(v) {
		where = append(where, readScope(&q, c.ScopeOf(v)))
	}
	if f.IDs != nil {
		ids := hexKeys(f.IDs)
		if len(ids) == 0 {
			return q, false
		}
		where = append(where, "e.id = ANY("+q.arg(ids)+")")
	}
	if f.Authors != nil {
		keys := hexKeys(f.Authors)
		if len(keys) == 0 {
			return q, false
		}
		where = append(where, "e.pubkey = ANY("+q.arg(keys)+")")
	}
	switch {
	case len(f.Kinds) == 1:
		// One kind is an equality, whose range of events_kind is in
		// created_at order: a LIMIT stops it early however rare the kind
		// (an = ANY range is not in that order, and the planner walks
		// events_created backward instead, through every newer event).
		where = append(where, "e.kind = "+q.arg(int64(f.Kinds[0])))
	case f.Kinds != nil:
		kinds := make([]int64, len(f.Kinds))
		for i, k := range f.Kinds {
			kinds[i] = int64(k)
		}
		where = append(where, "e.kind = ANY("+q.arg(kinds)+"::bigint[])")
	}
	if f.Since != nil {
		where = append(where, "e.created_at >= "+q.arg(int64(*f.Since)))
	}
	if f.Until != nil {
		until := q.arg(int64(*f.Until))
		where = append(where, "e.created_at <= "+until)
		if before != nil {
			where = append(where, "(e.created_at < "+until+" OR e.id > "+q.arg(before)+")")
		}
	}
	names := make([]string, 0, len(f.Tags))
	for name := range f.Tags {
		names = append(names, name)
	}
	slices.Sort(names)
	// A filter on one value of one tag (the common `#e`, `#p` lookups) is
	// driven by that tag's index range itself, newest first, so that a
	// LIMIT stops the scan early however many events carry the value.
	from, order := "events e", "e.created_at DESC"
	if drive, ok := singleTagValue(f); ok {
		from, order = "tags t JOIN events e ON e.seq = t.seq", "t.created_at DESC"
		where = append(where, "t.name = "+q.arg(drive[0])+" AND t.value = "+q.arg(tagKey(drive[1])))
		if f.Since != nil {
			where = append(where, "t.created_at >= "+q.arg(int64(*f.Since)))
		}
		if f.Until != nil {
			where = append(where, "t.created_at <= "+q.arg(int64(*f.Until)))
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == drive[0] })
	}
	for _, name := range names {
		values := f.Tags[name]
		if values == nil {
			// A nil list constrains nothing, as in go-nostr's Filter.Matches.
			continue
		}
		if name == "h" {
			// The channels' numbers come from the access state of the
			// query's snapshot, written into the statement: behind a
			// subquery the planner cannot tell a quiet channel from a busy
			// one, and walked the whole table's time index for it.
			var seqs []int64
			for _, h := range values {
				if ch := c.Channel(h); ch != nil && ch.Seq != 0 {
					seqs = append(seqs, ch.Seq)
				}
			}
			switch len(seqs) {
			case 0:
				return q, false
			case 1:
				where = append(where, "e.channel = "+q.arg(seqs[0]))
			default:
				where = append(where, "e.channel = ANY("+q.arg(seqs)+"::bigint[])")
			}
			continue
		}
		keys := make([][]byte, len(values))
		for i, v := range values {
			keys[i] = tagKey(v)
		}
		where = append(where, "e.seq IN (SELECT t.seq FROM tags t WHERE t.name = "+q.arg(name)+
			" AND t.value = ANY("+q.arg(keys)+"))")
	}
	var b strings.Builder
	b.WriteString("SELECT " + projection + " FROM " + from + " WHERE ")
	b.WriteString(strings.Join(where, " AND "))
	if projection != countSelect {
		limit := f.Limit
		if limit <= 0 {
			limit = DefaultLimit
		}
		b.WriteString(" ORDER BY " + order + ", e.id ASC LIMIT " + q.arg(int64(limit)))
	}
	q.sql = b.String()
	return q, true
}

// singleTagValue returns the name and value of a filter's only tag
// constraint (the channel aside), when it has exactly one value and no ids
// make it moot.
func singleTagValue(f nostr.Filter) ([2]string, bool) {
	var found [2]string
	n := 0
	for name, values := range f.Tags {
		if values == nil || name == "h" {
			continue
		}
		n++
		if len(values) != 1 || !buzz.IsTagName(name) {
			return found, false
		}
		found = [2]string{name, values[0]}
	}
	return found, n == 1 && f.IDs == nil
}

// readScope is the one read rule, buzz.Scope.Reads, as a condition on an
// event row e, read from the tables of the statement's own snapshot
// (RL-13): events without a scope, and events of a channel that exists,
// is not deleted, and is open to the scope's viewer or private with it a
// member (or a relay admin).
func readScope(q *sqlQuery, s buzz.Scope) string {
	return `(e.scope IS NULL OR EXISTS (SELECT 1 FROM channels c WHERE c.seq = e.scope AND c.deleted_at IS NULL
		AND CASE WHEN NOT c.private THEN ` + q.arg(s.Open) + ` ELSE ` +
		q.arg(s.Admin) + ` OR EXISTS (SELECT 1 FROM members m
		WHERE m.channel = c.seq AND m.pubkey = ` + q.arg(s.MemberKey()) + ` AND m.role >= ` + strconv.Itoa(int(buzz.RoleMember)) + `) END))`
}
