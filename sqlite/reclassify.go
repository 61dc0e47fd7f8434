package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
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
			rows, err := tx.topLevelAfter.QueryContext(tx.ctx, last, buzz.BackfillPageSize)
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
				candidate, ok, err := buzz.ReclassifyOne(tx.reclassifyRows(), seq, now)
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
		if seen < buzz.BackfillPageSize {
			return res, nil
		}
	}
}
