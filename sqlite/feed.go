package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// feedArms is how many streams one feed statement merges: a requester in
// more private channels than that has its streams read feedArms at a
// time, each group's answer merged with the others'. Statements are
// prepared for powers of two up to it (a group padded with a stream that
// does not exist), so that a handful of texts serve every requester.
const feedArms = 16

// noStream is a stream no event is in: the padding of a group.
const noStream = -1

// feedActivitySQL merges n streams of events_feed (schema.sql) in feed
// order, the live channel messages of kinds 9 and 11, replies included:
// ?1 is now (NIP-40), ?2 since, (?3, ?4) the (created_at, id) position
// the answer continues strictly after, ?5 how many it serves, ?6.. the
// streams. Each arm is a range of the index in its order and the merge
// stops at ?5: a stream costs what it serves, whatever else it holds.
func feedActivitySQL(n int) string {
	return feedMerge(n, 6, func(arm string) string {
		return `SELECT e.created_at, e.seq, e.id, e.scope FROM events e INDEXED BY events_feed
			WHERE e.feed = ` + arm + ` AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?1)
			AND e.created_at >= ?2 AND e.created_at <= ?3 AND (e.created_at < ?3 OR e.id > ?4)`
	})
}

// feedMentionSQL merges n streams of the mentions of ?6 (needs_action
// when ?7 is 1) in feed order; ?1..?5 as feedActivitySQL's, the streams
// from ?8. The event is read for its expiration and scope only.
func feedMentionSQL(n int) string {
	return feedMerge(n, 8, func(arm string) string {
		return `SELECT m.created_at, m.seq, m.id, e.scope FROM mentions m INDEXED BY mentions_feed
			CROSS JOIN events e ON e.seq = m.seq
			WHERE m.pubkey = ?6 AND m.needs = ?7 AND m.feed = ` + arm + `
			AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?1)
			AND m.created_at >= ?2 AND m.created_at <= ?3 AND (m.created_at < ?3 OR m.id > ?4)`
	})
}

// feedMerge joins n arms, the stream of arm i being parameter first+i,
// into one statement in feed order: SQLite merges the arms (MERGE (UNION
// ALL)), each read in its index's order.
func feedMerge(n, first int, arm func(param string) string) string {
	arms := make([]string, n)
	for i := range arms {
		arms[i] = arm("?" + strconv.Itoa(first+i))
	}
	return strings.Join(arms, " UNION ALL ") + ` ORDER BY 1 DESC, 3 ASC LIMIT ?5`
}

// feedLoadSQL reads the events of a JSON list of event numbers.
const feedLoadSQL = `SELECT e.seq, ` + eventSelect + ` FROM events e WHERE e.seq IN (SELECT value FROM json_each(?))`

// The statements of every group size, by type.
var feedActivityQueries, feedMentionQueries = feedBySize(feedActivitySQL), feedBySize(feedMentionSQL)

func feedBySize(build func(n int) string) map[int]string {
	m := map[int]string{}
	for n := 1; n <= feedArms; n *= 2 {
		m[n] = build(n)
	}
	return m
}

// feedStreamsSQL and feedAdminStreamsSQL are the private channels of a
// requester: those it holds a role in (judged again by the access state)
// and, for a relay admin, every private channel not deleted.
const (
	feedStreamsSQL      = `SELECT channel FROM members INDEXED BY members_pubkey WHERE pubkey = ?`
	feedAdminStreamsSQL = `SELECT seq FROM channels INDEXED BY channels_private WHERE private = 1 AND deleted_at IS NULL`
)

// feedHit is an event the feed serves.
type feedHit struct {
	createdAt, seq int64
	id             []byte
}

// Feed serves the home feed of q.Viewer (RL-35) from one read transaction:
// each type in q.Types in turn, newest first (`created_at DESC, id ASC`),
// events q.Viewer may read (RL-13) at or after q.Since and past q.Before,
// at most q.Limit across the types, none twice. Each type merges the
// streams q.Viewer may read (schema.sql): stream 0 when it may read open
// channels, and one per private channel it may read, so that nothing it
// may not read costs it anything. An anonymous viewer is mentioned by no
// one: only activity serves it.
func (s *Store) Feed(ctx context.Context, q buzz.FeedQuery) ([]*nostr.Event, error) {
	since := int64(math.MinInt64)
	if q.Since != nil {
		since = *q.Since
	}
	until, after := int64(math.MaxInt64), []byte{} // before every id
	if q.Before != nil {
		until = q.Before.CreatedAt
		if q.Before.ID != "" {
			id, ok := nipcw.ID32(q.Before.ID)
			if !ok {
				return nil, fmt.Errorf("feed: before_id %q is no event id", q.Before.ID)
			}
			after = id[:]
		}
	}
	var out []*nostr.Event
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) error {
		if q.Limit <= 0 || len(q.Types) == 0 {
			return nil
		}
		c, err := s.communityIn(sctx, tx)
		if err != nil {
			return err
		}
		streams, err := s.feedStreams(sctx, tx, c, q.Viewer)
		if err != nil {
			return err
		}
		served := map[int64]bool{}
		var hits []feedHit
		for _, t := range q.Types {
			need := q.Limit - len(hits)
			if need <= 0 {
				break
			}
			var queries map[int]string
			var extra []any
			switch {
			case q.Viewer == buzz.Anonymous && t != buzz.FeedActivity:
				continue
			case t == buzz.FeedActivity:
				queries = feedActivityQueries
			case t == buzz.FeedMentions, t == buzz.FeedNeedsAction:
				queries, extra = feedMentionQueries, []any{tagValue(string(q.Viewer)), boolInt(t == buzz.FeedNeedsAction)}
			default:
				return fmt.Errorf("feed: unknown type %q", t)
			}
			// What earlier types served takes no slot: ask for as many more.
			args := append([]any{s.nowUnix(), since, until, after, need + len(served)}, extra...)
			found, err := s.feedMerged(ctx, sctx, tx, queries, args, streams)
			if err != nil {
				return fmt.Errorf("feed %s: %w", t, err)
			}
			for _, h := range found {
				if len(hits) == q.Limit {
					break
				}
				if !served[h.seq] && (!h.scope.Valid || c.CanReadSeq(q.Viewer, h.scope.Int64)) {
					served[h.seq] = true
					hits = append(hits, h.feedHit)
				}
			}
		}
		out, err = s.feedLoad(sctx, tx, hits, q.MaxBytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedStreams are the streams v may read (buzz's FeedStreams) of the
// private channels v's memberships name (every private channel for a relay
// admin), read in tx's snapshot, whose access state c is.
func (s *Store) feedStreams(ctx context.Context, tx *sql.Tx, c *buzz.Community, v buzz.Viewer) ([]int64, error) {
	if v == buzz.Anonymous {
		return c.FeedStreams(v, nil), nil
	}
	query, args := feedStreamsSQL, []any{tagValue(string(v))}
	if c.IsRelayAdmin(string(v)) {
		query, args = feedAdminStreamsSQL, nil
	}
	st, err := s.prepared(ctx, tx, query)
	if err != nil {
		return nil, fmt.Errorf("feed streams: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("feed streams: %w", err)
	}
	defer rows.Close()
	var candidates []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, fmt.Errorf("feed streams: %w", err)
		}
		candidates = append(candidates, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feed streams: %w", err)
	}
	return c.FeedStreams(v, candidates), nil
}

// feedCandidate is an event a type's streams hold, with the channel whose
// readers may read it.
type feedCandidate struct {
	feedHit
	scope sql.NullInt64
}

// feedMerged reads the streams feedArms at a time with the statements of
// queries (args: the statement's parameters before the streams) and
// returns the first args[4] of their events in feed order.
func (s *Store) feedMerged(ctx, sctx context.Context, tx *sql.Tx, queries map[int]string, args []any, streams []int64) ([]feedCandidate, error) {
	limit := args[4].(int)
	var found []feedCandidate
	for len(streams) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		group := streams[:min(feedArms, len(streams))]
		streams = streams[len(group):]
		n := 1
		for n < len(group) {
			n *= 2
		}
		st, err := s.prepared(sctx, tx, queries[n])
		if err != nil {
			return nil, err
		}
		a := slices.Clone(args)
		for i := range n {
			if i < len(group) {
				a = append(a, group[i])
			} else {
				a = append(a, int64(noStream))
			}
		}
		err = func() error {
			rows, err := st.QueryContext(sctx, a...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var h feedCandidate
				if err := rows.Scan(&h.createdAt, &h.seq, &h.id, &h.scope); err != nil {
					return err
				}
				found = append(found, h)
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(found, func(a, b feedCandidate) int {
		if a.createdAt != b.createdAt {
			return cmp.Compare(b.createdAt, a.createdAt)
		}
		return bytes.Compare(a.id, b.id)
	})
	return found[:min(limit, len(found))], nil
}

// feedLoad reads the events of hits, in their order, with the column list
// and decoder every read shares; their size counts against maxBytes (0:
// no bound), buzz.ErrTooLarge past it.
func (s *Store) feedLoad(ctx context.Context, tx *sql.Tx, hits []feedHit, maxBytes int) ([]*nostr.Event, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(hits))
	for i, h := range hits {
		seqs[i] = h.seq
	}
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	st, err := s.prepared(ctx, tx, feedLoadSQL)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	rows, err := st.QueryContext(ctx, string(list))
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	defer rows.Close()
	bySeq := make(map[int64]*nostr.Event, len(hits))
	size := 0
	for rows.Next() {
		var seq int64
		ev, err := scanEvent(prefixed{rows, []any{&seq}})
		if err != nil {
			s.log.Warn("feed: skipping unreadable stored event", "seq", seq, "err", err)
			continue
		}
		if size += buzz.EventSize(ev); maxBytes > 0 && size > maxBytes {
			return nil, buzz.ErrTooLarge
		}
		bySeq[seq] = ev
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	out := make([]*nostr.Event, 0, len(bySeq))
	for _, h := range hits {
		if ev, ok := bySeq[h.seq]; ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// prefixed scans a row whose first columns, into dest, precede those of
// the scanner it is given to: the shared decoders read their own columns
// after the statement's own.
type prefixed struct {
	rows *sql.Rows
	dest []any
}

func (p prefixed) Scan(dest ...any) error { return p.rows.Scan(append(p.dest, dest...)...) }
