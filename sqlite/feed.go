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
)

// Bounds of a feed's walks (RL-35, RL-27a). A walk reads candidates newest
// first from an index, in keyset pages of feedPageRows, and stops once it
// holds what it needs or its feed has examined feedScanRows candidates,
// across all its types, whatever it found: a requester who may read almost
// none of the events the index holds (an anonymous reader of a community
// whose talk is in private channels, a member mentioned mostly in channels
// since left) costs at most feedScanRows index steps and event lookups a
// feed filter, not a walk of the whole table, about what a generic filter
// of 1,000 events costs. Such a requester's feed then holds the readable
// events among the newest candidates its budget reached.
const (
	feedScanRows = 5000
	feedPageRows = 200
)

// feedCandidate is what a walk reads of a candidate: its place in the
// walk, its id for the feed's order, whether it may be served at all
// (live: neither deleted nor expired at ?1, and whatever extra the type
// asks), and the channel whose readers may read it.
func feedCandidate(extra string) string {
	return `e.created_at, e.seq, e.id, e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > ?1)` + extra + `, e.scope`
}

// feedMentionSQL walks the `p` entries of the tag index that name ?6,
// newest first, for events of kinds: the index's own order, so a page
// stops as soon as it is full. The kind is in the index entry: entries of
// other kinds (the reactions to the requester's events name them too) are
// passed over inside the index, without an event lookup, and are not
// candidates, so that they cannot push the requester's mentions out of
// the walk's bound. ?2 is since, (?3, ?4) the keyset position
// (created_at, seq) the page continues strictly after, ?5 the page size;
// the position keeps ?3 in both terms, as the window's cursor does, so
// that the planner keeps the created_at bound.
func feedMentionSQL(kinds []int) string {
	return `SELECT ` + feedCandidate("") + ` FROM tags t CROSS JOIN events e ON e.seq = t.seq
		WHERE t.name = 'p' AND t.value = ?6 AND t.kind IN (` + intList(kinds) + `)
		AND t.created_at >= ?2 AND t.created_at <= ?3 AND (t.created_at < ?3 OR t.seq < ?4)
		ORDER BY t.created_at DESC, t.seq DESC LIMIT ?5`
}

// feedActivitySQL walks the channel messages of kinds in feed order: one
// range of events_kind a kind, merged in order, so that the walk costs the
// same with ten channels or a hundred thousand and needs no list of them.
// Parameters as feedMentionSQL's but for the keyset position (?3, ?4),
// which is (created_at, id): the index is in feed order, and a walk stops
// at the events it needs even when hundreds share their second. An event
// without a channel is no channel message and is not served.
func feedActivitySQL(kinds []int) string {
	arms := make([]string, len(kinds))
	for i, k := range kinds {
		arms[i] = `SELECT ` + feedCandidate(" AND e.channel IS NOT NULL") +
			` FROM events e INDEXED BY events_kind WHERE e.kind = ` + strconv.Itoa(k) +
			` AND e.created_at >= ?2 AND e.created_at <= ?3 AND (e.created_at < ?3 OR e.id > ?4)`
	}
	return strings.Join(arms, " UNION ALL ") + ` ORDER BY 1 DESC, 3 ASC LIMIT ?5`
}

// feedLoadSQL reads the events of a JSON list of event numbers.
const feedLoadSQL = `SELECT e.seq, ` + eventSelect + ` FROM events e WHERE e.seq IN (SELECT value FROM json_each(?))`

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
// across the types, none twice. An anonymous viewer is mentioned by no
// one: only activity serves it.
func (s *Store) Feed(ctx context.Context, q buzz.FeedQuery) ([]*nostr.Event, error) {
	since := int64(math.MinInt64)
	if q.Since != nil {
		since = *q.Since
	}
	var out []*nostr.Event
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) error {
		c, err := s.communityIn(sctx, tx)
		if err != nil {
			return err
		}
		readable := func(scope sql.NullInt64) bool { return !scope.Valid || c.CanReadSeq(q.Viewer, scope.Int64) }
		served := map[int64]bool{}
		var hits []feedHit
		budget := feedScanRows
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
				query, extra = feedMentionsQuery, []any{tagValue(string(q.Viewer))}
			case t == buzz.FeedNeedsAction:
				query, extra = feedNeedsActionQuery, []any{tagValue(string(q.Viewer))}
			default:
				return fmt.Errorf("feed: unknown type %q", t)
			}
			found, err := s.feedWalk(ctx, sctx, tx, query, t == buzz.FeedActivity, extra, since, need, &budget, func(scope sql.NullInt64, seq int64) bool {
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
		out, err = s.feedLoad(sctx, tx, hits, q.MaxBytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedWalk runs a walk statement page by page and returns the need newest
// candidates that are live and that take accepts, in feed order. A walk
// in feed order (byID: its keyset position is (created_at, id)) stops at
// the need-th; one in (created_at, seq) order goes on past it until the
// second changes, so that candidates of one second are ordered by id
// whatever their order in the index. A walk stops once it has examined
// what is left of budget, which it spends.
func (s *Store) feedWalk(ctx, sctx context.Context, tx *sql.Tx, query string, byID bool, extra []any, since int64, need int, budget *int,
	take func(scope sql.NullInt64, seq int64) bool) ([]feedHit, error) {
	st, err := s.prepared(sctx, tx, query)
	if err != nil {
		return nil, err
	}
	now := s.nowUnix()
	var hits []feedHit
	posAt, pos := int64(math.MaxInt64), any(int64(math.MaxInt64))
	if byID {
		pos = []byte{} // before every id
	}
	for *budget > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		page := min(feedPageRows, *budget)
		n, done := 0, false
		err := func() error {
			rows, err := st.QueryContext(sctx, append([]any{now, since, posAt, pos, page}, extra...)...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var h feedHit
				var live bool
				var scope sql.NullInt64
				if err := rows.Scan(&h.createdAt, &h.seq, &h.id, &live, &scope); err != nil {
					return err
				}
				if len(hits) >= need && h.createdAt < hits[len(hits)-1].createdAt {
					done = true
					return nil
				}
				n++
				if posAt = h.createdAt; byID {
					pos = h.id
				} else {
					pos = h.seq
				}
				if live && take(scope, h.seq) {
					hits = append(hits, h)
					if byID && len(hits) == need {
						done = true
						return nil
					}
				}
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
		*budget -= n
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
