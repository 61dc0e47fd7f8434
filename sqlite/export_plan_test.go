package sqlite

import (
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// RL-25, RL-27a, issue 29 item 9: an export page after the first, in the
// replay order, searches events_created from the second it starts in and
// sorts only within each second (the right part of the ORDER BY), never
// the whole table; a channel's export walks events_channel alike.
func TestExportPlans(t *testing.T) {
	s, _ := openCommunity(t, 100)
	channel := any(int64(1))
	for _, tc := range []struct {
		name    string
		f       buzz.ExportFilter
		channel any
		want    []string
	}{
		{"export", buzz.ExportFilter{}, nil, []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
		{"export with deleted", buzz.ExportFilter{WithDeleted: true}, nil, []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
		{"export of a channel", buzz.ExportFilter{Channel: "c"}, channel, []string{"USING INDEX events_channel (channel=? AND created_at>?)"}},
	} {
		_, next, args := exportSQL(tc.f, 1_800_000_000, tc.channel)
		plan := explain(t, s, next, append(args, int64(1_700_000_000), int64(2), make([]byte, 32), buzz.ExportPageSize)...)
		checkPlan(t, tc.name, plan, append(tc.want, "USE TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY", "!USE TEMP B-TREE FOR ORDER BY"))
	}
}
