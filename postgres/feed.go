package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
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

// The statements of every group size (buzz.FeedArmsOf), by type.
var feedActivityQueries, feedMentionQueries = buzz.FeedStatements(feedActivitySQL), buzz.FeedStatements(feedMentionSQL)

// feedStreamsSQL and feedAdminStreamsSQL are the private channels of a
// requester: those it holds a role in (judged again by the access state)
// and, for a relay admin, every private channel not deleted.
const (
	feedStreamsSQL      = `SELECT channel FROM members WHERE pubkey = $1`
	feedAdminStreamsSQL = `SELECT seq FROM channels WHERE private AND deleted_at IS NULL`
)

// Feed serves the home feed of q.Viewer (RL-35), as buzz assembles it,
// from one read transaction.
func (s *Store) Feed(ctx context.Context, q buzz.FeedQuery) ([]*nostr.Event, error) {
	var out []*nostr.Event
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		var err error
		out, err = c.Feed(ctx, &feedReader{s: s, tx: tx, ctx: ctx}, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedReader reads the feed in a read transaction (buzz.FeedReader).
type feedReader struct {
	s   *Store
	tx  pgx.Tx
	ctx context.Context
}

func (r *feedReader) MemberChannels(v buzz.Viewer) ([]int64, error) {
	key, err := hex.DecodeString(string(v))
	if err != nil {
		return nil, fmt.Errorf("viewer %q: %w", v, err)
	}
	return r.seqs(feedStreamsSQL, key)
}

func (r *feedReader) PrivateChannels() ([]int64, error) { return r.seqs(feedAdminStreamsSQL) }

// seqs reads the numbers query answers with args.
func (r *feedReader) seqs(query string, args ...any) ([]int64, error) {
	rows, err := r.tx.Query(r.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Range reads rg's streams with the one statement of their arms
// (buzz.FeedArmsOf).
func (r *feedReader) Range(rg buzz.FeedRange) ([]buzz.FeedHit, error) {
	queries, args := feedActivityQueries, []any{r.s.nowUnix(), rg.Since, rg.Until, rg.After, rg.Limit}
	if rg.Type != buzz.FeedActivity {
		queries, args = feedMentionQueries, append(args, tagKey(string(rg.Viewer)), rg.Type == buzz.FeedNeedsAction)
	}
	arms := buzz.FeedArmsOf(rg)
	for _, stream := range arms {
		args = append(args, stream)
	}
	rows, err := r.tx.Query(r.ctx, queries[len(arms)], args...)
	return collect(rows, err, func(row pgx.CollectableRow) (h buzz.FeedHit, err error) {
		var scope *int64
		err = row.Scan(&h.CreatedAt, &h.Ref, &h.ID, &scope)
		h.Scope, h.Scoped = value(scope), scope != nil
		return h, err
	})
}

// Events reads the events of refs.
func (r *feedReader) Events(refs []int64) (map[int64]*nostr.Event, error) {
	byRef := make(map[int64]*nostr.Event, len(refs))
	var seq int64
	var cols eventColumns
	rows, err := r.tx.Query(r.ctx, `SELECT `+rowColumns+` FROM events e WHERE e.seq = ANY($1)`, refs)
	err = eachRow(rows, err, "feed events", append([]any{&seq}, cols.dest()...), func() error {
		if ev, err := cols.event(); err != nil {
			r.s.log.Warn("feed: skipping unreadable stored event", "seq", seq, "err", err)
		} else {
			byRef[seq] = ev
		}
		return nil
	})
	return byRef, err
}
