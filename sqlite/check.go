package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// counterFix names an event whose counters repair recomputes.
type counterFix struct {
	seq int64
}

// Check verifies the database: SQLite's integrity and foreign key checks,
// then every thread counter against the subtree it counts, every tag
// index row against the events' tags, the aux events' deletion marks, and
// that the store's relay key signed the group state. With repair, what is
// wrong in the counters, the tag index, the marks and the group state is
// made right in one transaction (a
// damaged file is beyond repair here: restore a backup). Check reads one snapshot
// and never holds the writer while it reads, so the relay keeps serving.
func (s *Store) Check(ctx context.Context, repair bool) (buzz.CheckReport, error) {
	var rep buzz.CheckReport
	var fixes []counterFix
	var missing, extra []tagFix
	err := s.readTxFor(ctx, 0, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "PRAGMA integrity_check")
		if err != nil {
			return fmt.Errorf("integrity_check: %w", err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return fmt.Errorf("integrity_check: %w", err)
			}
			if line != "ok" {
				rep.Integrity = append(rep.Integrity, line)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("integrity_check: %w", err)
		}
		rows, err = tx.QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			return fmt.Errorf("foreign_key_check: %w", err)
		}
		for rows.Next() {
			rep.ForeignKeys++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("foreign_key_check: %w", err)
		}
		if fixes, err = checkCounters(ctx, tx, &rep); err != nil {
			return err
		}
		if err := checkGroupState(ctx, tx, s.pubkey, &rep); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE kind IN (5, 7, 9005, 40003)
			AND named_by_deletion = 0 AND id IN (`+deletionNamedSQL+`)`).Scan(&rep.DeletionMarks); err != nil {
			return fmt.Errorf("check deletion marks: %w", err)
		}
		if missing, err = checkTags(ctx, tx, &rep); err != nil || !repair || rep.ExtraTags == 0 {
			return err
		}
		extra, err = extraTags(ctx, tx)
		return err
	})
	if err != nil || !repair || rep.OK() {
		return rep, err
	}
	// The snapshot read above may be behind the writer by now (the relay
	// keeps serving): every fix is computed again inside the repair's own
	// transaction, from what is stored at that moment.
	// Without a key the group state cannot be signed again: it stays
	// reported, and the other repairs are made all the same.
	resign := len(rep.GroupState) > 0 && s.key != ""
	err = s.writer.do(ctx, func(w *writeTx) error {
		if resign {
			if err := s.dropForeignGroupState(w); err != nil {
				return err
			}
		}
		for _, f := range fixes {
			c, err := w.subtreeCounters(f.seq)
			if err != nil {
				return err
			}
			if _, err := w.upsertThread.ExecContext(w.ctx, f.seq, c.ReplyCount, c.DescendantCount,
				c.lastReplyAt(), threadcount.Encode(c.Participants), w.now); err != nil {
				return fmt.Errorf("repair counters of #%d: %w", f.seq, err)
			}
		}
		for _, x := range extra {
			if _, err := w.deleteExtraTag.ExecContext(w.ctx, x.name, x.value, x.createdAt, x.seq); err != nil {
				return fmt.Errorf("repair tags of #%d: %w", x.seq, err)
			}
		}
		for _, m := range missing {
			if t, err := w.bySeq(m.seq); err != nil {
				return err
			} else if t == nil || t.createdAt != m.createdAt {
				continue // removed since the check read it
			}
			if _, err := w.insertTag.ExecContext(w.ctx, m.name, m.value, m.createdAt, m.seq, m.kind); err != nil {
				return fmt.Errorf("repair tags of #%d: %w", m.seq, err)
			}
		}
		// After the tag rows: a deletion's e tag put back names events too.
		if rep.DeletionMarks > 0 || len(missing) > 0 {
			if _, err := s.writer.conn.ExecContext(w.ctx, markNamedByDeletion); err != nil {
				return fmt.Errorf("repair deletion marks: %w", err)
			}
		}
		return nil
	})
	rep.Repaired = err == nil
	if err == nil && len(rep.GroupState) > 0 && !resign {
		err = errors.New("group state: no relay key to sign it with")
	}
	return rep, err
}

// checkCounters compares every thread counter with the subtree it counts.
// It computes the counters of a whole thread at once from the thread's
// rows (events_root), children before parents, so that the cost is one
// pass over the classified events rather than one walk per subtree.
func checkCounters(ctx context.Context, tx *sql.Tx, rep *buzz.CheckReport) ([]counterFix, error) {
	want, err := expectedCounters(ctx, tx)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT t.seq, e.id, t.reply_count, t.descendant_count, t.last_reply_at, t.participants
		FROM thread_metadata t JOIN events e ON e.seq = t.seq`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer rows.Close()
	var fixes []counterFix
	seen := map[int64]bool{}
	mismatch := func(seq int64, id []byte, replies, desc int64, last sql.NullInt64, parts []byte) {
		w := want[seq]
		if replies == w.ReplyCount && desc == w.DescendantCount && last == w.lastReplyAt() && bytes.Equal(parts, threadcount.Encode(w.Participants)) {
			return
		}
		rep.Counters = append(rep.Counters, fmt.Sprintf(
			"event %s: reply_count %d, descendant_count %d, last_reply_at %v, %d participants; want %d, %d, %v, %d",
			hex.EncodeToString(id), replies, desc, nullString(last), len(parts)/threadcount.Size,
			w.ReplyCount, w.DescendantCount, nullString(w.lastReplyAt()), len(w.Participants)))
		fixes = append(fixes, counterFix{seq: seq})
	}
	for rows.Next() {
		var (
			seq, replies, desc int64
			id, parts          []byte
			last               sql.NullInt64
		)
		if err := rows.Scan(&seq, &id, &replies, &desc, &last, &parts); err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		seen[seq] = true
		mismatch(seq, id, replies, desc, last, parts)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	// Events with replies below but no counters row at all.
	for seq, w := range want {
		if seen[seq] || w.DescendantCount == 0 {
			continue
		}
		var id []byte
		if err := tx.QueryRowContext(ctx, `SELECT id FROM events WHERE seq = ?`, seq).Scan(&id); err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		mismatch(seq, id, 0, 0, sql.NullInt64{}, nil)
	}
	return fixes, nil
}

// expectedCounters computes, thread by thread, the counters every event
// with something below it should have (threadcount.Tally).
func expectedCounters(ctx context.Context, tx *sql.Tx) (map[int64]Counters, error) {
	roots, err := tx.QueryContext(ctx, `SELECT DISTINCT root FROM events INDEXED BY events_root WHERE root IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	rootSeqs, err := readSeqs(roots)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	thread, err := tx.PrepareContext(ctx, `SELECT seq, parent, pubkey, created_at, deleted_at IS NOT NULL
		FROM events INDEXED BY events_root WHERE root = ? ORDER BY depth DESC`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer thread.Close()
	want := map[int64]Counters{}
	var replies []threadcount.Reply
	for _, root := range rootSeqs {
		rows, err := thread.QueryContext(ctx, root)
		if err != nil {
			return nil, fmt.Errorf("check counters of thread #%d: %w", root, err)
		}
		replies = replies[:0]
		for rows.Next() {
			var r threadcount.Reply
			if err := rows.Scan(&r.Seq, &r.Parent, &r.PubKey, &r.At, &r.Deleted); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check counters of thread #%d: %w", root, err)
			}
			replies = append(replies, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("check counters of thread #%d: %w", root, err)
		}
		counts, err := threadcount.Tally(root, replies)
		if err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		for seq, c := range counts {
			want[seq] = Counters{ReplyCount: c.Replies, DescendantCount: c.Descendants, LastReplyAt: c.LastReplyAt, Participants: c.Participants}
		}
	}
	return want, nil
}

// checkGroupState lists the group state in force that pubkey, the relay
// key, did not sign: all of it when the store has no relay key.
func checkGroupState(ctx context.Context, tx *sql.Tx, pubkey string, rep *buzz.CheckReport) error {
	key, _ := hex.DecodeString(pubkey)
	rows, err := tx.QueryContext(ctx, `SELECT kind, coalesce(dtag, ''), pubkey FROM events INDEXED BY events_kind
		WHERE `+foreignGroupState+` ORDER BY dtag, kind`, key)
	if err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	defer rows.Close()
	want := "the relay key " + pubkey
	if pubkey == "" {
		want = "a relay key (there is none)"
	}
	for rows.Next() {
		var kind int
		var d string
		var signer []byte
		if err := rows.Scan(&kind, &d, &signer); err != nil {
			return fmt.Errorf("check group state: %w", err)
		}
		rep.GroupState = append(rep.GroupState, fmt.Sprintf("kind %d of channel %s is signed by %x, not by %s", kind, d, signer, want))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	return nil
}

func nullString(v sql.NullInt64) string {
	if !v.Valid {
		return "null"
	}
	return fmt.Sprint(v.Int64)
}

// tagFix is a tag index row that repair inserts (missing) or deletes
// (extra).
type tagFix struct {
	name      string
	value     any
	createdAt int64
	seq       int64
	kind      int
}

// checkTags checks that every event has exactly the tag index rows its
// tags call for. Missing rows are found one by one; extra rows are counted
// by comparing totals (every expected row exists once the missing ones are
// known, and rows are unique), so that the common case needs one pass.
func checkTags(ctx context.Context, tx *sql.Tx, rep *buzz.CheckReport) ([]tagFix, error) {
	has, err := tx.PrepareContext(ctx, `SELECT kind FROM tags WHERE name = ? AND value = ? AND created_at = ? AND seq = ?`)
	if err != nil {
		return nil, fmt.Errorf("check tags: %w", err)
	}
	defer has.Close()
	rows, err := tx.QueryContext(ctx, `SELECT seq, created_at, kind, tags FROM events`)
	if err != nil {
		return nil, fmt.Errorf("check tags: %w", err)
	}
	defer rows.Close()
	var missing []tagFix
	var expected int64
	for rows.Next() {
		var (
			seq, createdAt int64
			kind           int
			tagsJSON       string
		)
		if err := rows.Scan(&seq, &createdAt, &kind, &tagsJSON); err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
		}
		tags, err := tagjson.Parse(tagsJSON)
		if err != nil {
			return nil, fmt.Errorf("check tags of #%d: %w", seq, err)
		}
		for _, t := range indexedTags(tags) {
			expected++
			var k int
			switch err := has.QueryRowContext(ctx, t.name, t.value, createdAt, seq).Scan(&k); {
			case err == sql.ErrNoRows:
				missing = append(missing, tagFix{name: t.name, value: t.value, createdAt: createdAt, seq: seq, kind: kind})
			case err != nil:
				return nil, fmt.Errorf("check tags of #%d: %w", seq, err)
			case k != kind:
				rep.ExtraTags++ // a row with the wrong kind: replaced on repair
				missing = append(missing, tagFix{name: t.name, value: t.value, createdAt: createdAt, seq: seq, kind: kind})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check tags: %w", err)
	}
	rep.MissingTags = len(missing) - rep.ExtraTags
	var actual int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tags`).Scan(&actual); err != nil {
		return nil, fmt.Errorf("check tags: %w", err)
	}
	// Rows present = the expected ones not missing + the wrong-kind ones
	// (counted already) + the extra ones.
	if extra := actual - (expected - int64(len(missing))) - int64(rep.ExtraTags); extra > 0 {
		rep.ExtraTags += int(extra)
	}
	return missing, nil
}

// notCalledFor is true of a tag index row that its event does not call for
// (or whose event is gone).
const notCalledFor = `NOT EXISTS (
	SELECT 1 FROM events e, json_each(e.tags) j
	WHERE e.seq = tags.seq AND e.created_at = tags.created_at AND e.kind = tags.kind
	AND j.value ->> 0 = tags.name
	AND (CASE WHEN typeof(tags.value) = 'blob' THEN lower(hex(tags.value)) ELSE tags.value END) = j.value ->> 1
	AND (typeof(tags.value) = 'blob') = (length(j.value ->> 1) = 64 AND lower(j.value ->> 1) = j.value ->> 1
		AND NOT (j.value ->> 1) GLOB '*[^0-9a-f]*'))`

// deleteExtraTagSQL deletes one tag index row if it is still extra when the
// repair runs: a search by its key, where deleting every extra row in one
// statement would hold the writer for a scan of the whole index (RL-27a).
const deleteExtraTagSQL = `DELETE FROM tags WHERE name = ? AND value = ? AND created_at = ? AND seq = ? AND ` + notCalledFor

// extraTags lists the tag index rows no event calls for, in the check's
// read transaction, for the repair to delete one by one.
func extraTags(ctx context.Context, tx *sql.Tx) ([]tagFix, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, value, created_at, seq FROM tags WHERE `+notCalledFor)
	if err != nil {
		return nil, fmt.Errorf("find extra tags: %w", err)
	}
	defer rows.Close()
	var extra []tagFix
	for rows.Next() {
		var x tagFix
		if err := rows.Scan(&x.name, &x.value, &x.createdAt, &x.seq); err != nil {
			return nil, fmt.Errorf("find extra tags: %w", err)
		}
		extra = append(extra, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find extra tags: %w", err)
	}
	return extra, nil
}
