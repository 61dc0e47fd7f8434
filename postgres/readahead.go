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
// read ahead sends its BEGIN, the access version of its snapshot and its
// first statements in one pgx batch, the statements built from the access
// state this process published. That state is the snapshot's when the
// snapshot reads no newer version (as communityIn judges); when it does,
// nothing the statements returned is used, and the read is made again by
// read, which reads the newer state first.

// beginRead opens the transaction of a read: one snapshot, read only.
const beginRead = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`

// accessVersionSQL is the version of the access state a snapshot sees.
const accessVersionSQL = `SELECT value FROM settings WHERE key = 'access_version'`

// readAhead opens a read transaction on a connection of its own, sending
// in one round trip beginRead, accessVersionSQL and what queue adds to the
// batch, built from the published access state c. When the snapshot's
// access state is c, rest reads the results of queue's statements from br
// (and may close br and go on reading in the transaction on conn), and
// done is true; the transaction is ended before readAhead returns
// (queue's last statement may be its COMMIT). done is false when the
// snapshot saw a newer access state: the caller reads with read instead.
func (s *Store) readAhead(ctx context.Context, c *buzz.Community, queue func(b *pgx.Batch),
	rest func(br pgx.BatchResults, conn *pgxpool.Conn) error) (done bool, err error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return false, errClosed
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("read: %w", err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(beginRead)
	b.Queue(accessVersionSQL)
	queue(b)
	br := conn.SendBatch(ctx, b)
	err = func() error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin read: %w", err)
		}
		var version int64
		if err := br.QueryRow().Scan(&version); err != nil {
			return fmt.Errorf("read access version: %w", err)
		}
		if version > c.Version {
			return nil
		}
		done = true
		return rest(br, conn)
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read: %w", cerr)
	}
	if conn.Conn().PgConn().TxStatus() != 'I' {
		if err != nil {
			// A page past its size bound is an answer, not a broken
			// connection: the connection goes back to the pool. Should
			// the rollback fail, Release closes it.
			_, _ = conn.Exec(ctx, `ROLLBACK`)
			return false, err
		}
		if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
			return false, fmt.Errorf("end read: %w", err)
		}
	}
	if err != nil {
		return false, err
	}
	return done, nil
}

// readStatement reads the rows of one statement, built from the access
// state of its snapshot (ok false: it matches nothing), with scan: one
// round trip when that state is the published one.
func (s *Store) readStatement(ctx context.Context, build func(c *buzz.Community) (q sqlQuery, ok bool),
	scan func(rows pgx.Rows, err error) error) error {
	c := s.Community()
	if q, ok := build(c); ok {
		done, err := s.readAhead(ctx, c, func(b *pgx.Batch) {
			b.Queue(q.sql, q.args...)
			b.Queue(`COMMIT`)
		}, func(br pgx.BatchResults, _ *pgxpool.Conn) error {
			rows, err := br.Query()
			if err := scan(rows, err); err != nil {
				return err
			}
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("end read: %w", err)
			}
			return nil
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
