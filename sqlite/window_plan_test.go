package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// explain returns the EXPLAIN QUERY PLAN lines of query with args.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	var plan []string
	err := s.readTx(context.Background(), func(tx *sql.Tx) error {
		rows, err := tx.Query("EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// Issue 4, CW-9, CW-13, CW-15: the window rows of both row modes, head and
// deep pages, with and without kinds and summaries, are an index range search in window
// order: no scan, no sort, so a page costs the same however many replies
// and events the channel holds.
func TestWindowQueryPlan(t *testing.T) {
	s := ttOpen(t)
	for _, c := range []struct {
		name       string
		projection bool
		index      string
	}{
		{"default mode", false, "events_toplevel"},
		{"projection mode", true, "events_projection"},
	} {
		for _, cursor := range []bool{false, true} {
			for _, kinds := range []int{0, 2} {
				for _, summaries := range []bool{false, true} {
					query := windowRowsSQL(c.projection, cursor, kinds, summaries)
					args := []any{int64(1), int64(1700000000), make([]byte, 32), int64(1700000000), 51}
					for k := range kinds {
						args = append(args, 9+k)
					}
					plan := explain(t, s, query, args...)
					want := "SEARCH e USING INDEX " + c.index + " (channel=?"
					if cursor {
						want += " AND created_at<?)"
					} else {
						want += ")"
					}
					// CW-19: each row's counters by its number, never a scan.
					if summaries && !strings.Contains(plan, "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)") {
						t.Errorf("%s, cursor %v, %d kinds: summaries not read by row number:\n%s", c.name, cursor, kinds, plan)
					}
					if !strings.Contains(plan, want) || strings.Contains(plan, "TEMP B-TREE") || planScansEvents(plan) || strings.Contains(plan, "SCAN t") {
						t.Errorf("%s, cursor %v, %d kinds, summaries %v: plan\n%s\nwant %q and no sort", c.name, cursor, kinds, summaries, plan, want)
					}
				}
			}
		}
	}
}

// Issue 4, RL-20: the replies of a thread root come from events_root in
// thread order (no sort); an inner event's subtree is walked by
// events_parent and its events read by their number: the cost is the
// subtree's, never the table's.
func TestThreadQueryPlan(t *testing.T) {
	s := ttOpen(t)
	for _, after := range []*buzz.Position{nil, {CreatedAt: 1700000000}, {CreatedAt: 1700000000, ID: strings.Repeat("ab", 32)}} {
		q := buzz.ThreadQuery{DepthLimit: 4, Limit: 100, After: after}
		query, args := threadSQL(1, 0, q, 1700000000)
		plan := explain(t, s, query, args...)
		if !strings.Contains(plan, "SEARCH e USING INDEX events_root (root=?") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("root thread, cursor %+v: plan\n%s", after, plan)
		}
		query, args = threadSQL(2, 1, q, 1700000000)
		plan = explain(t, s, query, args...)
		if !strings.Contains(plan, "USING COVERING INDEX events_parent (parent=?)") ||
			!strings.Contains(plan, "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)") || planScansEvents(plan) ||
			strings.Contains(plan, "events_created") {
			t.Errorf("inner thread, cursor %+v: plan\n%s", after, plan)
		}
	}
}

// Issue 15, CW-18, CW-19: the aux hops read tags_aux, which holds the aux
// kinds' `e` tags only, by target in keyset order (no sort), each event
// found by its number, which says whether a deletion names it (no second
// search of tags_aux), on the first keyset page and on a later one; a
// page's version is one search of page_versions.
func TestAuxQueryPlan(t *testing.T) {
	s := ttOpen(t)
	later := []any{int64(1700000000), `["` + strings.Repeat("ab", 32) + `"]`, make([]byte, 32), int64(1700000000), int64(7)}
	first := []any{int64(1700000000), `["` + strings.Repeat("ab", 32) + `"]`, auxStart.value, auxStart.createdAt, auxStart.seq}
	for name, query := range map[string]string{"hop 1": hop1SQL, "hop 2": hop2SQL} {
		for page, args := range map[string][]any{"first": first, "later": later} {
			plan := explain(t, s, query, args...)
			if !strings.Contains(plan, "SEARCH t USING COVERING INDEX tags_aux (value=?)") ||
				strings.Count(plan, "tags_aux") != 1 ||
				!strings.Contains(plan, "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)") ||
				strings.Contains(plan, "TEMP B-TREE") || planScansEvents(plan) {
				t.Errorf("%s, %s keyset page: plan\n%s", name, page, plan)
			}
		}
	}
	if plan := explain(t, s, pageVersionSQL, int64(1)); !strings.Contains(plan, "SEARCH page_versions USING INTEGER PRIMARY KEY (rowid=?)") {
		t.Errorf("page version: plan\n%s", plan)
	}
}
