package sqlite

import (
	"math"
	"strings"
	"testing"
)

// RL-35, RL-27a: each feed type is served from an index, newest first,
// without a sort or a scan, so that a page of its walk costs the same
// however many events and channels the relay holds: mentions and
// needs_action walk the requester's `p` entries of the tag index; activity
// merges one events_kind range per kind, with no list of channels; the
// events served are read by their number.
func TestFeedQueryPlans(t *testing.T) {
	s := ttOpen(t)
	walkArgs := []any{int64(1700000000), int64(1600000000), int64(math.MaxInt64), int64(math.MaxInt64), feedPageRows}
	pkey := tagValue(strings.Repeat("ab", 32))
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string
	}{
		{"mentions", feedMentionsQuery, append(walkArgs, pkey),
			[]string{"SEARCH t USING PRIMARY KEY (name=? AND value=? AND created_at>? AND created_at<?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"needs_action", feedNeedsActionQuery, append(walkArgs, pkey),
			[]string{"SEARCH t USING PRIMARY KEY (name=? AND value=? AND created_at>? AND created_at<?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"activity", feedActivityQuery, []any{int64(1700000000), int64(1600000000), int64(math.MaxInt64), []byte{}, feedPageRows},
			[]string{"MERGE (UNION ALL)", "SEARCH e USING INDEX events_kind (kind=? AND created_at>? AND created_at<?)"}},
		{"load", feedLoadSQL, []any{"[1,2,3]"},
			[]string{"SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}},
	} {
		plan := explain(t, s, c.query, c.args...)
		for _, want := range c.want {
			if !strings.Contains(plan, want) {
				t.Errorf("%s: plan\n%s\nwant %q", c.name, plan, want)
			}
		}
		if strings.Contains(plan, "TEMP B-TREE") || planScansEvents(plan) || strings.Contains(plan, "SCAN t") {
			t.Errorf("%s: plan\n%s\nsorts or scans", c.name, plan)
		}
	}
}
