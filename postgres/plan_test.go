package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// planEvents is how many events the plan test's database holds: enough
// that a scan of a whole table costs the planner more than an index.
const planEvents = 100_000

// The statements of the hot read paths, and the pages of an export
// (RL-33), are driven by their indexes, never a scan of the events or the
// tags (RL-27a): a page costs the same however many events the database
// holds. The database is filled by SQL, 200
// channels of messages with a reaction after every fourth, each message
// naming one of 1000 authors in a `p` tag, and analyzed.
func TestPlans(t *testing.T) {
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	ctx := context.Background()
	for _, fill := range []string{
		`INSERT INTO channels (h) SELECT 'ch' || g FROM generate_series(1, 200) g`,
		`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, channel, depth, row_class, scope)
			SELECT sha256(int8send(g)), sha256(int8send(g % 1000)), 1700000000 + g,
				CASE WHEN g % 5 = 0 THEN 7 ELSE 9 END, '[]', '', sha512(int8send(g)), 1 + g % 200,
				CASE WHEN g % 5 = 0 THEN NULL ELSE 0 END, CASE WHEN g % 5 = 0 THEN 0 ELSE 2 END, 1 + g % 200
			FROM generate_series(1, ` + strconv.Itoa(planEvents) + `) g`,
		`INSERT INTO tags (name, value, created_at, seq, kind)
			SELECT 'e', convert_to(encode(sha256(int8send(g - 1)), 'hex'), 'UTF8'), 1700000000 + g, g, 7
			FROM generate_series(5, ` + strconv.Itoa(planEvents) + `, 5) g`,
		`INSERT INTO tags (name, value, created_at, seq, kind)
			SELECT 'p', convert_to(encode(sha256(int8send(g % 1000)), 'hex'), 'UTF8'), 1700000000 + g, g, 9
			FROM generate_series(1, ` + strconv.Itoa(planEvents) + `) g WHERE g % 5 <> 0`,
		`ANALYZE`,
	} {
		if _, err := s.pool.Exec(ctx, fill); err != nil {
			t.Fatalf("%s: %v", fill, err)
		}
	}
	now := int64(1_800_000_000)
	author := planID(3)
	someIDs := []string{planID(planEvents / 2), planID(planEvents/2 + 1)}
	exportFirst, exportLater := exportSQL(buzz.ExportFilter{}, now, nil)
	exportLater.args[len(exportLater.args)-3] = int64(1700000000 + planEvents/2)
	exportLater.args[len(exportLater.args)-2] = tagKey(someIDs[0])
	channel := int64(1)
	exportChannel, _ := exportSQL(buzz.ExportFilter{}, now, &channel)
	plans := []struct {
		name   string
		sql    sqlQuery
		usesIx string
	}{
		{"window, default row mode", mustWindow(t, buzz.WindowQuery{Limit: 50}, now), "events_toplevel"},
		{"window, projection", mustWindow(t, buzz.WindowQuery{Limit: 50, Projection: true, Summaries: true}, now), "events_projection"},
		{"window, deep page", mustWindow(t, buzz.WindowQuery{Limit: 50,
			Before: &buzz.Position{CreatedAt: 1700000000 + planEvents/2, ID: someIDs[0]}}, now), "events_toplevel"},
		{"aux closure", sqlQuery{sql: hop1SQL, args: []any{now, [][]byte{tagKey(someIDs[0]), tagKey(someIDs[1])}, []byte{}, int64(0), int64(0)}}, "tags_aux"},
		{"query #p", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"p": {author}}, Limit: 100}), "Scan Backward using tags_pkey"},
		{"query #p of two", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"p": {author, planID(4)}}, Limit: 100}), "tags_pkey"},
		{"query authors", mustTranslate(t, s.Store, nostr.Filter{Authors: []string{author}, Limit: 100}), "events_pubkey"},
		{"query ids", mustTranslate(t, s.Store, nostr.Filter{IDs: someIDs}), "events_id_key"},
		{"export", exportFirst, "events_created"},
		{"export, a later page", exportLater, "events_created"},
		{"export of a channel", exportChannel, "events_channel"},
		{"feed mentions", sqlQuery{sql: feedMentionsQuery, args: []any{now, int64(0), int64(1 << 62), int64(1 << 62), 200, tagKey(author)}}, "tags_pkey"},
	}
	for _, p := range plans {
		var lines []string
		rows, err := s.pool.Query(ctx, "EXPLAIN "+p.sql.sql, p.sql.args...)
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
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, p.usesIx) || strings.Contains(plan, "Seq Scan on events") || strings.Contains(plan, "Seq Scan on tags") {
			t.Errorf("%s: want a plan driven by %s, without a scan of events or tags:\n%s", p.name, p.usesIx, plan)
		}
	}
}

// planID is the id (and pubkey) the fill gives number g: the SHA-256 of
// its 8 bytes, big-endian (int8send).
func planID(g uint64) string {
	b := binary.BigEndian.AppendUint64(nil, g)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// mustWindow is the statement of a window page of channel 1.
func mustWindow(t *testing.T, q buzz.WindowQuery, now int64) sqlQuery {
	t.Helper()
	sq, err := windowSQL(1, q, now)
	if err != nil {
		t.Fatal(err)
	}
	return sq
}

// mustTranslate is the statement of a REQ filter read by a member of no
// channel.
func mustTranslate(t *testing.T, s *Store, f nostr.Filter) sqlQuery {
	t.Helper()
	q, ok := s.translate(f, s.Community(), buzz.Viewer(planID(7)), nil, eventSelect)
	if !ok {
		t.Fatalf("filter %v matches nothing", f)
	}
	return q
}
