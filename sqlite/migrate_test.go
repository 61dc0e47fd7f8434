package sqlite

// RL-2: schema.sql is the whole schema, versioned with PRAGMA user_version and
// marked with PRAGMA application_id; older databases are migrated forward in
// a transaction, newer ones and files that are not buzz-lite's are refused.
// RL-1: the pragmas every connection runs with.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// mgNewDB creates a database with the repository's schema in t.TempDir(),
// stores evs in it, closes it and returns its path.
func mgNewDB(t testing.TB, evs ...*nostr.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "buzz.db")
	s, err := Open(context.Background(), Options{Path: path, Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	qtIngest(t, s, evs...)
	s.Close()
	return path
}

// mgOpen opens the store at path with schema, closing it at cleanup.
func mgOpen(t testing.TB, path, schema string) (*Store, error) {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: path, Schema: schema})
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// mgMigrated opens the database at path with the repository's schema,
// which migrates it, and a fresh database beside it to compare it with.
func mgMigrated(t testing.TB, path string) (migrated, fresh *Store) {
	t.Helper()
	migrated, err := mgOpen(t, path, testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err = mgOpen(t, mgNewDB(t), testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	return migrated, fresh
}

// mgMigratedAsFresh opens path with the current schema, migrating it,
// and fails the test unless every schema object and the version are then
// as a fresh database has them.
func mgMigratedAsFresh(t testing.TB, path string) *Store {
	t.Helper()
	s, fresh := mgMigrated(t, path)
	if got, want := mgObjects(t, s.readers), mgObjects(t, fresh.readers); !slices.Equal(got, want) {
		t.Errorf("schema after migration:\n%s\nfresh:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := qtSQLCount(t, s, `PRAGMA user_version`), qtSQLCount(t, fresh, `PRAGMA user_version`); got != want {
		t.Errorf("user_version %d, want %d", got, want)
	}
	return s
}

// mgRaw opens path with plain database/sql and the modernc driver.
func mgRaw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mgPragma(t testing.TB, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) int64 {
	t.Helper()
	var v int64
	if err := db.QueryRowContext(context.Background(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

// mgDiff describes where two files differ.
func mgDiff(a, b []byte) string {
	if len(a) != len(b) {
		return fmt.Sprintf("size %d -> %d", len(a), len(b))
	}
	var at []string
	for i := range a {
		if a[i] != b[i] {
			at = append(at, fmt.Sprintf("byte %d: %#x -> %#x", i, a[i], b[i]))
		}
	}
	return strings.Join(at, ", ")
}

// mgSchemaNext is schema.sql declaring the version after the current one,
// cur: what a future build would embed.
func mgSchemaNext(t testing.TB) (next string, cur int) {
	t.Helper()
	schema := testutil.Schema(t)
	cur, err := SchemaVersion(schema)
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("-- schema_version: %d\n", cur)
	return strings.Replace(schema, line, fmt.Sprintf("-- schema_version: %d\n", cur+1), 1), cur
}

// mgSetMigration installs a migration step for the duration of the test.
func mgSetMigration(t testing.TB, from int, step string) {
	t.Helper()
	old, had := migrations[from]
	migrations[from] = step
	t.Cleanup(func() {
		if had {
			migrations[from] = old
		} else {
			delete(migrations, from)
		}
	})
}

// RL-2: SchemaVersion reads the version line of schema.sql.
func TestMigrateSchemaVersion(t *testing.T) {
	v, err := SchemaVersion(testutil.Schema(t))
	if err != nil || v != 13 {
		t.Errorf("SchemaVersion(schema.sql) = %d, %v; want 13", v, err)
	}
	// Every older version has its step forward.
	for from := 1; from < v; from++ {
		if _, ok := migrations[from]; !ok {
			t.Errorf("no migration from version %d", from)
		}
	}
	for _, tc := range []struct {
		text string
		want int
		ok   bool
	}{
		{"-- schema_version: 7\nCREATE TABLE x(y);", 7, true},
		{"CREATE TABLE x(y);\n-- schema_version: 12\n", 12, true},
		{"CREATE TABLE x(y);", 0, false},
		{"--schema_version: 3\n", 0, false},
		{"-- schema_version: x\n", 0, false},
	} {
		v, err := SchemaVersion(tc.text)
		if (err == nil) != tc.ok || (tc.ok && v != tc.want) {
			t.Errorf("SchemaVersion(%q) = %d, %v; want %d, ok=%v", tc.text, v, err, tc.want, tc.ok)
		}
	}
	// A schema without a version is never applied.
	path := filepath.Join(t.TempDir(), "buzz.db")
	if _, err := mgOpen(t, path, "CREATE TABLE x(y);"); err == nil {
		t.Error("opened a database with an unversioned schema")
	}
}

// RL-2: a fresh database gets schema.sql, user_version = its version and the
// buzz-lite application_id; reopening keeps the data and the stamp.
func TestMigrateFreshAndReopen(t *testing.T) {
	ctx := context.Background()
	schema := testutil.Schema(t)
	want, err := SchemaVersion(schema)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "buzz.db")
	s, err := Open(ctx, Options{Path: path, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if v := mgPragma(t, s.readers, "user_version"); v != int64(want) {
		t.Errorf("user_version = %d, want %d", v, want)
	}
	if v := mgPragma(t, s.readers, "application_id"); v != applicationID {
		t.Errorf("application_id = %#x, want %#x", v, applicationID)
	}
	for _, table := range []string{"channels", "events", "tags", "thread_metadata"} {
		if n := qtSQLCount(t, s, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, table); n != 1 {
			t.Errorf("table %s missing", table)
		}
	}
	a := testutil.NewSigner(t)
	ev := a.Event(t, 1, qtT0, "kept", nostr.Tag{"t", "kept"})
	qtIngest(t, s, ev)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for i := 0; i < 2; i++ {
		s, err := Open(ctx, Options{Path: path, Schema: schema})
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if v := mgPragma(t, s.readers, "user_version"); v != int64(want) {
			t.Errorf("reopen %d: user_version = %d, want %d", i, v, want)
		}
		if got := storetest.QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"kept"}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(ev)) {
			t.Errorf("reopen %d: got %v, want the stored event", i, got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// RL-1: WAL mode, foreign keys, NORMAL sync and a busy timeout on the
// writer; the read pool is read-only.
func TestMigrateConnectionPragmas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "buzz.db")
	s, err := mgOpen(t, path, testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.readers.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if v := mgPragma(t, s.readers, "foreign_keys"); v != 1 {
		t.Errorf("readers: foreign_keys = %d", v)
	}
	if v := mgPragma(t, s.readers, "busy_timeout"); v < 1000 {
		t.Errorf("readers: busy_timeout = %d ms", v)
	}
	if v := mgPragma(t, s.readers, "synchronous"); v != 1 {
		t.Errorf("readers: synchronous = %d, want 1 (NORMAL)", v)
	}
	// The writer's connection string, on a connection of our own.
	wdb, err := sql.Open("sqlite", dsn(path, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer wdb.Close()
	if v := mgPragma(t, wdb, "foreign_keys"); v != 1 {
		t.Errorf("writer: foreign_keys = %d", v)
	}
	if v := mgPragma(t, wdb, "synchronous"); v != 1 {
		t.Errorf("writer: synchronous = %d, want 1 (NORMAL)", v)
	}
	if v := mgPragma(t, wdb, "busy_timeout"); v < 1000 {
		t.Errorf("writer: busy_timeout = %d ms", v)
	}
	// Set by Open on the writer itself, once the file is known to be ours.
	var limit int64
	if err := s.writer.conn.QueryRowContext(ctx, "PRAGMA journal_size_limit").Scan(&limit); err != nil || limit <= 0 {
		t.Errorf("writer: journal_size_limit = %d, %v; want a bound", limit, err)
	}
	if _, err := s.readers.ExecContext(ctx, "INSERT INTO channels (h) VALUES ('x')"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

// RL-2: a database written by a newer buzz-lite is refused with
// ErrNewerSchema and left as it was.
func TestMigrateRefusesNewer(t *testing.T) {
	path := mgNewDB(t)
	raw := mgRaw(t, path)
	if _, err := raw.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	_, err := mgOpen(t, path, testutil.Schema(t))
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("got %v, want ErrNewerSchema", err)
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "newer") {
		t.Errorf("message %q does not say which versions", err)
	}
	if v := mgPragma(t, mgRaw(t, path), "user_version"); v != 99 {
		t.Errorf("user_version changed to %d", v)
	}
}

// mgForeignCases are SQLite databases of other applications.
var mgForeignCases = []struct {
	name  string
	setup []string
}{
	{"tables, no application id", []string{"CREATE TABLE notes(body TEXT)", "INSERT INTO notes VALUES ('mine')"}},
	{"other application id", []string{"CREATE TABLE notes(body TEXT)", "INSERT INTO notes VALUES ('mine')", "PRAGMA application_id = 1234"}},
	{"other application id, empty", []string{"PRAGMA application_id = 1234"}},
	{"user_version only", []string{"CREATE TABLE notes(body TEXT)", "INSERT INTO notes VALUES ('mine')", "PRAGMA user_version = 1"}},
}

// mgForeign writes the database of one mgForeignCases entry and returns its
// path and bytes.
func mgForeign(t *testing.T, setup []string) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	raw := mgRaw(t, path)
	for _, q := range setup {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// RL-2: an SQLite database of another application is refused with
// ErrNotBuzzLite, whether it carries no application id or another one, and
// gets none of buzz-lite's tables.
func TestMigrateRefusesOtherApplication(t *testing.T) {
	for _, tc := range mgForeignCases {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := mgForeign(t, tc.setup)
			_, err := mgOpen(t, path, testutil.Schema(t))
			if !errors.Is(err, ErrNotBuzzLite) {
				t.Fatalf("got %v, want ErrNotBuzzLite", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("message %q does not name the file", err)
			}
			raw := mgRaw(t, path)
			var tables int
			if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'events'`).Scan(&tables); err != nil || tables != 0 {
				t.Errorf("buzz-lite tables created in a foreign database (%d, %v)", tables, err)
			}
			if v := mgPragma(t, raw, "application_id"); v == applicationID {
				t.Error("foreign database stamped as buzz-lite's")
			}
		})
	}
}

// RL-2: refusing another application's database leaves its file byte for
// byte as it was (no switch to WAL mode, no stamp).
func TestMigrateRefusedForeignFileUnchanged(t *testing.T) {
	for _, tc := range mgForeignCases {
		t.Run(tc.name, func(t *testing.T) {
			path, before := mgForeign(t, tc.setup)
			if _, err := mgOpen(t, path, testutil.Schema(t)); err == nil {
				t.Fatal("foreign database opened")
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Errorf("refused database file was modified: %s", mgDiff(before, after))
			}
		})
	}
}

// RL-2: a file that is not SQLite at all is refused with a message that
// says so, and left as it was.
func TestMigrateRefusesNonSQLite(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 8192)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"random bytes", random},
		{"text", bytes.Repeat([]byte("this is a config file, not a database\n"), 100)},
		{"sqlite header, garbage after", append([]byte("SQLite format 3\x00"), random...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "buzz.db")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := mgOpen(t, path, testutil.Schema(t))
			if err == nil {
				t.Fatal("opened a file that is not a database")
			}
			msg := err.Error()
			if !strings.Contains(msg, "not a buzz-lite database") && !strings.Contains(msg, "not a database") {
				t.Errorf("message %q does not say the file is not a database", msg)
			}
			if !strings.Contains(msg, path) {
				t.Errorf("message %q does not name the file", msg)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, tc.content) {
				t.Error("refused file was modified")
			}
		})
	}
}

// RL-2: a database of the current version opened by a build whose schema
// is one version newer runs that one migration step and is stamped with
// the new version; reopening does not migrate again.
func TestMigrateForward(t *testing.T) {
	ctx := context.Background()
	ev := testutil.NewSigner(t).Event(t, 1, qtT0, "from v1", nostr.Tag{"t", "v1"})
	path := mgNewDB(t, ev)

	next, cur := mgSchemaNext(t)
	mgSetMigration(t, cur, "CREATE TABLE extra(x); INSERT INTO extra VALUES (42);")
	for i := 0; i < 2; i++ {
		s, err := Open(ctx, Options{Path: path, Schema: next})
		if err != nil {
			t.Fatalf("open %d with schema v%d: %v", i, cur+1, err)
		}
		if v := mgPragma(t, s.readers, "user_version"); v != int64(cur+1) {
			t.Errorf("open %d: user_version = %d, want %d", i, v, cur+1)
		}
		if v := mgPragma(t, s.readers, "application_id"); v != applicationID {
			t.Errorf("open %d: application_id = %#x", i, v)
		}
		if n := qtSQLCount(t, s, `SELECT count(*) FROM extra`); n != 1 {
			t.Errorf("open %d: extra holds %d rows, want 1 (the migration ran once)", i, n)
		}
		if got := storetest.QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"v1"}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(ev)) {
			t.Errorf("open %d: data of the older version lost: %v", i, got)
		}
		s.Close()
	}
	// The older build now refuses it.
	if _, err := mgOpen(t, path, testutil.Schema(t)); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("current schema on a newer database: %v, want ErrNewerSchema", err)
	}
}

// mgDowngradeToV3 takes a database of version 9 back to version 3: no
// page versions and their triggers, no aux index, but write_version.
func mgDowngradeToV3(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV4(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP TRIGGER events_page_update;
		DROP TRIGGER events_page_delete; DROP TRIGGER tags_page_insert; DROP TRIGGER tags_page_delete;
		DROP TRIGGER thread_page_insert; DROP TRIGGER thread_page_update; DROP TABLE page_versions;
		DROP INDEX tags_aux; DROP VIEW event_pages; DROP VIEW target_pages;
		INSERT INTO settings (key, value) VALUES ('write_version', 7);
		PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV12 takes a database of version 13 back to version 12: no
// channels.picture, channels.parent and its index.
func mgDowngradeToV12(t testing.TB, path string) {
	t.Helper()
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX channels_parent; ALTER TABLE channels DROP COLUMN parent;
		ALTER TABLE channels DROP COLUMN picture; PRAGMA user_version = 12`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV11 takes a database of the current version back to
// version 11: no invite codes.
func mgDowngradeToV11(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV12(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX invites_event; DROP TABLE invites; PRAGMA user_version = 11`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV10 takes a database of the current version back to version 10: no
// channels.last_message_at and its index.
func mgDowngradeToV10(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV11(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX channels_activity; ALTER TABLE channels DROP COLUMN last_message_at;
		PRAGMA user_version = 10`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV9 takes a database of the current version back to version 9: no
// feed streams (events.feed, mentions, their indexes and triggers).
func mgDowngradeToV9(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV10(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP TRIGGER mentions_insert; DROP TRIGGER mentions_tag_delete;
		DROP TRIGGER mentions_event_deleted; DROP TRIGGER mentions_event_delete; DROP TRIGGER channels_feed;
		DROP INDEX events_feed; DROP TABLE mentions; DROP INDEX members_pubkey; DROP INDEX channels_private;
		ALTER TABLE events DROP COLUMN feed;
		PRAGMA user_version = 9`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV8 takes a database of the current version back to version
// 8: no NIP-98 tokens.
func mgDowngradeToV8(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV9(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP TABLE nip98_tokens; PRAGMA user_version = 8`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV7 takes a database of the current version back to version 7: the
// indexes read newest first in created_at DESC order, the author's with
// the id.
func mgDowngradeToV7(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV8(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX events_kind; CREATE INDEX events_kind ON events(kind, created_at DESC, id);
		DROP INDEX events_pubkey; CREATE INDEX events_pubkey ON events(pubkey, kind, created_at DESC, id);
		DROP INDEX events_channel; CREATE INDEX events_channel ON events(channel, created_at DESC, id) WHERE channel IS NOT NULL;
		DROP INDEX events_toplevel; CREATE INDEX events_toplevel ON events(channel, created_at DESC, id) WHERE row_class = 2 AND deleted_at IS NULL;
		DROP INDEX events_projection; CREATE INDEX events_projection ON events(channel, created_at DESC, id) WHERE row_class >= 1 AND deleted_at IS NULL;
		PRAGMA user_version = 7`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV6 takes a database of version 9 back to version 6:
// events_kind and events_pubkey without the id.
func mgDowngradeToV6(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV7(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX events_kind; CREATE INDEX events_kind ON events(kind, created_at);
		DROP INDEX events_pubkey; CREATE INDEX events_pubkey ON events(pubkey, kind, created_at);
		PRAGMA user_version = 6`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV5 takes a database of version 9 back to version 5: no
// events.named_by_deletion.
func mgDowngradeToV5(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV6(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`ALTER TABLE events DROP COLUMN named_by_deletion; PRAGMA user_version = 5`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV4 takes a database of version 9 back to version 4: no
// index of a thread's authors.
func mgDowngradeToV4(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV5(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP INDEX events_root_authors; PRAGMA user_version = 4`); err != nil {
		t.Fatal(err)
	}
}

// mgDowngradeToV2 takes a database of version 9 back to version 2: no
// channel state, no members, no settings, no event scope.
func mgDowngradeToV2(t testing.TB, path string) {
	t.Helper()
	mgDowngradeToV3(t, path)
	raw := mgRaw(t, path)
	defer raw.Close()
	if _, err := raw.Exec(`DROP TABLE members; DROP TABLE settings; DROP INDEX events_projection;
		ALTER TABLE thread_metadata DROP COLUMN updated_at;
		ALTER TABLE events DROP COLUMN scope;
		ALTER TABLE channels DROP COLUMN created_at; ALTER TABLE channels DROP COLUMN name;
		ALTER TABLE channels DROP COLUMN about; ALTER TABLE channels DROP COLUMN private;
		ALTER TABLE channels DROP COLUMN deleted_at;
		PRAGMA user_version = 2`); err != nil {
		t.Fatal(err)
	}
}

// mgColumns lists the columns of table as PRAGMA table_info describes them.
func mgColumns(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name, type, "notnull", coalesce(dflt_value, ''), pk FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var name, typ, dflt string
		var notNull, pk int
		if err := rows.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, fmt.Sprint(name, typ, notNull, dflt, pk))
	}
	return cols
}

// RL-2, RL-8: the real migration from version 2 to 3 gives tables the
// columns a fresh database has, and every stored event its scope: its
// channel, or for a reaction or deletion without an h tag its target's.
func TestMigrateFromVersion2(t *testing.T) {
	a := testutil.NewSigner(t)
	msg := a.Event(t, 9, qtT0, "in a channel", nostr.Tag{"h", "3b7e6f1e-5f0a-4c1e-9d7a-2f4b8c6d0e11"})
	free := a.Event(t, 1, qtT0, "no channel")
	react := a.Event(t, 7, qtT0+1, "+", nostr.Tag{"e", msg.ID})
	reactFree := a.Event(t, 7, qtT0+1, "+", nostr.Tag{"e", free.ID})
	del := a.Event(t, 5, qtT0+2, "", nostr.Tag{"e", msg.ID})
	path := mgNewDB(t, msg, free, react, reactFree, del)
	mgDowngradeToV2(t, path)

	s, fresh := mgMigrated(t, path)
	for _, table := range []string{"events", "channels", "members", "settings", "thread_metadata"} {
		if got, want := mgColumns(t, s.readers, table), mgColumns(t, fresh.readers, table); !slices.Equal(got, want) {
			t.Errorf("%s after migration: %v, fresh: %v", table, got, want)
		}
	}
	var channel int64
	if err := s.readers.QueryRow(`SELECT seq FROM channels`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ev   *nostr.Event
		want sql.NullInt64
	}{
		{msg, sql.NullInt64{Int64: channel, Valid: true}},
		{free, sql.NullInt64{}},
		{react, sql.NullInt64{Int64: channel, Valid: true}},
		{reactFree, sql.NullInt64{}},
		{del, sql.NullInt64{Int64: channel, Valid: true}},
	} {
		var got sql.NullInt64
		id, _ := hex.DecodeString(c.ev.ID)
		if err := s.readers.QueryRow(`SELECT scope FROM events WHERE id = ?`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("kind %d %q: scope %v, want %v", c.ev.Kind, c.ev.Content, got, c.want)
		}
	}
	if s.Community().ChannelBySeq(channel) == nil {
		t.Error("the migrated channel is not in the access state")
	}
}

// RL-2: the real migration from version 1 (no index for Backfill) to 2.
func TestMigrateFromVersion1(t *testing.T) {
	path := mgNewDB(t)
	mgDowngradeToV2(t, path)
	raw := mgRaw(t, path)
	if _, err := raw.Exec("DROP INDEX events_unclassified; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s, err := mgOpen(t, path, testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM sqlite_schema WHERE name = 'events_unclassified'`); n != 1 {
		t.Fatal("migration 1 -> 2 did not create events_unclassified")
	}
}

// RL-2: a migration step that fails is rolled back whole: the database
// stays at its version, without half the step, and opens again.
func TestMigrateFailedStepRollsBack(t *testing.T) {
	path := mgNewDB(t)

	// The second statement fails: events exists.
	next, cur := mgSchemaNext(t)
	mgSetMigration(t, cur, "CREATE TABLE extra(x); CREATE TABLE events(y);")
	if _, err := mgOpen(t, path, next); err == nil {
		t.Fatal("a failing migration succeeded")
	} else if !strings.Contains(err.Error(), fmt.Sprintf("%d -> %d", cur, cur+1)) {
		t.Errorf("message %q does not name the step", err)
	}
	raw := mgRaw(t, path)
	if v := mgPragma(t, raw, "user_version"); v != int64(cur) {
		t.Errorf("user_version = %d after a failed migration, want %d", v, cur)
	}
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'extra'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("half a migration committed (extra exists: %d, %v)", n, err)
	}
	raw.Close()

	// A missing step is refused too, naming the versions.
	delete(migrations, cur)
	if _, err := mgOpen(t, path, next); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no migration from schema version %d to %d", cur, cur+1)) {
		t.Errorf("missing migration: %v", err)
	}
	// And the current build still opens it.
	if _, err := mgOpen(t, path, testutil.Schema(t)); err != nil {
		t.Errorf("reopen at the current version: %v", err)
	}
}

// RL-2, issue 15: the real migration from version 3 to 4 replaces
// write_version with the page versions a fresh database has, triggers
// included, adds the aux index, and the triggers count the writes of the migrated database.
func TestMigrateFromVersion3(t *testing.T) {
	a := testutil.NewSigner(t)
	const ch = "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a"
	msg := a.Event(t, 9, qtT0, "before", nostr.Tag{"h", ch})
	path := mgNewDB(t, msg)
	mgDowngradeToV3(t, path)

	s, err := mgOpen(t, path, testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM settings WHERE key = 'write_version'`); n != 0 {
		t.Error("write_version is still in settings")
	}
	fresh, err := mgOpen(t, mgNewDB(t), testutil.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	const objects = `SELECT group_concat(type || ' ' || name || ' ' || sql, char(10)) FROM
		(SELECT type, name, sql FROM sqlite_schema WHERE name IN ('page_versions', 'tags_aux') OR type IN ('trigger', 'view') ORDER BY name)`
	var got, want string
	if err := s.readers.QueryRow(objects).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := fresh.readers.QueryRow(objects).Scan(&want); err != nil {
		t.Fatal(err)
	}
	// The same statements, however indented.
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want), " ") {
		t.Errorf("after migration:\n%s\nfresh:\n%s", got, want)
	}
	version := func() int64 {
		return qtSQLCount(t, s, `SELECT coalesce((SELECT version FROM page_versions p JOIN channels c ON c.seq = p.channel WHERE c.h = ?), 0)`, ch)
	}
	before := version()
	qtIngest(t, s, a.Event(t, 9, qtT0+1, "after", nostr.Tag{"h", ch}))
	if after := version(); after <= before {
		t.Errorf("page version of the channel %d before a write, %d after", before, after)
	}
}

// Issue 13 (deletion cost): a version 4 database gets the index of a
// thread's authors, as a fresh one has it.
func TestMigrateFromVersion4(t *testing.T) {
	a := testutil.NewSigner(t)
	msg := a.Event(t, 9, qtT0, "before", nostr.Tag{"h", "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a"})
	path := mgNewDB(t, msg)
	mgDowngradeToV4(t, path)
	s, fresh := mgMigrated(t, path)
	const index = `SELECT coalesce((SELECT sql FROM sqlite_schema WHERE name = 'events_root_authors'), '')`
	var got, want string
	if err := s.readers.QueryRow(index).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if err := fresh.readers.QueryRow(index).Scan(&want); err != nil {
		t.Fatal(err)
	}
	// The same index, however indented.
	if got == "" || strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(want), " ") {
		t.Errorf("events_root_authors after migration:\n%s\nfresh:\n%s", got, want)
	}
	if got, want := qtSQLCount(t, s, `PRAGMA user_version`), qtSQLCount(t, fresh, `PRAGMA user_version`); got != want {
		t.Errorf("user_version %d, want %d", got, want)
	}
}

// mgObjects lists a database's schema objects, each as type, name and its
// SQL with whitespace collapsed, none before a closing parenthesis.
func mgObjects(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		// Spacing aside: a column ALTER TABLE adds follows the line break
		// before the closing parenthesis that schema.sql has after it.
		text = strings.NewReplacer(" ,", ",", " )", ")").Replace(strings.Join(strings.Fields(text), " "))
		out = append(out, typ+" "+name+": "+text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// RL-2, RL-35: a version 6 database gets events_kind and events_pubkey in
// the order reads serve (created_at DESC, id ASC), every
// object of it then as a fresh database has it, and the feed's activity
// of one crowded second is served in id order from the new index.
func TestMigrateFromVersion6(t *testing.T) {
	a := testutil.NewSigner(t)
	var evs []*nostr.Event
	for i := range 30 {
		evs = append(evs, a.Event(t, 9, qtT0, fmt.Sprint("one second ", i), nostr.Tag{"h", "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a"}))
	}
	path := mgNewDB(t, evs...)
	mgDowngradeToV6(t, path)
	s := mgMigratedAsFresh(t, path)
	got, err := s.Feed(context.Background(), buzz.FeedQuery{Viewer: buzz.Viewer(a.PK), Limit: 10, Types: []buzz.FeedType{buzz.FeedActivity}})
	if err != nil {
		t.Fatal(err)
	}
	want := testutil.IDs(evs...)
	slices.Sort(want)
	if ids := testutil.IDs(got...); !slices.Equal(ids, want[:10]) {
		t.Errorf("feed of one second %v, want the 10 smallest ids %v", ids, want[:10])
	}
}

// RL-2, RL-35: a version 7 database gets the indexes read newest first
// with their order reversed and the author's index without the id, every
// object of it then as a fresh database has it, and reads along each
// rebuilt index still serve created_at DESC, id ASC: a REQ by channel, by
// kind, by an author's kinds, and a window page.
func TestMigrateFromVersion7(t *testing.T) {
	const h = "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a"
	a := testutil.NewSigner(t)
	var evs []*nostr.Event
	for i := range 24 {
		// Three seconds of eight messages each: ties within each second.
		evs = append(evs, a.Event(t, 9, qtT0+int64(i/8), fmt.Sprint("message ", i), nostr.Tag{"h", h}))
	}
	path := mgNewDB(t, evs...)
	mgDowngradeToV7(t, path)
	s := mgMigratedAsFresh(t, path)
	want := storetest.Ordered(evs)[:10]
	for _, f := range []nostr.Filter{
		{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}, Limit: 10},
		{Kinds: []int{9}, Limit: 10},
		{Authors: []string{a.PK}, Kinds: []int{9}, Limit: 10},
	} {
		if got := storetest.QueryIDs(t, s, f, buzz.Anonymous); !slices.Equal(got, want) {
			t.Errorf("%v: %v, want %v", f, got, want)
		}
	}
	page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: h, Kinds: []int{9}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range page.Rows {
		rows = append(rows, r.ID)
	}
	if !slices.Equal(rows, want) {
		t.Errorf("window page %v, want %v", rows, want)
	}
}

// Issue 29 item 3, RL-17: a version 8 database gets the table of NIP-98
// tokens, every object of it then as a fresh database has it, and a token
// spent on it is refused the second time.
func TestMigrateFromVersion8(t *testing.T) {
	path := mgNewDB(t, testutil.NewSigner(t).Event(t, 1, qtT0, "before"))
	mgDowngradeToV8(t, path)
	s := mgMigratedAsFresh(t, path)
	key := []byte("0123456789abcdef")
	for i, want := range []bool{true, false} {
		if fresh, err := s.SpendToken(context.Background(), key, qtT0+120); err != nil || fresh != want {
			t.Fatalf("use %d of a token: %v, %v; want %v", i+1, fresh, err, want)
		}
	}
}

// RL-2, RL-35: a version 9 database gets the feed's streams: every object
// then as a fresh database has it, and the feeds of the events stored
// before are served from them: the member's mentions in the private
// channel and in none, not the deleted one, activity of both channels,
// an outsider's of the open channel only.
func TestMigrateFromVersion9(t *testing.T) {
	const priv, open = "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a", "6e2d0c9b-8a7f-4e6d-9c5b-4a3f2e1d0c9b"
	sg := testutil.SortedSigners(t, 3)
	owner, member, outsider := sg[0], sg[1], sg[2]
	pm := nostr.Tag{"p", member.PK}
	evs := []*nostr.Event{
		owner.Event(t, 9007, qtT0, "", nostr.Tag{"h", priv}, nostr.Tag{"private"}),
		owner.Event(t, 9000, qtT0+1, "", nostr.Tag{"h", priv}, pm),
		owner.Event(t, 9007, qtT0+2, "", nostr.Tag{"h", open}),
	}
	privMention := owner.Event(t, 9, qtT0+3, "private mention", nostr.Tag{"h", priv}, pm)
	openMessage := owner.Event(t, 11, qtT0+4, "open", nostr.Tag{"h", open})
	note := owner.Event(t, 1, qtT0+5, "note", pm)
	gone := owner.Event(t, 9, qtT0+6, "deleted mention", nostr.Tag{"h", open}, pm)
	evs = append(evs, privMention, openMessage, note, gone, owner.Event(t, 5, qtT0+7, "", nostr.Tag{"e", gone.ID}))
	path := mgNewDB(t, evs...)
	mgDowngradeToV9(t, path)
	s := mgMigratedAsFresh(t, path)
	for _, c := range []struct {
		v     buzz.Viewer
		types []buzz.FeedType
		want  []*nostr.Event
	}{
		{buzz.Viewer(member.PK), []buzz.FeedType{buzz.FeedMentions}, []*nostr.Event{note, privMention}},
		{buzz.Viewer(member.PK), []buzz.FeedType{buzz.FeedActivity}, []*nostr.Event{openMessage, privMention}},
		{buzz.Viewer(outsider.PK), []buzz.FeedType{buzz.FeedActivity}, []*nostr.Event{openMessage}},
	} {
		got, err := s.Feed(context.Background(), buzz.FeedQuery{Viewer: c.v, Types: c.types, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if ids, want := testutil.IDs(got...), testutil.IDs(c.want...); !slices.Equal(ids, want) {
			t.Errorf("%.8s %v: %v, want %v", c.v, c.types, ids, want)
		}
	}
}

// Issue 29 item 13: a version 10 database gets channels.last_message_at,
// each channel's read from its live messages (a deleted one and a later
// reaction do not count), and the index of the listing by activity, every
// object of it then as a fresh database has it.
func TestMigrateFromVersion10(t *testing.T) {
	const general, random = "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a", "random"
	a := testutil.NewSigner(t)
	kept := a.Event(t, 9, qtT0, "kept", nostr.Tag{"h", general})
	gone := a.Event(t, 9, qtT0+10, "deleted", nostr.Tag{"h", general})
	other := a.Event(t, 9, qtT0+5, "other", nostr.Tag{"h", random})
	path := mgNewDB(t, kept, gone, other,
		a.Event(t, 5, qtT0+20, "", nostr.Tag{"h", general}, nostr.Tag{"e", gone.ID}),
		a.Event(t, 7, qtT0+30, "+", nostr.Tag{"h", random}, nostr.Tag{"e", other.ID}))
	mgDowngradeToV10(t, path)
	s := mgMigratedAsFresh(t, path)
	page, err := s.ChannelsByActivity(context.Background(), nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []buzz.ChannelActivity{{H: random, LastMessageAt: qtT0 + 5}, {H: general, LastMessageAt: qtT0}}
	if len(page) != len(want) {
		t.Fatalf("listed %+v, want %+v", page, want)
	}
	for i := range want {
		if page[i].H != want[i].H || page[i].LastMessageAt != want[i].LastMessageAt {
			t.Errorf("listed %+v, want %+v", page, want)
		}
	}
}

// RL-36: a version 11 database gets the table of invite codes, every
// object of it then as a fresh database has it. A 9009 stored before gives
// no code (any member could post one then): its private channel stays
// closed to a join that names the code.
func TestMigrateFromVersion11(t *testing.T) {
	const ops = "ops"
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	path := mgNewDB(t, owner.Event(t, 9007, qtT0, "", nostr.Tag{"h", ops}, nostr.Tag{"private"}),
		owner.Event(t, 9009, qtT0+1, "", nostr.Tag{"h", ops}, nostr.Tag{"code", "old"}))
	mgDowngradeToV11(t, path)
	s := mgMigratedAsFresh(t, path)
	if ch := s.Community().Channel(ops); ch == nil || ch.Invites != 0 || !ch.Closed() {
		t.Fatalf("after the migration: %+v, want a closed private channel without codes", ch)
	}
	err := s.Ingest(context.Background(), stranger.Event(t, 9021, qtT0+2, "", nostr.Tag{"h", ops}, nostr.Tag{"code", "old"}))
	if !errors.Is(err, buzz.ErrCannotJoin) {
		t.Fatalf("join with the code of a 9009 stored before: %v, want %v", err, buzz.ErrCannotJoin)
	}
}

// Issue 31 (RL-36): a version 12 database gets channels.picture (empty) and
// channels.parent (NULL: every channel a root) with channels_parent, every
// object then as a fresh database has it; its channels take a picture and
// a parent after; and the relay's first start renews the group state of
// every channel once (39003 appears beside the rest), the next not at all.
func TestMigrateFromVersion12(t *testing.T) {
	const parent, child = "6e0f4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b", "nip29-group"
	owner := testutil.NewSigner(t)
	path := mgNewDB(t, owner.Event(t, 9007, qtT0, "", nostr.Tag{"h", parent}, nostr.Tag{"name", "tech"}),
		owner.Event(t, 9007, qtT0+1, "", nostr.Tag{"h", child}))
	mgDowngradeToV12(t, path)
	s := mgMigratedAsFresh(t, path)
	if n := qtSQLCount(t, s, `SELECT count(*) FROM channels WHERE picture = '' AND parent IS NULL`); n != 2 {
		t.Fatalf("%d of 2 channels migrated without a picture and parent", n)
	}
	s.Close()

	key := nostr.GeneratePrivateKey()
	s, err := Open(context.Background(), Options{Path: path, Schema: testutil.Schema(t), RelayKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	stateOf := func() string {
		t.Helper()
		evs, err := s.Query(context.Background(), nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}}, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(testutil.IDs(evs...), " ")
	}
	if got := stateOf(); got != "" {
		t.Fatalf("group state before the relay renewed it: %s", got)
	}
	if err := s.RenewChangedGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003`); n != 8 {
		t.Fatalf("%d group state events after the first start, want 4 for each of 2 channels", n)
	}
	renewed := stateOf()
	if err := s.RenewChangedGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(); got != renewed {
		t.Fatalf("the second start renewed the group state again:\n%s\nwas\n%s", got, renewed)
	}
	qtIngest(t, s, owner.Event(t, 9002, qtT0+2, "", nostr.Tag{"h", child}, nostr.Tag{"parent", parent},
		nostr.Tag{"picture", "https://example.com/n.png"}))
	if n := qtSQLCount(t, s, `SELECT count(*) FROM channels c JOIN channels p ON p.seq = c.parent
		WHERE c.h = ? AND p.h = ? AND c.picture = 'https://example.com/n.png'`, child, parent); n != 1 {
		t.Fatal("the migrated channel kept no parent or picture")
	}
}
