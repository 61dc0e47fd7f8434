package sqlite

import (
	"context"
	"time"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// purgeLoop purges expired events and tokens every buzz.PurgeEvery, and
// reads the access state again every watchEvery, until stopPurge closes.
func (s *Store) purgeLoop() {
	defer close(s.purgeDone)
	tick := time.NewTicker(buzz.PurgeEvery)
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
			buzz.Purge(context.Background(), s, s.log, nil)
		}
	}
}

// PurgeExpired removes events whose NIP-40 expiration has passed, a
// writer job a batch (buzz.PurgeExpiredBatch), and returns how many it
// removed.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	return buzz.InBatches(buzz.ExpiredBatch, func() (n int, err error) {
		now := s.nowUnix()
		err = s.writer.do(ctx, func(tx *writeTx) error {
			n, err = buzz.PurgeExpiredBatch(expiredRows{tx.newLookup(), tx}, now)
			return err
		})
		return n, err
	})
}

// expiredRows are buzz.ExpiredRows in the writer's transaction: its
// lookup reads and removes the events, and holds its access state.
type expiredRows struct {
	*lookup
	tx *writeTx
}

func (r expiredRows) Expired(now int64, limit int) ([]int64, error) {
	rows, err := r.tx.expired.QueryContext(r.tx.ctx, now, limit)
	if err != nil {
		return nil, err
	}
	return readSeqs(rows)
}

func (r expiredRows) DeleteInvites(ref int64) (int, error) { return r.tx.dropInvites(ref) }
