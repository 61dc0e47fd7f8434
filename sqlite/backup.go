package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrBackupExists is returned when the backup file exists and force is off.
var ErrBackupExists = errors.New("backup file exists (use --force to overwrite)")

// Backup writes a consistent snapshot of the database to path while the
// store keeps serving and accepting writes: VACUUM INTO reads one snapshot
// (writers carry on in the WAL) into a temporary file beside path, which is
// synced and then renamed over path, so that path is either the old file or
// a complete new backup. An existing path is refused unless force is set.
func (s *Store) Backup(ctx context.Context, path string, force bool) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if st, err := os.Stat(path); err == nil {
		if live, lerr := os.Stat(s.path); lerr == nil && os.SameFile(st, live) {
			return fmt.Errorf("backup %s: that is the database itself", path)
		}
		if !st.Mode().IsRegular() {
			// Renamed over, a device such as /dev/null would become a file.
			return fmt.Errorf("backup %s: not a regular file", path)
		}
		if !force {
			return fmt.Errorf("backup %s: %w", path, ErrBackupExists)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if live, err := filepath.Abs(s.path); err == nil && (path == live || path == live+"-wal" || path == live+"-shm") {
		return fmt.Errorf("backup %s: that is the database itself", path)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		// The temporary file's name is ours, not the operator's: the
		// directory is what to mend (a typo, or no right to write there).
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return fmt.Errorf("backup %s: directory %s: %w", path, dir, err)
	}
	// An empty file is what VACUUM INTO accepts besides none; created here,
	// it is 0600 from the start (community history is private).
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath)

	// The read pool is query-only, which VACUUM INTO counts as a write: a
	// connection of its own, which writes nothing to the database.
	db, err := sql.Open("sqlite", dsn(s.path, false, 0))
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := syncFile(filepath.Dir(path)); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
