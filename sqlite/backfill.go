package sqlite

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// backfillPage is how many candidates one writer job looks at.
const backfillPage = 200

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
	for {
		n, seen := 0, 0
		now := s.nowUnix()
		err := s.writer.do(ctx, func(tx *writeTx) error {
			n, seen = 0, 0
			rows, err := tx.unclassified.QueryContext(tx.ctx, lastAt, lastID, backfillPage)
			if err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			// The cursor moves only when the job ends: the writer may run a
			// job twice (after another job's failure), and the second run
			// must read the same page.
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
			for _, seq := range seqs {
				ok, err := tx.backfillOne(seq, now)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			lastAt, lastID = at, id
			return nil
		})
		if err != nil {
			return classified, waiting, err
		}
		classified += n
		waiting += seen - n
		if seen < backfillPage {
			return classified, waiting, nil
		}
	}
}

// backfillOne classifies event seq if its parent is classified now. It
// reports whether it did.
func (tx *writeTx) backfillOne(seq, now int64) (bool, error) {
	t, err := tx.bySeq(seq)
	if err != nil || t == nil || t.depth.Valid {
		return false, err
	}
	tags, err := tagjson.Parse(t.tagsJSON)
	if err != nil {
		return false, fmt.Errorf("backfill #%d: %w", seq, err)
	}
	// Its author's view: a reply in a private channel finds its parent
	// as its author, a member, does (an anonymous record found none).
	r := &record{ev: &nostr.Event{Kind: t.kind, Tags: tags, PubKey: hex.EncodeToString(t.pubkey)}, pubkey: t.pubkey}
	r.thread = buzz.ParseThreadTags(tags)
	c, err := tx.classify(r, t.channel, now, true)
	if err != nil || !c.depth.Valid {
		// Broken thread rules, or the parent still missing: it waits, a
		// row of its channel (CW-12).
		return false, nil
	}
	if _, err := tx.setThread.ExecContext(tx.ctx, c.parent, c.root, c.depth, c.broadcast, c.rowClass, seq); err != nil {
		return false, fmt.Errorf("backfill #%d: %w", seq, err)
	}
	if c.parent.Valid && !t.deletedAt.Valid {
		if err := tx.addToAncestors(c.parent.Int64, t.pubkey, t.createdAt); err != nil {
			return false, err
		}
	}
	return true, nil
}

// unclassifiedAfter is the statement behind writeStmts.unclassified: the
// next candidates of Backfill in (created_at, id) order.
const unclassifiedAfter = `SELECT seq, created_at, id FROM events INDEXED BY events_unclassified
	WHERE depth IS NULL AND row_class = 2
	AND created_at >= ?1 AND (created_at > ?1 OR id > ?2)
	ORDER BY created_at, id LIMIT ?3`
