package postgres

import (
	"bytes"
	"cmp"
	"context"
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

// feedPageRows is the keyset page of a feed's walk. A walk goes on until
// it holds what it serves or its index runs out: no number of events the
// requester may not read can shorten a feed (RL-35, settled on
// 2026-12-04); the query's deadline bounds it in time.
const feedPageRows = 200

// feedCandidate is what a walk reads of a candidate: its place in the
// walk, its id for the feed's order, whether it may be served at all
// (live at $1, and whatever extra the type asks), and its scope.
func feedCandidate(extra string) string {
	return `e.created_at, e.seq, e.id, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $1)` + extra + `, e.scope`
}

// feedMentionSQL walks the `p` entries of the tag index that name $6,
// newest first, for events of kinds. $2 is since, ($3, $4) the keyset
// position (created_at, seq) the page continues strictly after, $5 the
// page size.
func feedMentionSQL(kinds []int) string {
	return `SELECT ` + feedCandidate("") + ` FROM tags t JOIN events e ON e.seq = t.seq
		WHERE t.name = 'p' AND t.value = $6 AND t.kind IN (` + intList(kinds) + `)
		AND t.created_at >= $2 AND t.created_at <= $3 AND (t.created_at < $3 OR t.seq < $4)
		ORDER BY t.created_at DESC, t.seq DESC LIMIT $5`
}

// feedActivitySQL walks the channel messages of kinds in feed order, one
// range of events_kind a kind merged in order. Parameters as
// feedMentionSQL's, without $6, but for the keyset position ($3, $4),
// which is (created_at, id): the index is in feed order, and a walk stops
// at the events it needs even when hundreds share their second.
func feedActivitySQL(kinds []int) string {
	arms := make([]string, len(kinds))
	for i, k := range kinds {
		arms[i] = `(SELECT ` + feedCandidate(" AND e.channel IS NOT NULL") +
			` FROM events e WHERE e.kind = ` + strconv.Itoa(k) +
			` AND e.created_at >= $2 AND e.created_at <= $3 AND (e.created_at < $3 OR e.id > $4)
			ORDER BY e.created_at DESC, e.id LIMIT $5)`
	}
	return strings.Join(arms, " UNION ALL ") + ` ORDER BY 1 DESC, 3 LIMIT $5`
}

func intList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

var (
	feedMentionsQuery    = feedMentionSQL(buzz.MentionKinds)
	feedNeedsActionQuery = feedMentionSQL(buzz.NeedsActionKinds)
	feedActivityQuery    = feedActivitySQL(buzz.ActivityKinds)
)

// feedHit is a candidate the feed serves.
type feedHit struct {
	createdAt, seq int64
	id             []byte
}

// Feed serves the home feed of q.Viewer (RL-35) from one read transaction:
// each type in q.Types in turn, newest first (`created_at DESC, id ASC`),
// events q.Viewer may read (RL-13) at or after q.Since, at most q.Limit
// across the types, each event once.
func (s *Store) Feed(ctx context.Context, q buzz.FeedQuery) ([]*nostr.Event, error) {
	since := int64(math.MinInt64)
	if q.Since != nil {
		since = *q.Since
	}
	var before *feedCursor
	if q.Before != nil {
		before = &feedCursor{at: q.Before.CreatedAt, id: []byte{}}
		if q.Before.ID != "" {
			id, ok := nipcw.ID32(q.Before.ID)
			if !ok {
				return nil, fmt.Errorf("feed: before_id %q is no event id", q.Before.ID)
			}
			before.id = id
		}
	}
	var out []*nostr.Event
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		if q.Limit <= 0 {
			return nil
		}
		readable := func(scope *int64) bool { return scope == nil || c.CanReadSeq(q.Viewer, *scope) }
		served := map[int64]bool{}
		var hits []feedHit
		for _, t := range q.Types {
			need := q.Limit - len(hits)
			if need <= 0 {
				break
			}
			var query string
			var extra []any
			switch {
			case q.Viewer == buzz.Anonymous && (t != buzz.FeedActivity || !c.CanReadOpen(q.Viewer)):
				continue // an anonymous reader of a relay without public reads reads no channel
			case t == buzz.FeedActivity:
				query = feedActivityQuery
			case t == buzz.FeedMentions:
				query, extra = feedMentionsQuery, []any{tagKey(string(q.Viewer))}
			case t == buzz.FeedNeedsAction:
				query, extra = feedNeedsActionQuery, []any{tagKey(string(q.Viewer))}
			default:
				return fmt.Errorf("feed: unknown type %q", t)
			}
			found, err := s.feedWalk(ctx, tx, query, t == buzz.FeedActivity, extra, since, before, need, func(scope *int64, seq int64) bool {
				return readable(scope) && !served[seq]
			})
			if err != nil {
				return fmt.Errorf("feed %s: %w", t, err)
			}
			for _, h := range found {
				served[h.seq] = true
			}
			hits = append(hits, found...)
		}
		var err error
		out, err = s.feedLoad(ctx, tx, hits, q.MaxBytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedCursor is RL-19's (until, before_id): a feed continues strictly
// after it in `created_at DESC, id ASC` order.
type feedCursor struct {
	at int64
	id []byte
}

// feedWalk reads the candidates of one feed type newest first, page by
// page, past before (nil: from the head), until it holds need of them
// that take accepts (and, unless the walk is in feed order (byID: its
// keyset position is (created_at, id)), every candidate of the second of
// the last) or the candidates run out. It returns them in feed order, at
// most need.
func (s *Store) feedWalk(ctx context.Context, tx pgx.Tx, query string, byID bool, extra []any, since int64, before *feedCursor, need int,
	take func(scope *int64, seq int64) bool) ([]feedHit, error) {
	now := s.nowUnix()
	var hits []feedHit
	posAt, pos := int64(math.MaxInt64), any(int64(math.MaxInt64))
	if byID {
		pos = []byte{} // before every id
	}
	if before != nil {
		// A (created_at, seq) walk starts at the whole second and leaves
		// out, below, what is not past the id.
		posAt = before.at
		if byID {
			pos = before.id
		}
	}
	for {
		page := feedPageRows
		n, done := 0, false
		rows, err := tx.Query(ctx, query, append([]any{now, since, posAt, pos, page}, extra...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h feedHit
			var live bool
			var scope *int64
			if err := rows.Scan(&h.createdAt, &h.seq, &h.id, &live, &scope); err != nil {
				rows.Close()
				return nil, err
			}
			if len(hits) >= need && h.createdAt < hits[len(hits)-1].createdAt {
				done = true
				break
			}
			n++
			if posAt = h.createdAt; byID {
				pos = h.id
			} else {
				pos = h.seq
			}
			if live && take(scope, h.seq) && (before == nil || byID || h.createdAt < before.at || bytes.Compare(h.id, before.id) > 0) {
				hits = append(hits, h)
				if byID && len(hits) == need {
					done = true
					break
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if done || n < page {
			break
		}
	}
	slices.SortStableFunc(hits, func(a, b feedHit) int {
		if a.createdAt != b.createdAt {
			return cmp.Compare(b.createdAt, a.createdAt)
		}
		return bytes.Compare(a.id, b.id)
	})
	return hits[:min(need, len(hits))], nil
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
