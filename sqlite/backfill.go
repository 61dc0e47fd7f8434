package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// Backfill classifies the channel messages stored without thread metadata
// whose parent is now stored, by buzz.Backfill (CW-12): every page is one
// writer job.
func (s *Store) Backfill(ctx context.Context) (buzz.BackfillResult, error) {
	return buzz.Backfill(ctx, func(ctx context.Context, job func(buzz.BackfillTx, int64) error) error {
		now := s.nowUnix()
		return s.writer.do(ctx, func(tx *writeTx) error { return job(tx, now) })
	})
}

// Unclassified runs writeStmts.unclassified.
func (tx *writeTx) Unclassified(after buzz.BackfillCursor, limit int) ([]int64, buzz.BackfillCursor, error) {
	rows, err := tx.unclassified.QueryContext(tx.ctx, after.At, after.ID, limit)
	if err != nil {
		return nil, after, err
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq, &after.At, &after.ID); err != nil {
			return nil, after, err
		}
		seqs = append(seqs, seq)
	}
	return seqs, after, rows.Err()
}

// placingRows are buzz.PlacingRows over the writer's transaction.
type placingRows struct {
	*lookup
	threadRows
}

// PlacingRows are placingRows over the writer's transaction.
func (tx *writeTx) PlacingRows() buzz.PlacingRows { return tx.ReclassifyRows() }

// ReclassifyRows are placingRows over the writer's transaction.
func (tx *writeTx) ReclassifyRows() buzz.ReclassifyRows {
	return placingRows{lookup: tx.newLookup(), threadRows: threadRows{tx: tx}}
}

func (r placingRows) Placing(ref int64) (*buzz.Placing, error) {
	tx := r.threadRows.tx
	t, err := tx.bySeq(ref)
	if err != nil || t == nil {
		return nil, err
	}
	tags, err := tagjson.Parse(t.tagsJSON)
	if err != nil {
		return nil, fmt.Errorf("read event #%d: %w", ref, err)
	}
	p := &buzz.Placing{Ref: ref, Kind: t.kind, Tags: tags, PubKey: t.pubkey, CreatedAt: t.createdAt,
		Deleted: t.deletedAt.Valid, Classified: t.depth.Valid, Depth: t.depth.Int64}
	if t.channel.Valid {
		p.Channel = tx.access.Channel(t.channel.Int64, "")
	}
	return p, nil
}

func (r placingRows) SetThread(ref int64, c buzz.Classification) error {
	tx := r.threadRows.tx
	cols := columnsOf(c)
	if _, err := tx.setThread.ExecContext(tx.ctx, cols.parent, cols.root, cols.depth, cols.broadcast, cols.rowClass, ref); err != nil {
		return fmt.Errorf("place #%d in its thread: %w", ref, err)
	}
	return nil
}

func (r placingRows) Below(root int64) ([]buzz.MovedReply, error) {
	tx := r.threadRows.tx
	rows, err := tx.subtree.QueryContext(tx.ctx, root)
	if err != nil {
		return nil, fmt.Errorf("replies below #%d: %w", root, err)
	}
	defer rows.Close()
	var out []buzz.MovedReply
	for rows.Next() {
		var (
			m        buzz.MovedReply
			deleted  sql.NullInt64
			tagsJSON string
		)
		if err := rows.Scan(&m.Depth, &m.PubKey, &m.CreatedAt, &deleted, &tagsJSON); err != nil {
			return nil, fmt.Errorf("replies below #%d: %w", root, err)
		}
		if m.Tags, err = tagjson.Parse(tagsJSON); err != nil {
			return nil, fmt.Errorf("replies below #%d: %w", root, err)
		}
		m.Deleted = deleted.Valid
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replies below #%d: %w", root, err)
	}
	return out, nil
}

func (r placingRows) MoveBelow(ref, root, shift int64) error {
	tx := r.threadRows.tx
	if _, err := tx.moveSubtree.ExecContext(tx.ctx, root, shift, ref); err != nil {
		return fmt.Errorf("move the replies of #%d below #%d: %w", ref, root, err)
	}
	return nil
}

// unclassifiedAfter is the statement behind writeStmts.unclassified: the
// next candidates of Backfill in (created_at, id) order.
const unclassifiedAfter = `SELECT seq, created_at, id FROM events INDEXED BY events_unclassified
	WHERE depth IS NULL AND row_class = 2
	AND created_at >= ?1 AND (created_at > ?1 OR id > ?2)
	ORDER BY created_at, id LIMIT ?3`
