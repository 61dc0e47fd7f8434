package sqlite

import (
	"math"
	"strings"
	"testing"
)

// CW-25, issue 29 item 13: the web view's listing of channels by activity
// reads one range of channels_activity backwards from where the last page
// ended: no scan, no sort, so a page costs the same however many channels
// and events the community holds.
func TestChannelsByActivityPlan(t *testing.T) {
	s := ttOpen(t)
	for _, after := range [][2]int64{{math.MaxInt64, math.MaxInt64}, {1700000000, 12}} {
		plan := explain(t, s, channelsByActivitySQL, after[0], after[1], 50)
		if !strings.Contains(plan, "SEARCH channels USING INDEX channels_activity (last_message_at<?)") &&
			!strings.Contains(plan, "SEARCH channels USING INDEX channels_activity ((last_message_at,seq)<(?,?))") {
			t.Errorf("plan does not search channels_activity:\n%s", plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN") {
			t.Errorf("plan scans or sorts:\n%s", plan)
		}
	}
}

// Issue 29 item 13: the writer keeps channels.last_message_at with one
// step of the channel's primary key, and reads it again, when a deletion
// takes the message it names, with one seek into events_projection.
func TestLastMessagePlans(t *testing.T) {
	s := ttOpen(t)
	for name, q := range map[string]string{"raise": raiseLastMessageSQL, "reread": rereadLastMessageSQL} {
		plan := explain(t, s, q, int64(1), int64(1700000000))
		if !strings.Contains(plan, "SEARCH channels USING INTEGER PRIMARY KEY (rowid=?)") {
			t.Errorf("%s: plan does not find the channel by its number:\n%s", name, plan)
		}
		if name == "reread" && !strings.Contains(plan, "USING INDEX events_projection (channel=?)") {
			t.Errorf("%s: plan does not seek events_projection:\n%s", name, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN") {
			t.Errorf("%s: plan scans or sorts:\n%s", name, plan)
		}
	}
}

// RL-27a, RL-36: a deleted channel's subgroups are one range of
// channels_parent, not a scan of every channel.
func TestSubgroupPlans(t *testing.T) {
	s := ttOpen(t)
	plan := explain(t, s, childChannelsSQL, int64(1), 256)
	if !strings.Contains(plan, "USING COVERING INDEX channels_parent (parent=?)") || strings.Contains(plan, "SCAN") {
		t.Errorf("the subgroups of a channel are not read along channels_parent:\n%s", plan)
	}
}
