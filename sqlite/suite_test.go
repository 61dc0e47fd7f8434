package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// TestSuite runs the behaviour every store shows (storetest) on SQLite, a
// fresh database file in t.TempDir() for each test.
func TestSuite(t *testing.T) {
	storetest.Run(t, func(t testing.TB, cfg storetest.Config) storetest.Store {
		return suiteOpen(t, filepath.Join(t.TempDir(), "buzz.db"), cfg)
	})
}

// suiteOpen opens the database at path as cfg says and closes it when the
// test ends: a failing Close fails the test.
func suiteOpen(t testing.TB, path string, cfg storetest.Config) suiteStore {
	t.Helper()
	s, err := Open(context.Background(), Options{
		Path:                   path,
		Schema:                 testutil.Schema(t),
		Admins:                 cfg.Admins,
		Policy:                 cfg.Policy,
		ThreadRepliesInChannel: cfg.ThreadRepliesInChannel,
		RelayKey:               cfg.RelayKey,
		Now:                    cfg.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return suiteStore{s}
}

// suiteStore is a Store with what the suite asks beyond the relay's
// interface.
type suiteStore struct{ *Store }

func (s suiteStore) Held(ctx context.Context, f nostr.Filter) (int, error) {
	rows, err := s.readers.QueryContext(ctx, `SELECT `+eventSelect+` FROM events e`)
	if err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return 0, fmt.Errorf("read events: %w", err)
		}
		if f.Matches(ev) {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	return n, nil
}

func (s suiteStore) Reopen(t testing.TB, cfg storetest.Config) storetest.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return suiteOpen(t, s.path, cfg)
}

// damageSQL is the SQL of each storetest.Harm.
var damageSQL = map[storetest.Harm]string{
	storetest.HarmReplyCount:   `UPDATE thread_metadata SET reply_count = reply_count + 1 WHERE seq = (SELECT min(seq) FROM thread_metadata)`,
	storetest.HarmParticipants: `UPDATE thread_metadata SET participants = NULL WHERE seq = (SELECT max(seq) FROM thread_metadata)`,
	storetest.HarmDropTags:     `DELETE FROM tags WHERE name = 't'`,
	storetest.HarmTagKind:      `UPDATE tags SET kind = 7 WHERE name = 'p'`,
	storetest.HarmStrayTag:     `INSERT INTO tags (name, value, created_at, seq, kind) VALUES ('x', 'stray', 1, 999999, 1)`,
}

// Damage writes through a connection of its own, behind the store's
// writer, as a damaged file would hold it.
func (s suiteStore) Damage(ctx context.Context, harm storetest.Harm) error {
	q, ok := damageSQL[harm]
	if !ok {
		return fmt.Errorf("no damage %d", harm)
	}
	db, err := sql.Open("sqlite", s.path)
	if err != nil {
		return fmt.Errorf("damage: %w", err)
	}
	_, err = db.ExecContext(ctx, q)
	if err = errors.Join(err, db.Close()); err != nil {
		return fmt.Errorf("damage %d: %w", harm, err)
	}
	return nil
}

func (s suiteStore) Dump(ctx context.Context) (string, error) {
	return dumpRows(ctx, s.Store, append(slices.Clone(snapshotQueries), accessQueries...)...)
}

func (s suiteStore) Placement(ctx context.Context, id string) (storetest.Placement, bool, error) {
	key, err := hex.DecodeString(id)
	if err != nil {
		return storetest.Placement{}, false, fmt.Errorf("event id %q: %w", id, err)
	}
	var p storetest.Placement
	var depth sql.NullInt64
	var parent, root []byte
	var channel sql.NullString
	err = s.readers.QueryRowContext(ctx, `SELECT e.depth, p.id, r.id, e.broadcast, e.row_class, c.h, e.deleted_at IS NOT NULL
		FROM events e
		LEFT JOIN events p ON p.seq = e.parent
		LEFT JOIN events r ON r.seq = e.root
		LEFT JOIN channels c ON c.seq = e.channel
		WHERE e.id = ?`, key).Scan(&depth, &parent, &root, &p.Broadcast, &p.Row, &channel, &p.Deleted)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return p, false, nil
	case err != nil:
		return p, false, fmt.Errorf("placement of %s: %w", id, err)
	}
	p.Classified, p.Depth, p.Channel = depth.Valid, depth.Int64, channel.String
	if parent != nil {
		p.Parent = hex.EncodeToString(parent)
	}
	if root != nil {
		p.Root = hex.EncodeToString(root)
	}
	return p, true, nil
}
