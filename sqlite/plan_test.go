package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
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
		q, ok, err = s.translate(context.Background(), tx, f, buzz.Anonymous, nil, false)
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
	s := openTest(t)
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
		{"#h + until + limit", nostr.Filter{Tags: nostr.TagMap{"h": {ch}}, Until: &until, Limit: 50}, []string{channelIndex, noSort}},
		{"authors + #h", nostr.Filter{Authors: []string{id}, Tags: nostr.TagMap{"h": {ch}}}, []string{"SEARCH e USING INDEX events_"}},
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
		{"kinds + authors", nostr.Filter{Authors: []string{id}, Kinds: []int{0}}, []string{"SEARCH e USING INDEX events_pubkey (pubkey=? AND kind=?)"}},
		{"kinds + authors, several", nostr.Filter{Authors: []string{id, id2}, Kinds: []int{0, 3, 10002}}, []string{"SEARCH e USING INDEX events_pubkey (pubkey=? AND kind=?)"}},
		{"kinds", nostr.Filter{Kinds: []int{1}}, []string{kindIndex}},
		{"since", nostr.Filter{Since: &since}, []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
		{"until", nostr.Filter{Until: &until}, []string{"SEARCH e USING INDEX events_created (created_at<?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := queryPlan(t, s, tc.f)
			for _, w := range tc.want {
				if neg, ok := strings.CutPrefix(w, "!"); ok {
					if strings.Contains(plan, neg) {
						t.Errorf("plan of %v contains %q:\n%s", tc.f, neg, plan)
					}
				} else if !strings.Contains(plan, w) {
					t.Errorf("plan of %v lacks %q:\n%s", tc.f, w, plan)
				}
			}
			if planScansEvents(plan) {
				t.Errorf("plan of %v scans events:\n%s", tc.f, plan)
			}
		})
	}

	// The empty filter is the one that reads everything, newest first.
	if plan := queryPlan(t, s, nostr.Filter{}); !planScansEvents(plan) {
		t.Errorf("plan of the empty filter does not scan events:\n%s", plan)
	}
}
