package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// applicationID marks a file as a buzz-lite database ("buzz").
const applicationID = 0x62757a7a

// migrations[v] takes a database from schema version v to v+1. Version 0 is
// an empty file, which gets schema.sql whole instead.
var migrations = map[int]string{
	1: `CREATE INDEX events_unclassified ON events(created_at, id)
		WHERE depth IS NULL AND row_class = 2;`,
	// Channels get state and members, events a scope (issue 3). Lifecycle
	// events stored before are not replayed: export and import do that.
	2: `ALTER TABLE channels ADD COLUMN created_at INTEGER;
		ALTER TABLE channels ADD COLUMN name TEXT NOT NULL DEFAULT '';
		ALTER TABLE channels ADD COLUMN about TEXT NOT NULL DEFAULT '';
		ALTER TABLE channels ADD COLUMN private INTEGER NOT NULL DEFAULT 0;
		ALTER TABLE channels ADD COLUMN deleted_at INTEGER;
		CREATE TABLE members (
		  channel INTEGER NOT NULL REFERENCES channels(seq),
		  pubkey  BLOB    NOT NULL,
		  role    INTEGER NOT NULL,
		  PRIMARY KEY (channel, pubkey)
		) STRICT, WITHOUT ROWID;
		CREATE TABLE settings (
		  key   TEXT PRIMARY KEY,
		  value ANY
		) STRICT, WITHOUT ROWID;
		INSERT INTO settings (key, value) VALUES ('access_version', 0), ('write_version', 0);
		CREATE INDEX events_projection ON events(channel, created_at DESC, id)
		  WHERE row_class >= 1 AND deleted_at IS NULL;
		ALTER TABLE thread_metadata ADD COLUMN updated_at INTEGER;
		ALTER TABLE events ADD COLUMN scope INTEGER;
		UPDATE events SET scope = channel WHERE channel IS NOT NULL;
		UPDATE events SET scope = (
		    SELECT t.channel FROM events t WHERE t.id = unhex((
		      SELECT j.value ->> 1 FROM json_each(events.tags) j
		      WHERE j.value ->> 0 = 'e' ORDER BY j.key DESC LIMIT 1)))
		  WHERE kind = 7 AND channel IS NULL;
		UPDATE events SET scope = (
		    SELECT min(t.scope) FROM json_each(events.tags) j
		    JOIN events t ON t.id = unhex(j.value ->> 1)
		    WHERE j.value ->> 0 = 'e' AND length(j.value ->> 1) = 64)
		  WHERE kind = 5 AND channel IS NULL;`,
	// Cached window pages are kept per channel (issue 15): page_versions
	// and the triggers that keep it replace write_version. Aux lookups get
	// an index of their own.
	3: `DELETE FROM settings WHERE key = 'write_version';
		CREATE INDEX tags_aux ON tags(value, created_at, seq, kind)
		  WHERE name = 'e' AND kind IN (5, 7, 9005, 40003);
		CREATE TABLE page_versions (
		  channel INTEGER PRIMARY KEY,
		  version INTEGER NOT NULL
		) STRICT;

		-- The channels whose pages show an event that names id in an e tag, by
		-- hop (CW-18): 1, id's own channel; 2, the channels of the events id names
		-- when id is an aux event (a deletion of id is served there).
		CREATE VIEW target_pages (id, hop, channel) AS
		  SELECT id, 1, channel FROM events
		  UNION ALL
		  SELECT x.id, 2, y.channel FROM events x CROSS JOIN json_each(iif(json_valid(x.tags), x.tags, '[]')) k
		    CROSS JOIN events y ON y.id = unhex(k.value ->> 1)
		    WHERE x.kind IN (5, 7, 9005, 40003) AND k.value ->> 0 = 'e';

		-- The channels whose pages show event seq: its channel, its scope, and
		-- when it is an aux event, the pages of the events it names (hop 2 for a
		-- deletion only). CROSS JOIN keeps the order: each event found by its
		-- number or id, never the other way round.
		CREATE VIEW event_pages (seq, channel) AS
		  SELECT seq, channel FROM events
		  UNION ALL
		  SELECT seq, scope FROM events
		  UNION ALL
		  SELECT e.seq, x.channel FROM events e CROSS JOIN json_each(iif(json_valid(e.tags), e.tags, '[]')) j
		    CROSS JOIN events x ON x.id = unhex(j.value ->> 1)
		    WHERE e.kind IN (5, 7, 9005, 40003) AND j.value ->> 0 = 'e'
		  UNION ALL
		  SELECT e.seq, y.channel FROM events e CROSS JOIN json_each(iif(json_valid(e.tags), e.tags, '[]')) j
		    CROSS JOIN events x ON x.id = unhex(j.value ->> 1)
		    CROSS JOIN json_each(iif(json_valid(x.tags), x.tags, '[]')) k CROSS JOIN events y ON y.id = unhex(k.value ->> 1)
		    WHERE e.kind IN (5, 9005) AND j.value ->> 0 = 'e' AND x.kind IN (5, 7, 9005, 40003) AND k.value ->> 0 = 'e';

		-- A scope is set once (a reaction that arrived before its target): the
		-- old one counts too.
		CREATE TRIGGER events_page_update AFTER UPDATE ON events BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT c, 1 FROM (SELECT channel AS c FROM event_pages WHERE seq = NEW.seq UNION SELECT OLD.scope)
		    WHERE c IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;

		-- Before the row goes, while the views still see it.
		CREATE TRIGGER events_page_delete BEFORE DELETE ON events BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT DISTINCT channel, 1 FROM event_pages WHERE seq = OLD.seq AND channel IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;

		CREATE TRIGGER tags_page_insert AFTER INSERT ON tags
		  WHEN NEW.name = 'e' AND NEW.kind IN (5, 7, 9005, 40003) BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT DISTINCT channel, 1 FROM target_pages
		    WHERE id = NEW.value AND (hop = 1 OR NEW.kind IN (5, 9005)) AND channel IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;

		CREATE TRIGGER tags_page_delete AFTER DELETE ON tags
		  WHEN OLD.name = 'e' AND OLD.kind IN (5, 7, 9005, 40003) BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT DISTINCT channel, 1 FROM target_pages
		    WHERE id = OLD.value AND (hop = 1 OR OLD.kind IN (5, 9005)) AND channel IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;

		CREATE TRIGGER thread_page_insert AFTER INSERT ON thread_metadata BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT channel, 1 FROM events WHERE seq = NEW.seq AND channel IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;

		CREATE TRIGGER thread_page_update AFTER UPDATE ON thread_metadata BEGIN
		  INSERT INTO page_versions (channel, version)
		    SELECT channel, 1 FROM events WHERE seq = NEW.seq AND channel IS NOT NULL
		    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
		END;`,
	// A thread's authors with their newest live reply: deleting a reply
	// reads one entry per author to find a root's participants, not the
	// whole thread.
	4: `CREATE INDEX events_root_authors ON events(root, pubkey, created_at)
		  WHERE root IS NOT NULL AND deleted_at IS NULL;`,
	// Aux events say whether a deletion names them (issue 15): hop 2 of
	// the aux closure no longer searches tags_aux for every hop-1 event.
	5: `ALTER TABLE events ADD COLUMN named_by_deletion INTEGER NOT NULL DEFAULT 0;` + markNamedByDeletion + `;`,
	// A kind's and an author's events in the order reads serve them
	// (created_at DESC, id ASC): the home feed's activity walk stops at the
	// events it needs instead of reading the whole of their second (4.6x
	// cheaper when 300 share it), and REQs by kind or author need no sort.
	6: `DROP INDEX events_kind;
		CREATE INDEX events_kind ON events(kind, created_at DESC, id);
		DROP INDEX events_pubkey;
		CREATE INDEX events_pubkey ON events(pubkey, kind, created_at DESC, id);`,
	// The indexes read newest first hold their order reversed, created_at
	// ascending, the end where events arrive, so that their pages stay
	// full; the author's index loses the id again (schema.sql). A database
	// grown to a million events on version 7 was 2.04x its events' JSON,
	// 1.67x on version 8. IF EXISTS: a development database of version 3
	// may lack events_projection, which this creates.
	7: `DROP INDEX IF EXISTS events_kind;
		CREATE INDEX events_kind ON events(kind, created_at, id DESC);
		DROP INDEX IF EXISTS events_pubkey;
		CREATE INDEX events_pubkey ON events(pubkey, kind, created_at);
		DROP INDEX IF EXISTS events_channel;
		CREATE INDEX events_channel ON events(channel, created_at, id DESC)
		  WHERE channel IS NOT NULL;
		DROP INDEX IF EXISTS events_toplevel;
		CREATE INDEX events_toplevel ON events(channel, created_at, id DESC)
		  WHERE row_class = 2 AND deleted_at IS NULL;
		DROP INDEX IF EXISTS events_projection;
		CREATE INDEX events_projection ON events(channel, created_at, id DESC)
		  WHERE row_class >= 1 AND deleted_at IS NULL;`,
	// The NIP-98 tokens accepted, kept until they expire (RL-17): a token
	// is used once across restarts too (issue 29).
	8: `CREATE TABLE nip98_tokens (
		  sig     BLOB    PRIMARY KEY,
		  expires INTEGER NOT NULL
		) STRICT, WITHOUT ROWID;
		CREATE INDEX nip98_tokens_expires ON nip98_tokens(expires);`,
	// The home feed reads streams (RL-35, schema.sql: events_feed and
	// mentions): the feed column and the mentions of the events stored,
	// each in the stream its channel's state gives it.
	9: `ALTER TABLE events ADD COLUMN feed INTEGER;
		CREATE INDEX events_feed ON events(feed, created_at, id DESC)
		  WHERE feed IS NOT NULL AND deleted_at IS NULL;
		CREATE TABLE mentions (
		  seq        INTEGER NOT NULL,
		  pubkey     BLOB    NOT NULL,
		  needs      INTEGER NOT NULL,
		  feed       INTEGER NOT NULL,
		  created_at INTEGER NOT NULL,
		  id         BLOB    NOT NULL,
		  PRIMARY KEY (seq, pubkey)
		) STRICT, WITHOUT ROWID;
		CREATE INDEX mentions_feed ON mentions(pubkey, needs, feed, created_at, id DESC);
		CREATE INDEX members_pubkey ON members(pubkey);
		CREATE INDEX channels_private ON channels(seq) WHERE private = 1 AND deleted_at IS NULL;

		CREATE TRIGGER mentions_insert AFTER INSERT ON tags
		  WHEN NEW.name = 'p' AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010) AND typeof(NEW.value) = 'blob' BEGIN
		  INSERT OR IGNORE INTO mentions (seq, pubkey, needs, feed, created_at, id)
		    SELECT e.seq, NEW.value, NEW.kind IN (40007, 46010),
		      iif(e.scope IS NULL, 0, coalesce((SELECT iif(c.private = 0 AND c.deleted_at IS NULL, 0, c.seq)
		        FROM channels c WHERE c.seq = e.scope), e.scope)),
		      e.created_at, e.id
		    FROM events e WHERE e.seq = NEW.seq AND e.deleted_at IS NULL;
		END;

		CREATE TRIGGER mentions_tag_delete AFTER DELETE ON tags
		  WHEN OLD.name = 'p' AND OLD.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
		  DELETE FROM mentions WHERE seq = OLD.seq AND pubkey = OLD.value;
		END;

		CREATE TRIGGER mentions_event_deleted AFTER UPDATE OF deleted_at ON events
		  WHEN NEW.deleted_at IS NOT NULL AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
		  DELETE FROM mentions WHERE seq = NEW.seq;
		END;

		CREATE TRIGGER mentions_event_delete AFTER DELETE ON events
		  WHEN OLD.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
		  DELETE FROM mentions WHERE seq = OLD.seq;
		END;

		CREATE TRIGGER channels_feed AFTER UPDATE OF private, deleted_at ON channels
		  WHEN (OLD.private = 0 AND OLD.deleted_at IS NULL) != (NEW.private = 0 AND NEW.deleted_at IS NULL) BEGIN
		  UPDATE events SET feed = iif(NEW.private = 0 AND NEW.deleted_at IS NULL, 0, NEW.seq)
		    WHERE channel = NEW.seq AND feed IS NOT NULL;
		  UPDATE mentions SET feed = iif(NEW.private = 0 AND NEW.deleted_at IS NULL, 0, NEW.seq)
		    WHERE seq IN (SELECT seq FROM events WHERE channel = NEW.seq AND kind IN (1, 9, 11, 1111, 40007, 46010));
		END;
		UPDATE events SET feed = (SELECT iif(c.private = 0 AND c.deleted_at IS NULL, 0, c.seq)
		    FROM channels c WHERE c.seq = events.channel)
		  WHERE kind IN (9, 11) AND channel IS NOT NULL;
		INSERT OR IGNORE INTO mentions (seq, pubkey, needs, feed, created_at, id)
		  SELECT e.seq, t.value, t.kind IN (40007, 46010),
		    iif(e.scope IS NULL, 0, coalesce((SELECT iif(c.private = 0 AND c.deleted_at IS NULL, 0, c.seq)
		      FROM channels c WHERE c.seq = e.scope), e.scope)),
		    e.created_at, e.id
		  FROM tags t JOIN events e ON e.seq = t.seq
		  WHERE t.name = 'p' AND t.kind IN (1, 9, 11, 1111, 40007, 46010) AND typeof(t.value) = 'blob'
		    AND e.deleted_at IS NULL;`,
	// The web view lists channels by their last message (schema.sql,
	// channels.last_message_at): each channel's is read once here, a seek
	// into events_projection.
	10: `ALTER TABLE channels ADD COLUMN last_message_at INTEGER NOT NULL DEFAULT 0;
		UPDATE channels SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		  WHERE e.channel = channels.seq AND e.row_class >= 1 AND e.deleted_at IS NULL), 0);
		CREATE INDEX channels_activity ON channels(last_message_at, seq)
		  WHERE private = 0 AND deleted_at IS NULL;`,
	// Invite codes (RL-36). A 9009 stored before was no create-invite (any
	// member could post one, as any event): none gives a code.
	11: `CREATE TABLE invites (
  channel INTEGER NOT NULL REFERENCES channels(seq),
  code    TEXT    NOT NULL,
  event   INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
  PRIMARY KEY (channel, code, event)
) STRICT, WITHOUT ROWID;
		CREATE INDEX invites_event ON invites(event);`,
	// NIP-29 as its clients read it (RL-36, issue 31): a channel's
	// picture and the parent it is a subgroup of, with the index that
	// finds a deleted parent's children. The group state renewed by the
	// relay's next start (no group_state.fingerprint yet) carries them.
	12: `ALTER TABLE channels ADD COLUMN picture TEXT NOT NULL DEFAULT '';
		ALTER TABLE channels ADD COLUMN parent INTEGER REFERENCES channels(seq);
		CREATE INDEX channels_parent ON channels(parent) WHERE parent IS NOT NULL;`,
}

// markNamedByDeletion marks every aux event that a stored deletion names
// (schema.sql, named_by_deletion): migration 5 and check's repair.
const markNamedByDeletion = `UPDATE events SET named_by_deletion = 1
	WHERE kind IN (5, 7, 9005, 40003) AND named_by_deletion = 0 AND id IN (` + deletionNamedSQL + `)`

// deletionNamedSQL is the ids that a stored deletion (5 or 9005) names
// in an e tag, from tags_aux (its WHERE repeated word for word).
const deletionNamedSQL = `SELECT value FROM tags INDEXED BY tags_aux
	WHERE name = 'e' AND kind IN (5, 7, 9005, 40003) AND kind IN (5, 9005)`

var versionLine = regexp.MustCompile(`(?m)^-- schema_version: (\d+)$`)

// SchemaVersion returns the version schema.sql declares.
func SchemaVersion(schema string) (int, error) {
	m := versionLine.FindStringSubmatch(schema)
	if m == nil {
		return 0, errors.New("schema.sql has no '-- schema_version: N' line")
	}
	return strconv.Atoi(m[1])
}

// ErrNotBuzzLite is returned when a file is an SQLite database of something
// else.
var ErrNotBuzzLite = errors.New("not a buzz-lite database")

// ErrNewerSchema is returned when a database was written by a newer buzz-lite.
var ErrNewerSchema = errors.New("database schema is newer than this buzz-lite")

// migrate brings the database on conn to the version of schema: creating it
// when empty, migrating it forward when older, refusing it when newer or not
// ours (RL-2).
func migrate(ctx context.Context, conn *sql.Conn, schema string) error {
	want, err := SchemaVersion(schema)
	if err != nil {
		return err
	}
	var appID, version, objects int
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return describeOpenError(err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return describeOpenError(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return describeOpenError(err)
	}
	switch {
	case appID == 0 && objects == 0:
		return inTx(ctx, conn, func() error {
			if _, err := conn.ExecContext(ctx, schema); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
			return stampVersion(ctx, conn, want)
		})
	case appID != applicationID:
		return fmt.Errorf("%w (application_id %#x)", ErrNotBuzzLite, appID)
	case version > want:
		return fmt.Errorf("%w: it has version %d, this build knows up to %d; run a newer buzz-lite", ErrNewerSchema, version, want)
	}
	for v := version; v < want; v++ {
		step, ok := migrations[v]
		if !ok {
			return fmt.Errorf("no migration from schema version %d to %d", v, v+1)
		}
		err := inTx(ctx, conn, func() error {
			if _, err := conn.ExecContext(ctx, step); err != nil {
				return fmt.Errorf("migrate schema %d -> %d: %w", v, v+1, err)
			}
			return stampVersion(ctx, conn, v+1)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func stampVersion(ctx context.Context, conn *sql.Conn, v int) error {
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("set application id: %w", err)
	}
	return nil
}

// inTx runs fn between BEGIN IMMEDIATE and COMMIT on conn, rolling back when
// fn fails.
func inTx(ctx context.Context, conn *sql.Conn, fn func() error) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(); err != nil {
		if _, rerr := conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
