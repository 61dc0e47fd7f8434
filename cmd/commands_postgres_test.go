package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/pgtest"
)

// RL-33, RL-25: moving a community from SQLite to PostgreSQL is export,
// then import --postgres; export, check (and --repair) and backfill take
// --postgres; backup and backfill --reclassify refuse there, saying what
// to do instead.
func TestCommandsOnPostgres(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	dir, evs := toolData(t)
	fromSQLite := filepath.Join(t.TempDir(), "sqlite.jsonl")
	if _, err := runApp("export", "--data", dir, "-o", fromSQLite); err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir() // on PostgreSQL the data directory holds only relay.key
	for range 2 {
		out, err := runApp("import", "--data", keys, "--postgres", url, fromSQLite)
		if err != nil {
			t.Fatalf("import --postgres: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(keys, DBFile)); !os.IsNotExist(err) {
		t.Errorf("import --postgres made an SQLite file: %v", err)
	}
	fromPostgres := filepath.Join(t.TempDir(), "postgres.jsonl")
	if _, err := runApp("export", "--data", keys, "--postgres", url, "-o", fromPostgres); err != nil {
		t.Fatal(err)
	}
	// The same events in the same order, each as signed (the stores may
	// write an event's keys in different orders).
	a, b := exportedEvents(t, fromSQLite), exportedEvents(t, fromPostgres)
	if len(a) != len(evs) || len(b) != len(a) {
		t.Fatalf("exported %d events from SQLite, %d from PostgreSQL; %d stored", len(a), len(b), len(evs))
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			t.Fatalf("event %d: PostgreSQL exports %s, SQLite %s", i, b[i], a[i])
		}
	}

	check := func(args ...string) (string, error) {
		return runApp(append([]string{"check", "--data", keys, "--postgres", url}, args...)...)
	}
	if out, err := check(); err != nil || out != "ok\n" {
		t.Fatalf("check --postgres of the imported community: %q, %v", out, err)
	}
	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(context.Background(), `INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'x', 'stray'::bytea, 1, min(seq), 9 FROM events`)
	db.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := check(); err == nil || !strings.Contains(out, "tag index: 0 rows missing, 1 row that no event calls for") {
		t.Fatalf("check --postgres of a stray tag row: %q, %v", out, err)
	}
	if out, err := check("--repair"); err != nil || out != "tag index: 0 rows missing, 1 row that no event calls for\nrepaired\n" {
		t.Fatalf("check --postgres --repair: %q, %v", out, err)
	}
	if out, err := check(); err != nil || out != "ok\n" {
		t.Fatalf("check --postgres after the repair: %q, %v", out, err)
	}
	if out, err := runApp("backfill", "--data", keys, "--postgres", url); err != nil || !strings.HasPrefix(out, "0 messages classified") {
		t.Fatalf("backfill --postgres: %q, %v", out, err)
	}

	// RL-33: one relay key a community. A process without the community's
	// key file (here a directory that has none, so the command makes one)
	// is refused; --rekey moves the community to the key it is given.
	otherKeys := t.TempDir()
	if _, err := runApp("import", "--data", otherKeys, "--postgres", url, fromSQLite); err == nil ||
		!strings.Contains(err.Error(), "signed by relay key") {
		t.Fatalf("import with another relay key: %v", err)
	}
	if _, err := runApp("check", "--repair", "--data", otherKeys, "--postgres", url); err == nil ||
		!strings.Contains(err.Error(), "--rekey") {
		t.Fatalf("check --repair with another relay key: %v", err)
	}
	if out, err := runApp("check", "--repair", "--rekey", "--data", otherKeys, "--postgres", url); err != nil || !strings.HasSuffix(out, "repaired\n") {
		t.Fatalf("check --repair --rekey: %q, %v", out, err)
	}
	if out, err := runApp("check", "--data", otherKeys, "--postgres", url); err != nil || out != "ok\n" {
		t.Fatalf("check under the new key: %q, %v", out, err)
	}
	if _, err := runApp("check", "--rekey", "--data", otherKeys, "--postgres", url); err == nil || !strings.Contains(err.Error(), "--rekey goes with --repair") {
		t.Errorf("check --rekey alone: %v", err)
	}
	// An operator's command on a database without buzz-lite's schema says
	// so, and leaves it as it was.
	empty := pgtest.FreshDatabase(t)
	for _, cmd := range []string{"check", "export", "backfill"} {
		if _, err := runApp(cmd, "--data", keys, "--postgres", empty); err == nil || !strings.Contains(err.Error(), "no buzz-lite database") {
			t.Errorf("%s on an empty database: %v", cmd, err)
		}
	}

	if _, err := runApp("backup", "--data", keys, "--postgres", url, filepath.Join(t.TempDir(), "b.db")); err == nil ||
		!strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup --postgres: %v, want a pointer to pg_dump", err)
	}
	if _, err := runApp("backfill", "--reclassify", "--data", keys, "--postgres", url); err == nil ||
		!strings.Contains(err.Error(), "nothing to reclassify on PostgreSQL") {
		t.Errorf("backfill --reclassify --postgres: %v", err)
	}
}

// exportedEvents reads the events of an export file.
func exportedEvents(t *testing.T, path string) []*nostr.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*nostr.Event
	for line := range strings.Lines(string(b)) {
		ev := &nostr.Event{}
		if err := ev.UnmarshalJSON([]byte(line)); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}
