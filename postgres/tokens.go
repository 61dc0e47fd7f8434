package postgres

import (
	"context"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// spendTokenSQL records a token unless it is there; the primary key
// makes it atomic across processes: of two racing with one key, one
// inserts and the other, once the first commits, inserts nothing.
const spendTokenSQL = `INSERT INTO nip98_tokens (sig, expires) VALUES ($1, $2) ON CONFLICT (sig) DO NOTHING`

// purgeTokensSQL deletes a batch of expired tokens, found along
// nip98_tokens_expires, each then by its key. As `sig IN (SELECT ...)`,
// the generic plan, guessing a third of the table, joined the batch with
// a scan of the whole table.
const purgeTokensSQL = `DELETE FROM nip98_tokens WHERE sig = ANY (ARRAY(
	SELECT sig FROM nip98_tokens WHERE expires < $1 LIMIT $2))`

// SpendToken records an accepted NIP-98 token until expires and reports
// whether it was new (RL-17). One statement on the pool, outside the
// write lock: no rule of ingest reads these rows, so a `/query` never
// waits behind the writes of every process.
func (s *Store) SpendToken(ctx context.Context, key []byte, expires int64) (bool, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false, errClosed
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, spendTokenSQL, key, expires)
	if err != nil {
		return false, fmt.Errorf("record a NIP-98 token: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// PurgeTokens deletes the NIP-98 tokens whose time to be remembered has
// passed by the store's clock, a statement a batch (buzz.TokenBatch),
// and returns how many it deleted. Several
// processes may purge at once: a row goes once.
func (s *Store) PurgeTokens(ctx context.Context) (int, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return 0, errClosed
	}
	return buzz.InBatches(buzz.TokenBatch, func() (int, error) {
		ctx, cancel := context.WithTimeout(ctx, queryTimeout)
		defer cancel()
		tag, err := s.pool.Exec(ctx, purgeTokensSQL, s.nowUnix(), buzz.TokenBatch)
		if err != nil {
			return 0, fmt.Errorf("purge expired NIP-98 tokens: %w", err)
		}
		return int(tag.RowsAffected()), nil
	})
}
