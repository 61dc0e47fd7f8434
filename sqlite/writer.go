package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// writer owns the only write connection. Jobs queue up while a batch is
// being written, and the next batch takes all of them (up to maxBatch) into
// one transaction: one COMMIT (one WAL append) acknowledges the batch. That
// is what lets the store keep up with signature verification (issue 2),
// while each event stays all-or-nothing (RL-4): nothing is acknowledged
// before its batch is committed, and a job either is rejected before its
// first write (a *buzz.Rejection, which leaves nothing to undo) or, if it
// fails any other way, the batch is rolled back and each of its jobs is run
// again in a transaction of its own.
type writer struct {
	db    *sql.DB
	conn  *sql.Conn
	log   *slog.Logger
	jobs  chan *writeJob
	done  chan struct{}
	stmts writeStmts
	// channels caches channel numbers the writer has read back. A number
	// read inside a transaction that is then rolled back may not exist: the
	// cache is dropped with every rollback.
	channels map[string]int64

	// community is the published access state; a batch that changes it
	// publishes its own copy once committed. finish runs at the end of
	// every batch, before its commit; onPublish hears of the group state
	// events a committed batch signed.
	community atomic.Pointer[buzz.Community]
	finish    func(tx *writeTx) error
	onPublish atomic.Pointer[func([]*nostr.Event)]
	now       func() int64

	// committing is the access state of the batch last finished, which
	// readers may see committed before it is published (Store.communityIn).
	committing atomic.Pointer[committingState]

	// walPath is the WAL file; past walNext bytes, boundWAL resets it.
	walPath           string
	walLimit, walNext int64

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool

	// batches counts the batches taken, for the metrics (RL-30).
	batches buzz.BatchCounts
}

type writeJob struct {
	ctx  context.Context
	fn   func(w *writeTx) error
	done chan error
}

// writeTx is what a job sees: the prepared statements of the write
// connection, inside the batch transaction.
type writeTx struct {
	ctx context.Context
	*writeStmts
	channels map[string]int64

	// access is the access state as the transaction's jobs changed it,
	// and the group state they changed; rows are the statements the rules
	// read and write through (newLookup).
	access *buzz.TxCommunity
	rows   buzz.EventRows[*stored]
	// stored lists the channels (and scopes) of the events the transaction
	// stored: finish bumps their page versions once each.
	stored map[int64]bool
	// recounted lists the events whose thread counters the current job
	// changed (CW-21).
	recounted []int64
	// now is the store's clock when the transaction began.
	now int64
}

const (
	maxBatch     = 512
	closeTimeout = 60 * time.Second
	// walShortWait bounds how long boundWAL holds the writer for readers
	// while the WAL is within its limit.
	walShortWait = 250 * time.Millisecond
)

// newWriter starts the writer on conn. walPath is the database's WAL file,
// walLimit its bound (boundWAL).
func newWriter(ctx context.Context, db *sql.DB, conn *sql.Conn, log *slog.Logger,
	community *buzz.Community, finish func(*writeTx) error, now func() int64, walPath string, walLimit int64) (*writer, error) {
	w := &writer{
		now:    now,
		db:     db,
		conn:   conn,
		log:    log,
		jobs:   make(chan *writeJob, maxBatch),
		done:   make(chan struct{}),
		finish: finish,

		channels: make(map[string]int64),
		walPath:  walPath,
		walLimit: walLimit,
		walNext:  walTrigger(walLimit),
	}
	w.community.Store(community)
	if err := w.stmts.prepare(ctx, conn); err != nil {
		return nil, err
	}
	go w.loop()
	return w, nil
}

// errClosed is returned for writes submitted after Close.
var errClosed = errors.New("store is closed")

// do runs fn in the writer and returns its error once the batch holding it
// is committed (or rolled back).
func (w *writer) do(ctx context.Context, fn func(w *writeTx) error) error {
	job := &writeJob{ctx: ctx, fn: fn, done: make(chan error, 1)}
	if err := w.queue(ctx, job); err != nil {
		return err
	}
	// Once queued, the job's outcome is awaited even if ctx ends: the caller
	// must not report failure for an event that is then committed.
	return <-job.done
}

// probe is a round trip through the writer with a job that writes
// nothing: it waits behind the queued writes, and its batch begins a
// write transaction (which takes SQLite's write lock), reads the access
// version as every batch does, and commits, appending nothing to the WAL.
// Unlike do it returns when ctx ends, queued or not: a stuck writer is
// what it is there to find.
func (w *writer) probe(ctx context.Context) error {
	job := &writeJob{ctx: ctx, fn: func(*writeTx) error { return nil }, done: make(chan error, 1)}
	if err := w.queue(ctx, job); err != nil {
		return err
	}
	select {
	case err := <-job.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queue hands job to the writer, unless the store is closed or ctx ends
// first.
func (w *writer) queue(ctx context.Context, job *writeJob) error {
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errClosed
	}
	select {
	case w.jobs <- job:
		w.mu.RUnlock()
		return nil
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
}

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]*writeJob, 0, maxBatch)
	for job := range w.jobs {
		batch = append(batch[:0], job)
		// The writers woken by the last commit are about to queue their next
		// events: let them run first, so that one commit takes them all.
		runtime.Gosched()
	fill:
		for len(batch) < maxBatch {
			select {
			case j, ok := <-w.jobs:
				if !ok {
					break fill
				}
				batch = append(batch, j)
			default:
				break fill
			}
		}
		w.counted(len(batch))
		w.run(batch)
		w.boundWAL()
	}
}

// walTrigger is the WAL size past which boundWAL starts the WAL over:
// three quarters of the limit. Without readers the WAL never gets there:
// the checkpoint after a commit starts it over at half the limit (Open).
func walTrigger(limit int64) int64 { return limit / 4 * 3 }

// boundWAL keeps the WAL file within its limit, plus the batch that passes
// it, while readers run without pause (RL-1, RL-27a). Such readers always
// hold some snapshot that needs the WAL: the passive checkpoint after a
// commit copies pages back but never starts the WAL over, and it grows
// without end (issue 13: 234 MB for 100 MB written). So once the WAL passes
// its trigger, after a batch (whose jobs are answered), a TRUNCATE
// checkpoint holds the writer while the readers of older snapshots finish
// (new ones read the newest and, once it is copied back, the database file
// alone), then empties the file.
//
// The trade is the next batch's wait, the longest read in flight: up to
// walShortWait while the WAL is within its limit (reads are one short
// transaction each, none held across a client), and once past it, up to
// queryTimeout, which ends every read of the relay, so that the bound
// holds. A failed try is not repeated before the WAL passes the limit, or
// once past it, grows by another quarter of it: a reader that outlasts
// even queryTimeout (an operator's backup or check, whose snapshot keeps
// the WAL until it ends) costs the writer one wait per quarter of the
// limit written, not one per batch.
func (w *writer) boundWAL() {
	st, err := os.Stat(w.walPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		w.log.Error("reading the WAL size", "err", err)
		return
	case st.Size() <= w.walNext:
		return
	}
	ctx := context.Background()
	wait := w.stmts.shortWait
	if st.Size() > w.walLimit {
		wait = w.stmts.longWait
	}
	var busy, frames, copied int64
	_, err = wait.ExecContext(ctx)
	if err == nil {
		err = w.stmts.checkpoint.QueryRowContext(ctx).Scan(&busy, &frames, &copied)
		if _, rerr := w.stmts.busyWait.ExecContext(ctx); rerr != nil {
			w.log.Error("restoring the busy timeout", "err", rerr)
		}
	}
	switch {
	case err != nil:
		w.log.Error("checkpointing the WAL", "size", st.Size(), "err", err)
	case busy == 0:
		w.walNext = walTrigger(w.walLimit)
		return
	case st.Size() > w.walLimit:
		w.log.Warn("a read holds the WAL past its limit", "size", st.Size(), "limit", w.walLimit)
	}
	w.walNext = w.walLimit
	if st.Size() > w.walLimit {
		w.walNext = st.Size() + w.walLimit/4
	}
}

// counted counts a batch of n jobs in the writer's metrics.
func (w *writer) counted(n int) { w.batches.Count(n) }

func (w *writer) run(batch []*writeJob) {
	// The writer's statements run without a cancellable context: the driver
	// starts a watcher goroutine per statement for one, and no client's
	// departure may interrupt a batch that holds other clients' events.
	// Each statement is an indexed point operation or a walk of one
	// subtree, bounded by the data itself.
	ctx := context.Background()
	errs := make([]error, len(batch))
	if _, err := w.stmts.begin.ExecContext(ctx); err != nil {
		w.fail(batch, fmt.Errorf("begin write: %w", err))
		return
	}
	tx, err := w.newTx(ctx)
	if err != nil {
		w.rollback(ctx)
		w.fail(batch, err)
		return
	}
	for i, job := range batch {
		if err := job.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		err := w.call(tx, job)
		if _, rejected := buzz.AsRejection(err); err != nil && !rejected {
			// Only a rejection is known to come before the job's first
			// write. Any other failure may have left part of the job
			// written: undo the batch and run its jobs one by one.
			w.rollback(ctx)
			w.runEach(batch)
			return
		}
		errs[i] = err
	}
	if err := w.finish(tx); err != nil {
		w.log.Error("finishing a write batch", "err", err)
		w.rollback(ctx)
		w.runEach(batch)
		return
	}
	if _, err := w.stmts.commit.ExecContext(ctx); err != nil {
		w.rollback(ctx)
		w.fail(batch, fmt.Errorf("commit: %w", err))
		return
	}
	w.committed(tx)
	for i, job := range batch {
		job.done <- errs[i]
	}
}

// newTx starts what a batch's jobs see, inside the batch's transaction. When
// another process changed the access state since it was published here
// (access_version moved), it is read afresh first.
func (w *writer) newTx(ctx context.Context) (*writeTx, error) {
	base := w.community.Load()
	var version int64
	if err := w.stmts.accessVersion.QueryRowContext(ctx).Scan(&version); err != nil {
		return nil, fmt.Errorf("read access version: %w", err)
	}
	if version != base.Version {
		fresh, err := loadCommunity(ctx, w.conn, base.Policy)
		if err != nil {
			return nil, err
		}
		buzz.PublishNewer(&w.community, fresh)
		base = fresh
	}
	tx := &writeTx{ctx: ctx, writeStmts: &w.stmts, channels: w.channels, access: buzz.NewTxCommunity(base), now: w.now()}
	tx.rows = buzz.EventRows[*stored]{ByID: tx.byID, ByRef: tx.bySeq, Versions: tx.versions,
		ChannelNumber: tx.lookupChannel, SoftDelete: tx.softDelete, Remove: tx.remove}
	return tx, nil
}

// committed publishes what a committed transaction changed.
func (w *writer) committed(tx *writeTx) { tx.access.Committed(&w.community, &w.onPublish) }

// runEach runs every job of a batch in a transaction of its own: the slow
// path after a failure, so that the failure stays the failing job's own.
func (w *writer) runEach(batch []*writeJob) {
	ctx := context.Background()
	for _, job := range batch {
		if err := job.ctx.Err(); err != nil {
			job.done <- err
			continue
		}
		if _, err := w.stmts.begin.ExecContext(ctx); err != nil {
			job.done <- mapFull(fmt.Errorf("begin write: %w", err))
			continue
		}
		tx, err := w.newTx(ctx)
		if err == nil {
			err = w.call(tx, job)
		}
		if _, rejected := buzz.AsRejection(err); err == nil || rejected {
			if ferr := w.finish(tx); ferr != nil {
				err = ferr
			} else if _, cerr := w.stmts.commit.ExecContext(ctx); cerr != nil {
				err = fmt.Errorf("commit: %w", cerr)
			} else {
				w.committed(tx)
				job.done <- err
				continue
			}
		}
		w.rollback(ctx)
		job.done <- mapFull(err)
	}
}

// call runs a job, turning a panic into an error of that job: the writer
// must outlive any single event.
func (w *writer) call(tx *writeTx, job *writeJob) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("write job panicked", "panic", p)
			err = fmt.Errorf("write job panicked: %v", p)
		}
	}()
	return job.fn(tx)
}

// rollback undoes the open transaction. Channel numbers read inside it may
// be gone with it, so the cache goes too.
func (w *writer) rollback(ctx context.Context) {
	clear(w.channels)
	if _, err := w.stmts.rollback.ExecContext(ctx); err != nil {
		w.log.Error("rollback", "err", err)
	}
}

func mapFull(err error) error {
	if isFull(err) {
		return buzz.ErrStorageFull
	}
	return err
}

func (w *writer) fail(batch []*writeJob, err error) {
	err = mapFull(err)
	w.log.Error("write batch failed", "events", len(batch), "err", err)
	for _, job := range batch {
		job.done <- err
	}
}

// close drains the queue, checkpoints the WAL into the main file so that the
// data directory is self-contained, and closes the connection.
func (w *writer) close() error {
	w.mu.Lock()
	w.closed = true
	close(w.jobs)
	w.mu.Unlock()
	<-w.done
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if _, err := w.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint: %w", err))
	}
	errs = append(errs, w.stmts.close(), w.conn.Close(), w.db.Close())
	return errors.Join(errs...)
}
