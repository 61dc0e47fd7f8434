package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// queryPlan returns the EXPLAIN QUERY PLAN lines of the statement Query
// runs for f.
func queryPlan(t *testing.T, s *Store, f nostr.Filter) string {
	t.Helper()
	var plan []string
	err := s.readTx(context.Background(), func(tx *sql.Tx) error {
		q, ok, err := s.translate(context.Background(), tx, f, false)
		if err != nil || !ok {
			t.Fatalf("filter %v translated to nothing (%v)", f, err)
		}
		rows, err := tx.Query("EXPLAIN QUERY PLAN "+q.sql, q.args...)
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

func TestPrintPlans(t *testing.T) {
	s := openTest(t)
	ch := "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	a := testutil.NewSigner(t)
	if err := s.Ingest(context.Background(), a.Event(t, 9, 1000, "x", nostr.Tag{"h", ch})); err != nil {
		t.Fatal(err)
	}
	since := nostr.Timestamp(5)
	id := strings.Repeat("ab", 32)
	for _, f := range []nostr.Filter{
		{Tags: nostr.TagMap{"e": {id}}},
		{Tags: nostr.TagMap{"p": {id}}, Kinds: []int{1}},
		{Kinds: []int{1}},
		{Authors: []string{id}},
		{Authors: []string{id}, Kinds: []int{0}},
		{IDs: []string{id}},
		{},
		{Tags: nostr.TagMap{"h": {ch}}},
		{Tags: nostr.TagMap{"h": {ch}}, Kinds: []int{9}},
		{Tags: nostr.TagMap{"h": {ch}}, Kinds: []int{9}, Since: &since, Until: &since},
		{Tags: nostr.TagMap{"h": {ch}, "e": {id}}, Kinds: []int{7}},
		{Tags: nostr.TagMap{"e": {id}}, Since: &since},
	} {
		t.Logf("%v\n%s", f, queryPlan(t, s, f))
	}
}
