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
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ReclassifyResult says what a Reclassify did.
type ReclassifyResult struct {
	// Reclassified is how many top-level events became replies, each with
	// the replies below it.
	Reclassified int
	// Kept is how many stay top-level although their tags now make them
	// replies: live ingest would refuse them today (the root missing,
	// deleted, in another channel, itself a reply, or the thread too
	// deep), or a reply below them has a root marker that the move would
	// contradict.
	Kept int
}

// Reclassify recomputes the classification of channel events stored
// top-level whose tags make them replies since CW-10 changed on 2026-12-03:
// a `root` marker without a `reply` one (a NIP-10 direct reply). Each
// becomes a reply of its root exactly as ingest would make it today, with
// the replies already below it moved along (their depth grows, their root is
// the new one), and the counters of every new ancestor count the whole
// moved subtree, so that Check finds them exact. Events go in store order,
// the order ingest saw them. It walks every event stored after its cursor
// (a rowid range: an operator's command may be linear) once;
// every page is one short writer job, so the relay keeps serving, and a
// second run changes nothing.
func (s *Store) Reclassify(ctx context.Context) (ReclassifyResult, error) {
	var (
		res  ReclassifyResult
		last int64
	)
	for {
		var (
			seen  int
			after = last
			moved int
			kept  int
		)
		now := s.nowUnix()
		err := s.writer.do(ctx, func(tx *writeTx) error {
			// The writer may run a job twice: every run starts from the
			// same cursor and counts afresh.
			seen, after, moved, kept = 0, last, 0, 0
			rows, err := tx.topLevelAfter.QueryContext(tx.ctx, last, backfillPage)
			if err != nil {
				return fmt.Errorf("reclassify: %w", err)
			}
			var seqs []int64
			for rows.Next() {
				var seq int64
				if err := rows.Scan(&seq); err != nil {
					rows.Close()
					return fmt.Errorf("reclassify: %w", err)
				}
				seqs = append(seqs, seq)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return fmt.Errorf("reclassify: %w", err)
			}
			seen = len(seqs)
			for _, seq := range seqs {
				after = seq
				candidate, ok, err := tx.reclassifyOne(seq, now)
				switch {
				case err != nil:
					return err
				case ok:
					moved++
				case candidate:
					kept++
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Reclassified += moved
		res.Kept += kept
		last = after
		if seen < backfillPage {
			return res, nil
		}
	}
}

// reclassifyOne makes top-level event seq a reply if its tags say it is
// one and ingest would accept it as one now. candidate reports whether its
// tags say so, moved whether it became a reply.
func (tx *writeTx) reclassifyOne(seq, now int64) (candidate, moved bool, err error) {
	t, err := tx.bySeq(seq)
	if err != nil || t == nil || !t.channel.Valid || !t.depth.Valid || t.depth.Int64 != 0 || !nipcw.IsClassifiedKind(t.kind) {
		return false, false, err
	}
	tags, err := tagjson.Parse(t.tagsJSON)
	if err != nil {
		return false, false, fmt.Errorf("reclassify #%d: %w", seq, err)
	}
	r := &record{ev: &nostr.Event{Kind: t.kind, Tags: tags, PubKey: hex.EncodeToString(t.pubkey)}, pubkey: t.pubkey, thread: buzz.ParseThreadTags(tags)}
	if r.thread.Parent == "" {
		return false, false, nil
	}
	c, err := tx.classify(r, t.channel, now, false)
	if _, refused := buzz.AsRejection(err); refused {
		return true, false, nil
	}
	if err != nil {
		return true, false, err
	}
	if !c.depth.Valid {
		// The parent is unclassified (CW-12): so would this reply be; a
		// top-level event is a row as an unclassified one is, so it stays.
		return true, false, nil
	}
	root, err := tx.bySeq(c.root.Int64)
	if err != nil {
		return true, false, err
	}
	if root == nil {
		return true, false, fmt.Errorf("thread root #%d of #%d is missing", c.root.Int64, seq)
	}
	below, ok, err := tx.movableSubtree(seq, c.depth.Int64, hex.EncodeToString(root.id))
	if err != nil || !ok {
		return true, false, err
	}
	if _, err := tx.moveSubtree.ExecContext(tx.ctx, c.root, c.depth.Int64, seq); err != nil {
		return true, false, fmt.Errorf("reclassify #%d: %w", seq, err)
	}
	if _, err := tx.setThread.ExecContext(tx.ctx, c.parent, c.root, c.depth, c.broadcast, c.rowClass, seq); err != nil {
		return true, false, fmt.Errorf("reclassify #%d: %w", seq, err)
	}
	if !t.deletedAt.Valid {
		if err := tx.addToAncestors(c.parent.Int64, t.pubkey, t.createdAt); err != nil {
			return true, false, err
		}
	}
	for _, b := range below {
		if err := tx.countUp(c.parent.Int64, false, b.pubkey, b.at); err != nil {
			return true, false, err
		}
	}
	return true, true, nil
}

// movedReply is a non-deleted reply below a reclassified event, to count on
// its new ancestors.
type movedReply struct {
	pubkey []byte
	at     int64
}

// movableSubtree reads the replies below top-level event seq and reports
// whether they can move by shift levels under the thread rootID: none would
// pass the depth bound, and none has a root marker naming another root
// (ingest refuses such a reply; it keeps seq where it is). It returns the
// non-deleted ones.
func (tx *writeTx) movableSubtree(seq, shift int64, rootID string) ([]movedReply, bool, error) {
	rows, err := tx.subtree.QueryContext(tx.ctx, seq)
	if err != nil {
		return nil, false, fmt.Errorf("replies below #%d: %w", seq, err)
	}
	defer rows.Close()
	var out []movedReply
	ok := true
	for rows.Next() {
		var (
			depth, at int64
			pubkey    []byte
			deleted   sql.NullInt64
			tagsJSON  string
		)
		if err := rows.Scan(&depth, &pubkey, &at, &deleted, &tagsJSON); err != nil {
			return nil, false, fmt.Errorf("replies below #%d: %w", seq, err)
		}
		tags, err := tagjson.Parse(tagsJSON)
		if err != nil {
			return nil, false, fmt.Errorf("replies below #%d: %w", seq, err)
		}
		if tt := buzz.ParseThreadTags(tags); depth+shift > maxDepth || tt.Root != "" && tt.Root != rootID {
			ok = false
		}
		if !deleted.Valid {
			out = append(out, movedReply{pubkey: pubkey, at: at})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("replies below #%d: %w", seq, err)
	}
	return out, ok, nil
}
