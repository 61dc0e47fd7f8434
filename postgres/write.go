package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// writeLock is the advisory lock every write transaction takes first, in
// every process on the database: writes are serial, as SQLite's single
// writer makes them. The rules of ingest read what any other write may
// change (the access state, a channel's number, the versions at an
// address, the deletions that arrived first, an ancestor's counters), so
// one order of all writes keeps each decision and every counter exact
// without retries (STATUS.md).
const writeLock = 0x62757a7a_0002

// writeTx is what a write job sees: one transaction holding the write
// lock, with the access state as of its start.
type writeTx struct {
	ctx context.Context
	tx  pgx.Tx

	// access is the access state as the transaction changed it, and the
	// group state it changed; rows are the queries the rules read and
	// write through (newLookup).
	access *buzz.TxCommunity
	rows   buzz.EventRows[*stored]
	// recounted lists the events whose thread counters the current job
	// changed (CW-21).
	recounted []int64
	// notes are the notifications of the events stored (notify.go).
	notes []eventNote
	// pages are the channels whose window pages the write changed
	// (pages.go).
	pages map[int64]bool
	// now is the store's clock when the transaction began.
	now int64
	// copied are the tag index rows an import batch writes with one COPY
	// before it commits (copyTags), by event.
	copied map[int64][]tagCopy
}

// write runs fn in one write transaction and commits it unless fn fails.
// A *buzz.Rejection from fn rolls back too: fn writes nothing before it
// can no longer be rejected, so nothing is lost, and nothing half-done
// can be committed.
func (s *Store) write(ctx context.Context, fn func(tx *writeTx) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	s.writes.Add(1)
	defer s.writes.Add(-1)
	// One connection of this process waits for the write lock at a time:
	// the others wait here, holding none, so that reads keep the pool.
	select {
	case s.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writeSlot }()
	s.batches.Count(1)
	// Once begun, a write runs to its end whatever the client does: the
	// caller must not report failure for an event that is then committed.
	ctx = context.WithoutCancel(ctx)
	var done *writeTx
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLock)); err != nil {
			return fmt.Errorf("take the write lock: %w", err)
		}
		base, err := s.communityIn(ctx, tx)
		if err != nil {
			return err
		}
		w := &writeTx{ctx: ctx, tx: tx, access: buzz.NewTxCommunity(base), now: s.nowUnix()}
		w.rows = buzz.EventRows[*stored]{ByID: w.byID, ByRef: w.bySeq, Versions: w.versions,
			ChannelNumber: w.lookupChannel, SoftDelete: w.softDelete, Remove: w.remove}
		if err := fn(w); err != nil {
			return err
		}
		if err := s.finish(w); err != nil {
			return err
		}
		done = w
		return nil
	})
	if err != nil {
		return err
	}
	done.access.Committed(&s.community, &s.onPublish)
	return nil
}

// finish ends a write before its commit: the access state and group
// state it changed, the page versions, and the notifications to other
// processes.
func (s *Store) finish(tx *writeTx) error {
	if err := s.renewChanged(tx); err != nil {
		return err
	}
	if err := tx.bumpPages(); err != nil {
		return err
	}
	return s.notify(tx)
}

// renewChanged bumps access_version when the access state changed, so
// that every process reads it afresh, and renews the group state of every
// channel that changed.
func (s *Store) renewChanged(tx *writeTx) error {
	next := tx.access.Commit()
	if next == nil {
		return nil
	}
	if _, err := tx.tx.Exec(tx.ctx, `UPDATE settings SET value = $1 WHERE key = 'access_version'`, next.Version); err != nil {
		return fmt.Errorf("bump access version: %w", err)
	}
	return tx.access.RenewGroupState(s.groupState(tx), s.key, s.pubkey, s.nowUnix())
}
