package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-31: a data directory is held by one Lock at a time; a second Acquire
// is refused at once with the spec's message naming the holder's pid, and
// once the first is released the directory can be taken again.
func TestAcquireExclusive(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second Acquire: %v, want an InUseError", err)
	}
	want := fmt.Sprintf("data directory %s is in use by another buzz-lite (pid %d)", dir, os.Getpid())
	if err.Error() != want {
		t.Errorf("second Acquire:\n got %s\nwant %s", err, want)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
}

// RL-31: a lock file left by a process that is gone (its pid still in the
// file, no lock held on it) does not block: Acquire takes it and writes
// its own pid.
func TestAcquireStaleLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	if err := os.WriteFile(path, []byte("2147483000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire over a stale lock file: %v", err)
	}
	defer l.Release()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), fmt.Sprintf("%d\n", os.Getpid()); got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}
}

// RL-31: Prepare makes a relative directory absolute and creates it.
func TestPrepareCreatesAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	abs, err := Prepare(filepath.Join("a", "data"))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "a", "data"); abs != want {
		t.Errorf("Prepare: %s, want %s", abs, want)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		t.Fatalf("the directory was not created: %v", err)
	}
	if entries, _ := os.ReadDir(abs); len(entries) != 0 {
		t.Errorf("Prepare left %d files behind", len(entries))
	}
}

// RL-31: a directory in which no file can be created is refused.
func TestPrepareRefusesReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	testutil.Unwritable(t, dir)
	_, err := Prepare(dir)
	if err == nil || !strings.HasPrefix(err.Error(), "data directory "+dir+" is not writable: ") {
		t.Fatalf("Prepare on a read-only directory: %v", err)
	}
}

// RL-31: Writable accepts a database not created yet and a writable one,
// and refuses a database, or its WAL, that cannot be written.
func TestWritable(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "buzz-lite.db")
	if err := Writable(db); err != nil {
		t.Fatalf("no database yet: %v", err)
	}
	for _, name := range []string{"buzz-lite.db", "buzz-lite.db-wal"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Writable(db); err != nil {
		t.Fatalf("writable database: %v", err)
	}
	for _, name := range []string{"buzz-lite.db-wal", "buzz-lite.db"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			testutil.Unwritable(t, path)
			err := Writable(db)
			if err == nil || !strings.HasPrefix(err.Error(), "database file is not writable: ") || !strings.Contains(err.Error(), path) {
				t.Fatalf("Writable with %s read-only: %v", name, err)
			}
		})
	}
}
