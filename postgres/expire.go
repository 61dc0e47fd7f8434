package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// purgeEvery is how often expired events (NIP-40) and NIP-98 tokens are
// removed. Reads hide expired events from the moment they expire; the
// purge reclaims the space and makes the thread counters exact again.
const purgeEvery = time.Minute

// purgeBatch bounds one purge transaction, so that a flood of expiring
// events never holds the write lock for long.
const purgeBatch = 100

// background purges expired events and tokens until stop is closed.
func (s *Store) background(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	purge := time.NewTicker(purgeEvery)
	defer purge.Stop()
	for {
		select {
		case <-stop:
			return
		case <-purge.C:
			if _, err := s.PurgeExpired(context.Background()); err != nil && !errors.Is(err, errClosed) {
				s.log.Error("purging expired events", "err", err)
			}
			if _, err := s.PurgeTokens(context.Background()); err != nil && !errors.Is(err, errClosed) {
				s.log.Error("purging expired NIP-98 tokens", "err", err)
			}
		}
	}
}

// PurgeExpired removes events whose NIP-40 expiration has passed and
// returns how many it removed.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := s.write(ctx, func(tx *writeTx) error {
			rows, err := tx.tx.Query(tx.ctx, `SELECT seq FROM events WHERE expires_at <= $1 LIMIT $2`, tx.now, purgeBatch)
			if err != nil {
				return fmt.Errorf("find expired events: %w", err)
			}
			seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return fmt.Errorf("find expired events: %w", err)
			}
			for _, seq := range seqs {
				t, err := tx.bySeq(seq)
				if err != nil {
					return err
				}
				if err := tx.remove(t, tx.now); err != nil {
					return err
				}
			}
			n = len(seqs)
			return nil
		})
		total += n
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
}
