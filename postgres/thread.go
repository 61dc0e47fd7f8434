package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// maxParticipants is how many distinct reply authors a subtree keeps
// (CW-19).
const maxParticipants = 10

// participantSize is one packed participant: 32-byte pubkey, 8-byte
// big-endian created_at of the author's newest event in the subtree.
const participantSize = 40

// participant is a distinct author below an event and the created_at of
// their newest event there.
type participant struct {
	pubkey []byte
	at     int64
}

func decodeParticipants(b []byte) []participant {
	out := make([]participant, 0, len(b)/participantSize+1)
	for len(b) >= participantSize {
		out = append(out, participant{pubkey: b[:32], at: int64(binary.BigEndian.Uint64(b[32:40]))})
		b = b[participantSize:]
	}
	return out
}

func encodeParticipants(ps []participant) []byte {
	b := make([]byte, 0, len(ps)*participantSize)
	for _, p := range ps {
		b = append(b, p.pubkey...)
		b = binary.BigEndian.AppendUint64(b, uint64(p.at))
	}
	return b
}

// sortParticipants orders by newest event first, then pubkey (CW-19).
func sortParticipants(ps []participant) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].at != ps[j].at {
			return ps[i].at > ps[j].at
		}
		return bytes.Compare(ps[i].pubkey, ps[j].pubkey) < 0
	})
}

// mergeParticipant adds an event by pubkey at time at to a participants
// list of the top authors by their newest event. An event only ever
// raises its author's newest time, so the list stays exact without
// looking at the rest of the subtree.
func mergeParticipant(blob, pubkey []byte, at int64) []byte {
	ps := decodeParticipants(blob)
	found := false
	for i := range ps {
		if bytes.Equal(ps[i].pubkey, pubkey) {
			found = true
			if at <= ps[i].at {
				return blob
			}
			ps[i].at = at
		}
	}
	if !found {
		ps = append(ps, participant{pubkey: pubkey, at: at})
	}
	sortParticipants(ps)
	if len(ps) > maxParticipants {
		ps = ps[:maxParticipants]
	}
	return encodeParticipants(ps)
}

// counters are the subtree counters of one event (RL-5).
type counters struct {
	replies, descendants int64
	lastReplyAt          *int64
	participants         []byte
}

// readCounters reads an event's parent and counters (zero without a row).
// The row of the event is locked: the write lock orders writers already,
// the row lock keeps the counters exact should a write ever run without it.
func (tx *writeTx) readCounters(seq int64) (up *int64, c counters, err error) {
	err = tx.tx.QueryRow(tx.ctx, `SELECT e.parent, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
		t.last_reply_at, t.participants
		FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq WHERE e.seq = $1 FOR UPDATE OF e`, seq).
		Scan(&up, &c.replies, &c.descendants, &c.lastReplyAt, &c.participants)
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
		c.participants = mergeParticipant(c.participants, pubkey, at)
		if err := tx.writeCounters(seq, c); err != nil {
			return err
		}
		seq, direct = value(up), false
	}
	return nil
}

// softDelete marks t deleted and makes the counters of every ancestor
// exact again for the remaining subtree (RL-6): each ancestor's counters
// are computed afresh from its subtree. Deleting a deleted event is a
// no-op.
func (tx *writeTx) softDelete(t *stored, now int64) error {
	tag, err := tx.tx.Exec(tx.ctx, `UPDATE events SET deleted_at = $1 WHERE seq = $2 AND deleted_at IS NULL`, now, t.seq)
	if err != nil {
		return fmt.Errorf("delete event #%d: %w", t.seq, err)
	}
	if tag.RowsAffected() == 0 || t.parent == nil {
		return nil
	}
	seq := *t.parent
	for hops := 0; seq != 0; hops++ {
		if hops > maxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", t.seq)
		}
		up, _, err := tx.readCounters(seq)
		if err != nil {
			return err
		}
		c, err := subtreeCounters(tx.ctx, tx.tx, seq)
		if err != nil {
			return err
		}
		if err := tx.writeCounters(seq, c); err != nil {
			return err
		}
		seq = value(up)
	}
	return nil
}

// subtreeAuthorsSQL lists the non-deleted events below $1 by author: the
// newest created_at of each and how many.
const subtreeAuthorsSQL = `WITH RECURSIVE below(seq) AS (
		SELECT seq FROM events WHERE parent = $1
		UNION ALL
		SELECT e.seq FROM below b JOIN events e ON e.parent = b.seq
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
	rows, err := q.Query(ctx, subtreeAuthorsSQL, seq)
	if err != nil {
		return c, fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	var ps []participant
	for rows.Next() {
		var p participant
		var n int64
		if err := rows.Scan(&p.pubkey, &p.at, &n); err != nil {
			rows.Close()
			return c, fmt.Errorf("read subtree of #%d: %w", seq, err)
		}
		c.descendants += n
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("read subtree of #%d: %w", seq, err)
	}
	sortParticipants(ps)
	if len(ps) > 0 {
		at := ps[0].at
		c.lastReplyAt = &at
	}
	c.participants = encodeParticipants(ps[:min(len(ps), maxParticipants)])
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
		return nil
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("look up replies of #%d: %w", t.seq, err)
	}
	if _, err := tx.tx.Exec(tx.ctx, `DELETE FROM tags WHERE seq = $1`, t.seq); err != nil {
		return fmt.Errorf("remove tags of #%d: %w", t.seq, err)
	}
	if _, err := tx.tx.Exec(tx.ctx, `DELETE FROM events WHERE seq = $1`, t.seq); err != nil {
		return fmt.Errorf("remove event #%d: %w", t.seq, err)
	}
	return nil
}
