package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// TestSuite runs the behaviour every store shows (storetest) on
// PostgreSQL, a fresh database for each test.
func TestSuite(t *testing.T) {
	storetest.Run(t, func(t testing.TB, cfg storetest.Config) storetest.Store {
		return suiteOpen(t, pgtest.FreshDatabase(t), cfg)
	})
}

// suiteOpen opens the database at url as cfg says and closes it when the
// test ends.
func suiteOpen(t testing.TB, url string, cfg storetest.Config) suiteStore {
	t.Helper()
	s, err := Open(context.Background(), Options{
		URL:                    url,
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
	return suiteStore{Store: s, url: url}
}

// suiteStore is a Store with what the suite asks beyond the relay's
// interface.
type suiteStore struct {
	*Store
	url string
}

func (s suiteStore) Held(ctx context.Context, f nostr.Filter) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+eventSelect+` FROM events e`)
	if err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var cols eventColumns
		if err := rows.Scan(cols.dest()...); err != nil {
			return 0, fmt.Errorf("read events: %w", err)
		}
		ev, err := cols.event()
		if err != nil {
			return 0, err
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
	return suiteOpen(t, s.url, cfg)
}

// damageSQL is the SQL of each storetest.Harm.
var damageSQL = map[storetest.Harm]string{
	storetest.HarmReplyCount:   `UPDATE thread_metadata SET reply_count = reply_count + 1 WHERE seq = (SELECT min(seq) FROM thread_metadata)`,
	storetest.HarmParticipants: `UPDATE thread_metadata SET participants = NULL WHERE seq = (SELECT max(seq) FROM thread_metadata)`,
	storetest.HarmDropTags:     `DELETE FROM tags WHERE name = 't'`,
	storetest.HarmTagKind:      `UPDATE tags SET kind = 7 WHERE name = 'p'`,
	storetest.HarmStrayTag:     `INSERT INTO tags (name, value, created_at, seq, kind) VALUES ('x', 'stray', 1, 999999, 1)`,
}

// Damage writes past the store's write path: no write lock, no page
// version, no notification.
func (s suiteStore) Damage(ctx context.Context, harm storetest.Harm) error {
	q, ok := damageSQL[harm]
	if !ok {
		return fmt.Errorf("no damage %d", harm)
	}
	if _, err := s.pool.Exec(ctx, q); err != nil {
		return fmt.Errorf("damage %d: %w", harm, err)
	}
	return nil
}

// dumpQueries select every row of the tables a write changes, in a stable
// order.
var dumpQueries = []string{
	`SELECT seq, h, created_at, name, about, private, deleted_at, picture, parent FROM channels ORDER BY seq`,
	`SELECT channel, pubkey, role FROM members ORDER BY channel, pubkey`,
	`SELECT channel, code, event FROM invites ORDER BY channel, code, event`,
	`SELECT key, value FROM settings ORDER BY key`,
	`SELECT seq, id, pubkey, created_at, kind, tags, content, sig, channel, dkey, expires_at,
		deleted_at, parent, root, depth, broadcast, row_class, scope FROM events ORDER BY seq`,
	`SELECT name, value, created_at, seq, kind FROM tags ORDER BY seq, name, value`,
	`SELECT seq, reply_count, descendant_count, last_reply_at, participants FROM thread_metadata ORDER BY seq`,
}

func (s suiteStore) Dump(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, q := range dumpQueries {
		rows, err := s.pool.Query(ctx, q)
		if err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				rows.Close()
				return "", fmt.Errorf("%s: %w", q, err)
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					fmt.Fprintf(&b, "x'%x' ", bs)
				} else {
					fmt.Fprintf(&b, "%v ", v)
				}
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		b.WriteString("--\n")
	}
	return b.String(), nil
}

func (s suiteStore) Placement(ctx context.Context, id string) (storetest.Placement, bool, error) {
	key, err := hex.DecodeString(id)
	if err != nil {
		return storetest.Placement{}, false, fmt.Errorf("event id %q: %w", id, err)
	}
	var p storetest.Placement
	var depth *int32
	var parent, root []byte
	var channel *string
	var row int16
	err = s.pool.QueryRow(ctx, `SELECT e.depth, p.id, r.id, e.broadcast, e.row_class, c.h, e.deleted_at IS NOT NULL
		FROM events e
		LEFT JOIN events p ON p.seq = e.parent
		LEFT JOIN events r ON r.seq = e.root
		LEFT JOIN channels c ON c.seq = e.channel
		WHERE e.id = $1`, key).Scan(&depth, &parent, &root, &p.Broadcast, &row, &channel, &p.Deleted)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return p, false, nil
	case err != nil:
		return p, false, fmt.Errorf("placement of %s: %w", id, err)
	}
	p.Row = buzz.RowClass(row)
	if depth != nil {
		p.Classified, p.Depth = true, int64(*depth)
	}
	if channel != nil {
		p.Channel = *channel
	}
	if parent != nil {
		p.Parent = hex.EncodeToString(parent)
	}
	if root != nil {
		p.Root = hex.EncodeToString(root)
	}
	return p, true, nil
}
