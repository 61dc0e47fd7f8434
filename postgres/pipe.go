package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeTx is the write transaction as its statements see it. A write whose
// outcome no rule reads (a tag row, a counter row, a channel's last
// message, the page versions) is queued rather than sent; the next
// statement that reads takes the queue with it in one round trip (a pgx
// batch), and the transaction's end sends what is left (flush). Every
// read goes through here after the writes queued before it, so the rules
// read what they wrote, as with one round trip a statement: only the
// round trips are fewer. A queued write that fails fails the statement
// that carried it, and so the job running, which undoes its batch
// (write.go).
type pipeTx struct {
	pgx.Tx
	queued *pgx.Batch
	// events are event rows (eventRowColumns) written with one COPY before
	// anything else is sent: the writes queued after them may read them
	// (the mentions trigger of a tag row, a counter row's foreign key),
	// and those queued before them do not touch them.
	events [][]any
}

// copyEvent adds an event's row to the next COPY.
func (p *pipeTx) copyEvent(columns []any) { p.events = append(p.events, columns) }

// copyEvents writes the event rows waiting for their COPY.
func (p *pipeTx) copyEvents(ctx context.Context) error {
	if len(p.events) == 0 {
		return nil
	}
	rows := p.events
	p.events = nil
	n, err := p.Tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventRowColumns, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("copy event rows: %w", err)
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("copy event rows: %d of %d written", n, len(rows))
	}
	return nil
}

// queue adds a write whose result is not read to the next round trip.
func (p *pipeTx) queue(sql string, args ...any) {
	if p.queued == nil {
		p.queued = &pgx.Batch{}
	}
	p.queued.Queue(sql, args...)
}

// send sends the queued writes, with last when not nil, and reads the
// writes' outcomes; the caller reads last's result, then closes the batch.
func (p *pipeTx) send(ctx context.Context, last func(*pgx.Batch)) (pgx.BatchResults, error) {
	b := p.queued
	p.queued = nil
	n := b.Len()
	if last != nil {
		last(b)
	}
	br := p.Tx.SendBatch(ctx, b)
	for i := 0; i < n; i++ {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("queued write %d of %d: %w", i+1, n, joinClose(err, br))
		}
	}
	return br, nil
}

// joinClose closes br after err, keeping err.
func joinClose(err error, br pgx.BatchResults) error {
	_ = br.Close() // its error is err again, or the connection's end that err already says
	return err
}

// flush sends the queued writes.
func (p *pipeTx) flush(ctx context.Context) error {
	if err := p.copyEvents(ctx); err != nil {
		return err
	}
	if p.queued == nil || p.queued.Len() == 0 {
		return nil
	}
	br, err := p.send(ctx, nil)
	if err != nil {
		return err
	}
	return br.Close()
}

func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := p.copyEvents(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	if p.queued == nil || p.queued.Len() == 0 {
		return p.Tx.Exec(ctx, sql, args...)
	}
	br, err := p.send(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := p.copyEvents(ctx); err != nil {
		return errRow{err}
	}
	if p.queued == nil || p.queued.Len() == 0 {
		return p.Tx.QueryRow(ctx, sql, args...)
	}
	br, err := p.send(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := p.copyEvents(ctx); err != nil {
		return nil, err
	}
	if p.queued == nil || p.queued.Len() == 0 {
		return p.Tx.Query(ctx, sql, args...)
	}
	br, err := p.send(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, joinClose(err, br)
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *pipeTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.Tx.CopyFrom(ctx, table, columns, src)
}

func (p *pipeTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := p.copyEvents(ctx); err != nil {
		return errBatch{err}
	}
	if p.queued != nil && p.queued.Len() > 0 {
		for _, q := range b.QueuedQueries {
			p.queued.Queue(q.SQL, q.Arguments...)
		}
		br, err := p.send(ctx, nil)
		if err != nil {
			return errBatch{err}
		}
		return br
	}
	return p.Tx.SendBatch(ctx, b)
}

// batchRow is the row of a statement sent behind queued writes: reading
// it ends the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are the rows of a statement sent behind queued writes:
// closing them, or reading past the last, ends the batch, as pgx's rows
// close themselves after the last.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// errRow is a row whose statement was never read: the queued writes
// before it failed.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is a batch whose queued writes before it failed.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow{b.err} }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
