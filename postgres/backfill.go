package postgres

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// backfillPage is how many unclassified events one backfill transaction
// looks at.
const backfillPage = 200

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
	for {
		n, seen := 0, 0
		err := s.write(ctx, func(tx *writeTx) error {
			n, seen = 0, 0
			rows, err := tx.tx.Query(tx.ctx, `SELECT seq, created_at, id FROM events
				WHERE depth IS NULL AND row_class = 2 AND (created_at, id) > ($1, $2)
				ORDER BY created_at, id LIMIT $3`, lastAt, lastID, backfillPage)
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
			for _, seq := range seqs {
				ok, err := tx.backfillOne(seq, tx.now)
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

// backfillOne classifies stored event seq by the rules of ingest, as an
// import would have had its parent been there; false when it still waits.
func (tx *writeTx) backfillOne(seq, now int64) (bool, error) {
	t, err := tx.bySeq(seq)
	if err != nil || t == nil || t.depth != nil {
		return false, err
	}
	tags, err := tagjson.Parse(string(t.tagsJSON))
	if err != nil {
		return false, fmt.Errorf("backfill #%d: %w", seq, err)
	}
	// Its author's view: a reply in a private channel finds its parent
	// as its author, a member, does.
	ev := &nostr.Event{Kind: t.kind, Tags: tags, PubKey: hex.EncodeToString(t.pubkey)}
	var h string
	var ch *buzz.Channel
	if t.channel != nil {
		ch = tx.channelState(*t.channel, "")
		h = ch.H
	}
	placed, err := buzz.Classify(&lookup{tx: tx}, ev, buzz.ParseThreadTags(tags), h, ch, now, true)
	if _, rejected := buzz.AsRejection(err); err != nil && !rejected {
		return false, fmt.Errorf("backfill #%d: %w", seq, err)
	}
	if err != nil || !placed.Classified {
		return false, nil // its parent is not served yet: it waits
	}
	c := columnsOf(placed)
	if _, err := tx.tx.Exec(tx.ctx, `UPDATE events SET parent = $1, root = $2, depth = $3, broadcast = $4, row_class = $5 WHERE seq = $6`,
		c.parent, c.root, c.depth, c.broadcast, c.rowClass, seq); err != nil {
		return false, fmt.Errorf("backfill #%d: %w", seq, err)
	}
	if err := tx.touchEvent(t); err != nil {
		return false, err
	}
	if c.parent != nil && t.deletedAt == nil {
		if err := tx.addToAncestors(*c.parent, t.pubkey, t.createdAt); err != nil {
			return false, err
		}
	}
	return true, nil
}
