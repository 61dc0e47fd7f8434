package sqlite

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/buzz-lite/buzz-lite/storetest"
)

// TestSuite runs the behaviour every store shows (storetest) on SQLite, a
// fresh database file in t.TempDir() for each test.
func TestSuite(t *testing.T) {
	storetest.Run(t, func(t testing.TB, cfg storetest.Config) storetest.Store {
		return suiteStore{qtOpenWith(t, Options{
			Admins:                 cfg.Admins,
			Policy:                 cfg.Policy,
			ThreadRepliesInChannel: cfg.ThreadRepliesInChannel,
			RelayKey:               cfg.RelayKey,
			Now:                    cfg.Now,
		})}
	})
}

// suiteStore is a Store with what the suite asks beyond the relay's
// interface.
type suiteStore struct{ *Store }

func (s suiteStore) Backfill(ctx context.Context) (classified, waiting int, err error) {
	r, err := s.Store.Backfill(ctx)
	return r.Classified, r.Waiting, err
}

func (s suiteStore) Holds(ctx context.Context, id string) (bool, error) {
	key, err := hex.DecodeString(id)
	if err != nil {
		return false, fmt.Errorf("event id %q: %w", id, err)
	}
	var n int
	if err := s.readers.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE id = ?`, key).Scan(&n); err != nil {
		return false, fmt.Errorf("look up %s: %w", id, err)
	}
	return n > 0, nil
}

func (s suiteStore) Verify(ctx context.Context) error {
	rep, err := s.Check(ctx, false)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("check: %+v", rep)
	}
	return nil
}
