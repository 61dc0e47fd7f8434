package postgres

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// Backfill classifies the channel messages stored unclassified (CW-12)
// whose parents are classified now, pass after pass until one classifies
// nothing (a reply classified in a pass can be the parent of one the pass
// saw before it): how many it classified, how many still wait.
func (s *Store) Backfill(ctx context.Context) (buzz.BackfillResult, error) {
	return buzz.BackfillPasses(ctx, s.backfillPass)
}

// backfillPass looks at every unclassified event once, in (created_at,
// id) order, a page a transaction.
func (s *Store) backfillPass(ctx context.Context) (classified, waiting int, err error) {
	lastAt, lastID := int64(-1<<62), []byte{}
	return buzz.BackfillPass(ctx, func(ctx context.Context) (seen, n int, err error) {
		err = s.write(ctx, func(tx *writeTx) error {
			rows, err := tx.tx.Query(tx.ctx, `SELECT seq, created_at, id FROM events
				WHERE depth IS NULL AND row_class = 2 AND (created_at, id) > ($1, $2)
				ORDER BY created_at, id LIMIT $3`, lastAt, lastID, buzz.BackfillPageSize)
			if err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			var seqs []int64
			at, id := lastAt, lastID
			for rows.Next() {
				var seq int64
				if err := rows.Scan(&seq, &at, &id); err != nil {
					rows.Close()
					return fmt.Errorf("backfill: %w", err)
				}
				seqs = append(seqs, seq)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			seen = len(seqs)
			if n, err = buzz.BackfillEach(tx.placingRows, seqs, tx.now); err != nil {
				return err
			}
			lastAt, lastID = at, id
			return nil
		})
		return seen, n, err
	})
}

// placingRows are buzz.PlacingRows in the write transaction: Placing
// makes the event it reads the target whose pages SetThread renews.
type placingRows struct {
	*lookup
	*threadRows
}

func (tx *writeTx) placingRows() buzz.PlacingRows {
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
	p := &buzz.Placing{Ref: ref, Event: &nostr.Event{Kind: t.kind, Tags: tags, PubKey: hex.EncodeToString(t.pubkey)},
		PubKey: t.pubkey, CreatedAt: t.createdAt, Deleted: t.deletedAt != nil, Classified: t.depth != nil, Depth: value(t.depth)}
	if t.channel != nil {
		p.Channel = tx.access.Channel(*t.channel, "")
		p.H = p.Channel.H
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
