package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// The rules of the thread counters are buzz's (buzz/threads.go); this file
// holds the statements they run in the write transaction.

// addToAncestors counts a new reply by pubkey at time at on its parent and
// every ancestor up to the root (RL-5).
func (tx *writeTx) addToAncestors(parent int64, pubkey []byte, at int64) error {
	return buzz.AddToAncestors(tx.threadRows(nil), parent, pubkey, at)
}

// softDelete marks t deleted and makes its ancestors' counters exact
// again (RL-6).
func (tx *writeTx) softDelete(t *stored, now int64) error {
	return buzz.SoftDelete(tx.threadRows(t), counted(t), now)
}

// remove takes a superseded or expired event out of every read, keeping
// it as a thread anchor while replies hang below it.
func (tx *writeTx) remove(t *stored, now int64) error {
	return buzz.Remove(tx.threadRows(t), counted(t), now)
}

// counted is stored event t as the counter rules know it.
func counted(t *stored) buzz.CountedEvent {
	return buzz.CountedEvent{Seq: t.seq, Parent: value(t.parent), Channel: value(t.channel), PubKey: t.pubkey, CreatedAt: t.createdAt}
}

// threadRows are buzz.ThreadRows in the write transaction; target is the
// event taken away (softDelete, remove), whose pages a change of its row
// renews.
type threadRows struct {
	subtreeQuery
	tx     *writeTx
	target *stored
	// readChannel is the channel of the row read last, readSeq: writing
	// that row renews the channel's pages.
	readSeq     int64
	readChannel *int64
}

func (tx *writeTx) threadRows(target *stored) *threadRows {
	return &threadRows{subtreeQuery: subtreeQuery{ctx: tx.ctx, q: tx.tx}, tx: tx, target: target}
}

// ReadThreadRow reads an event's parent and counters (zero without a
// row). The row of the event is locked: the write lock orders writers
// already, the row lock keeps the counters exact should a write ever run
// without it. A batch's ancestors are held by its cache, locked when
// read ahead (writeCache).
func (r *threadRows) ReadThreadRow(seq int64) (buzz.ThreadRow, error) {
	r.readSeq = seq
	if e, ok := r.tx.cache.thread(seq); ok {
		r.readChannel = e.channel
		return e.row, nil
	}
	var row buzz.ThreadRow
	var up, last *int64
	r.readChannel = nil
	r.tx.writeCounters()
	err := r.tx.tx.QueryRow(r.tx.ctx, `SELECT e.parent, e.channel, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
		t.last_reply_at, t.participants
		FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq WHERE e.seq = $1 FOR UPDATE OF e`, seq).
		Scan(&up, &r.readChannel, &row.Replies, &row.Descendants, &last, &row.Participants)
	if err != nil {
		return row, fmt.Errorf("read thread counters of #%d: %w", seq, err)
	}
	row.Up, row.LastReplyAt, row.HasLastReply = value(up), value(last), last != nil
	r.tx.cache.counted(seq, r.readChannel, row, false)
	return row, nil
}

// WriteThreadRow stores the counters of seq; the row read last renews
// its channel's pages (summaries). The row is written once the
// transaction ends (writeCounters): a reply counts on every ancestor, so
// an import batch or a group of a busy thread rewrote its root's row once
// an event, each time a new version of the row that, with autovacuum
// off, stayed (issue 32).
func (r *threadRows) WriteThreadRow(seq int64, row buzz.ThreadRow) error {
	if r.tx.counters == nil {
		r.tx.counters = map[int64]buzz.ThreadRow{}
	}
	row.Participants = slices.Clone(row.Participants)
	r.tx.counters[seq] = row
	r.tx.cache.counted(seq, nil, row, true)
	r.tx.recounted = append(r.tx.recounted, seq)
	if seq == r.readSeq {
		r.tx.touch(r.readChannel)
	}
	return nil
}

// writeCountersSQL writes the counter rows of a transaction, the $1
// events' with their counts ($2, $3), last replies ($4) and participants
// ($5), at $6: one statement, each row once.
const writeCountersSQL = `INSERT INTO thread_metadata (seq, reply_count, descendant_count, last_reply_at, participants, updated_at)
	SELECT c.seq, c.replies, c.descendants, c.last, c.participants, $6
	FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bytea[]) AS c(seq, replies, descendants, last, participants)
	ON CONFLICT (seq) DO UPDATE SET reply_count = excluded.reply_count,
	descendant_count = excluded.descendant_count, last_reply_at = excluded.last_reply_at,
	participants = excluded.participants,
	updated_at = greatest(coalesce(thread_metadata.updated_at, 0), excluded.updated_at)`

// writeCounters queues the counter rows the transaction wrote
// (WriteThreadRow), in the order of their events. Every statement that
// reads thread_metadata in the transaction comes after it.
func (tx *writeTx) writeCounters() {
	if len(tx.counters) == 0 {
		return
	}
	seqs := slices.Sorted(maps.Keys(tx.counters))
	replies, descendants := make([]int64, len(seqs)), make([]int64, len(seqs))
	last, participants := make([]*int64, len(seqs)), make([][]byte, len(seqs))
	for i, seq := range seqs {
		row := tx.counters[seq]
		replies[i], descendants[i], participants[i] = row.Replies, row.Descendants, row.Participants
		if row.HasLastReply {
			last[i] = &row.LastReplyAt
		}
	}
	tx.counters = nil
	tx.tx.queue(writeCountersSQL, seqs, replies, descendants, last, participants, tx.now)
}

// newestInThreadSQL reads the $2 newest live replies of thread $1,
// backward along events_root.
const newestInThreadSQL = `SELECT pubkey, created_at FROM events
	WHERE root = $1 AND deleted_at IS NULL ORDER BY created_at DESC LIMIT $2`

func (r *threadRows) NewestInThread(root int64, limit int, each func(threadcount.Participant) bool) error {
	var p threadcount.Participant
	rows, err := r.tx.tx.Query(r.tx.ctx, newestInThreadSQL, root, limit)
	return eachRow(rows, err, fmt.Sprintf("read thread #%d", root), []any{&p.PubKey, &p.At}, func() error {
		if !each(p) {
			return errStop
		}
		return nil
	})
}

// threadAuthorsSQL lists the authors of the live replies of thread root
// $1 with the created_at of their newest, one search of
// events_root_authors an author each: the thread may hold many more
// replies than authors (the recount turns to it when its newest replies
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

func (r *threadRows) ThreadAuthors(root int64, each func(threadcount.Participant)) error {
	var p threadcount.Participant
	rows, err := r.tx.tx.Query(r.tx.ctx, threadAuthorsSQL, root)
	return eachRow(rows, err, fmt.Sprintf("read the authors of thread #%d", root), []any{&p.PubKey, &p.At},
		func() error { each(p); return nil })
}

func (r *threadRows) MarkDeleted(seq, now int64) (bool, error) {
	tag, err := r.tx.tx.Exec(r.tx.ctx, `UPDATE events SET deleted_at = $1 WHERE seq = $2 AND deleted_at IS NULL`, now, seq)
	if err != nil {
		return false, fmt.Errorf("delete event #%d: %w", seq, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	r.tx.cache.deleted(r.target, false)
	return true, r.tx.touchEvent(r.target)
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

// raiseLastMessages queues the last messages the transaction raised, one
// statement a channel: each event of a busy channel updating its row made
// a new version of the row and of its index entries, and a transaction
// updating one row again and again walks every version it left (issue
// 32). Every statement that reads channels.last_message_at in the
// transaction (rereadLastMessageSQL) comes after them.
func (tx *writeTx) raiseLastMessages() {
	channels := slices.Sorted(maps.Keys(tx.raised))
	for _, ch := range channels {
		tx.tx.queue(raiseLastMessageSQL, ch, tx.raised[ch])
	}
	tx.raised = nil
}

func (r *threadRows) RereadLastMessage(channel, at int64) error {
	r.tx.raiseLastMessages()
	if _, err := r.tx.tx.Exec(r.tx.ctx, rereadLastMessageSQL, channel, at); err != nil {
		return fmt.Errorf("last message of channel #%d: %w", channel, err)
	}
	return nil
}

func (r *threadRows) HasReplies(seq int64) (bool, error) {
	var child int64
	err := r.tx.tx.QueryRow(r.tx.ctx, `SELECT seq FROM events WHERE parent = $1 LIMIT 1`, seq).Scan(&child)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up replies of #%d: %w", seq, err)
	}
	return true, nil
}

func (r *threadRows) KeepAnchor(seq int64) error {
	if _, err := r.tx.tx.Exec(r.tx.ctx, `UPDATE events SET expires_at = NULL WHERE seq = $1`, seq); err != nil {
		return fmt.Errorf("keep event #%d as a thread anchor: %w", seq, err)
	}
	r.tx.cache.changed(r.target)
	return r.tx.touchEvent(r.target)
}

func (r *threadRows) Drop(seq int64) error {
	if err := r.tx.touchEvent(r.target); err != nil {
		return err
	}
	delete(r.tx.copied, seq)   // an event of this import batch, replaced within it
	delete(r.tx.counters, seq) // its row goes with it (ON DELETE CASCADE)
	r.tx.cache.deleted(r.target, true)
	if _, err := r.tx.tx.Exec(r.tx.ctx, `DELETE FROM tags WHERE seq = $1`, seq); err != nil {
		return fmt.Errorf("remove tags of #%d: %w", seq, err)
	}
	if _, err := r.tx.tx.Exec(r.tx.ctx, `DELETE FROM events WHERE seq = $1`, seq); err != nil {
		return fmt.Errorf("remove event #%d: %w", seq, err)
	}
	return nil
}

// subtreeQuery reads a subtree's counters over a pool or a transaction.
type subtreeQuery struct {
	ctx context.Context
	q   queryer
}

func (s subtreeQuery) LiveReplies(seq int64) (int64, error) {
	var n int64
	if err := s.q.QueryRow(s.ctx, `SELECT count(*) FROM events WHERE parent = $1 AND deleted_at IS NULL`, seq).Scan(&n); err != nil {
		return 0, fmt.Errorf("count replies of #%d: %w", seq, err)
	}
	return n, nil
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

func (s subtreeQuery) SubtreeAuthors(seq, known int64, each func(threadcount.Participant, int64)) error {
	var knownArg *int64
	if known != 0 {
		knownArg = &known
	}
	var p threadcount.Participant
	var n int64
	rows, err := s.q.Query(s.ctx, subtreeAuthorsSQL, seq, knownArg)
	return eachRow(rows, err, fmt.Sprintf("read subtree of #%d", seq), []any{&p.PubKey, &p.At, &n},
		func() error { each(p, n); return nil })
}
