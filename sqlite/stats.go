package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Stats are the store's numbers for the relay's metrics (RL-30): the
// writer's queue and batches, the window pages served from the cache and
// from the database, and the sizes of the database file and its WAL.
func (s *Store) Stats() (buzz.StoreStats, error) {
	st := buzz.WriterStats(len(s.writer.jobs), &s.writer.batches, s.pages)
	var err error
	if st.DatabaseBytes, err = fileSize(s.path); err != nil {
		return st, err
	}
	st.WALBytes, err = fileSize(s.path + "-wal")
	return st, err
}

// fileSize is the size of the file at path, 0 when there is none.
func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("size of %s: %w", path, err)
	}
	return fi.Size(), nil
}

// Ping is a write round trip through the writer that writes nothing
// (writer.probe): nil once it committed, an error when the store is
// closed, the transaction failed, or ctx ended first. The relay's
// readiness is this round trip (RL-30).
func (s *Store) Ping(ctx context.Context) error {
	return s.writer.probe(ctx)
}
