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
	tx  *pipeTx

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
	// expect is how many events the transaction's jobs may insert, seqs
	// the numbers drawn for them and not used yet (nextSeq).
	expect int
	seqs   []int64
	// copied are the tag index rows an import batch or a shared
	// transaction writes with one COPY before it commits (copyTags), by
	// event.
	copied map[int64][]tagCopy
	// raised are the last messages of channels the transaction raises
	// (RaiseLastMessage), written once a channel (raiseLastMessages).
	raised map[int64]int64
	// counters are the thread counter rows the transaction wrote, by
	// event, written once it ends (writeCounters).
	counters map[int64]buzz.ThreadRow
	// cache answers the rules' reads of an import batch or a shared
	// transaction from what it read ahead and wrote (prefetch.go); nil
	// in any other write.
	cache *writeCache
}

// maxBatch bounds the jobs one write transaction takes: one commit
// acknowledges them all, as package sqlite's writer does.
const maxBatch = 512

// writeJob is a write waiting in this process's queue (Store.queue).
type writeJob struct {
	ctx context.Context
	fn  func(*writeTx) error
	// alone runs the job in a transaction of its own: an import batch,
	// a repair, a setting; only the live ingest of one event shares.
	alone bool
	// admits is the event a shared job admits, whose reads a transaction
	// of several jobs makes ahead for all of them (writeTx.prefetch).
	admits *record
	done   chan error
}

// write runs fn in a write transaction of its own and commits it unless
// fn fails. A *buzz.Rejection from fn rolls back too: fn writes nothing
// before it can no longer be rejected, so nothing is lost, and nothing
// half-done can be committed.
func (s *Store) write(ctx context.Context, fn func(tx *writeTx) error) error {
	return s.submit(ctx, &writeJob{ctx: ctx, fn: fn, alone: true, done: make(chan error, 1)})
}

// writeShared runs fn, the admission of r, in the next write transaction
// with the other jobs waiting in this process (group commit), and returns
// its outcome once that transaction is committed or rolled back. fn is
// one event's ingest: a *buzz.Rejection from it leaves the transaction as
// it was (buzz.Admit writes nothing before its refusals), so the others
// are committed and the rejection is fn's alone; any other failure undoes
// the transaction, and its jobs run again one a transaction.
func (s *Store) writeShared(ctx context.Context, r *record, fn func(tx *writeTx) error) error {
	return s.submit(ctx, &writeJob{ctx: ctx, fn: fn, admits: r, done: make(chan error, 1)})
}

// submit queues job and waits for its outcome. The goroutine that takes
// this process's write slot (only one connection of it waits for the
// write lock, so that waiting writers never take the pool from the
// reads) writes the jobs queued at that moment, its own among them
// unless more than maxBatch wait before it: whoever holds the slot
// writes, and every job has a goroutine trying to take it until its
// outcome is in.
func (s *Store) submit(ctx context.Context, job *writeJob) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	s.writes.Add(1)
	defer s.writes.Add(-1)
	s.queueMu.Lock()
	s.queue = append(s.queue, job)
	s.queueMu.Unlock()
	for {
		select {
		case err := <-job.done:
			return err
		case s.writeSlot <- struct{}{}:
			select {
			case err := <-job.done:
				// Written by the slot's last holder.
				<-s.writeSlot
				return err
			default:
			}
			s.writeQueued()
			<-s.writeSlot
		case <-ctx.Done():
			if s.unqueue(job) {
				return ctx.Err()
			}
			// A transaction took it: once begun, a write runs to its end
			// whatever the client does, and the caller must not report
			// failure for an event that is then committed.
			return <-job.done
		}
	}
}

// unqueue takes job out of the queue if no transaction took it yet.
func (s *Store) unqueue(job *writeJob) bool {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	for i, j := range s.queue {
		if j == job {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return true
		}
	}
	return false
}

// take takes the next transaction's jobs from the queue: the first job
// alone if it is to be, else the shared jobs after it up to maxBatch or
// the next job to be alone. A job whose caller went away while queued
// is answered with its context's error, never written.
func (s *Store) take() []*writeJob {
	s.queueMu.Lock()
	defer s.queueMu.Unlock()
	var batch []*writeJob
	n := 0
	for _, job := range s.queue {
		if len(batch) > 0 && (job.alone || batch[0].alone || len(batch) == maxBatch) {
			break
		}
		n++
		if err := job.ctx.Err(); err != nil {
			job.done <- err
			continue
		}
		batch = append(batch, job)
	}
	s.queue = append(s.queue[:0], s.queue[n:]...)
	return batch
}

// writeQueued writes the next transaction's jobs; the caller holds the
// write slot, and its own job is queued. The jobs are taken once the
// write lock is had: those that queued while another process held it go
// in this transaction too.
func (s *Store) writeQueued() {
	// The jobs' statements run without a cancellable context: no
	// client's departure may interrupt a transaction that holds other
	// clients' events.
	ctx := context.Background()
	var batch []*writeJob
	var errs []error
	err := s.inTx(ctx, func(tx *writeTx) error {
		batch = s.take()
		if len(batch) == 0 {
			return nil
		}
		s.batches.Count(len(batch))
		if len(batch) == 1 {
			return s.call(tx, batch[0].fn)
		}
		// The batch's tag index rows go in one COPY (finish), as an
		// import's do: a statement a row cost more than the events.
		tx.copied = map[int64][]tagCopy{}
		tx.expect = len(batch)
		recs := make([]*record, len(batch))
		for i, job := range batch {
			recs[i] = job.admits
		}
		if err := tx.prefetch(recs); err != nil {
			return err
		}
		errs = make([]error, len(batch))
		for i, job := range batch {
			err := s.call(tx, job.fn)
			if _, rejected := buzz.AsRejection(err); err != nil && !rejected {
				return err
			}
			errs[i] = err
		}
		return nil
	})
	switch {
	case batch == nil && err != nil:
		// No transaction to write in (the lock or the access state
		// could not be had): the jobs waiting fail with it.
		for _, job := range s.take() {
			job.done <- err
		}
	case len(batch) == 1:
		batch[0].done <- err
	case err == nil:
		for i, job := range batch {
			job.done <- errs[i]
		}
	default:
		// Only a rejection is known to come before a job's first write:
		// any other failure undid the transaction, and may be one job's
		// own. Each runs again alone, so that it stays the failing job's.
		for _, job := range batch {
			job.done <- s.inTx(ctx, job.fn)
		}
	}
}

// call runs fn, turning a panic into an error of its job: the other jobs
// of its transaction must outlive it.
func (s *Store) call(tx *writeTx, fn func(*writeTx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("write job panicked", "panic", p)
			err = fmt.Errorf("write job panicked: %v", p)
		}
	}()
	return fn(tx)
}

// inTx runs fn in one write transaction holding the write lock and
// commits it unless fn fails.
func (s *Store) inTx(ctx context.Context, fn func(tx *writeTx) error) error {
	var done *writeTx
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		version, err := lockWrites(ctx, tx)
		if err != nil {
			return err
		}
		base, err := s.communityAt(ctx, tx, version)
		if err != nil {
			return err
		}
		w := &writeTx{ctx: ctx, tx: &pipeTx{Tx: tx}, access: buzz.NewTxCommunity(base), now: s.nowUnix()}
		w.rows = buzz.EventRows[*stored]{ByID: w.byID, ByRef: w.bySeq, Versions: w.versions,
			ChannelNumber: w.lookupChannel, SoftDelete: w.softDelete, Remove: w.remove}
		if err := s.call(w, fn); err != nil {
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

// lockWrites takes the write lock in tx and then reads the access
// version, in one round trip: the version is read by a statement of its
// own, whose snapshot is taken once the lock is had.
func lockWrites(ctx context.Context, tx pgx.Tx) (version int64, err error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, int64(writeLock))
	b.Queue(accessVersionSQL)
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		return 0, fmt.Errorf("take the write lock: %w", joinClose(err, br))
	}
	if err := br.QueryRow().Scan(&version); err != nil {
		return 0, fmt.Errorf("read access version: %w", joinClose(err, br))
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("take the write lock: %w", err)
	}
	return version, nil
}

// finish ends a write before its commit: the access state and group
// state it changed, the tag index rows left for COPY, the page versions,
// and the notifications to other processes, the last two in the round
// trip that sends what is still queued.
func (s *Store) finish(tx *writeTx) error {
	if err := s.renewChanged(tx); err != nil {
		return err
	}
	if err := tx.copyTags(); err != nil {
		return err
	}
	tx.raiseLastMessages()
	tx.writeCounters()
	tx.bumpPages()
	if err := s.notify(tx); err != nil {
		return err
	}
	return tx.tx.flush(tx.ctx)
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
