package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// background purges expired events and tokens every buzz.PurgeEvery until
// stop is closed.
func (s *Store) background(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	purge := time.NewTicker(buzz.PurgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-stop:
			return
		case <-purge.C:
			buzz.Purge(context.Background(), s, s.log, errClosed)
		}
	}
}

// PurgeExpired removes events whose NIP-40 expiration has passed, a write
// transaction a batch (buzz.PurgeExpiredBatch), and returns how many it
// removed.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	return buzz.InBatches(buzz.ExpiredBatch, func() (n int, err error) {
		err = s.write(ctx, func(tx *writeTx) error {
			n, err = buzz.PurgeExpiredBatch(expiredRows{tx.newLookup(), tx}, tx.now)
			return err
		})
		return n, err
	})
}

// expiredRows are buzz.ExpiredRows in a write transaction: its lookup
// reads and removes the events, and holds its access state.
type expiredRows struct {
	*lookup
	tx *writeTx
}

func (r expiredRows) Expired(now int64, limit int) ([]int64, error) {
	rows, err := r.tx.tx.Query(r.tx.ctx, `SELECT seq FROM events WHERE expires_at <= $1 LIMIT $2`, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (r expiredRows) DeleteInvites(ref int64) (int, error) { return r.tx.dropInvites(ref) }
