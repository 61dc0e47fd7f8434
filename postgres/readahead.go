package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// A read used to cost a round trip to the server for each of its BEGIN,
// access version, statements and COMMIT, and on a loaded machine each
// round trip is a wait for two processes to be scheduled (issue 32). A
// read ahead sends its statements, built from the access state this
// process published, and the access version in one pgx batch. That state
// is the statements' when their snapshot reads no newer version (as
// communityIn judges); when it does, nothing the statements returned is
// used, and the read is made again by read, which reads the newer state
// first.

// beginRead opens the transaction of a read: one snapshot, read only.
const beginRead = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`

// accessVersionSQL is the version of the access state a snapshot sees.
const accessVersionSQL = `SELECT value FROM settings WHERE key = 'access_version'`

// readAhead sends the batch queue fills on a connection of its own, in
// one round trip, and hands its results to rest, which may close them and
// go on reading on conn in a transaction the batch opened. Such a
// transaction is ended before readAhead returns: committed, or rolled
// back after an error.
func (s *Store) readAhead(ctx context.Context, queue func(b *pgx.Batch),
	rest func(br pgx.BatchResults, conn *pgxpool.Conn) error) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	queue(b)
	br := conn.SendBatch(ctx, b)
	err = rest(br, conn)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read: %w", cerr)
	}
	if conn.Conn().PgConn().TxStatus() != 'I' {
		if err != nil {
			// A page past its size bound is an answer, not a broken
			// connection: the connection goes back to the pool. Should
			// the rollback fail, Release closes it.
			_, _ = conn.Exec(ctx, `ROLLBACK`)
			return err
		}
		if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
			return fmt.Errorf("end read: %w", err)
		}
	}
	return err
}

// current reads the access version, the next result of br, and says
// whether c, the published access state a read ahead was built from,
// judges what the read's snapshots saw: they saw no newer version.
func current(br pgx.BatchResults, c *buzz.Community) (bool, error) {
	var version int64
	if err := br.QueryRow().Scan(&version); err != nil {
		return false, fmt.Errorf("read access version: %w", err)
	}
	return version <= c.Version, nil
}

// readStatement reads the rows of one statement, built from the access
// state of its snapshot (ok false: it matches nothing), with scan, which
// starts afresh each time it is called: one round trip when that state is
// the published one.
//
// The statement goes without a transaction, as its own snapshot, followed
// by accessVersionSQL in a snapshot of its own, taken after it: the
// version read there is at least the statement's, as the version only
// grows, so when it is no newer than the published state's, neither was
// the statement's. A BEGIN and a COMMIT are two more statements for the
// server to run and the client to hear back from.
func (s *Store) readStatement(ctx context.Context, build func(c *buzz.Community) (q sqlQuery, ok bool),
	scan func(rows pgx.Rows, err error) error) error {
	c := s.Community()
	if q, ok := build(c); ok {
		done := false
		err := s.readAhead(ctx, func(b *pgx.Batch) {
			b.Queue(q.sql, q.args...)
			b.Queue(accessVersionSQL)
		}, func(br pgx.BatchResults, _ *pgxpool.Conn) error {
			rows, err := br.Query()
			if err := scan(rows, err); err != nil {
				return err
			}
			done, err = current(br, c)
			return err
		})
		if err != nil || done {
			return err
		}
	}
	// The published state matches nothing, or is older than the
	// snapshot's: the statement is built from the snapshot's.
	return s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		q, ok := build(c)
		if !ok {
			return nil
		}
		rows, err := tx.Query(ctx, q.sql, q.args...)
		return scan(rows, err)
	})
}
