package postgres

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

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
	before, ok, err := buzz.QueryCursor(f, beforeID)
	if err != nil || !ok {
		return nil, false, err
	}
	size := 0
	err = s.readStatement(ctx, func(c *buzz.Community) (sqlQuery, bool) {
		return s.translate(f, c, v, before, eventSelect)
	}, func(rows pgx.Rows, err error) error {
		evs, truncated, size = nil, false, 0
		var cols eventColumns
		return eachRow(rows, err, "query events", cols.dest(), func() error {
			ev, err := cols.raw()
			if err != nil {
				s.log.Warn("skipping unreadable stored event", "err", err)
				return nil
			}
			if size += len(ev.JSON); maxBytes > 0 && size > maxBytes {
				truncated = true
				return errStop
			}
			evs = append(evs, ev)
			return nil
		})
	})
	if err != nil {
		return nil, false, err
	}
	return evs, truncated, nil
}

// Positions is QueryBounded reading only the (created_at, id) of each
// event: the set of a NIP-77 sync (RL-34).
func (s *Store) Positions(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string) ([]buzz.Position, error) {
	before, ok, err := buzz.QueryCursor(f, beforeID)
	if err != nil || !ok {
		return nil, err
	}
	var out []buzz.Position
	err = s.readStatement(ctx, func(c *buzz.Community) (sqlQuery, bool) {
		return s.translate(f, c, v, before, positionSelect)
	}, func(rows pgx.Rows, err error) error {
		out = nil
		var p buzz.Position
		var id []byte
		return eachRow(rows, err, "query event positions", []any{&p.CreatedAt, &id}, func() error {
			p.ID = hex.EncodeToString(id)
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Count returns how many stored events match f, with the semantics of
// Query and no limit (NIP-45), counting only events v may read (RL-13).
func (s *Store) Count(ctx context.Context, f nostr.Filter, v buzz.Viewer) (int64, error) {
	if buzz.MatchesNothing(f) {
		return 0, nil
	}
	var n int64
	err := s.readStatement(ctx, func(c *buzz.Community) (sqlQuery, bool) {
		return s.translate(f, c, v, nil, countSelect)
	}, func(rows pgx.Rows, err error) error {
		return eachRow(rows, err, "count events", []any{&n}, func() error { return nil })
	})
	return n, err
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

// translate turns a NIP-01 filter, as buzz.PlanFilter plans it, into one
// SQL statement selecting projection; all but the count in Query's order
// within the filter's limit. ok is false when the filter can match
// nothing.
func (s *Store) translate(f nostr.Filter, c *buzz.Community, v buzz.Viewer, before []byte, projection string) (q sqlQuery, ok bool) {
	// The channels' numbers come from the access state of the query's
	// snapshot, written into the statement: behind a subquery the planner
	// cannot tell a quiet channel from a busy one, and walked the whole
	// table's time index for it. A lookup in c cannot fail, and only a
	// lookup's error is PlanFilter's.
	p, ok, _ := buzz.PlanFilter(f, before, func(h string) (int64, bool, error) {
		if ch := c.Channel(h); ch != nil && ch.Seq != 0 {
			return ch.Seq, true, nil
		}
		return 0, false, nil
	})
	if !ok {
		return q, false
	}
	var where []string
	where = append(where, "e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > "+q.arg(s.nowUnix())+")")
	if c.MayHide(v) {
		where = append(where, readScope(&q, c.ScopeOf(v)))
	}
	if p.IDs != nil {
		where = append(where, "e.id = ANY("+q.arg(p.IDs)+")")
	}
	if p.Authors != nil {
		where = append(where, "e.pubkey = ANY("+q.arg(p.Authors)+")")
	}
	switch {
	case len(p.Kinds) == 1:
		// One kind is an equality, whose range of events_kind is in
		// created_at order: a LIMIT stops it early however rare the kind
		// (an = ANY range is not in that order, and the planner walks
		// events_created backward instead, through every newer event).
		where = append(where, "e.kind = "+q.arg(int64(p.Kinds[0])))
	case p.Kinds != nil:
		where = append(where, "e.kind = ANY("+q.arg(p.Kinds)+"::bigint[])")
	}
	if p.Since != nil {
		where = append(where, "e.created_at >= "+q.arg(*p.Since))
	}
	if p.Until != nil {
		until := q.arg(*p.Until)
		where = append(where, "e.created_at <= "+until)
		if p.Before != nil {
			where = append(where, "(e.created_at < "+until+" OR e.id > "+q.arg(p.Before)+")")
		}
	}
	from, order := "events e", "e.created_at DESC"
	if p.Driven {
		from, order = "tags t JOIN events e ON e.seq = t.seq", "t.created_at DESC"
		where = append(where, "t.name = "+q.arg(p.Drive[0])+" AND t.value = "+q.arg(tagKey(p.Drive[1])))
		if p.Since != nil {
			where = append(where, "t.created_at >= "+q.arg(*p.Since))
		}
		if p.Until != nil {
			where = append(where, "t.created_at <= "+q.arg(*p.Until))
		}
	}
	for _, t := range p.Tags {
		if t.Name == "h" {
			if len(t.Channels) == 1 {
				where = append(where, "e.channel = "+q.arg(t.Channels[0]))
			} else {
				where = append(where, "e.channel = ANY("+q.arg(t.Channels)+"::bigint[])")
			}
			continue
		}
		keys := make([][]byte, len(t.Values))
		for i, v := range t.Values {
			keys[i] = tagKey(v)
		}
		where = append(where, "e.seq IN (SELECT t.seq FROM tags t WHERE t.name = "+q.arg(t.Name)+
			" AND t.value = ANY("+q.arg(keys)+"))")
	}
	var b strings.Builder
	b.WriteString("SELECT " + projection + " FROM " + from + " WHERE ")
	b.WriteString(strings.Join(where, " AND "))
	if projection != countSelect {
		b.WriteString(" ORDER BY " + order + ", e.id ASC LIMIT " + q.arg(int64(p.Limit)))
	}
	q.sql = b.String()
	return q, true
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
