package sqlite

import (
	"strings"
	"testing"
)

// CW-25: the channel listing of the web view reads channels by their
// number from where the last page ended, and each one's newest live
// message by one search of events_projection: no scan, no sort, so a page
// costs the same however many channels and events the community holds.
func TestChannelsAfterPlan(t *testing.T) {
	s := ttOpen(t)
	plan := explain(t, s, channelsAfterSQL, int64(0), 50)
	for _, want := range []string{
		"SEARCH c USING INTEGER PRIMARY KEY (rowid>?)",
		"SEARCH e USING INDEX events_projection (channel=?)",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN") {
		t.Errorf("plan scans or sorts:\n%s", plan)
	}
}
