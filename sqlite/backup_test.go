package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Issue 8, RL-1: a backup taken in the middle of sustained ingest is a
// valid buzz-lite database holding every event acknowledged before it
// started, and only a prefix of the acknowledgement order.
func TestBackupDuringIngest(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a := testutil.NewSigner(t)
	ch := "11111111-1111-4111-8111-111111111111"
	const n = 600
	evs := make([]*nostr.Event, n)
	for i := range evs {
		evs[i] = a.Event(t, 9, 1000+int64(i), "m", nostr.Tag{"h", ch})
	}
	var (
		mu    sync.Mutex
		acked int
	)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i, ev := range evs {
			if err := s.Ingest(ctx, ev); err != nil {
				done <- err
				return
			}
			mu.Lock()
			acked = i + 1
			mu.Unlock()
			if i == n/3 {
				close(started)
			}
		}
		done <- nil
	}()
	<-started
	mu.Lock()
	before := acked
	mu.Unlock()
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := s.Backup(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	b, err := Open(ctx, Options{Path: path, Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatalf("backup does not open as a buzz-lite database: %v", err)
	}
	defer b.Close()
	if rep, err := b.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check of the backup: %+v %v", rep, err)
	}
	got, err := b.Query(ctx, nostr.Filter{Kinds: []int{9}, Limit: n}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < before {
		t.Fatalf("backup holds %d events, but %d were acknowledged before it started", len(got), before)
	}
	// Newest first: a prefix of the ingest order is evs[0:len(got)].
	for i, ev := range got {
		if want := evs[len(got)-1-i]; ev.ID != want.ID {
			t.Fatalf("backup is not a prefix of the acknowledged events at %d", i)
		}
	}
}

// Issue 8: an existing file is kept unless forced; no temporary file is
// left behind.
func TestBackupRefusesOverwrite(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, path, false); !errors.Is(err, ErrBackupExists) {
		t.Fatalf("got %v, want ErrBackupExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatal("existing file was changed")
	}
	if err := s.Backup(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, Options{Path: path, Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatalf("forced backup does not open: %v", err)
	}
	b.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "backup.db" && e.Name() != "backup.db-wal" && e.Name() != "backup.db-shm" {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
}

// Issue 8: a backup never replaces the database it is taken from, even
// with force.
func TestBackupRefusesTheDatabaseItself(t *testing.T) {
	s := openTest(t)
	for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm"} {
		if err := s.Backup(context.Background(), p, true); err == nil || !strings.Contains(err.Error(), "the database itself") {
			t.Errorf("backup to %s: %v", filepath.Base(p), err)
		}
	}
}

// Issue 29 item 12: a backup into a directory that does not exist names
// that directory, not the temporary file the backup would have written.
func TestBackupIntoMissingDirectory(t *testing.T) {
	s := openTest(t)
	dir := filepath.Join(t.TempDir(), "no-such-dir")
	path := filepath.Join(dir, "backup.db")
	err := s.Backup(context.Background(), path, false)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want a missing directory", err)
	}
	if want := "backup " + path + ": directory " + dir + ": no such file or directory"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}
