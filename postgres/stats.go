package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Stats are the store's numbers for the metrics (RL-30): the writes in
// flight, one job a transaction, the window pages served from the cache
// and read from the database, and the size of
// the database. Its write-ahead log is the server's, not the relay's to
// report: WALBytes stays 0.
func (s *Store) Stats() (buzz.StoreStats, error) {
	st := buzz.WriterStats(int(s.writes.Load()), &s.batches, s.pages)
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if err := s.pool.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&st.DatabaseBytes); err != nil {
		return st, fmt.Errorf("database size: %w", err)
	}
	return st, nil
}

// errNotHearing fails readiness while the listening connection is down.
var errNotHearing = errors.New("ping: not hearing the other processes' writes (the listening connection is down)")

// Ping is a write round trip that writes nothing: a transaction that takes
// the write lock behind this process's writers and every other process's,
// and commits.
// It fails when the store is closed or the lock is not had before ctx
// ends (RL-30 readiness), and while this process does not hear the other
// processes' writes: it would not deliver their events live (RL-33), and
// a load balancer should send its clients elsewhere until it does again.
func (s *Store) Ping(ctx context.Context) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return errClosed
	}
	if !s.barriers.Listening() {
		return errNotHearing
	}
	select {
	case s.writeSlot <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("ping: %w", ctx.Err())
	}
	defer func() { <-s.writeSlot }()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLock))
		return err
	})
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// channelsByActivitySQL lists the open channels by their last message,
// newest first, before position ($1, $2): one range of channels_activity,
// which holds the open channels only.
const channelsByActivitySQL = `SELECT seq, h, last_message_at FROM channels
	WHERE NOT private AND deleted_at IS NULL AND (last_message_at, seq) < ($1, $2)
	ORDER BY last_message_at DESC, seq DESC LIMIT $3`

// ChannelsByActivity lists up to limit open channels, the newest last
// message first, after position after (nil: from the first) (CW-25).
func (s *Store) ChannelsByActivity(ctx context.Context, after *buzz.ChannelPosition, limit int) ([]buzz.ChannelActivity, error) {
	from := buzz.ActivityFrom(after)
	var out []buzz.ChannelActivity
	err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
		rows, err := tx.Query(ctx, channelsByActivitySQL, from.LastMessageAt, from.Seq, limit)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		defer rows.Close()
		out, err = buzz.ScanChannelActivity(rows, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
