package postgres

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// feedArms is how many streams one feed statement merges (see package
// sqlite's): groups are padded to a power of two with noStream, so that a
// handful of statement texts serve every requester.
const (
	feedArms = 16
	noStream = -1
)

// feedActivitySQL merges n streams of events_feed in feed order, the live
// channel messages of kinds 9 and 11, replies included: $1 is now
// (NIP-40), $2 since, ($3, $4) the (created_at, id) position the answer
// continues strictly after, $5 how many it serves, $6.. the streams. Each
// arm is a range of the index in its order, merged (Merge Append) up to
// $5: a stream costs what it serves, whatever else it holds.
func feedActivitySQL(n int) string {
	return feedMerge(n, 6, func(arm string) string {
		return `SELECT e.created_at, e.seq, e.id, e.scope FROM events e
			WHERE e.feed = ` + arm + ` AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $1)
			AND e.created_at >= $2 AND e.created_at <= $3 AND (e.created_at < $3 OR e.id > $4)
			ORDER BY e.created_at DESC, e.id`
	})
}

// feedMentionSQL merges n streams of the mentions of $6 (needs_action
// when $7) in feed order; $1..$5 as feedActivitySQL's, the streams from
// $8. The event is read for its expiration and scope only.
func feedMentionSQL(n int) string {
	return feedMerge(n, 8, func(arm string) string {
		return `SELECT m.created_at, m.seq, m.id, e.scope FROM mentions m JOIN events e ON e.seq = m.seq
			WHERE m.pubkey = $6 AND m.needs = $7 AND m.feed = ` + arm + `
			AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $1)
			AND m.created_at >= $2 AND m.created_at <= $3 AND (m.created_at < $3 OR m.id > $4)
			ORDER BY m.created_at DESC, m.id`
	})
}

// feedMerge joins n arms, the stream of arm i being parameter first+i,
// into one statement in feed order.
func feedMerge(n, first int, arm func(param string) string) string {
	if n == 1 {
		return arm("$"+strconv.Itoa(first)+"::bigint") + ` LIMIT $5`
	}
	arms := make([]string, n)
	for i := range arms {
		arms[i] = "(" + arm("$"+strconv.Itoa(first+i)+"::bigint") + " LIMIT $5)"
	}
	return strings.Join(arms, " UNION ALL ") + ` ORDER BY 1 DESC, 3 LIMIT $5`
}

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
	feedStreamsSQL      = `SELECT channel FROM members WHERE pubkey = $1`
	feedAdminStreamsSQL = `SELECT seq FROM channels WHERE private AND deleted_at IS NULL`
)

// feedHit is an event the feed serves.
type feedHit struct {
	createdAt, seq int64
	id             []byte
}

// Feed serves the home feed of q.Viewer (RL-35) from one read transaction:
// each type in q.Types in turn, newest first (`created_at DESC, id ASC`),
// events q.Viewer may read (RL-13) at or after q.Since and past q.Before,
// at most q.Limit across the types, each event once. Each type merges the
// streams q.Viewer may read (migration 3): stream 0 when it may read open
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
			after = id
		}
	}
	var out []*nostr.Event
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		if q.Limit <= 0 || len(q.Types) == 0 {
			return nil
		}
		streams, err := feedStreams(ctx, tx, c, q.Viewer)
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
				queries, extra = feedMentionQueries, []any{tagKey(string(q.Viewer)), t == buzz.FeedNeedsAction}
			default:
				return fmt.Errorf("feed: unknown type %q", t)
			}
			// What earlier types served takes no slot: ask for as many more.
			args := append([]any{s.nowUnix(), since, until, after, need + len(served)}, extra...)
			found, err := feedMerged(ctx, tx, queries, args, streams)
			if err != nil {
				return fmt.Errorf("feed %s: %w", t, err)
			}
			for _, h := range found {
				if len(hits) == q.Limit {
					break
				}
				if !served[h.seq] && (h.scope == nil || c.CanReadSeq(q.Viewer, *h.scope)) {
					served[h.seq] = true
					hits = append(hits, h.feedHit)
				}
			}
		}
		out, err = s.feedLoad(ctx, tx, hits, q.MaxBytes)
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
func feedStreams(ctx context.Context, tx pgx.Tx, c *buzz.Community, v buzz.Viewer) ([]int64, error) {
	if v == buzz.Anonymous {
		return c.FeedStreams(v, nil), nil
	}
	key, err := hex.DecodeString(string(v))
	if err != nil {
		return nil, fmt.Errorf("feed streams: viewer %q: %w", v, err)
	}
	query, args := feedStreamsSQL, []any{key}
	if c.IsRelayAdmin(string(v)) {
		query, args = feedAdminStreamsSQL, nil
	}
	rows, err := tx.Query(ctx, query, args...)
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
	scope *int64
}

// feedMerged reads the streams feedArms at a time with the statements of
// queries (args: the statement's parameters before the streams) and
// returns the first args[4] of their events in feed order.
func feedMerged(ctx context.Context, tx pgx.Tx, queries map[int]string, args []any, streams []int64) ([]feedCandidate, error) {
	limit := args[4].(int)
	var found []feedCandidate
	for len(streams) > 0 {
		group := streams[:min(feedArms, len(streams))]
		streams = streams[len(group):]
		n := 1
		for n < len(group) {
			n *= 2
		}
		a := slices.Clone(args)
		for i := range n {
			if i < len(group) {
				a = append(a, group[i])
			} else {
				a = append(a, int64(noStream))
			}
		}
		rows, err := tx.Query(ctx, queries[n], a...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h feedCandidate
			if err := rows.Scan(&h.createdAt, &h.seq, &h.id, &h.scope); err != nil {
				rows.Close()
				return nil, err
			}
			found = append(found, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
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

// feedLoad reads the events of hits, in their order, refusing the feed
// with buzz.ErrTooLarge once they pass maxBytes (0: no bound).
func (s *Store) feedLoad(ctx context.Context, tx pgx.Tx, hits []feedHit, maxBytes int) ([]*nostr.Event, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(hits))
	for i, h := range hits {
		seqs[i] = h.seq
	}
	rows, err := tx.Query(ctx, `SELECT `+rowColumns+` FROM events e WHERE e.seq = ANY($1)`, seqs)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	defer rows.Close()
	bySeq := make(map[int64]*nostr.Event, len(hits))
	size := 0
	for rows.Next() {
		var seq int64
		var cols eventColumns
		if err := rows.Scan(append([]any{&seq}, cols.dest()...)...); err != nil {
			return nil, fmt.Errorf("feed: %w", err)
		}
		ev, err := cols.event()
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
