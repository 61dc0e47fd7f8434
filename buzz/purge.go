package buzz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// This file holds the rules of the periodic purge: events whose NIP-40
// expiration has passed and NIP-98 tokens no longer remembered (RL-17)
// leave the store in short batches, so that a flood of them never holds
// the writer for long.

// PurgeEvery is how often a store purges. Reads hide expired events from
// the moment they expire; the purge reclaims the space and makes the
// thread counters exact again.
const PurgeEvery = time.Minute

// ExpiredBatch bounds the expired events one purge transaction removes.
const ExpiredBatch = 100

// TokenBatch bounds the expired NIP-98 tokens one purge statement
// deletes.
const TokenBatch = 1000

// Purger is a store's purge of expired events and of NIP-98 tokens.
type Purger interface {
	PurgeExpired(ctx context.Context) (int, error)
	PurgeTokens(ctx context.Context) (int, error)
}

// Purge runs both purges of p once and logs what failed, but for an error
// that is quiet (errors.Is; nil: none), such as a closed store's.
func Purge(ctx context.Context, p Purger, log *slog.Logger, quiet error) {
	if _, err := p.PurgeExpired(ctx); err != nil && !errors.Is(err, quiet) {
		log.Error("purging expired events", "err", err)
	}
	if _, err := p.PurgeTokens(ctx); err != nil && !errors.Is(err, quiet) {
		log.Error("purging expired NIP-98 tokens", "err", err)
	}
}

// InBatches runs batch, which removes at most size of something, until
// it removes fewer or fails, and returns how many all of them removed.
func InBatches(size int, batch func() (int, error)) (int, error) {
	total := 0
	for {
		n, err := batch()
		total += n
		if err != nil || n < size {
			return total, err
		}
	}
}

// ExpiredRows is what the NIP-40 purge reads and writes of a store, in
// one write transaction, whose access state it changes when it revokes an
// invite code (InviteRows).
type ExpiredRows interface {
	InviteRows
	// Expired lists up to limit stored events whose expiration is at or
	// before now.
	Expired(now int64, limit int) ([]int64, error)
	// EventByRef is the stored event the store numbers ref (Lookup).
	EventByRef(ref int64) (*StoredEvent, error)
	// Remove takes t, an event EventByRef returned, out of every read at
	// now (Remove), keeping it as the anchor of the replies below it.
	Remove(t *StoredEvent, now int64) error
}

// PurgeExpiredBatch removes up to ExpiredBatch events expired at now and
// returns how many it removed. An expired 9009 gives up its invite code
// as a deleted one does (revokeInvite, RL-36): until then it counts as a
// live code for `closed`, though it admits no one (Invited).
func PurgeExpiredBatch(rows ExpiredRows, now int64) (int, error) {
	seqs, err := rows.Expired(now, ExpiredBatch)
	if err != nil {
		return 0, fmt.Errorf("find expired events: %w", err)
	}
	for _, seq := range seqs {
		t, err := rows.EventByRef(seq)
		switch {
		case err != nil:
			return 0, err
		case t == nil:
			return 0, fmt.Errorf("expired event #%d is not stored", seq)
		case t.Kind == KindCreateInvite:
			if err := revokeInvite(rows, t); err != nil {
				return 0, err
			}
		}
		if err := rows.Remove(t, now); err != nil {
			return 0, err
		}
	}
	return len(seqs), nil
}
