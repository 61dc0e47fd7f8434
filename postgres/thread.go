package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// counters are the subtree counters of one event (RL-5).
type counters struct {
	replies, descendants int64
	lastReplyAt          *int64
	participants         []byte
	// channel is the event's, as readCounters reads it: the channel whose
	// pages show the counters.
	channel *int64
}

// readCounters reads an event's parent and counters (zero without a row).
// The row of the event is locked: the write lock orders writers already,
// the row lock keeps the counters exact should a write ever run without it.
func (tx *writeTx) readCounters(seq int64) (up *int64, c counters, err error) {
	err = tx.tx.QueryRow(tx.ctx, `SELECT e.parent, e.channel, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
		t.last_reply_at, t.participants
		FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq WHERE e.seq = $1 FOR UPDATE OF e`, seq).
		Scan(&up, &c.channel, &c.replies, &c.descendants, &c.lastReplyAt, &c.participants)
	if err != nil {
		err = fmt.Errorf("read thread counters of #%d: %w", seq, err)
	}
	return up, c, err
}

// writeCounters stores the counters of seq.
func (tx *writeTx) writeCounters(seq int64, c counters) error {
	_, err := tx.tx.Exec(tx.ctx, `INSERT INTO thread_metadata (seq, reply_count, descendant_count, last_reply_at, participants, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (seq) DO UPDATE SET reply_count = excluded.reply_count,
		descendant_count = excluded.descendant_count, last_reply_at = excluded.last_reply_at,
		participants = excluded.participants,
		updated_at = greatest(coalesce(thread_metadata.updated_at, 0), excluded.updated_at)`,
		seq, c.replies, c.descendants, c.lastReplyAt, c.participants, tx.now)
	if err != nil {
		return fmt.Errorf("write thread counters of #%d: %w", seq, err)
	}
	tx.recounted = append(tx.recounted, seq)
	tx.touch(c.channel)
	return nil
}

// addToAncestors counts a new reply by pubkey at time at on its parent
// (reply_count) and on every ancestor up to the root (descendant_count,
// last_reply_at, participants): RL-5. Ancestors are taken parent first,
// the order every writer takes them in.
func (tx *writeTx) addToAncestors(parent int64, pubkey []byte, at int64) error {
	seq, direct := parent, true
	for hops := 0; seq != 0; hops++ {
		if hops > maxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", parent)
		}
		up, c, err := tx.readCounters(seq)
		if err != nil {
			return err
		}
		if direct {
			c.replies++
		}
		c.descendants++
		if c.lastReplyAt == nil || at > *c.lastReplyAt {
			c.lastReplyAt = &at
		}
		c.participants = threadcount.Merge(c.participants, pubkey, at)
		if err := tx.writeCounters(seq, c); err != nil {
			return err
		}
		seq, direct = value(up), false
	}
	return nil
}

// raiseLastMessageSQL makes $2 the last message of channel $1 if newer
// (channels.last_message_at).
const raiseLastMessageSQL = `UPDATE channels SET last_message_at = $2 WHERE seq = $1 AND last_message_at < $2`

// rereadLastMessageSQL reads the last message of channel $1 again when it
// was at $2, the time of an event that is gone: one seek into
// events_projection.
const rereadLastMessageSQL = `UPDATE channels SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		WHERE e.channel = $1 AND e.row_class >= 1 AND e.deleted_at IS NULL), 0)
	WHERE seq = $1 AND last_message_at = $2`

// softDelete marks t deleted and makes the counters of every ancestor
// exact again for the remaining subtree (RL-6). Deleting a deleted event
// is a no-op.
//
// The counts drop by one (the deleted event's own replies stay below and
// stay counted). last_reply_at and participants change only when t was
// the newest event below an ancestor, or its author's newest there; only
// then are they recomputed: for a root from its thread newest first
// (threadRecent), for an inner ancestor from the authors of its subtree,
// gathered on the way up, each event once: an ancestor's subtree is the
// one of the ancestor below it, already known, plus its other replies and
// their subtrees. So a deletion costs index reads in number of its depth
// plus the events of the subtree it changes, whatever the size of the
// database (as package sqlite's, issue 13).
func (tx *writeTx) softDelete(t *stored, now int64) error {
	tag, err := tx.tx.Exec(tx.ctx, `UPDATE events SET deleted_at = $1 WHERE seq = $2 AND deleted_at IS NULL`, now, t.seq)
	if err != nil {
		return fmt.Errorf("delete event #%d: %w", t.seq, err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	if err := tx.touchEvent(t); err != nil {
		return err
	}
	if t.channel != nil {
		// Only when t was the channel's last message does this read.
		if _, err := tx.tx.Exec(tx.ctx, rereadLastMessageSQL, *t.channel, t.createdAt); err != nil {
			return fmt.Errorf("channel's last message after deleting #%d: %w", t.seq, err)
		}
	}
	if t.parent == nil {
		return nil
	}
	// below holds the authors below child while they are known.
	var below *subtreeAuthors
	seq, child := *t.parent, t.seq
	for hops := 0; seq != 0; hops++ {
		if hops > maxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", t.seq)
		}
		up, c, err := tx.readCounters(seq)
		if err != nil {
			return err
		}
		if child == t.seq {
			c.replies = max(0, c.replies-1)
		}
		c.descendants = max(0, c.descendants-1)
		switch {
		case !(c.lastReplyAt != nil && t.createdAt >= *c.lastReplyAt) && !wasNewestOf(c.participants, t.pubkey, t.createdAt):
			below = nil
		case up == nil:
			if c.lastReplyAt, c.participants, err = tx.threadRecent(seq); err != nil {
				return err
			}
		default:
			var known *int64
			if below != nil {
				known = &child
			} else {
				below = &subtreeAuthors{newest: map[string]int64{}}
			}
			if err := below.add(tx.ctx, tx.tx, seq, known); err != nil {
				return err
			}
			c.lastReplyAt, c.participants = below.lastReplyAt(), threadcount.Encode(below.top)
		}
		if err := tx.writeCounters(seq, c); err != nil {
			return err
		}
		seq, child = value(up), seq
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

// threadRecent computes last_reply_at and participants of thread root
// seq from its non-deleted replies: from the newest recentRows, when the
// ten newest authors (and every author tied with the tenth) are among
// them, else from every author's newest reply.
func (tx *writeTx) threadRecent(seq int64) (*int64, []byte, error) {
	last, ps, complete, err := tx.newestAuthors(seq)
	if err != nil {
		return nil, nil, err
	}
	if !complete {
		rows, err := tx.tx.Query(tx.ctx, threadAuthorsSQL, seq)
		if err != nil {
			return nil, nil, fmt.Errorf("read the authors of thread #%d: %w", seq, err)
		}
		if ps, err = pgx.CollectRows(rows, scanParticipant); err != nil {
			return nil, nil, fmt.Errorf("read the authors of thread #%d: %w", seq, err)
		}
	}
	threadcount.Sort(ps)
	return last, threadcount.Encode(ps[:min(len(ps), threadcount.Max)]), nil
}

// threadAuthorsSQL lists the authors of the live replies of thread root
// $1 with the created_at of their newest, one search of
// events_root_authors an author each: the thread may hold many more
// replies than authors (threadRecent turns to it when its newest replies
// hold few authors), and a GROUP BY reads every one of them.
const threadAuthorsSQL = `WITH RECURSIVE authors(pubkey) AS (
		(SELECT pubkey FROM events WHERE root = $1 AND deleted_at IS NULL ORDER BY pubkey LIMIT 1)
		UNION ALL
		SELECT (SELECT e.pubkey FROM events e WHERE e.root = $1 AND e.deleted_at IS NULL AND e.pubkey > a.pubkey
			ORDER BY e.pubkey LIMIT 1)
		FROM authors a WHERE a.pubkey IS NOT NULL
	)
	SELECT a.pubkey, (SELECT max(e.created_at) FROM events e WHERE e.root = $1 AND e.deleted_at IS NULL AND e.pubkey = a.pubkey)
	FROM authors a WHERE a.pubkey IS NOT NULL`

func scanParticipant(row pgx.CollectableRow) (threadcount.Participant, error) {
	var p threadcount.Participant
	err := row.Scan(&p.PubKey, &p.At)
	return p, err
}

// newestAuthors reads the newest recentRows live replies of root seq until
// the ten newest authors (and every author tied with the tenth) are known;
// complete is false when the rows ran out first with more unread.
func (tx *writeTx) newestAuthors(seq int64) (last *int64, ps []threadcount.Participant, complete bool, err error) {
	rows, err := tx.tx.Query(tx.ctx, `SELECT pubkey, created_at FROM events
		WHERE root = $1 AND deleted_at IS NULL ORDER BY created_at DESC LIMIT $2`, seq, recentRows)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	n := 0
	for rows.Next() {
		var p threadcount.Participant
		if err := rows.Scan(&p.PubKey, &p.At); err != nil {
			return nil, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
		}
		n++
		if last == nil {
			at := p.At
			last = &at
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
		return nil, nil, false, fmt.Errorf("read thread #%d: %w", seq, err)
	}
	// All of the thread was read unless the limit stopped the rows.
	return last, ps, n < recentRows, nil
}

// subtreeAuthors are the non-deleted events of a subtree: how many, each
// author's newest created_at, and the participants of CW-19.
type subtreeAuthors struct {
	n      int64
	newest map[string]int64
	// top are the threadcount.Max authors with the newest events, in
	// CW-19 order. An author outside it whom add does not raise stays
	// outside, as the authors inside only rise.
	top []threadcount.Participant
}

// add adds the subtree of seq; when known is set, it names a reply of seq
// whose subtree a holds already: of it, only the reply itself is added.
func (a *subtreeAuthors) add(ctx context.Context, q queryer, seq int64, known *int64) error {
	rows, err := q.Query(ctx, subtreeAuthorsSQL, seq, known)
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

// lastReplyAt is the created_at of the newest event, nil when there is none.
func (a *subtreeAuthors) lastReplyAt() *int64 {
	if len(a.top) == 0 {
		return nil
	}
	at := a.top[0].At
	return &at
}

// subtreeAuthorsSQL lists the non-deleted events below $1 by author: the
// newest created_at of each and how many. With $2 a reply of $1, the walk
// counts $2 but does not descend below it (the caller knows that part
// already); with $2 NULL it counts the whole subtree.
const subtreeAuthorsSQL = `WITH RECURSIVE below(seq) AS (
		SELECT seq FROM events WHERE parent = $1
		UNION ALL
		SELECT e.seq FROM below b JOIN events e ON e.parent = b.seq WHERE b.seq IS DISTINCT FROM $2::bigint
	)
	SELECT e.pubkey, max(e.created_at), count(*)
	FROM below b JOIN events e ON e.seq = b.seq
	WHERE e.deleted_at IS NULL
	GROUP BY e.pubkey`

// subtreeCounters computes the counters of seq from scratch.
func subtreeCounters(ctx context.Context, q queryer, seq int64) (counters, error) {
	var c counters
	if err := q.QueryRow(ctx, `SELECT count(*) FROM events WHERE parent = $1 AND deleted_at IS NULL`, seq).Scan(&c.replies); err != nil {
		return c, fmt.Errorf("count replies of #%d: %w", seq, err)
	}
	below := subtreeAuthors{newest: map[string]int64{}}
	if err := below.add(ctx, q, seq, nil); err != nil {
		return c, err
	}
	c.descendants = below.n
	c.lastReplyAt = below.lastReplyAt()
	c.participants = threadcount.Encode(below.top)
	return c, nil
}

// remove takes a superseded or expired event out of every read:
// soft-deleted with its ancestors' counters fixed, then dropped with its
// tag rows unless replies still hang below it (they keep it as their
// thread anchor).
func (tx *writeTx) remove(t *stored, now int64) error {
	if err := tx.softDelete(t, now); err != nil {
		return err
	}
	var child int64
	err := tx.tx.QueryRow(tx.ctx, `SELECT seq FROM events WHERE parent = $1 LIMIT 1`, t.seq).Scan(&child)
	switch {
	case err == nil:
		if _, err := tx.tx.Exec(tx.ctx, `UPDATE events SET expires_at = NULL WHERE seq = $1`, t.seq); err != nil {
			return fmt.Errorf("keep event #%d as a thread anchor: %w", t.seq, err)
		}
		return tx.touchEvent(t)
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("look up replies of #%d: %w", t.seq, err)
	}
	if err := tx.touchEvent(t); err != nil {
		return err
	}
	delete(tx.copied, t.seq) // an event of this import batch, replaced within it
	if _, err := tx.tx.Exec(tx.ctx, `DELETE FROM tags WHERE seq = $1`, t.seq); err != nil {
		return fmt.Errorf("remove tags of #%d: %w", t.seq, err)
	}
	if _, err := tx.tx.Exec(tx.ctx, `DELETE FROM events WHERE seq = $1`, t.seq); err != nil {
		return fmt.Errorf("remove event #%d: %w", t.seq, err)
	}
	return nil
}
