package sqlite

import (
	"context"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// SpendToken records an accepted NIP-98 token until expires and reports
// whether it was new (RL-17). It goes through the writer like an event:
// a second write connection would wait for SQLite's one write lock, and
// its busy waits would stall the writer's batches; here the row joins the
// batch being formed, one commit for both, and the answer waits for that
// commit, so that a token answered once is refused after any restart.
func (s *Store) SpendToken(ctx context.Context, key []byte, expires int64) (bool, error) {
	var fresh bool
	err := s.writer.do(ctx, func(tx *writeTx) error {
		res, err := tx.spendToken.ExecContext(tx.ctx, key, expires)
		if err != nil {
			return fmt.Errorf("record a NIP-98 token: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("record a NIP-98 token: %w", err)
		}
		fresh = n == 1
		return nil
	})
	return fresh, err
}

// PurgeTokens deletes the NIP-98 tokens whose time to be remembered has
// passed by the store's clock, a writer job a batch (buzz.TokenBatch),
// and returns how many it deleted.
func (s *Store) PurgeTokens(ctx context.Context) (int, error) {
	return buzz.InBatches(buzz.TokenBatch, func() (int, error) {
		var n int64
		now := s.nowUnix()
		err := s.writer.do(ctx, func(tx *writeTx) error {
			res, err := tx.purgeTokens.ExecContext(tx.ctx, now, buzz.TokenBatch)
			if err != nil {
				return fmt.Errorf("purge expired NIP-98 tokens: %w", err)
			}
			if n, err = res.RowsAffected(); err != nil {
				return fmt.Errorf("purge expired NIP-98 tokens: %w", err)
			}
			return nil
		})
		return int(n), err
	})
}
