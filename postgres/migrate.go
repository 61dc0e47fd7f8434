package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations[i] takes a database from schema version i to i+1; version 0
// is an empty database. A released migration is never edited: a change is
// a new one at the end.
var migrations = []string{
	schemaSQL,
	// A kind's events in feed order (created_at DESC, id ASC): the home
	// feed's activity walk stops at the events it needs instead of reading
	// the whole of their second.
	`DROP INDEX events_kind;
	CREATE INDEX events_kind ON events (kind, created_at DESC, id);`,
	// The web view lists the open channels by their last message that is
	// not deleted (see the SQLite schema, channels.last_message_at): each
	// channel's is read once here, a seek into events_projection.
	`ALTER TABLE channels ADD COLUMN last_message_at bigint NOT NULL DEFAULT 0;
	UPDATE channels c SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		WHERE e.channel = c.seq AND e.row_class >= 1 AND e.deleted_at IS NULL), 0);
	CREATE INDEX channels_activity ON channels (last_message_at DESC, seq DESC)
		WHERE NOT private AND deleted_at IS NULL;`,
}

// migrateLock is the advisory lock key under which one process at a time
// migrates, so that processes starting together do not race.
const migrateLock = 0x62757a7a_0001

// errNoSchema refuses a database without a buzz-lite schema where one is
// required.
var errNoSchema = errors.New("no buzz-lite database there (is --postgres right?)")

// migrate brings the schema to the newest version, each migration in its
// own transaction with its row in schema_migrations. A database newer than
// this binary is refused, and with existing one that has no schema yet.
func migrate(ctx context.Context, pool *pgxpool.Pool, existing bool) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock)); uerr != nil {
			// Closed, the connection releases the lock with its session
			// instead of going back to the pool holding it.
			err = errors.Join(err, fmt.Errorf("migrate: unlock: %w", uerr), conn.Conn().Close(context.WithoutCancel(ctx)))
		}
	}()
	if existing {
		var found bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL AND to_regclass('page_versions') IS NOT NULL
			AND to_regclass('thread_metadata') IS NOT NULL`).Scan(&found); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !found { // schema_migrations alone is many tools' table
			return fmt.Errorf("postgres: %w", errNoSchema)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
		}
	}
	return nil
}
