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
	// The NIP-98 tokens accepted (RL-17), so that each is used once across
	// restarts and across the processes of the database: sig is the first
	// 16 bytes of the SHA-256 of the signature's lower-case hex, expires
	// (Unix seconds) when the purge may delete it, 120 s after it was
	// accepted, past the end of any token's validity.
	`CREATE TABLE nip98_tokens (
	  sig     bytea  PRIMARY KEY,
	  expires bigint NOT NULL
	);
	CREATE INDEX nip98_tokens_expires ON nip98_tokens (expires);`,
	feedStreamsMigration,
	// The web view lists the open channels by their last message that is
	// not deleted (see the SQLite schema, channels.last_message_at): each
	// channel's is read once here, a seek into events_projection.
	`ALTER TABLE channels ADD COLUMN last_message_at bigint NOT NULL DEFAULT 0;
	UPDATE channels c SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		WHERE e.channel = c.seq AND e.row_class >= 1 AND e.deleted_at IS NULL), 0);
	CREATE INDEX channels_activity ON channels (last_message_at DESC, seq DESC)
		WHERE NOT private AND deleted_at IS NULL;`,
	invitesMigration,
	subgroupsMigration,
	narrowReadIndexesMigration,
	writeOrderIndexesMigration,
}

// writeOrderIndexesMigration keys the indexes every channel message
// enters so that a new entry goes to the end of its group's range, where
// the busiest group's is the end of the index (issue 32: each event's
// INSERT cost its entries in up to 15 indexes, and a half-empty page split
// leaves its pages to the size of the database).
//
// The window's (events_toplevel, events_projection) are keyed (channel,
// created_at, id DESC) and the feed's (events_feed) (feed DESC,
// created_at, id DESC): read backward, a range is in window and feed
// order (created_at DESC, id ASC) as before, with no sort. Keyed
// created_at DESC, a new message went to the front of its range: each
// split left a page half empty behind it. At the end of the range, the
// range at the end of the index splits leaving its pages full (a
// rightmost split keeps the leaf fillfactor); the feed's stream 0, every
// open channel's messages, sorts last.
//
// events_root drops the id, (root, created_at): a thread's replies in
// created_at order, the ties of one second put in id order by an
// incremental sort of that second's replies; the entries of a thread are
// as narrow as the tuples btree's split after an ascending insertion
// applies to (two 8-byte keys), so its pages stay full, and the entries
// of one second share their key.
const writeOrderIndexesMigration = `DROP INDEX events_toplevel;
	CREATE INDEX events_toplevel ON events (channel, created_at, id DESC) WHERE row_class = 2 AND deleted_at IS NULL;
	DROP INDEX events_projection;
	CREATE INDEX events_projection ON events (channel, created_at, id DESC) WHERE row_class >= 1 AND deleted_at IS NULL;
	DROP INDEX events_feed;
	CREATE INDEX events_feed ON events (feed DESC, created_at, id DESC) WHERE feed IS NOT NULL AND deleted_at IS NULL;
	DROP INDEX events_root;
	CREATE INDEX events_root ON events (root, created_at) WHERE root IS NOT NULL;`

// narrowReadIndexesMigration keys the indexes of a REQ by kinds and by
// channel by (group, created_at) alone, read backward for created_at DESC;
// the ties of one second are put in id order by an incremental sort of
// that second's rows. Keyed (group, created_at DESC, id), each entry
// carried a 32-byte id, and an event arriving last went to the front of
// its group's range, splitting pages in halves that stayed half empty; in
// ascending order it goes to the end of the range, where the split leaves
// the page before it full. And the entries of one second of a group share
// a key, which btree deduplication stores once (issue 32). The window's
// indexes (events_toplevel, events_projection) and the feed's
// (events_feed) keep the id: keyed so, a window page with summaries took
// twice as long (BenchmarkReads), and the feed's busiest stream was read
// from events_created.
const narrowReadIndexesMigration = `DROP INDEX events_kind;
	CREATE INDEX events_kind ON events (kind, created_at);
	DROP INDEX events_channel;
	CREATE INDEX events_channel ON events (channel, created_at) WHERE channel IS NOT NULL;`

// invitesMigration holds the invite codes (RL-36; see the SQLite schema):
// the code each live 9009 create-invite gives its channel. A 9009 stored
// before was no create-invite (any member could post one): none gives a
// code.
const invitesMigration = `CREATE TABLE invites (
	  channel bigint NOT NULL REFERENCES channels(seq),
	  code    text   NOT NULL,
	  event   bigint NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
	  PRIMARY KEY (channel, code, event)
	);
	CREATE INDEX invites_event ON invites (event);`

// subgroupsMigration is NIP-29 as its clients read it (RL-36, issue 31;
// see the SQLite schema): a channel's picture and the parent it is a
// subgroup of, with the index that finds a deleted parent's children.
const subgroupsMigration = `ALTER TABLE channels ADD COLUMN picture text NOT NULL DEFAULT '';
	ALTER TABLE channels ADD COLUMN parent bigint REFERENCES channels(seq);
	CREATE INDEX channels_parent ON channels (parent) WHERE parent IS NOT NULL;`

// feedStreamsMigration is the migration of the home feed's streams
// (RL-35), as in the SQLite schema: stream 0 holds what every reader of open channels
// may read (open channels' events, and for mentions events of no channel
// too), each private or deleted channel a stream of its own (its seq), so
// that a feed merges the streams its requester may read and touches
// nothing of the others. Activity is events_feed (events.feed: kinds 9
// and 11, replies included); mentions (needs false: kinds 1, 9, 11, 1111)
// and needs_action (needs true: kinds 40007, 46010) the mentions table,
// a row per live event and pubkey its p tags name (the tag index's key of
// the pubkey). Deleted events leave both; the triggers keep the streams
// when a channel becomes private, open or deleted, whatever writes it.
const feedStreamsMigration = `ALTER TABLE events ADD COLUMN feed bigint;
	CREATE FUNCTION feed_stream(scope bigint) RETURNS bigint LANGUAGE sql STABLE AS $$
	  SELECT CASE WHEN scope IS NULL THEN 0 ELSE coalesce((SELECT CASE WHEN c.private OR c.deleted_at IS NOT NULL THEN c.seq ELSE 0 END
	    FROM channels c WHERE c.seq = scope), scope) END $$;
	UPDATE events SET feed = feed_stream(channel) WHERE kind IN (9, 11) AND channel IS NOT NULL;
	CREATE INDEX events_feed ON events (feed, created_at DESC, id) WHERE feed IS NOT NULL AND deleted_at IS NULL;
	CREATE TABLE mentions (
	  seq        bigint  NOT NULL,
	  pubkey     bytea   NOT NULL,
	  needs      boolean NOT NULL,
	  feed       bigint  NOT NULL,
	  created_at bigint  NOT NULL,
	  id         bytea   NOT NULL,
	  PRIMARY KEY (seq, pubkey)
	);
	INSERT INTO mentions (seq, pubkey, needs, feed, created_at, id)
	  SELECT e.seq, t.value, t.kind IN (40007, 46010), feed_stream(e.scope), e.created_at, e.id
	  FROM tags t JOIN events e ON e.seq = t.seq
	  WHERE t.name = 'p' AND t.kind IN (1, 9, 11, 1111, 40007, 46010) AND length(t.value) = 64 AND e.deleted_at IS NULL
	  ON CONFLICT DO NOTHING;
	CREATE INDEX mentions_feed ON mentions (pubkey, needs, feed, created_at DESC, id);
	CREATE INDEX members_pubkey ON members (pubkey);
	CREATE INDEX channels_private ON channels (seq) WHERE private AND deleted_at IS NULL;

	CREATE FUNCTION mentions_insert() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  INSERT INTO mentions (seq, pubkey, needs, feed, created_at, id)
	    SELECT e.seq, NEW.value, NEW.kind IN (40007, 46010), feed_stream(e.scope), e.created_at, e.id
	    FROM events e WHERE e.seq = NEW.seq AND e.deleted_at IS NULL
	    ON CONFLICT DO NOTHING;
	  RETURN NULL;
	END $$;
	CREATE TRIGGER mentions_insert AFTER INSERT ON tags FOR EACH ROW
	  WHEN (NEW.name = 'p' AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010) AND length(NEW.value) = 64)
	  EXECUTE FUNCTION mentions_insert();

	CREATE FUNCTION mentions_tag_delete() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  DELETE FROM mentions WHERE seq = OLD.seq AND pubkey = OLD.value;
	  RETURN NULL;
	END $$;
	CREATE TRIGGER mentions_tag_delete AFTER DELETE ON tags FOR EACH ROW
	  WHEN (OLD.name = 'p' AND OLD.kind IN (1, 9, 11, 1111, 40007, 46010))
	  EXECUTE FUNCTION mentions_tag_delete();

	CREATE FUNCTION mentions_event_gone() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  DELETE FROM mentions WHERE seq = OLD.seq;
	  RETURN NULL;
	END $$;
	CREATE TRIGGER mentions_event_deleted AFTER UPDATE OF deleted_at ON events FOR EACH ROW
	  WHEN (NEW.deleted_at IS NOT NULL AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010))
	  EXECUTE FUNCTION mentions_event_gone();
	CREATE TRIGGER mentions_event_delete AFTER DELETE ON events FOR EACH ROW
	  WHEN (OLD.kind IN (1, 9, 11, 1111, 40007, 46010))
	  EXECUTE FUNCTION mentions_event_gone();

	-- A channel's events change stream when it becomes private, open or
	-- deleted: a write that costs the channel's feed events, once.
	CREATE FUNCTION channels_feed() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  UPDATE events SET feed = feed_stream(NEW.seq) WHERE channel = NEW.seq AND feed IS NOT NULL;
	  UPDATE mentions SET feed = feed_stream(NEW.seq)
	    WHERE seq IN (SELECT seq FROM events WHERE channel = NEW.seq AND kind IN (1, 9, 11, 1111, 40007, 46010));
	  RETURN NULL;
	END $$;
	CREATE TRIGGER channels_feed AFTER UPDATE OF private, deleted_at ON channels FOR EACH ROW
	  WHEN ((OLD.private OR OLD.deleted_at IS NOT NULL) IS DISTINCT FROM (NEW.private OR NEW.deleted_at IS NOT NULL))
	  EXECUTE FUNCTION channels_feed();`

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
