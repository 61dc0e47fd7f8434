package sqlite

import (
	"context"
	"fmt"
	"time"
)

// purgeEvery is how often expired events (NIP-40) and NIP-98 tokens are
// removed. Reads hide expired events from the moment they expire; the
// purge reclaims the space and makes the thread counters exact again.
const purgeEvery = time.Minute

// purgeBatch bounds one purge transaction, so that a flood of expiring
// events never holds the writer for long.
const purgeBatch = 100

func (s *Store) purgeLoop() {
	defer close(s.purgeDone)
	tick := time.NewTicker(purgeEvery)
	defer tick.Stop()
	watch := time.NewTicker(watchEvery)
	defer watch.Stop()
	for {
		select {
		case <-s.stopPurge:
			return
		case <-watch.C:
			if err := s.refreshCommunity(context.Background()); err != nil {
				s.log.Error("reading the access state", "err", err)
			}
		case <-tick.C:
			if _, err := s.PurgeExpired(context.Background()); err != nil {
				s.log.Error("purging expired events", "err", err)
			}
			if _, err := s.PurgeTokens(context.Background()); err != nil {
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
		now := s.nowUnix()
		err := s.writer.do(ctx, func(tx *writeTx) error {
			rows, err := tx.expired.QueryContext(tx.ctx, now, purgeBatch)
			if err != nil {
				return fmt.Errorf("find expired events: %w", err)
			}
			seqs, err := readSeqs(rows)
			if err != nil {
				return fmt.Errorf("find expired events: %w", err)
			}
			for _, seq := range seqs {
				t, err := tx.bySeq(seq)
				if err != nil {
					return err
				}
				if err := tx.remove(t, now); err != nil {
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
