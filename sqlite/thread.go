package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// readThreadRow reads an event's parent and counters (zero without a row).
func (tx *writeTx) readThreadRow(seq int64) (up sql.NullInt64, replies, desc int64, last sql.NullInt64, parts []byte, err error) {
	if err = tx.threadRow.QueryRowContext(tx.ctx, seq).Scan(&up, &replies, &desc, &last, &parts); err != nil {
		err = fmt.Errorf("read thread counters of #%d: %w", seq, err)
	}
	return up, replies, desc, last, parts, err
}

// addToAncestors counts a new reply by pubkey at time at on its parent
// (reply_count) and on every ancestor up to the root (descendant_count,
// last_reply_at, participants): RL-5.
func (tx *writeTx) addToAncestors(parent int64, pubkey []byte, at int64) error {
	return tx.countUp(parent, true, pubkey, at)
}

// countUp counts an event by pubkey at time at on seq and every ancestor of
// seq: as a direct reply of seq when direct, else as an event further down
// (a whole subtree moved below seq, Reclassify).
func (tx *writeTx) countUp(seq int64, direct bool, pubkey []byte, at int64) error {
	start := seq
	for hops := 0; seq != 0; hops++ {
		if hops > maxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", start)
		}
		up, replies, desc, last, parts, err := tx.readThreadRow(seq)
		if err != nil {
			return err
		}
		if direct {
			replies++
		}
		desc++
		if !last.Valid || at > last.Int64 {
			last = sql.NullInt64{Int64: at, Valid: true}
		}
		parts = threadcount.Merge(parts, pubkey, at)
		if _, err := tx.upsertThread.ExecContext(tx.ctx, seq, replies, desc, last, parts, tx.now); err != nil {
			return fmt.Errorf("write thread counters of #%d: %w", seq, err)
		}
		tx.recounted = append(tx.recounted, seq)
		seq, direct = up.Int64, false
	}
	return nil
}

// softDelete marks t deleted and makes the counters of every ancestor exact
// again for the remaining subtree (RL-6). Deleting a deleted event is a
// no-op.
//
// The counts drop by one (the deleted event's own replies stay below and
// stay counted). last_reply_at and participants change only when t was the
// newest event below an ancestor, or its author's newest there; only then
// are they recomputed: for a root by reading its thread newest first until
// ten authors are known, for an inner ancestor from the authors of its
// subtree. Those are gathered on the way up, each event once: an
// ancestor's subtree is the one of the ancestor below it, already known,
// plus its other replies and their subtrees. So a deletion costs index
// reads in number of its depth plus the events of the subtree it changes,
// whatever the size of the database (issue 13).
func (tx *writeTx) softDelete(t *stored, now int64) error {
	res, err := tx.markDeleted.ExecContext(tx.ctx, now, t.seq)
	if err != nil {
		return fmt.Errorf("delete event #%d: %w", t.seq, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete event #%d: %w", t.seq, err)
	} else if n == 0 {
		return nil
	}
	if t.channel.Valid {
		// Only when t was the channel's last message does this read.
		if _, err := tx.rereadLastMessage.ExecContext(tx.ctx, t.channel.Int64, t.createdAt); err != nil {
			return fmt.Errorf("channel's last message after deleting #%d: %w", t.seq, err)
		}
	}
	if !t.parent.Valid {
		return nil
	}
	// below holds the authors below child while they are known.
	var below *subtreeAuthors
	seq, child := t.parent.Int64, t.seq
	for hops := 0; seq != 0; hops++ {
		if hops > maxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", t.seq)
		}
		up, replies, desc, last, parts, err := tx.readThreadRow(seq)
		if err != nil {
			return err
		}
		if child == t.seq {
			replies = max(0, replies-1)
		}
		desc = max(0, desc-1)
		switch {
		case !(last.Valid && t.createdAt >= last.Int64) && !wasNewestOf(parts, t.pubkey, t.createdAt):
			below = nil
		case !up.Valid:
			if last, parts, err = tx.threadRecent(seq); err != nil {
				return err
			}
		default:
			known := sql.NullInt64{Int64: child, Valid: below != nil}
			if below == nil {
				below = &subtreeAuthors{newest: map[string]int64{}}
			}
			if err := below.add(tx.ctx, tx.subtreeAuthors, seq, known); err != nil {
				return err
			}
			last, parts = below.lastReplyAt(), threadcount.Encode(below.top)
		}
		if _, err := tx.upsertThread.ExecContext(tx.ctx, seq, replies, desc, last, parts, tx.now); err != nil {
			return fmt.Errorf("write thread counters of #%d: %w", seq, err)
		}
		tx.recounted = append(tx.recounted, seq)
		seq, child = up.Int64, seq
	}
	return nil
}

// wasNewestOf reports whether an event of pubkey at time at is what puts
// its author in the participants list.
func wasNewestOf(parts, pubkey []byte, at int64) bool {
	for _, p := range threadcount.Decode(parts) {
		if bytes.Equal(p.PubKey, pubkey) {
			return p.At == at
		}
	}
	return false
}

// recentRows is how many of a thread's newest replies threadRecent reads
// before it turns to the thread's authors.
const recentRows = 256

// threadAuthorsSQL lists the authors of root ?1's live replies with the
// newest of each, one index step an author: a loose scan of
// events_root_authors, each author found as the first entry past the one
// before.
const threadAuthorsSQL = `WITH RECURSIVE authors(pubkey) AS (
	SELECT (SELECT pubkey FROM events INDEXED BY events_root_authors
		WHERE root = ?1 AND deleted_at IS NULL ORDER BY pubkey LIMIT 1)
	UNION ALL
	SELECT (SELECT e.pubkey FROM events e INDEXED BY events_root_authors
		WHERE e.root = ?1 AND e.deleted_at IS NULL AND e.pubkey > authors.pubkey ORDER BY e.pubkey LIMIT 1)
	FROM authors WHERE authors.pubkey IS NOT NULL
)
SELECT authors.pubkey, (SELECT max(e.created_at) FROM events e INDEXED BY events_root_authors
	WHERE e.root = ?1 AND e.deleted_at IS NULL AND e.pubkey = authors.pubkey)
FROM authors WHERE authors.pubkey IS NOT NULL`

// threadRecent computes last_reply_at and participants of thread root
// seq from its non-deleted replies: from the newest recentRows, when the
// ten newest authors (and every author tied with the tenth) are among
// them, else from every author's newest reply. So a root's recount costs
// at most recentRows rows plus an index step per author of the thread,
// never the whole of a long thread written by a few (issue 13).
func (tx *writeTx) threadRecent(seq int64) (sql.NullInt64, []byte, error) {
	last, ps, complete, err := tx.newestAuthors(seq)
	if err != nil {
		return last, nil, err
	}
	if !complete {
		if ps, err = tx.everyAuthor(seq); err != nil {
			return last, nil, err
		}
	}
	threadcount.Sort(ps)
	if len(ps) > threadcount.Max {
		ps = ps[:threadcount.Max]
	}
	return last, threadcount.Encode(ps), nil
}

// newestAuthors reads the newest recentRows live replies of root seq until
// the ten newest authors (and every author tied with the tenth) are known;
// complete is false when the rows ran out first with more unread.
func (tx *writeTx) newestAuthors(seq int64) (last sql.NullInt64, ps []threadcount.Participant, complete bool, err error) {
	rows, err := tx.threadNewest.QueryContext(tx.ctx, seq, recentRows)
	if err != nil {
		return last, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	n := 0
	complete = true
	for rows.Next() {
		var p threadcount.Participant
		if err := rows.Scan(&p.PubKey, &p.At); err != nil {
			return last, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
		}
		n++
		if !last.Valid {
			last = sql.NullInt64{Int64: p.At, Valid: true}
		}
		if len(ps) >= threadcount.Max && p.At < ps[len(ps)-1].At {
			return last, ps, true, nil
		}
		if !seen[string(p.PubKey)] {
			seen[string(p.PubKey)] = true
			ps = append(ps, p)
		}
	}
	if err := rows.Err(); err != nil {
		return last, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
	}
	// All of the thread was read unless the limit stopped the rows.
	return last, ps, n < recentRows, nil
}

// everyAuthor is every author of root seq's live replies with the newest
// of each.
func (tx *writeTx) everyAuthor(seq int64) ([]threadcount.Participant, error) {
	rows, err := tx.threadAuthors.QueryContext(tx.ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("read the authors of thread #%d: %w", seq, err)
	}
	defer rows.Close()
	var ps []threadcount.Participant
	for rows.Next() {
		var p threadcount.Participant
		if err := rows.Scan(&p.PubKey, &p.At); err != nil {
			return nil, fmt.Errorf("read the authors of thread #%d: %w", seq, err)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the authors of thread #%d: %w", seq, err)
	}
	return ps, nil
}

// Counters are the subtree counters of one event (RL-5).
type Counters struct {
	ReplyCount      int64
	DescendantCount int64
	LastReplyAt     int64 // 0 when there is no non-deleted descendant
	Participants    []threadcount.Participant
}

func (c Counters) lastReplyAt() sql.NullInt64 {
	return sql.NullInt64{Int64: c.LastReplyAt, Valid: c.DescendantCount > 0}
}

// subtreeCounters computes the counters of seq from scratch.
func (tx *writeTx) subtreeCounters(seq int64) (Counters, error) {
	return computeCounters(tx.ctx, tx.liveChildren, tx.subtreeAuthors, seq)
}

// computeCounters computes the counters of seq from scratch with the
// statements liveChildrenSQL and subtreeAuthorsSQL, prepared wherever the
// caller reads (the writer, or the read transaction of Check).
func computeCounters(ctx context.Context, children, authors *sql.Stmt, seq int64) (Counters, error) {
	var c Counters
	if err := children.QueryRowContext(ctx, seq).Scan(&c.ReplyCount); err != nil {
		return c, fmt.Errorf("count replies of #%d: %w", seq, err)
	}
	below := subtreeAuthors{newest: map[string]int64{}}
	if err := below.add(ctx, authors, seq, sql.NullInt64{}); err != nil {
		return c, err
	}
	c.DescendantCount = below.n
	c.LastReplyAt = below.lastReplyAt().Int64
	c.Participants = below.top
	return c, nil
}

// subtreeAuthors are the non-deleted events of a subtree: how many, each
// author's newest created_at, and the participants of CW-19.
type subtreeAuthors struct {
	n      int64
	newest map[string]int64
	// top are the threadcount.Max authors with the newest events, in
	// CW-19 order. An author outside it whom add does not raise stays
	// outside, as the authors inside only rise: so add sorts only top and
	// the authors it raised, never the whole subtree again.
	top []threadcount.Participant
}

// add adds the subtree of seq with the statement subtreeAuthorsSQL; when
// known is valid, it names a reply of seq whose subtree a holds already:
// of it, only the reply itself is added.
func (a *subtreeAuthors) add(ctx context.Context, authors *sql.Stmt, seq int64, known sql.NullInt64) error {
	rows, err := authors.QueryContext(ctx, seq, known)
	if err != nil {
		return fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	defer rows.Close()
	ps := make([]threadcount.Participant, 0, len(a.top))
	inTop := make(map[string]bool, len(a.top))
	for _, p := range a.top {
		inTop[string(p.PubKey)] = true
	}
	for rows.Next() {
		var pubkey []byte
		var at, n int64
		if err := rows.Scan(&pubkey, &at, &n); err != nil {
			return fmt.Errorf("read subtree of #%d: %w", seq, err)
		}
		a.n += n
		if cur, ok := a.newest[string(pubkey)]; ok && at <= cur {
			continue
		}
		a.newest[string(pubkey)] = at
		if !inTop[string(pubkey)] {
			ps = append(ps, threadcount.Participant{PubKey: pubkey, At: at})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	for _, p := range a.top {
		ps = append(ps, threadcount.Participant{PubKey: p.PubKey, At: a.newest[string(p.PubKey)]})
	}
	threadcount.Sort(ps)
	a.top = ps[:min(len(ps), threadcount.Max)]
	return nil
}

// lastReplyAt is the created_at of the newest event, NULL when there is none.
func (a *subtreeAuthors) lastReplyAt() sql.NullInt64 {
	if len(a.top) == 0 {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: a.top[0].At, Valid: true}
}

// remove takes a superseded or expired event out of every read: soft-deleted
// with its ancestors' counters fixed, then dropped with its tag rows unless
// replies still hang below it (they keep it as their thread anchor).
func (tx *writeTx) remove(t *stored, now int64) error {
	if err := tx.softDelete(t, now); err != nil {
		return err
	}
	children, err := tx.exists(tx.hasChildren, t.seq)
	if err != nil {
		return err
	}
	if children {
		_, err := tx.clearExpiry.ExecContext(tx.ctx, t.seq)
		return err
	}
	tags, err := tagjson.Parse(t.tagsJSON)
	if err != nil {
		return fmt.Errorf("remove event #%d: %w", t.seq, err)
	}
	for _, row := range indexedTags(tags) {
		if _, err := tx.deleteTag.ExecContext(tx.ctx, row.name, row.value, t.createdAt, t.seq); err != nil {
			return fmt.Errorf("remove tags of #%d: %w", t.seq, err)
		}
	}
	if _, err := tx.hardDelete.ExecContext(tx.ctx, t.seq); err != nil {
		return fmt.Errorf("remove event #%d: %w", t.seq, err)
	}
	return nil
}
