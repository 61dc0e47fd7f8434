package sqlite

import (
	"context"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// ReclassifyResult says what a Reclassify did.
type ReclassifyResult = buzz.ReclassifyResult

// Reclassify places again, by buzz.Reclassify, the channel events stored
// top-level whose tags make them replies since CW-10 changed on
// 2026-12-03: every page is one writer job.
func (s *Store) Reclassify(ctx context.Context) (ReclassifyResult, error) {
	return buzz.Reclassify(ctx, func(ctx context.Context, job func(buzz.ReclassifyTx, int64) error) error {
		now := s.nowUnix()
		return s.writer.do(ctx, func(tx *writeTx) error { return job(tx, now) })
	})
}

// TopLevelAfter runs writeStmts.topLevelAfter.
func (tx *writeTx) TopLevelAfter(after int64, limit int) ([]int64, error) {
	rows, err := tx.topLevelAfter.QueryContext(tx.ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return readSeqs(rows)
}
