package sqlite

import (
	"math"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// RL-35, RL-27a: each feed type is served from an index, newest first,
// without a sort or a scan, so that a feed costs what it serves and the
// streams its requester may read, however many events and channels the
// relay holds: activity merges ranges of events_feed, mentions and
// needs_action ranges of mentions_feed, one per stream, for every group
// size; a requester's streams come from members_pubkey (a relay admin's
// from channels_private); the events served are read by their number.
func TestFeedQueryPlans(t *testing.T) {
	s := ttOpen(t)
	head := []any{int64(1700000000), int64(1600000000), int64(math.MaxInt64), []byte{}, 20}
	pkey := tagValue(strings.Repeat("ab", 32))
	type plan struct {
		name, query string
		args        []any
		want        []string
	}
	var plans []plan
	for n := 1; n <= buzz.FeedArms; n *= 2 {
		streams := make([]any, n)
		for i := range streams {
			streams[i] = int64(i)
		}
		merge := "MERGE (UNION ALL)"
		if n == 1 {
			merge = "SEARCH"
		}
		plans = append(plans,
			plan{"activity", feedActivityQueries[n], append(append([]any{}, head...), streams...),
				[]string{merge, "SEARCH e USING INDEX events_feed (feed=? AND created_at>? AND created_at<?)"}},
			plan{"mentions", feedMentionQueries[n], append(append(append([]any{}, head...), pkey, int64(0)), streams...),
				[]string{merge, "SEARCH m USING COVERING INDEX mentions_feed (pubkey=? AND needs=? AND feed=? AND created_at>? AND created_at<?)",
					"SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}})
	}
	plans = append(plans,
		plan{"streams", feedStreamsSQL, []any{pkey}, []string{"SEARCH members USING COVERING INDEX members_pubkey (pubkey=?)"}},
		plan{"admin streams", feedAdminStreamsSQL, nil, []string{"SCAN channels USING INDEX channels_private"}},
		plan{"load", feedLoadSQL, []any{"[1,2,3]"}, []string{"SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"}})
	for _, c := range plans {
		plan := explain(t, s, c.query, c.args...)
		for _, want := range c.want {
			if !strings.Contains(plan, want) {
				t.Errorf("%s: plan\n%s\nwant %q", c.name, plan, want)
			}
		}
		if strings.Contains(plan, "TEMP B-TREE") || planScansEvents(plan) || strings.Contains(plan, "SCAN m") {
			t.Errorf("%s: plan\n%s\nsorts or scans", c.name, plan)
		}
	}
}
