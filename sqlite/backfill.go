package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// Backfill classifies the channel messages stored without thread metadata
// (CW-12: imported before their parent, or before classification existed)
// whose parent is now stored, exactly as ingest would have: depth, root and
// row class, and the counters of every ancestor. Parents go before their
// replies: each pass takes the candidates oldest first, and passes repeat
// while one classifies anything, so a reply whose parent was classified
// in this pass is taken in the next. It is idempotent, and safe while the
// relay serves: every page is one short writer job.
func (s *Store) Backfill(ctx context.Context) (buzz.BackfillResult, error) {
	return buzz.BackfillPasses(ctx, s.backfillPass)
}

func (s *Store) backfillPass(ctx context.Context) (classified, waiting int, err error) {
	var (
		lastAt int64 = -1 << 62
		lastID []byte
	)
	return buzz.BackfillPass(ctx, func(ctx context.Context) (seen, n int, err error) {
		now := s.nowUnix()
		err = s.writer.do(ctx, func(tx *writeTx) error {
			rows, err := tx.unclassified.QueryContext(tx.ctx, lastAt, lastID, buzz.BackfillPageSize)
			if err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			var (
				seqs []int64
				at   = lastAt
				id   = lastID
			)
			for rows.Next() {
				var seq int64
				if err := rows.Scan(&seq, &at, &id); err != nil {
					rows.Close()
					return fmt.Errorf("backfill: %w", err)
				}
				seqs = append(seqs, seq)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			seen = len(seqs)
			if n, err = buzz.BackfillEach(tx.placingRows, seqs, now); err != nil {
				return err
			}
			lastAt, lastID = at, id
			return nil
		})
		return seen, n, err
	})
}

// placingRows are buzz.PlacingRows over the writer's transaction.
type placingRows struct {
	*lookup
	threadRows
}

func (tx *writeTx) placingRows() buzz.PlacingRows { return tx.reclassifyRows() }

// reclassifyRows are buzz.ReclassifyRows over the writer's transaction.
func (tx *writeTx) reclassifyRows() buzz.ReclassifyRows {
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
	p := &buzz.Placing{Ref: ref, Event: &nostr.Event{Kind: t.kind, Tags: tags, PubKey: hex.EncodeToString(t.pubkey)},
		PubKey: t.pubkey, CreatedAt: t.createdAt, Deleted: t.deletedAt.Valid, Classified: t.depth.Valid, Depth: t.depth.Int64}
	if t.channel.Valid {
		p.Channel = tx.access.Channel(t.channel.Int64, "")
		p.H = p.Channel.H
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
