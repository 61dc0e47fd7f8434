package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
)

// CheckReport is what Check found.
type CheckReport struct {
	// Integrity holds what PRAGMA integrity_check said, when not "ok".
	Integrity []string
	// ForeignKeys counts the rows PRAGMA foreign_key_check reported.
	ForeignKeys int
	// Counters lists each event whose thread counters differ from its
	// subtree (RL-5).
	Counters []string
	// MissingTags and ExtraTags count tag index rows missing for an event,
	// and rows no event has (RL-3).
	MissingTags, ExtraTags int
	// Repaired is set when Check was asked to repair and did.
	Repaired bool
}

// OK reports whether nothing is wrong.
func (r CheckReport) OK() bool {
	return len(r.Integrity) == 0 && r.ForeignKeys == 0 && len(r.Counters) == 0 && r.MissingTags == 0 && r.ExtraTags == 0
}

// counterFix is a counters row to write on repair.
type counterFix struct {
	seq int64
	c   Counters
}

// Check verifies the database: SQLite's integrity and foreign key checks,
// then every thread counter against the subtree it counts and every tag
// index row against the events' tags. With repair, what is wrong in the
// counters and the tag index is made right in one transaction (a damaged
// file is beyond repair here: restore a backup). Check reads one snapshot
// and never holds the writer while it reads, so the relay keeps serving.
func (s *Store) Check(ctx context.Context, repair bool) (CheckReport, error) {
	var rep CheckReport
	var fixes []counterFix
	var missing []tagFix
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
		if err := rows.Close(); err != nil {
			return fmt.Errorf("integrity_check: %w", err)
		}
		rows, err = tx.QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			return fmt.Errorf("foreign_key_check: %w", err)
		}
		for rows.Next() {
			rep.ForeignKeys++
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("foreign_key_check: %w", err)
		}
		if fixes, err = checkCounters(ctx, tx, &rep); err != nil {
			return err
		}
		missing, err = checkTags(ctx, tx, &rep)
		return err
	})
	if err != nil || !repair || rep.OK() {
		return rep, err
	}
	err = s.writer.do(ctx, func(w *writeTx) error {
		for _, f := range fixes {
			if _, err := w.upsertThread.ExecContext(w.ctx, f.seq, f.c.ReplyCount, f.c.DescendantCount,
				f.c.lastReplyAt(), encodeParticipants(f.c.Participants)); err != nil {
				return fmt.Errorf("repair counters of #%d: %w", f.seq, err)
			}
		}
		if rep.ExtraTags > 0 {
			if _, err := w.deleteExtraTags.ExecContext(w.ctx); err != nil {
				return fmt.Errorf("repair tags: %w", err)
			}
		}
		for _, m := range missing {
			if _, err := w.insertTag.ExecContext(w.ctx, m.name, m.value, m.createdAt, m.seq, m.kind); err != nil {
				return fmt.Errorf("repair tags of #%d: %w", m.seq, err)
			}
		}
		return nil
	})
	rep.Repaired = err == nil
	return rep, err
}

// checkCounters compares the counters of every event that has a counters
// row or a reply with its subtree.
func checkCounters(ctx context.Context, tx *sql.Tx, rep *CheckReport) ([]counterFix, error) {
	children, err := tx.PrepareContext(ctx, liveChildrenSQL)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer children.Close()
	authors, err := tx.PrepareContext(ctx, subtreeAuthorsSQL)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer authors.Close()
	rows, err := tx.QueryContext(ctx, `SELECT e.seq, e.id, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
		t.last_reply_at, t.participants
		FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq
		WHERE t.seq IS NOT NULL OR EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq)`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer rows.Close()
	var fixes []counterFix
	for rows.Next() {
		var (
			seq           int64
			id, parts     []byte
			replies, desc int64
			last          sql.NullInt64
		)
		if err := rows.Scan(&seq, &id, &replies, &desc, &last, &parts); err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		want, err := computeCounters(ctx, children, authors, seq)
		if err != nil {
			return nil, err
		}
		wantParts := encodeParticipants(want.Participants)
		if replies != want.ReplyCount || desc != want.DescendantCount || last != want.lastReplyAt() || !bytes.Equal(parts, wantParts) {
			rep.Counters = append(rep.Counters, fmt.Sprintf(
				"event %s: reply_count %d, descendant_count %d, last_reply_at %v, %d participants; want %d, %d, %v, %d",
				hex.EncodeToString(id), replies, desc, nullString(last), len(parts)/participantSize,
				want.ReplyCount, want.DescendantCount, nullString(want.lastReplyAt()), len(want.Participants)))
			fixes = append(fixes, counterFix{seq: seq, c: want})
		}
	}
	return fixes, rows.Err()
}

func nullString(v sql.NullInt64) string {
	if !v.Valid {
		return "null"
	}
	return fmt.Sprint(v.Int64)
}

// tagFix is a missing tag index row.
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
func checkTags(ctx context.Context, tx *sql.Tx, rep *CheckReport) ([]tagFix, error) {
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
		tags, err := parseTags(tagsJSON)
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

// deleteExtraTagsSQL removes every tag index row that its event does not
// call for (or whose event is gone); missing rows are inserted afterwards.
const deleteExtraTagsSQL = `DELETE FROM tags WHERE NOT EXISTS (
	SELECT 1 FROM events e, json_each(e.tags) j
	WHERE e.seq = tags.seq AND e.created_at = tags.created_at AND e.kind = tags.kind
	AND j.value ->> 0 = tags.name
	AND (CASE WHEN typeof(tags.value) = 'blob' THEN lower(hex(tags.value)) ELSE tags.value END) = j.value ->> 1
	AND (typeof(tags.value) = 'blob') = (length(j.value ->> 1) = 64 AND lower(j.value ->> 1) = j.value ->> 1
		AND NOT (j.value ->> 1) GLOB '*[^0-9a-f]*'))`
