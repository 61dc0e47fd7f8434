package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Query returns the stored, non-deleted, unexpired events that match f, in
// `created_at DESC, id ASC` order, at most f.Limit (DefaultLimit when f has
// none). NIP-01 semantics: tag filters match exactly, an
// empty list matches nothing, a filter on a multi-letter tag or with a
// search term (NIP-50 is not supported) matches nothing. Only events v may
// read are returned (RL-13).
func (s *Store) Query(ctx context.Context, f nostr.Filter, v buzz.Viewer) ([]*nostr.Event, error) {
	return s.QueryBefore(ctx, f, v, "")
}

// QueryBefore is Query continuing after the composite cursor (f.Until,
// beforeID) of RL-19: events strictly after it in `created_at DESC, id
// ASC` order. An empty beforeID is no cursor beyond f.Until.
func (s *Store) QueryBefore(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string) ([]*nostr.Event, error) {
	raws, _, err := s.QueryBounded(ctx, f, v, beforeID, 0)
	if err != nil {
		return nil, err
	}
	return buzz.Decode(raws)
}

// QueryBounded is QueryBefore serving each event as its signed JSON, that
// stops reading rows once the JSON read would pass maxBytes (0: no bound),
// reporting truncated when it stopped early: what a client may make the
// relay hold is bounded while it is read, not after (RL-27a). The event
// that would pass the bound is not returned. It reads on a direct
// connection, as window pages do, and writes each event's JSON straight
// from its columns: a REQ spent half its time in database/sql's per-value
// conversion, in building a nostr.Event and in encoding it again.
func (s *Store) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) (evs []buzz.RawEvent, truncated bool, err error) {
	before, ok, err := buzz.QueryCursor(f, beforeID)
	if err != nil || !ok {
		return nil, false, err
	}
	err = s.pageRead(ctx, func(tx directTx) error {
		evs, truncated = evs[:0], false
		c, err := s.communityDirect(ctx, tx)
		if err != nil {
			return err
		}
		q, ok, err := s.translate(f, c, v, before, rawSelect, tx.channelSeq)
		if err != nil || !ok {
			return err
		}
		st, err := tx.query(q.sql, q.args...)
		if err != nil {
			return fmt.Errorf("query events: %w", err)
		}
		defer st.reset()
		size := 0
		for {
			found, err := st.step()
			if err != nil {
				return fmt.Errorf("query events: %w", err)
			}
			if !found {
				return nil
			}
			ev, err := storedEvent(st, 0, 1, 2).raw()
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
	})
	if err != nil {
		return nil, false, err
	}
	return evs, truncated, nil
}

// rawSelect is the projection storedEvent(st, 0, 1, 2) reads.
const rawSelect = "e.id, e.created_at, " + eventSQL

// Positions is QueryBefore reading only the (created_at, id) of each
// event: the set of a NIP-77 sync (RL-34), with the same statement, index
// and read rule as Query, without reading or decoding tags and content.
func (s *Store) Positions(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string) ([]buzz.Position, error) {
	before, ok, err := buzz.QueryCursor(f, beforeID)
	if err != nil || !ok {
		return nil, err
	}
	var out []buzz.Position
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		q, ok, err := s.translateIn(ctx, tx, f, v, before, positionSelect)
		if err != nil || !ok {
			return err
		}
		st, err := s.prepared(ctx, tx, q.sql)
		if err != nil {
			return fmt.Errorf("query event positions: %w", err)
		}
		rows, err := st.QueryContext(ctx, q.args...)
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
	return out, err
}

// Count returns how many stored events match f, with the semantics of Query
// and no limit (NIP-45), counting only events v may read (RL-13).
func (s *Store) Count(ctx context.Context, f nostr.Filter, v buzz.Viewer) (int64, error) {
	if buzz.MatchesNothing(f) {
		return 0, nil
	}
	var n int64
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		q, ok, err := s.translateIn(ctx, tx, f, v, nil, countSelect)
		if err != nil || !ok {
			return err
		}
		st, err := s.prepared(ctx, tx, q.sql)
		if err != nil {
			return fmt.Errorf("count events: %w", err)
		}
		if err := st.QueryRowContext(ctx, q.args...).Scan(&n); err != nil {
			return fmt.Errorf("count events: %w", err)
		}
		return nil
	})
	return n, err
}

type sqlQuery struct {
	sql  string
	args []any
}

// The projections translate selects: a count, whole events, positions.
const (
	countSelect    = "count(*)"
	positionSelect = "e.created_at, e.id"
)

// translateIn is translate in a read transaction of the read pool.
func (s *Store) translateIn(ctx context.Context, tx *sql.Tx, f nostr.Filter, v buzz.Viewer, before []byte, projection string) (q sqlQuery, ok bool, err error) {
	c, err := s.communityIn(ctx, tx)
	if err != nil {
		return q, false, err
	}
	return s.translate(f, c, v, before, projection, channelIn(ctx, tx))
}

// channelSeqSQL looks a channel's number up by its id.
const channelSeqSQL = "SELECT seq FROM channels WHERE h = ?"

// channelIn looks channels up in tx.
func channelIn(ctx context.Context, tx *sql.Tx) channelLookup {
	return func(h string) (int64, bool, error) {
		var seq int64
		switch err := tx.QueryRowContext(ctx, channelSeqSQL, h).Scan(&seq); err {
		case nil:
			return seq, true, nil
		case sql.ErrNoRows:
			return 0, false, nil
		default:
			return 0, false, err
		}
	}
}

// translate turns a NIP-01 filter, as buzz.PlanFilter plans it, into one
// SQL statement driven by an index: ids by events_id, channels by
// events_channel, tags by the tags table, authors by events_pubkey, kinds
// by events_kind, time by events_created (SQLite picks among those
// present), selecting projection (countSelect, rawSelect or
// positionSelect); all but the count are in Query's order within the
// filter's limit. c is the access state of the read's snapshot and lookup
// finds a channel's number in it. ok is false when the filter can match
// nothing, so no statement is needed.
func (s *Store) translate(f nostr.Filter, c *buzz.Community, v buzz.Viewer, before []byte, projection string, lookup channelLookup) (q sqlQuery, ok bool, err error) {
	p, ok, err := buzz.PlanFilter(f, before, s.cachedChannel(lookup))
	if err != nil || !ok {
		return q, false, err
	}
	var where []string
	args := []any{}
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	add("e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?)", s.nowUnix())
	if c.MayHide(v) {
		add(readScopeSQL, readScopeArgs(c.ScopeOf(v))...)
	}

	// SQLite has no statistics here to tell a rare tag value from a busy
	// channel or kind. Ids and tag values (mostly ids and pubkeys
	// themselves) are the selective ones: when a filter has them, the unary
	// + keeps the kind and channel terms from driving the scan.
	selective, channels := p.IDs != nil || p.Driven, false
	for _, t := range p.Tags {
		selective = selective || t.Name != "h"
		channels = channels || t.Name == "h"
	}
	if p.IDs != nil {
		add("e.id IN ("+placeholders(len(p.IDs))+")", anys(p.IDs)...)
	}
	if p.Authors != nil {
		add("e.pubkey IN ("+placeholders(len(p.Authors))+")", anys(p.Authors)...)
	}
	if p.Kinds != nil {
		// Beside a channel, the channel drives: events_kind is as free of
		// a sort as events_channel, and without statistics the planner
		// would take whichever index the schema lists last.
		col := "e.kind"
		if selective || channels {
			col = "+e.kind"
		}
		add(col+" IN ("+placeholders(len(p.Kinds))+")", anys(p.Kinds)...)
	}
	if p.Since != nil {
		add("e.created_at >= ?", *p.Since)
	}
	if p.Until != nil {
		add("e.created_at <= ?", *p.Until)
		if p.Before != nil {
			add("(e.created_at < ? OR e.id > ?)", *p.Until, p.Before)
		}
	}

	from, order := "events e", "e.created_at DESC"
	if p.Authors != nil && p.Kinds != nil && !selective && !channels {
		// An author's kinds: events_pubkey narrows to both and sorts one
		// second's ties, events_kind narrows to the kind alone with no sort
		// at all, and without statistics the planner takes the sort-free
		// one, walking every author's events of the kind.
		from = "events e INDEXED BY events_pubkey"
	}
	if p.Driven {
		from, order = "tags t JOIN events e ON e.seq = t.seq", "t.created_at DESC"
		name, err := tagNameSQL(p.Drive[0])
		if err != nil {
			return q, false, err
		}
		add("t.name = "+name+" AND t.value = ?", tagValue(p.Drive[1]))
		if p.Since != nil {
			add("t.created_at >= ?", *p.Since)
		}
		if p.Until != nil {
			add("t.created_at <= ?", *p.Until)
		}
	}
	for _, t := range p.Tags {
		if t.Name == "h" {
			col := "e.channel"
			if selective {
				col = "+e.channel"
			}
			add(col+" IN ("+placeholders(len(t.Channels))+")", anys(t.Channels)...)
			continue
		}
		name, err := tagNameSQL(t.Name)
		if err != nil {
			return q, false, err
		}
		vals := make([]any, 0, len(t.Values)+2)
		for _, v := range t.Values {
			vals = append(vals, tagValue(v))
		}
		cond := "e.seq IN (SELECT t.seq FROM tags t WHERE t.name = " + name + " AND t.value IN (" + placeholders(len(t.Values)) + ")"
		if p.Since != nil {
			cond += " AND t.created_at >= ?"
			vals = append(vals, *p.Since)
		}
		if p.Until != nil {
			cond += " AND t.created_at <= ?"
			vals = append(vals, *p.Until)
		}
		add(cond+")", vals...)
	}

	var b strings.Builder
	b.WriteString("SELECT " + projection + " FROM " + from + " WHERE ")
	b.WriteString(strings.Join(where, " AND "))
	if projection != countSelect {
		b.WriteString(" ORDER BY " + order + ", e.id ASC LIMIT ?")
		args = append(args, p.Limit)
	}
	return sqlQuery{sql: b.String(), args: args}, true, nil
}

// tagNameSQL is a filter's tag name as an SQL literal. It is written into
// the statement rather than bound: tags_aux is a partial index on
// name = 'e', and to know whether it may use it SQLite compares a bound
// name with 'e' and marks the statement to be prepared again whenever
// that argument is bound anew, which was every REQ by `#e` or `#p`. A
// name is one ASCII letter (buzz.IsTagName), so the literal needs no
// quoting beyond its quotes, and there are at most 52 texts per shape.
func tagNameSQL(name string) (string, error) {
	if !buzz.IsTagName(name) {
		return "", fmt.Errorf("tag name %q is not one letter", name)
	}
	return "'" + name + "'", nil
}

// readScopeSQL is the one read rule, buzz.Scope.Reads, as a condition on
// an event row e: events without a scope, and events of a channel that
// exists, is not deleted, and is open to the viewer or private with the
// viewer a member (or a relay admin). The channel and the membership are
// index lookups in the tables of the query's own snapshot, once per row
// examined: the cost of a read does not grow with the channels of the
// community, and the text is the same for every community and viewer, so
// the statement is prepared once (RL-13, RL-27a). Its arguments are
// readScopeArgs.
var readScopeSQL = `(e.scope IS NULL OR EXISTS (SELECT 1 FROM channels c WHERE c.seq = e.scope AND c.deleted_at IS NULL
	AND CASE WHEN c.private = 0 THEN ? ELSE ? OR EXISTS (SELECT 1 FROM members m
		WHERE m.channel = c.seq AND m.pubkey = ? AND m.role >= ` + strconv.Itoa(int(buzz.RoleMember)) + `) END))`

// readScopeArgs are the arguments of readScopeSQL for scope s.
func readScopeArgs(s buzz.Scope) []any { return []any{s.Open, s.Admin, s.MemberKey()} }

// anys lists values as statement arguments.
func anys[T any](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// channelLookup finds the number of the channel h in a read's snapshot;
// found is false when no channel has that id.
type channelLookup func(h string) (seq int64, found bool, err error)

// cachedChannel is lookup behind the store's cache of channel numbers: a
// channel number never changes.
func (s *Store) cachedChannel(lookup channelLookup) channelLookup {
	return func(h string) (int64, bool, error) {
		s.channelsMu.RLock()
		seq, ok := s.channels[h]
		s.channelsMu.RUnlock()
		if ok {
			return seq, true, nil
		}
		seq, found, err := lookup(h)
		if err != nil || !found {
			return 0, false, err
		}
		s.channelsMu.Lock()
		s.channels[h] = seq
		s.channelsMu.Unlock()
		return seq, true, nil
	}
}

// channelSeqs maps `h` values to channel numbers (buzz.ChannelSeqs), as
// statement arguments, looking them up behind the store's cache.
func (s *Store) channelSeqs(hs []string, lookup channelLookup) ([]any, error) {
	seqs, err := buzz.ChannelSeqs(hs, s.cachedChannel(lookup))
	if err != nil {
		return nil, err
	}
	return anys(seqs), nil
}
