package sqlite

import (
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// The rules of the thread counters are buzz's (buzz/threads.go); this file
// holds the statements they run on the writer's transaction.

// addToAncestors counts a new reply by pubkey at time at on its parent and
// every ancestor up to the root (RL-5).
func (tx *writeTx) addToAncestors(parent int64, pubkey []byte, at int64) error {
	return buzz.AddToAncestors(threadRows{tx: tx}, parent, pubkey, at)
}

// softDelete marks t deleted and makes its ancestors' counters exact
// again (RL-6).
func (tx *writeTx) softDelete(t *stored, now int64) error {
	return buzz.SoftDelete(threadRows{tx: tx, target: t}, counted(t), now)
}

// remove takes a superseded or expired event out of every read, keeping
// it as a thread anchor while replies hang below it.
func (tx *writeTx) remove(t *stored, now int64) error {
	return buzz.Remove(threadRows{tx: tx, target: t}, counted(t), now)
}

// counted is stored event t as the counter rules know it.
func counted(t *stored) buzz.CountedEvent {
	return buzz.CountedEvent{Seq: t.seq, Parent: t.parent.Int64, Channel: t.channel.Int64, PubKey: t.pubkey, CreatedAt: t.createdAt}
}

// threadRows are buzz.ThreadRows over the writer's prepared statements;
// target is the event taken away (softDelete, remove), whose stored row
// Drop needs to find its tag rows.
type threadRows struct {
	tx     *writeTx
	target *stored
}

func (r threadRows) ReadThreadRow(seq int64) (buzz.ThreadRow, error) {
	st := r.tx.threadRow
	defer st.reset()
	switch found, err := st.first(seq); {
	case err != nil:
		return buzz.ThreadRow{}, fmt.Errorf("read thread counters of #%d: %w", seq, err)
	case !found:
		return buzz.ThreadRow{}, fmt.Errorf("read thread counters of #%d: %w", seq, errNoRow)
	}
	last, hasLast := st.nullInt64(3)
	return buzz.ThreadRow{Up: st.int64(0), Replies: st.int64(1), Descendants: st.int64(2),
		LastReplyAt: last, HasLastReply: hasLast, Participants: st.bytesCopy(4)}, nil
}

func (r threadRows) WriteThreadRow(seq int64, row buzz.ThreadRow) error {
	last := sql.NullInt64{Int64: row.LastReplyAt, Valid: row.HasLastReply}
	if err := r.tx.upsertThread.exec(seq, row.Replies, row.Descendants, last, row.Participants, r.tx.now); err != nil {
		return fmt.Errorf("write thread counters of #%d: %w", seq, err)
	}
	r.tx.recounted = append(r.tx.recounted, seq)
	return nil
}

func (r threadRows) LiveReplies(seq int64) (int64, error) {
	var n int64
	if err := r.tx.liveChildren.QueryRowContext(r.tx.ctx, seq).Scan(&n); err != nil {
		return 0, fmt.Errorf("count replies of #%d: %w", seq, err)
	}
	return n, nil
}

func (r threadRows) SubtreeAuthors(seq, known int64, each func(threadcount.Participant, int64)) error {
	rows, err := r.tx.subtreeAuthors.QueryContext(r.tx.ctx, seq, sql.NullInt64{Int64: known, Valid: known != 0})
	if err != nil {
		return fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	defer rows.Close()
	if err := threadcount.ScanAuthors(rows, each); err != nil {
		return fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	return nil
}

func (r threadRows) NewestInThread(root int64, limit int, each func(threadcount.Participant) bool) error {
	rows, err := r.tx.threadNewest.QueryContext(r.tx.ctx, root, limit)
	if err != nil {
		return fmt.Errorf("read thread #%d: %w", root, err)
	}
	defer rows.Close()
	if err := threadcount.ScanParticipants(rows, each); err != nil {
		return fmt.Errorf("read thread #%d: %w", root, err)
	}
	return nil
}

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

func (r threadRows) ThreadAuthors(root int64, each func(threadcount.Participant)) error {
	rows, err := r.tx.threadAuthors.QueryContext(r.tx.ctx, root)
	if err != nil {
		return fmt.Errorf("read the authors of thread #%d: %w", root, err)
	}
	defer rows.Close()
	err = threadcount.ScanParticipants(rows, func(p threadcount.Participant) bool { each(p); return true })
	if err != nil {
		return fmt.Errorf("read the authors of thread #%d: %w", root, err)
	}
	return nil
}

func (r threadRows) MarkDeleted(seq, now int64) (bool, error) {
	res, err := r.tx.markDeleted.ExecContext(r.tx.ctx, now, seq)
	if err != nil {
		return false, fmt.Errorf("delete event #%d: %w", seq, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete event #%d: %w", seq, err)
	}
	return n > 0, nil
}

func (r threadRows) RereadLastMessage(channel, at int64) error {
	if _, err := r.tx.rereadLastMessage.ExecContext(r.tx.ctx, channel, at); err != nil {
		return fmt.Errorf("last message of channel #%d: %w", channel, err)
	}
	return nil
}

func (r threadRows) HasReplies(seq int64) (bool, error) {
	return r.tx.exists(r.tx.hasChildren, seq)
}

func (r threadRows) KeepAnchor(seq int64) error {
	if _, err := r.tx.clearExpiry.ExecContext(r.tx.ctx, seq); err != nil {
		return fmt.Errorf("keep event #%d as a thread anchor: %w", seq, err)
	}
	return nil
}

func (r threadRows) Drop(seq int64) error {
	tags, err := tagjson.Parse(r.target.tagsJSON)
	if err != nil {
		return fmt.Errorf("remove event #%d: %w", seq, err)
	}
	for _, row := range indexedTags(tags) {
		if _, err := r.tx.deleteTag.ExecContext(r.tx.ctx, row.name, row.value, r.target.createdAt, seq); err != nil {
			return fmt.Errorf("remove tags of #%d: %w", seq, err)
		}
	}
	if _, err := r.tx.hardDelete.ExecContext(r.tx.ctx, seq); err != nil {
		return fmt.Errorf("remove event #%d: %w", seq, err)
	}
	return nil
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
	c, err := buzz.SubtreeCounters(threadRows{tx: tx}, seq)
	return Counters{ReplyCount: c.Replies, DescendantCount: c.Descendants, LastReplyAt: c.LastReplyAt, Participants: c.Participants}, err
}
