package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

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

// The statements of every group size (buzz.FeedArmsOf), by type.
var feedActivityQueries, feedMentionQueries = buzz.FeedStatements(feedActivitySQL), buzz.FeedStatements(feedMentionSQL)

// feedStreamsSQL and feedAdminStreamsSQL are the private channels of a
// requester: those it holds a role in (judged again by the access state)
// and, for a relay admin, every private channel not deleted.
const (
	feedStreamsSQL      = `SELECT channel FROM members INDEXED BY members_pubkey WHERE pubkey = ?`
	feedAdminStreamsSQL = `SELECT seq FROM channels INDEXED BY channels_private WHERE private = 1 AND deleted_at IS NULL`
)

// Feed serves the home feed of q.Viewer (RL-35), as buzz assembles it,
// from one read transaction.
func (s *Store) Feed(ctx context.Context, q buzz.FeedQuery) ([]*nostr.Event, error) {
	var out []*nostr.Event
	err := s.pageTx(ctx, func(tx *sql.Tx, sctx context.Context) error {
		c, err := s.communityIn(sctx, tx)
		if err != nil {
			return err
		}
		out, err = c.Feed(ctx, &feedReader{s: s, tx: tx, ctx: sctx}, q)
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
	tx  *sql.Tx
	ctx context.Context
}

func (r *feedReader) MemberChannels(v buzz.Viewer) ([]int64, error) {
	return r.seqs(feedStreamsSQL, tagValue(string(v)))
}

func (r *feedReader) PrivateChannels() ([]int64, error) { return r.seqs(feedAdminStreamsSQL) }

// seqs reads the numbers query answers with args.
func (r *feedReader) seqs(query string, args ...any) ([]int64, error) {
	st, err := r.s.prepared(r.ctx, r.tx, query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(r.ctx, args...)
	if err != nil {
		return nil, err
	}
	return readSeqs(rows)
}

// Range reads rg's streams with the one statement of their arms
// (buzz.FeedArmsOf).
func (r *feedReader) Range(rg buzz.FeedRange) ([]buzz.FeedHit, error) {
	queries, args := feedActivityQueries, []any{r.s.nowUnix(), rg.Since, rg.Until, rg.After, rg.Limit}
	if rg.Type != buzz.FeedActivity {
		queries, args = feedMentionQueries, append(args, tagValue(string(rg.Viewer)), boolInt(rg.Type == buzz.FeedNeedsAction))
	}
	arms := buzz.FeedArmsOf(rg)
	for _, stream := range arms {
		args = append(args, stream)
	}
	st, err := r.s.prepared(r.ctx, r.tx, queries[len(arms)])
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(r.ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []buzz.FeedHit
	for rows.Next() {
		var h buzz.FeedHit
		var scope sql.NullInt64
		if err := rows.Scan(&h.CreatedAt, &h.Ref, &h.ID, &scope); err != nil {
			return nil, err
		}
		h.Scope, h.Scoped = scope.Int64, scope.Valid
		found = append(found, h)
	}
	return found, rows.Err()
}

// Events reads the events of refs with the column list and decoder every
// read shares.
func (r *feedReader) Events(refs []int64) (map[int64]*nostr.Event, error) {
	list, err := json.Marshal(refs)
	if err != nil {
		return nil, err
	}
	st, err := r.s.prepared(r.ctx, r.tx, feedLoadSQL)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(r.ctx, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byRef := make(map[int64]*nostr.Event, len(refs))
	for rows.Next() {
		var seq int64
		ev, err := scanEvent(prefixed{rows, []any{&seq}})
		if err != nil {
			r.s.log.Warn("feed: skipping unreadable stored event", "seq", seq, "err", err)
			continue
		}
		byRef[seq] = ev
	}
	return byRef, rows.Err()
}

// prefixed scans a row whose first columns, into dest, precede those of
// the scanner it is given to: the shared decoders read their own columns
// after the statement's own.
type prefixed struct {
	rows *sql.Rows
	dest []any
}

func (p prefixed) Scan(dest ...any) error { return p.rows.Scan(append(p.dest, dest...)...) }
