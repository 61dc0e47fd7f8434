package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// queryPlan returns the EXPLAIN QUERY PLAN lines of the statement Query
// runs for f.
func queryPlan(t *testing.T, s *Store, f nostr.Filter) string {
	t.Helper()
	var q sqlQuery
	err := s.readTx(context.Background(), func(tx *sql.Tx) error {
		var ok bool
		var err error
		q, ok, err = s.translateIn(context.Background(), tx, f, buzz.Anonymous, nil, rawSelect)
		if err != nil || !ok {
			t.Fatalf("filter %v translated to nothing (%v)", f, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return explain(t, s, q.sql, q.args...)
}

// checkPlan fails t unless plan (of what) contains every substring of want,
// none of those marked "!x", and does not scan events.
func checkPlan(t *testing.T, what, plan string, want []string) {
	t.Helper()
	for _, w := range want {
		if neg, ok := strings.CutPrefix(w, "!"); ok {
			if strings.Contains(plan, neg) {
				t.Errorf("plan of %s contains %q:\n%s", what, neg, plan)
			}
		} else if !strings.Contains(plan, w) {
			t.Errorf("plan of %s lacks %q:\n%s", what, w, plan)
		}
	}
	if planScansEvents(plan) {
		t.Errorf("plan of %s scans events:\n%s", what, plan)
	}
}

// planLines splits a plan into its lines.
func planLines(plan string) []string { return strings.Split(plan, "\n") }

// planScansEvents reports whether a plan reads the whole events table (or
// the whole of one of its indexes) rather than searching it.
func planScansEvents(plan string) bool {
	for _, line := range planLines(plan) {
		if line == "SCAN e" || strings.HasPrefix(line, "SCAN e ") {
			return true
		}
	}
	return false
}

// RL-3 and the issue "EXPLAIN QUERY PLAN of the REQ-by-channel query uses the
// composite index": every filter Query translates is driven by the index
// that fits it. A channel filter walks events_channel in the order of the
// answer (no TEMP B-TREE sort); tag filters search the tags primary key;
// ids use events_id, authors events_pubkey, kinds events_kind; only the
// empty filter scans events.
func TestQueryPlans(t *testing.T) {
	// A migrated database lists its indexes in another order, and without
	// statistics SQLite settles a tie between two indexes by that order.
	t.Run("fresh", func(t *testing.T) { testQueryPlans(t, openTest(t)) })
	t.Run("migrated from version 6", func(t *testing.T) {
		path := mgNewDB(t)
		mgDowngradeToV6(t, path)
		s, _ := mgMigrated(t, path)
		testQueryPlans(t, s)
	})
}

func testQueryPlans(t *testing.T, s *Store) {
	ch := "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	ch2 := "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b12"
	a := testutil.NewSigner(t)
	for _, h := range []string{ch, ch2} {
		if err := s.Ingest(context.Background(), a.Event(t, 9, 1000, "x", nostr.Tag{"h", h})); err != nil {
			t.Fatal(err)
		}
	}
	since, until := nostr.Timestamp(5), nostr.Timestamp(5000)
	id := strings.Repeat("ab", 32)
	id2 := strings.Repeat("cd", 32)

	const (
		channelIndex = "USING INDEX events_channel (channel=?"
		tagsKey      = "SEARCH t USING PRIMARY KEY (name=? AND value=?"
		idIndex      = "SEARCH e USING INDEX events_id (id=?)"
		pubkeyIndex  = "SEARCH e USING INDEX events_pubkey (pubkey=?"
		kindIndex    = "SEARCH e USING INDEX events_kind (kind=?"
		noSort       = "!TEMP B-TREE"
	)
	for _, tc := range []struct {
		name string
		f    nostr.Filter
		want []string // substrings the plan must contain; "!x": must not
	}{
		// The issue: REQ by channel.
		{"#h", nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, []string{channelIndex, noSort}},
		{"kinds + #h", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}}, []string{channelIndex, noSort}},
		{"kinds + #h + since/until", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}, Since: &since, Until: &until},
			[]string{"USING INDEX events_channel (channel=? AND created_at>? AND created_at<?)", noSort}},
		{"kinds + #h + until + limit (REQ deep)", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}, Until: &until, Limit: 50},
			[]string{"USING INDEX events_channel (channel=? AND created_at<?)", noSort}},
		{"kinds + #h + since", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}, Since: &since},
			[]string{"USING INDEX events_channel (channel=? AND created_at>?)", noSort}},
		{"#h + until + limit", nostr.Filter{Tags: nostr.TagMap{"h": {ch}}, Until: &until, Limit: 50}, []string{channelIndex, noSort}},
		{"authors + #h", nostr.Filter{Authors: []string{id}, Tags: nostr.TagMap{"h": {ch}}}, []string{"SEARCH e USING INDEX events_"}},
		// The channel drives, not the index an author's kinds name.
		{"authors + kinds + #h", nostr.Filter{Authors: []string{id}, Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}}, []string{channelIndex, "!events_pubkey"}},
		{"two channels", nostr.Filter{Tags: nostr.TagMap{"h": {ch, ch2}}}, []string{channelIndex}},

		// Tag filters: the exact (name, value) key of the tags table.
		// One value of one tag: walked newest first in the index itself, so
		// a LIMIT ends the scan early (only same-second ties are sorted).
		{"#e", nostr.Filter{Tags: nostr.TagMap{"e": {id}}}, []string{tagsKey, "!" + channelIndex, "!TEMP B-TREE FOR ORDER BY", "!LIST SUBQUERY"}},
		{"#e two values", nostr.Filter{Tags: nostr.TagMap{"e": {id, id2}}}, []string{tagsKey}},
		{"#e + since", nostr.Filter{Tags: nostr.TagMap{"e": {id}}, Since: &since}, []string{"SEARCH t USING PRIMARY KEY (name=? AND value=? AND created_at>?)"}},
		{"#p + kinds", nostr.Filter{Tags: nostr.TagMap{"p": {id}}, Kinds: []int{1}}, []string{tagsKey, "!" + kindIndex, "!TEMP B-TREE FOR ORDER BY"}},
		{"#t text value", nostr.Filter{Tags: nostr.TagMap{"t": {"nostr"}}}, []string{tagsKey}},
		{"#h + #e + kinds (reactions in a channel)", nostr.Filter{Tags: nostr.TagMap{"h": {ch}, "e": {id}}, Kinds: []int{7}}, []string{tagsKey, "!" + channelIndex}},

		// Ids, authors, kinds.
		{"ids", nostr.Filter{IDs: []string{id}}, []string{idIndex}},
		{"ids + kinds", nostr.Filter{IDs: []string{id, id2}, Kinds: []int{1}}, []string{idIndex, "!" + kindIndex}},
		{"ids + authors", nostr.Filter{IDs: []string{id}, Authors: []string{id2}}, []string{idIndex}},
		{"authors", nostr.Filter{Authors: []string{id}}, []string{pubkeyIndex}},
		// Only a second's ties are sorted: events_pubkey has no id.
		{"kinds + authors", nostr.Filter{Authors: []string{id}, Kinds: []int{0}}, []string{"SEARCH e USING INDEX events_pubkey (pubkey=? AND kind=?)", "!TEMP B-TREE FOR ORDER BY"}},
		{"kinds + authors, several", nostr.Filter{Authors: []string{id, id2}, Kinds: []int{0, 3, 10002}}, []string{"SEARCH e USING INDEX events_pubkey (pubkey=? AND kind=?)"}},
		{"kinds", nostr.Filter{Kinds: []int{1}}, []string{kindIndex, noSort}},
		{"since", nostr.Filter{Since: &since}, []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
		{"until", nostr.Filter{Until: &until}, []string{"SEARCH e USING INDEX events_created (created_at<?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkPlan(t, fmt.Sprint(tc.f), queryPlan(t, s, tc.f), tc.want)
		})
	}

	// The empty filter is the one that reads everything, newest first.
	if plan := queryPlan(t, s, nostr.Filter{}); !planScansEvents(plan) {
		t.Errorf("plan of the empty filter does not scan events:\n%s", plan)
	}
}

// growingTables are the tables that grow with the community's traffic:
// events, their tags, and the NIP-98 tokens of the last minutes.
var growingTables = []string{"events", "tags", "nip98_tokens"}

// sourceNames finds each table of tables under the names a plan gives it in
// query: its own and every alias (`FROM events e`, `JOIN tags AS t`).
var sourceNames = regexp.MustCompile(`(?i)(?:\bFROM|\bJOIN|\bUPDATE|\bINTO|,)\s*(` + strings.Join(growingTables, "|") + `)\b(?:\s+(?:AS\s+)?([a-z_]\w*))?`)

// notAlias are the words that may follow a table name without naming it.
var notAlias = []string{"WHERE", "SET", "INDEXED", "NOT", "JOIN", "LEFT", "RIGHT", "FULL", "INNER", "CROSS",
	"NATURAL", "ON", "USING", "GROUP", "ORDER", "LIMIT", "VALUES", "DEFAULT", "UNION", "EXCEPT", "INTERSECT",
	"WINDOW", "RETURNING", "HAVING", "FROM"}

// tableScans returns the lines of plan, the plan of query, that read the
// whole of a growing table (or the whole of one of its indexes): a SCAN,
// with or without an index; an automatic index or a Bloom filter, which
// SQLite builds by reading the whole table first.
func tableScans(query, plan string) []string {
	names := map[string]bool{}
	for _, table := range growingTables {
		names[table] = true
	}
	for _, m := range sourceNames.FindAllStringSubmatch(query, -1) {
		if m[2] != "" && !slices.Contains(notAlias, strings.ToUpper(m[2])) {
			names[m[2]] = true
		}
	}
	var scans []string
	for _, line := range planLines(plan) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "SCAN" && names[f[1]],
			len(f) >= 4 && f[0] == "SEARCH" && names[f[1]] && f[3] == "AUTOMATIC",
			len(f) >= 4 && f[0] == "BLOOM" && f[2] == "ON" && names[f[3]]:
			scans = append(scans, line)
		}
	}
	return scans
}

// openCommunity opens a store in a fresh directory holding a generated
// community (gen.Default with topLevel messages per channel: about 37
// events each), imported as `buzz-lite import` does.
func openCommunity(tb testing.TB, topLevel int) (*Store, *gen.Community) {
	tb.Helper()
	c, err := gen.Generate(gen.Options{TopLevel: topLevel})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Open(context.Background(), Options{Path: filepath.Join(tb.TempDir(), "community.db"), Schema: testutil.Schema(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	for i := 0; i < len(c.Events); i += 500 {
		if _, err := s.ImportBatch(context.Background(), c.Events[i:min(i+500, len(c.Events))]); err != nil {
			tb.Fatal(err)
		}
	}
	return s, c
}

// RL-27a, issue 13 finding 1: no statement the writer prepares reads the
// whole of events or tags, whatever it is given: each is a search of an
// index, so its cost never grows with the database. The statements come
// from the writer's own list (writeStmts.list), so that one added later is
// checked too. Besides them the writer runs only loadCommunity's reads of
// channels, members and settings and its checkpoints. The plans are taken
// on a realistic database as the store keeps it (it never runs ANALYZE: no
// sqlite_stat1), and again after an ANALYZE (an operator's sqlite3 shell),
// since statistics change what SQLite picks.
func TestWriterPlans(t *testing.T) {
	s, _ := openCommunity(t, 100)
	var stat1 int
	if err := s.readers.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'`).Scan(&stat1); err != nil {
		t.Fatal(err)
	}
	if stat1 != 0 {
		t.Fatal("the store keeps sqlite_stat1 now: say so above")
	}
	// EXPLAIN binds NULL to every parameter the driver is given a value
	// for; it wants one for each, and ignores the rest.
	params := make([]any, 32)
	// The check itself sees a scan under an alias, along an index, of
	// tags, and lets searches pass.
	for query, scans := range map[string]bool{
		`SELECT count(*) FROM events e WHERE e.content = ?`:                                       true,
		`SELECT seq FROM events INDEXED BY events_pubkey WHERE kind = ?`:                          true,
		`SELECT seq FROM tags AS t WHERE t.kind = ?`:                                              true,
		`SELECT seq FROM events WHERE id = ?`:                                                     false,
		`SELECT e.id FROM tags t JOIN events e ON e.seq = t.seq WHERE t.name = ? AND t.value = ?`: false,
		`DELETE FROM nip98_tokens WHERE expires + 0 < ?`:                                          true,
		`DELETE FROM nip98_tokens WHERE expires < ?`:                                              false,
	} {
		if plan := explain(t, s, query, params...); (len(tableScans(query, plan)) > 0) != scans {
			t.Fatalf("tableScans of\n%s\nwith plan\n%s\nsays %v, want %v", query, plan, !scans, scans)
		}
	}
	var stmts writeStmts
	for _, state := range []string{"as the store keeps it", "after ANALYZE"} {
		if state == "after ANALYZE" {
			if err := s.writer.do(context.Background(), func(tx *writeTx) error {
				_, err := s.writer.conn.ExecContext(tx.ctx, "ANALYZE")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.readers.QueryRow(`SELECT count(*) FROM sqlite_stat1 WHERE tbl IN ('events', 'tags')`).Scan(&stat1); err != nil || stat1 == 0 {
				t.Fatalf("ANALYZE left no statistics of events and tags (%d rows, %v)", stat1, err)
			}
		}
		for _, st := range stmts.list() {
			plan := explain(t, s, st.sql, params...)
			if scans := tableScans(st.sql, plan); len(scans) > 0 {
				t.Errorf("%s, the writer's statement\n%s\nreads a whole table: %q; its plan:\n%s", state, st.sql, scans, plan)
			}
		}
		// Issue 15: the triggers that keep page_versions run inside the
		// writer's statements, whose plans do not show them.
		for name, query := range triggerQueries(t, s) {
			plan := explain(t, s, query, params...)
			if scans := tableScans(query, plan); len(scans) > 0 {
				t.Errorf("%s, trigger %s's\n%s\nreads a whole table: %q; its plan:\n%s", state, name, query, scans, plan)
			}
			// Every event a trigger reads is one it names: by number or id.
			for _, line := range planLines(plan) {
				if strings.HasPrefix(line, "SEARCH ") && !strings.Contains(line, "INTEGER PRIMARY KEY (rowid=?)") &&
					!strings.Contains(line, "INDEX events_id (id=?)") {
					t.Errorf("%s, trigger %s's\n%s\nsearches a range: %q; its plan:\n%s", state, name, query, line, plan)
				}
			}
		}
	}
}

// triggerRow is a trigger's reference to the row it fires for.
var triggerRow = regexp.MustCompile(`\b(NEW|OLD)\.\w+`)

// triggerQueries returns, by trigger name, the query of every trigger of
// the schema: the SELECT its INSERT writes, with the row it fires for
// made parameters.
func triggerQueries(t *testing.T, s *Store) map[string]string {
	t.Helper()
	rows, err := s.readers.Query(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			t.Fatal(err)
		}
		if feedTriggers[name] {
			continue
		}
		_, query, ok := strings.Cut(body, "INSERT INTO page_versions (channel, version)")
		if query, _, ok = strings.Cut(query, "ON CONFLICT"); !ok {
			t.Fatalf("trigger %s writes no page version: %s", name, body)
		}
		out[name] = triggerRow.ReplaceAllString(query, "?")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the schema has no triggers")
	}
	return out
}

// feedTriggers are the triggers that keep the home feed's streams
// (schema.sql, RL-35), which TestFeedTriggerPlans checks.
var feedTriggers = map[string]bool{"mentions_insert": true, "mentions_tag_delete": true,
	"mentions_event_deleted": true, "mentions_event_delete": true, "channels_feed": true}

// RL-27a, RL-35: the statements of the triggers that keep the feed's
// streams, which run inside the writer's statements, read no whole table:
// a mention's event by its number, a deleted event's mentions by its
// number, and a channel whose state changes its own events only.
func TestFeedTriggerPlans(t *testing.T) {
	s := ttOpen(t)
	rows, err := s.readers.Query(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			t.Fatal(err)
		}
		if !feedTriggers[name] {
			continue
		}
		seen++
		_, stmts, _ := strings.Cut(body, " BEGIN")
		stmts, _, _ = strings.Cut(stmts, "END")
		for _, st := range strings.Split(stmts, ";") {
			if st = strings.TrimSpace(st); st == "" {
				continue
			}
			if _, sel, ok := strings.Cut(st, "INSERT OR IGNORE INTO mentions (seq, pubkey, needs, feed, created_at, id)"); ok {
				st = sel
			}
			query := triggerRow.ReplaceAllString(st, "?")
			plan := explain(t, s, query, make([]any, strings.Count(query, "?"))...)
			if scans := tableScans(query, plan); len(scans) > 0 || !strings.Contains(plan, "SEARCH") {
				t.Errorf("trigger %s's\n%s\nreads a whole table: %q; its plan:\n%s", name, query, scans, plan)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != len(feedTriggers) {
		t.Fatalf("%d feed triggers in the schema, want %d", seen, len(feedTriggers))
	}
}
