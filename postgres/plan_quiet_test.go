package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// RL-27a, RL-33: a quiet channel beside busy ones is read from its own
// index, at its head and by REQ, never by walking the whole table's time
// index back past every other channel's newer events (found by bench
// --postgres: a page of the quiet channel read 12,000 rows to return 52).
// Channel 1's events all come before the newest half of channels 2-4's, the shape
// in which the planner's guess that a channel's events are spread evenly
// over time fails.
func TestPlansQuietChannel(t *testing.T) {
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	ctx := context.Background()
	for _, fill := range []string{
		`INSERT INTO channels (h) VALUES ('quiet'), ('busy-a'), ('busy-b'), ('busy-c')`,
		`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, channel, depth, row_class, scope)
			SELECT sha256(int8send(g)), sha256(int8send(g % 100)), 1700000000 + g, 9, '[]', '', sha512(int8send(g)),
				c, CASE WHEN g % 7 = 0 THEN 0 ELSE 1 END, CASE WHEN g % 7 = 0 THEN 2 ELSE 0 END, c
			FROM generate_series(1, 120000) g,
				LATERAL (SELECT CASE WHEN g <= 60000 THEN 1 + g % 4 ELSE 2 + g % 3 END AS c) ch`,
		`UPDATE settings SET value = value + 1 WHERE key = 'access_version'`,
		`ANALYZE`,
	} {
		if _, err := s.pool.Exec(ctx, fill); err != nil {
			t.Fatalf("%s: %v", fill, err)
		}
	}
	if err := s.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	plans := []struct {
		name   string
		sql    sqlQuery
		usesIx string
	}{
		{"window head", mustWindow(t, buzz.WindowQuery{Limit: 50}, 1_800_000_000), "events_toplevel"},
		{"REQ by channel", mustTranslate(t, s.Store, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {"quiet"}}, Limit: 50}), "events_channel"},
	}
	for _, p := range plans {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		rows, err := conn.Query(ctx, "EXPLAIN "+p.sql.sql, p.sql.args...)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			lines = append(lines, line)
		}
		conn.Release()
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if plan := strings.Join(lines, "\n"); !strings.Contains(plan, p.usesIx) || strings.Contains(plan, "events_created") {
			t.Errorf("%s: want a plan driven by %s, not by the time index of every event:\n%s", p.name, p.usesIx, plan)
		}
	}
}
