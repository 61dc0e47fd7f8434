package postgres

import (
	"context"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// Backfill classifies the channel messages stored unclassified whose
// parents are classified now, by buzz.Backfill (CW-12): every page is one
// write transaction.
func (s *Store) Backfill(ctx context.Context) (buzz.BackfillResult, error) {
	return buzz.Backfill(ctx, func(ctx context.Context, job func(buzz.BackfillTx, int64) error) error {
		return s.write(ctx, func(tx *writeTx) error { return job(tx, tx.now) })
	})
}

// Unclassified lists the next candidates of Backfill in (created_at, id)
// order.
func (tx *writeTx) Unclassified(after buzz.BackfillCursor, limit int) ([]int64, buzz.BackfillCursor, error) {
	rows, err := tx.tx.Query(tx.ctx, `SELECT seq, created_at, id FROM events
		WHERE depth IS NULL AND row_class = 2 AND (created_at, id) > ($1, $2)
		ORDER BY created_at, id LIMIT $3`, after.At, after.ID, limit)
	var seqs []int64
	var seq int64
	err = eachRow(rows, err, "unclassified events", []any{&seq, &after.At, &after.ID},
		func() error { seqs = append(seqs, seq); return nil })
	return seqs, after, err
}

// placingRows are buzz.PlacingRows in the write transaction: Placing
// makes the event it reads the target whose pages SetThread renews.
type placingRows struct {
	*lookup
	*threadRows
}

// PlacingRows are placingRows in the write transaction.
func (tx *writeTx) PlacingRows() buzz.PlacingRows {
	return placingRows{lookup: tx.newLookup(), threadRows: tx.threadRows(nil)}
}

func (r placingRows) Placing(ref int64) (*buzz.Placing, error) {
	tx := r.threadRows.tx
	t, err := tx.bySeq(ref)
	if err != nil || t == nil {
		return nil, err
	}
	tags, err := tagjson.Parse(string(t.tagsJSON))
	if err != nil {
		return nil, fmt.Errorf("read event #%d: %w", ref, err)
	}
	r.target = t
	p := &buzz.Placing{Ref: ref, Kind: t.kind, Tags: tags, PubKey: t.pubkey, CreatedAt: t.createdAt,
		Deleted: t.deletedAt != nil, Classified: t.depth != nil, Depth: value(t.depth)}
	if t.channel != nil {
		p.Channel = tx.access.Channel(*t.channel, "")
	}
	return p, nil
}

func (r placingRows) SetThread(ref int64, c buzz.Classification) error {
	tx := r.threadRows.tx
	cols := columnsOf(c)
	if _, err := tx.tx.Exec(tx.ctx, `UPDATE events SET parent = $1, root = $2, depth = $3, broadcast = $4, row_class = $5 WHERE seq = $6`,
		cols.parent, cols.root, cols.depth, cols.broadcast, cols.rowClass, ref); err != nil {
		return fmt.Errorf("place #%d in its thread: %w", ref, err)
	}
	return tx.touchEvent(r.target)
}
