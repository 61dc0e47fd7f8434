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

// RL-34: the positions of a sync are read by the index Query's statement
// uses, with the cursor of a continued chunk, in the order of the answer:
// no scan of events and no sort for a channel, whatever the viewer.
func TestPositionPlans(t *testing.T) {
	s := ttOpen(t)
	owner, member, x := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	// A private channel with a member, an open one.
	ttIngest(t, s, owner.Event(t, 9007, ttBase, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9000, ttBase+1, "", ttH(ttChan), nostr.Tag{"p", member.PK}))
	ttIngest(t, s, owner.Event(t, 9, ttBase+2, "", ttH(ttChan2)))
	until := nostr.Timestamp(ttBase + 1000)
	before := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name   string
		f      nostr.Filter
		before string
		want   []string
	}{
		{"#h", nostr.Filter{Tags: nostr.TagMap{"h": {ttChan}}, Limit: 1000}, "", []string{"USING INDEX events_channel (channel=?", "!TEMP B-TREE"}},
		{"#h continued", nostr.Filter{Tags: nostr.TagMap{"h": {ttChan}}, Until: &until, Limit: 1000}, before, []string{"USING INDEX events_channel (channel=? AND created_at<?)", "!TEMP B-TREE"}},
		{"kinds", nostr.Filter{Kinds: []int{9}, Limit: 1000}, "", []string{"SEARCH e USING INDEX events_kind (kind=?"}},
		{"authors", nostr.Filter{Authors: []string{x.PK}, Limit: 1000}, "", []string{"SEARCH e USING INDEX events_pubkey (pubkey=?"}},
		{"#p", nostr.Filter{Tags: nostr.TagMap{"p": {member.PK}}, Limit: 1000}, "", []string{"SEARCH t USING PRIMARY KEY (name=? AND value=?"}},
		{"since", nostr.Filter{Since: &until, Limit: 1000}, "", []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
	} {
		for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(member.PK)} {
			checkPlan(t, tc.name+" as "+string(v), positionPlan(t, s, tc.f, v, tc.before), tc.want)
		}
	}
}

// positionPlan is the EXPLAIN QUERY PLAN of the statement Positions runs.
func positionPlan(t *testing.T, s *Store, f nostr.Filter, v buzz.Viewer, beforeID string) string {
	t.Helper()
	before, err := buzz.CursorKey(f, beforeID)
	if err != nil {
		t.Fatal(err)
	}
	var q sqlQuery
	err = s.readTx(context.Background(), func(tx *sql.Tx) error {
		var ok bool
		var err error
		if q, ok, err = s.translateIn(context.Background(), tx, f, v, before, positionSelect); err == nil && !ok {
			t.Fatalf("filter %v translated to nothing", f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return explain(t, s, q.sql, q.args...)
}
