// Package datadir claims a data directory for a serving relay (RL-31):
// before anything is created in it, serve checks that it can write the
// directory and the database, and it holds an exclusive lock on the
// directory for as long as it serves, so that a second relay on the same
// directory refuses at once instead of serving beside the first (two
// relays on one database deliver nothing live to each other's
// subscribers). Other commands (export, backup, import, check, backfill)
// take no lock: they work beside a serving relay (RL-25).
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the name of the lock file inside the data directory. The
// lock is held on the open file, and the operating system drops it when
// the process ends, however it ends: a file left by a killed relay blocks
// nothing. The pid written into it only names the holder in the refusal.
const LockFile = "buzz-lite.lock"

// InUseError is the refusal of a data directory another process serves.
type InUseError struct {
	Dir string // absolute
	PID int    // 0 when the holder has not written its pid yet
}

func (e *InUseError) Error() string {
	pid := "unknown"
	if e.PID > 0 {
		pid = strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by another buzz-lite (pid %s)", e.Dir, pid)
}

// Lock is the exclusive hold of a data directory.
type Lock struct {
	f *os.File
}

// Claim readies the data directory dir for serving the database file
// db inside it: it makes dir absolute, creates it if missing, checks that
// files can be created in it and that db, if present, can be written
// (Writable), then takes the directory's lock. It returns the absolute
// directory, which the relay logs and works in.
func Claim(dir, db string) (string, *Lock, error) {
	abs, err := Prepare(dir)
	if err != nil {
		return "", nil, err
	}
	if err := Writable(filepath.Join(abs, db)); err != nil {
		return "", nil, err
	}
	lock, err := Acquire(abs)
	if err != nil {
		return "", nil, err
	}
	return abs, lock, nil
}

// Prepare returns dir made absolute, after creating it (0700) if missing
// and checking that a file can be created in it: SQLite creates the WAL
// and shared-memory files beside the database, and a directory that
// refuses them leaves the relay unable to write.
func Prepare(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("data directory %s: %w", abs, err)
	}
	probe, err := os.CreateTemp(abs, ".buzz-lite-probe-*")
	if err != nil {
		return "", fmt.Errorf("data directory %s is not writable: %w", abs, err)
	}
	if err := errors.Join(probe.Close(), os.Remove(probe.Name())); err != nil {
		return "", fmt.Errorf("data directory %s: %w", abs, err)
	}
	return abs, nil
}

// Writable checks that the database file db and its WAL and shared-memory
// files, those of them that exist, can be opened for writing. SQLite opens
// a file it cannot write read-only without a word, and the relay would
// then serve until its first write failed.
func Writable(db string) error {
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("database file is not writable: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("database file: %w", err)
		}
	}
	return nil
}

// Acquire takes the exclusive lock of the data directory dir (absolute,
// existing) and writes the pid into the lock file. A directory another
// process holds gives an *InUseError at once: Acquire never waits.
func Acquire(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFile)
	f, held, err := lockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if held {
		return nil, &InUseError{Dir: dir, PID: readPID(path)}
	}
	l := &Lock{f: f}
	if err := l.writePID(); err != nil {
		return nil, errors.Join(fmt.Errorf("lock data directory %s: %w", dir, err), f.Close())
	}
	return l, nil
}

func (l *Lock) writePID() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Release gives the data directory up. The lock file stays: removing it
// could let a process that opened it before the removal lock a file
// nobody else sees, beside one that creates it anew.
func (l *Lock) Release() error {
	return l.f.Close()
}

// readPID reads the pid the holder of the lock file wrote, 0 if it has
// not written one yet.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}
