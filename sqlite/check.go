package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// Check is buzz.Check over this store. Beside the rules' findings it runs
// SQLite's integrity and foreign key checks and checks the tag index and
// the aux events' deletion marks (StorageChecks); a damaged file is beyond
// repair here: restore a backup. It reads one snapshot and never holds the
// writer while it reads, so the relay keeps serving.
func (s *Store) Check(ctx context.Context, repair bool) (buzz.CheckReport, error) {
	return buzz.Check(buzz.CheckStore{
		RelayPubKey: s.pubkey,
		CanSign:     s.key != "",
		ReadSnapshot: func(read func(buzz.CheckSnapshot) error) error {
			return s.readTxFor(ctx, 0, func(tx *sql.Tx) error { return read(checkSnapshot{ctx: ctx, tx: tx}) })
		},
		Repair: func(fix func(buzz.CheckRepairTx) error) error {
			return s.writer.do(ctx, func(w *writeTx) error { return fix(checkRepair{s: s, w: w}) })
		},
	}, repair)
}

// checkRepair is the writer's transaction as a check's repair writes in it.
type checkRepair struct {
	s *Store
	w *writeTx
}

func (r checkRepair) EventStored(seq int64) (bool, error) {
	t, err := r.w.bySeq(seq)
	return t != nil, err
}

func (r checkRepair) ThreadRows() buzz.ThreadRows { return threadRows{tx: r.w} }

// DropForeignGroupState removes the group state in force that the relay
// key did not sign, and has the state of its channels signed afresh
// (RL-11, RL-21).
func (r checkRepair) DropForeignGroupState() error {
	return buzz.DropForeignGroupState(r.s.groupState(r.w), r.s.pubkey, r.s.nowUnix())
}

// checkSnapshot is the check's read transaction.
type checkSnapshot struct {
	ctx context.Context
	tx  *sql.Tx
}

func (c checkSnapshot) ThreadReplies(each func(root int64, r threadcount.Reply) error) error {
	roots, err := c.tx.QueryContext(c.ctx, `SELECT DISTINCT root FROM events INDEXED BY events_root WHERE root IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("check counters: %w", err)
	}
	rootSeqs, err := readSeqs(roots)
	if err != nil {
		return fmt.Errorf("check counters: %w", err)
	}
	thread, err := c.tx.PrepareContext(c.ctx, `SELECT seq, parent, pubkey, created_at, deleted_at IS NOT NULL
		FROM events INDEXED BY events_root WHERE root = ? ORDER BY depth DESC`)
	if err != nil {
		return fmt.Errorf("check counters: %w", err)
	}
	defer thread.Close()
	for _, root := range rootSeqs {
		rows, err := thread.QueryContext(c.ctx, root)
		if err != nil {
			return fmt.Errorf("check counters of thread #%d: %w", root, err)
		}
		for rows.Next() {
			var r threadcount.Reply
			if err = rows.Scan(&r.Seq, &r.Parent, &r.PubKey, &r.At, &r.Deleted); err != nil {
				break
			}
			if err = each(root, r); err != nil {
				break
			}
		}
		if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("check counters of thread #%d: %w", root, err)
		}
	}
	return nil
}

func (c checkSnapshot) CounterRows(each func(seq int64, id []byte, row buzz.ThreadRow) error) error {
	rows, err := c.tx.QueryContext(c.ctx, `SELECT t.seq, e.id, t.reply_count, t.descendant_count, t.last_reply_at, t.participants
		FROM thread_metadata t JOIN events e ON e.seq = t.seq`)
	if err != nil {
		return fmt.Errorf("check counters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq  int64
			id   []byte
			row  buzz.ThreadRow
			last sql.NullInt64
		)
		if err := rows.Scan(&seq, &id, &row.Replies, &row.Descendants, &last, &row.Participants); err != nil {
			return fmt.Errorf("check counters: %w", err)
		}
		row.LastReplyAt, row.HasLastReply = last.Int64, last.Valid
		if err := each(seq, id, row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check counters: %w", err)
	}
	return nil
}

func (c checkSnapshot) EventID(seq int64) ([]byte, error) {
	var id []byte
	if err := c.tx.QueryRowContext(c.ctx, `SELECT id FROM events WHERE seq = ?`, seq).Scan(&id); err != nil {
		return nil, fmt.Errorf("check counters of #%d: %w", seq, err)
	}
	return id, nil
}

func (c checkSnapshot) ForeignGroupState(pubkey string, each func(kind int, channel string, signer []byte) error) error {
	key, _ := hex.DecodeString(pubkey)
	rows, err := c.tx.QueryContext(c.ctx, `SELECT kind, coalesce(dtag, ''), pubkey FROM events INDEXED BY events_kind
		WHERE `+foreignGroupState+` ORDER BY dtag, kind`, key)
	if err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind int
		var d string
		var signer []byte
		if err := rows.Scan(&kind, &d, &signer); err != nil {
			return fmt.Errorf("check group state: %w", err)
		}
		if err := each(kind, d, signer); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	return nil
}

// StorageChecks runs SQLite's integrity and foreign key checks, and checks
// the aux events' deletion marks and the tag index. Its repair deletes the
// extra tag rows one by one, inserts the missing ones, and marks again
// what a stored deletion names.
func (c checkSnapshot) StorageChecks(rep *buzz.CheckReport, repair bool) (func(buzz.CheckRepairTx) error, error) {
	if err := c.databaseChecks(rep); err != nil {
		return nil, err
	}
	if err := c.tx.QueryRowContext(c.ctx, `SELECT count(*) FROM events WHERE kind IN (5, 7, 9005, 40003)
		AND named_by_deletion = 0 AND id IN (`+deletionNamedSQL+`)`).Scan(&rep.DeletionMarks); err != nil {
		return nil, fmt.Errorf("check deletion marks: %w", err)
	}
	missing, err := checkTags(c.ctx, c.tx, rep)
	if err != nil || !repair {
		return nil, err
	}
	var extra []tagFix
	if rep.ExtraTags > 0 {
		if extra, err = extraTags(c.ctx, c.tx); err != nil {
			return nil, err
		}
	}
	marks := rep.DeletionMarks > 0 || len(missing) > 0
	return func(tx buzz.CheckRepairTx) error {
		// buzz.Check hands back the transaction of this store's Repair.
		return repairTags(tx.(checkRepair), missing, extra, marks)
	}, nil
}

// databaseChecks runs SQLite's integrity and foreign key checks.
func (c checkSnapshot) databaseChecks(rep *buzz.CheckReport) error {
	rows, err := c.tx.QueryContext(c.ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity_check: %w", err)
	}
	for rows.Next() {
		var line string
		if err = rows.Scan(&line); err != nil {
			break
		}
		if line != "ok" {
			rep.Integrity = append(rep.Integrity, line)
		}
	}
	if err := errors.Join(err, rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("integrity_check: %w", err)
	}
	rows, err = c.tx.QueryContext(c.ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("foreign_key_check: %w", err)
	}
	for rows.Next() {
		rep.ForeignKeys++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("foreign_key_check: %w", err)
	}
	return nil
}

// repairTags deletes the extra tag rows that are still extra, inserts the
// missing ones of events still stored as the check read them, and then
// marks again the aux events a stored deletion names: a deletion's e tag
// put back names events too.
func repairTags(r checkRepair, missing, extra []tagFix, marks bool) error {
	w := r.w
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
		if err := w.insertTag.exec(m.name, m.value, m.createdAt, m.seq, m.kind); err != nil {
			return fmt.Errorf("repair tags of #%d: %w", m.seq, err)
		}
	}
	if marks {
		if _, err := r.s.writer.conn.ExecContext(w.ctx, markNamedByDeletion); err != nil {
			return fmt.Errorf("repair deletion marks: %w", err)
		}
	}
	return nil
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
