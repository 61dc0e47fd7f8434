package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
// holds. The database is planDatabase's. Each statement's plan for its
// arguments is checked, and its generic plan (genericPlan) has no scan
// either.
func TestPlans(t *testing.T) {
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
	fillPlanDatabase(t, s.pool)
	if err := s.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	now := int64(1_800_000_000)
	author := planID(3)
	someIDs := []string{planID(planEvents / 2), planID(planEvents/2 + 1)}
	exportFirst, exportLater := exportSQL(buzz.ExportFilter{}, now, nil)
	exportLater.args[len(exportLater.args)-4] = int64(1700000000 + planEvents/2)
	exportLater.args[len(exportLater.args)-3] = int64(2)
	exportLater.args[len(exportLater.args)-2] = tagKey(someIDs[0])
	channel := int64(1)
	exportChannel, _ := exportSQL(buzz.ExportFilter{}, now, &channel)
	feedHead := []any{now, int64(math.MinInt64), int64(math.MaxInt64), []byte{}, 20}
	feedStreams := func(n int) []any {
		streams := make([]any, n)
		for i := range streams {
			streams[i] = int64(i)
		}
		return streams
	}
	authorKey, _ := hex.DecodeString(author)
	threadAfter := &buzz.Position{CreatedAt: 1700000000 + planEvents + 10, ID: planID(planEvents + 10)}
	plans := []struct {
		name   string
		sql    sqlQuery
		usesIx string
	}{
		{"window, default row mode", mustWindow(t, buzz.WindowQuery{Limit: 50}, now), "events_toplevel"},
		{"window, projection", mustWindow(t, buzz.WindowQuery{Limit: 50, Projection: true, Summaries: true}, now), "events_projection"},
		{"window, deep page", mustWindow(t, buzz.WindowQuery{Limit: 50,
			Before: &buzz.Position{CreatedAt: 1700000000 + planEvents/2, ID: someIDs[0]}}, now), "events_toplevel"},
		{"aux closure read ahead", mustAuxAhead(t, buzz.WindowQuery{Limit: 50, Aux: true}, now), "tags_aux"},
		{"aux closure", sqlQuery{sql: hop1SQL, args: []any{now, [][]byte{tagKey(someIDs[0]), tagKey(someIDs[1])}, []byte{}, int64(0), int64(0)}}, "tags_aux"},
		{"query #p", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"p": {author}}, Limit: 100}), "Scan Backward using tags_pkey"},
		{"query #p, an author rarely named", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"p": {planID(4)}}, Limit: 100}), "tags_pkey"},
		{"query #p of two", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"p": {planID(4), planID(5)}}, Limit: 100}), "tags_pkey"},
		{"query authors", mustTranslate(t, s.Store, nostr.Filter{Authors: []string{author}, Limit: 100}), "events_pubkey"},
		{"query authors + kinds", mustTranslate(t, s.Store, nostr.Filter{Authors: []string{author}, Kinds: []int{9}, Limit: 100}), "events_pubkey"},
		{"query ids", mustTranslate(t, s.Store, nostr.Filter{IDs: someIDs}), "events_id_key"},
		{"query #h", mustTranslate(t, s.Store, nostr.Filter{Tags: nostr.TagMap{"h": {"ch1"}}, Limit: 100}), "Index Scan Backward using events_channel"},
		{"query kinds + #h", mustTranslate(t, s.Store, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {"ch1"}}, Limit: 100}), "events_channel"},
		{"query kinds, a common one", mustTranslate(t, s.Store, nostr.Filter{Kinds: []int{9}, Limit: 100}), "Index Scan Backward using events_kind"},
		{"query kinds, a rare one", mustTranslate(t, s.Store, nostr.Filter{Kinds: []int{30023}, Limit: 100}), "Index Scan Backward using events_kind"},
		{"export", exportFirst, "events_created"},
		{"channels by activity", sqlQuery{sql: channelsByActivitySQL, args: []any{int64(math.MaxInt64), int64(math.MaxInt64), 50}}, "channels_activity"},
		{"channels by activity, a later page", sqlQuery{sql: channelsByActivitySQL, args: []any{int64(1700000000 + planEvents/2), int64(100), 50}}, "channels_activity"},
		{"export, a later page", exportLater, "events_created"},
		{"export of a channel", exportChannel, "events_channel"},
		{"feed mentions", sqlQuery{sql: feedMentionQueries[1], args: append(append(slices.Clone(feedHead), tagKey(author), false), feedStreams(1)...)}, "mentions_feed"},
		{"feed mentions, 16 streams", sqlQuery{sql: feedMentionQueries[16], args: append(append(slices.Clone(feedHead), tagKey(author), false), feedStreams(16)...)}, "mentions_feed"},
		{"feed activity", sqlQuery{sql: feedActivityQueries[1], args: append(slices.Clone(feedHead), feedStreams(1)...)}, "events_feed"},
		{"feed activity, 16 streams", sqlQuery{sql: feedActivityQueries[16], args: append(slices.Clone(feedHead), feedStreams(16)...)}, "events_feed"},
		{"feed streams", sqlQuery{sql: feedStreamsSQL, args: []any{authorKey}}, "members_pubkey"},
		{"feed streams of a relay admin", sqlQuery{sql: feedAdminStreamsSQL}, "channels_private"},
		{"subgroups of a deleted channel", sqlQuery{sql: childChannelsSQL, args: []any{int64(7), 256}}, "channels_parent"},
		{"thread of a root", threadSQL(1, 0, buzz.ThreadQuery{DepthLimit: 4, Limit: 100}, now), "events_root"},
		{"thread of a root, a later page", threadSQL(1, 0, buzz.ThreadQuery{DepthLimit: 4, Limit: 100, After: threadAfter}, now), "events_root"},
		{"thread below an inner event", threadSQL(planEvents+1, 1, buzz.ThreadQuery{DepthLimit: 4, Limit: 100}, now), "events_parent"},
		{"thread of a long root", threadSQL(6, 0, buzz.ThreadQuery{DepthLimit: 4, Limit: 100}, now), "events_root"},
		{"root's newest replies", sqlQuery{sql: newestInThreadSQL, args: []any{int64(6), 20}}, "Index Scan Backward using events_root"},
		{"thread below an inner event, a later page", threadSQL(planEvents+1, 1, buzz.ThreadQuery{DepthLimit: 4, Limit: 100, After: threadAfter}, now), "events_parent"},
	}
	// These take the rows in the index's order, so that a LIMIT stops the
	// range early, with no sort of every row it matched (events_kind,
	// events_channel and events_root, keyed (group, created_at), leave an
	// incremental sort of each second's ties); the window's and the feed's
	// read backward an index keyed (group, created_at, id DESC).
	ordered := map[string]bool{"window, default row mode": true, "window, projection": true, "window, deep page": true, "query #h": true, "query kinds + #h": true, "query kinds, a common one": true, "query kinds, a rare one": true,
		"feed activity": true, "feed activity, 16 streams": true, "feed mentions": true, "feed mentions, 16 streams": true,
		"thread of a long root": true, "root's newest replies": true}
	generic := genericConn(t, s.url)
	for _, p := range plans {
		if plan := genericPlan(t, generic, p.sql.sql); len(planScans(plan)) > 0 {
			t.Errorf("%s: want a generic plan without a scan of a table that grows:\n%s", p.name, plan)
		} else if ordered[p.name] && fullSort.MatchString(plan) {
			t.Errorf("%s: want a generic plan that takes the rows in the index's order, without a sort:\n%s", p.name, plan)
		}
		plan := explain(t, s.pool, p.sql.sql, p.sql.args...)
		if !strings.Contains(plan, p.usesIx) || len(planScans(plan)) > 0 {
			t.Errorf("%s: want a plan driven by %s, without a scan of a table that grows:\n%s", p.name, p.usesIx, plan)
		}
		if ordered[p.name] && fullSort.MatchString(plan) {
			t.Errorf("%s: want the rows in the index's order, without a sort:\n%s", p.name, plan)
		}
	}
	for _, st := range feedTriggerStatements(t) {
		args := []any{int64(planEvents / 2)}
		if strings.Contains(st, "$2") {
			args = append(args, tagKey(author))
		}
		if plan := explain(t, s.pool, st, args...); len(planScans(plan)) > 0 {
			t.Errorf("feed trigger: want a plan without a scan of a table that grows:\n%s\n%s", st, plan)
		}
	}
}

// feedTriggerRow is a trigger's reference to its row: NEW.seq or OLD.seq
// becomes $1, the tag's value $2, a kind 9.
var feedTriggerRow = strings.NewReplacer("NEW.seq", "$1::bigint", "OLD.seq", "$1::bigint",
	"NEW.value", "$2::bytea", "OLD.value", "$2::bytea", "NEW.kind", "9")

// feedTriggerStatements are the statements of the trigger functions of
// feedStreamsMigration (RL-27a: they run inside the writer's statements,
// whose plans do not show them), each with its row made parameters, an
// INSERT's as its SELECT.
func feedTriggerStatements(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, body := range strings.Split(feedStreamsMigration, "$$")[1:] {
		body, ok := strings.CutPrefix(strings.TrimSpace(body), "BEGIN")
		if !ok {
			continue
		}
		for _, st := range strings.Split(body, ";") {
			st = strings.TrimSpace(st)
			if strings.HasPrefix(st, "INSERT") {
				st = "SELECT" + strings.SplitN(st, "SELECT", 2)[1]
				st, _, _ = strings.Cut(st, "ON CONFLICT")
			}
			if strings.HasPrefix(st, "SELECT") || strings.HasPrefix(st, "UPDATE") || strings.HasPrefix(st, "DELETE") {
				out = append(out, feedTriggerRow.Replace(st))
			}
		}
	}
	if len(out) != 5 {
		t.Fatalf("%d statements in the feed's triggers, want 5: %q", len(out), out)
	}
	return out
}

// planDatabase is what the plan tests' database holds, filled by SQL:
// 2000 channels, 200 of them ("ch1" to "ch200": channel number n is
// "ch<n>") of messages with a reaction after every fourth, each message
// naming one of 1000 authors in a `p` tag (author 3 in every tenth); 2000
// of the messages are thread roots, each with 5 replies and a reply below
// each of those, and one root (event 6) has 300 replies by 3 authors;
// addressable events, deletions by id and by address, members and page
// versions, every table in created_at order as events arrive; then
// analyzed. Event number g up to planEvents has id planID(g) and pubkey
// planID(g % 1000).
var planDatabase = []string{
	`INSERT INTO channels (h) SELECT 'ch' || g FROM generate_series(1, 200) g`,
	`INSERT INTO channels (h) SELECT 'quiet' || g FROM generate_series(1, 1800) g`,
	// A quarter of the quiet channels are subgroups of the busy ones.
	`UPDATE channels SET parent = 1 + seq % 200 WHERE seq > 200 AND seq % 4 = 0`,
	`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, channel, depth, row_class, scope)
		SELECT sha256(int8send(g)), sha256(int8send(g % 1000)), 1700000000 + g,
			CASE WHEN g % 5 = 0 THEN 7 ELSE 9 END, '[]', '', sha512(int8send(g)), 1 + g % 200,
			CASE WHEN g % 5 = 0 THEN NULL ELSE 0 END, CASE WHEN g % 5 = 0 THEN 0 ELSE 2 END, 1 + g % 200
		FROM generate_series(1, ` + strconv.Itoa(planEvents) + `) g`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'e', convert_to(encode(sha256(int8send(g - 1)), 'hex'), 'UTF8'), 1700000000 + g, g, 7
		FROM generate_series(5, ` + strconv.Itoa(planEvents) + `, 5) g`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'p', convert_to(encode(sha256(int8send(CASE WHEN g % 10 = 3 THEN 3 ELSE g % 1000 END)), 'hex'), 'UTF8'),
			1700000000 + g, g, 9
		FROM generate_series(1, ` + strconv.Itoa(planEvents) + `) g WHERE g % 5 <> 0`,
	// Replies k = 1..10000 (event planEvents + k) below root 5 * (k % 2000)
	// + 1, and replies 10001..20000 below reply k - 10000.
	`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, channel, parent, root, depth, row_class, scope)
		SELECT sha256(int8send(n)), sha256(int8send(g % 1000)), 1700000000 + n, 9, '[]', '', sha512(int8send(n)),
			1 + r % 200, CASE WHEN g <= 10000 THEN r ELSE n - 10000 END, r, CASE WHEN g <= 10000 THEN 1 ELSE 2 END, 1, 1 + r % 200
		FROM generate_series(1, 20000) g,
			LATERAL (SELECT ` + strconv.Itoa(planEvents) + ` + g AS n, 5 * ((CASE WHEN g <= 10000 THEN g ELSE g - 10000 END) % 2000) + 1 AS r) x`,
	`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, channel, parent, root, depth, row_class, scope)
		SELECT sha256(int8send(n)), sha256(int8send(g % 3)), 1700200000 + g, 9, '[]', '', sha512(int8send(n)), 7, 6, 6, 1, 1, 7
		FROM generate_series(1, 300) g, LATERAL (SELECT 300000 + g AS n) x`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'e', p.id, e.created_at, e.seq, 9 FROM events e JOIN events p ON p.seq = e.parent`,
	// Addressable events of kind 30023, d tag "d<g>", and deletions
	// (kind 5) of messages by id and of addressable events by address.
	`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, dkey, row_class)
		SELECT sha256(int8send(n)), sha256(int8send(g % 1000)), 1700000000 + 50 * g, 30023, '[]', '', sha512(int8send(n)),
			convert_to('d' || g, 'UTF8'), 0
		FROM generate_series(1, 1000) g, LATERAL (SELECT 400000 + g AS n) x`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'd', dkey, created_at, seq, kind FROM events WHERE dkey IS NOT NULL`,
	`INSERT INTO events (id, pubkey, created_at, kind, tags, content, sig, row_class)
		SELECT sha256(int8send(n)), sha256(int8send(g % 1000)), 1700000000 + 100 * g, 5, '[]', '', sha512(int8send(n)), 0
		FROM generate_series(1, 1000) g, LATERAL (SELECT 500000 + g AS n) x`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'e', convert_to(encode(sha256(int8send(50 * (seq - min(seq) OVER ()) + 1)), 'hex'), 'UTF8'), created_at, seq, 5
		FROM events WHERE kind = 5`,
	`INSERT INTO tags (name, value, created_at, seq, kind)
		SELECT 'a', convert_to('30023:' || encode(pubkey, 'hex') || ':d' || (seq - min(seq) OVER () + 1), 'UTF8'), created_at, seq, 5
		FROM events WHERE kind = 5`,
	`INSERT INTO members (channel, pubkey, role)
		SELECT c, sha256(int8send(m)), 1 FROM generate_series(1, 200) c, generate_series(1, 20) m`,
	`INSERT INTO page_versions (channel, version) SELECT seq, 1 FROM channels`,
	// The feed's streams of the messages filled by SQL (their mentions
	// the tags' trigger wrote).
	`UPDATE events SET feed = feed_stream(channel) WHERE kind IN (9, 11) AND channel IS NOT NULL`,
	// The rows in the order a relay writes them, its events' arrival (the
	// planner weighs how a table's order follows an index's), numbers kept.
	`CREATE TEMPORARY TABLE arrived_events AS SELECT * FROM events ORDER BY created_at, seq`,
	`CREATE TEMPORARY TABLE arrived_tags AS SELECT * FROM tags ORDER BY created_at, seq`,
	`TRUNCATE events, tags, thread_metadata, invites`,
	`INSERT INTO events OVERRIDING SYSTEM VALUE SELECT * FROM arrived_events`,
	`INSERT INTO tags SELECT * FROM arrived_tags`,
	`SELECT setval(pg_get_serial_sequence('events', 'seq'), (SELECT max(seq) FROM events))`,
	`INSERT INTO thread_metadata (seq, reply_count, descendant_count, last_reply_at, updated_at)
		SELECT parent, count(*), count(*), max(created_at), max(created_at) FROM events WHERE parent IS NOT NULL GROUP BY parent`,
	// Each channel's last message, as the writer keeps it.
	`UPDATE channels c SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		WHERE e.channel = c.seq AND e.row_class >= 1 AND e.deleted_at IS NULL), 0)`,
	// The channels filled by SQL are in the access state the store reads
	// next (a REQ's #h names a channel by its number from it).
	`UPDATE settings SET value = value + 1 WHERE key = 'access_version'`,
	`ANALYZE`,
}

// fillPlanDatabase fills the store's database with planDatabase.
func fillPlanDatabase(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, fill := range planDatabase {
		if _, err := pool.Exec(context.Background(), fill); err != nil {
			t.Fatalf("%s: %v", fill, err)
		}
	}
}

// explain is the plan PostgreSQL chooses for query with args, as EXPLAIN
// prints it.
func explain(t *testing.T, q queryer, query string, args ...any) string {
	t.Helper()
	rows, err := q.Query(context.Background(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	return strings.Join(lines, "\n")
}

// fullSort matches a plan's sort of every row below it (an incremental
// sort only orders the ties of a presorted key).
var fullSort = regexp.MustCompile(`(?m)^\s*(->\s+)?Sort\s+\(cost`)

// grownTables are the tables that grow with the events stored (and the
// NIP-98 tokens of the last minutes): a plan
// must search them, never read them whole. (settings holds a few keys.)
var grownTables = []string{"events", "tags", "thread_metadata", "channels", "members", "page_versions", "nip98_tokens", "mentions"}

// planScans are the lines of plan that read a table of grownTables whole.
func planScans(plan string) []string {
	var scans []string
	for _, line := range strings.Split(plan, "\n") {
		for _, table := range grownTables {
			if strings.Contains(line, "Seq Scan on "+table+" ") || strings.HasSuffix(line, "Seq Scan on "+table) {
				scans = append(scans, strings.TrimSpace(line))
			}
		}
	}
	return scans
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
	sq, err := windowSQL(1, q, now, q.Limit+1)
	if err != nil {
		t.Fatal(err)
	}
	return sq
}

// mustAuxAhead is the first hop of the aux closure of a window page of
// channel 1 read ahead (auxAheadSQL).
func mustAuxAhead(t *testing.T, q buzz.WindowQuery, now int64) sqlQuery {
	t.Helper()
	sq, err := auxAheadSQL(1, q, now)
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
