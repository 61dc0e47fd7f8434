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
// deep pages, with and without kinds, are an index range search in window
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
				query := windowRowsSQL(c.projection, cursor, kinds)
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
				if !strings.Contains(plan, want) || strings.Contains(plan, "TEMP B-TREE") || planScansEvents(plan) {
					t.Errorf("%s, cursor %v, %d kinds: plan\n%s\nwant %q and no sort", c.name, cursor, kinds, plan, want)
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
