package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// RL-34, RL-13: Positions reads, in chunks continued by the composite
// cursor, exactly the (created_at, id) of what Query answers the same
// viewer: a private channel's events only for its members, no deleted
// event, same-second events in Query's order.
func TestPositionsMatchQuery(t *testing.T) {
	fx := newFDFixture(t)
	ctx := context.Background()
	viewers := []buzz.Viewer{buzz.Anonymous, buzz.Viewer(fx.owner.PK), buzz.Viewer(fx.member.PK), buzz.Viewer(fx.x.PK)}
	filters := map[string]nostr.Filter{
		"everything":       {},
		"kind 9":           {Kinds: []int{9}},
		"private channel":  {Tags: nostr.TagMap{"h": {ttChan}}},
		"both channels":    {Tags: nostr.TagMap{"h": {ttChan, ttChan2}}},
		"author":           {Authors: []string{fx.x.PK}},
		"mentions of a pk": {Tags: nostr.TagMap{"p": {fx.member.PK}}},
	}
	for name, f := range filters {
		for _, v := range viewers {
			all := f
			all.Limit = 1000
			evs, err := fx.s.Query(ctx, all, v)
			if err != nil {
				t.Fatal(err)
			}
			var want []buzz.Position
			for _, ev := range evs {
				want = append(want, buzz.Position{CreatedAt: int64(ev.CreatedAt), ID: ev.ID})
			}
			var got []buzz.Position
			chunk, before := f, ""
			chunk.Limit = 3
			for {
				ps, err := fx.s.Positions(ctx, chunk, v, before)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got = append(got, ps...)
				if len(ps) < chunk.Limit {
					break
				}
				last := ps[len(ps)-1]
				until := nostr.Timestamp(last.CreatedAt)
				chunk.Until, before = &until, last.ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s as %.8s: positions\n%v\nwant Query's\n%v", name, v, got, want)
			}
		}
	}
	owner, outsider := filterPositions(t, fx.s, nostr.Filter{}, buzz.Viewer(fx.owner.PK)), filterPositions(t, fx.s, nostr.Filter{}, buzz.Viewer(fx.x.PK))
	if len(owner) <= len(outsider) {
		t.Fatalf("the owner reads %d positions, an outsider %d: the fixture proves no scoping", len(owner), len(outsider))
	}
}

// filterPositions are all positions of f for v.
func filterPositions(t *testing.T, s *Store, f nostr.Filter, v buzz.Viewer) []buzz.Position {
	t.Helper()
	f.Limit = 1000
	ps, err := s.Positions(context.Background(), f, v, "")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// RL-34: the positions of a sync are read by the index Query's statement
// uses, with the cursor of a continued chunk, in the order of the answer:
// no scan of events and no sort for a channel, whatever the viewer.
func TestPositionPlans(t *testing.T) {
	fx := newFDFixture(t)
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
		{"authors", nostr.Filter{Authors: []string{fx.x.PK}, Limit: 1000}, "", []string{"SEARCH e USING INDEX events_pubkey (pubkey=?"}},
		{"#p", nostr.Filter{Tags: nostr.TagMap{"p": {fx.member.PK}}, Limit: 1000}, "", []string{"SEARCH t USING PRIMARY KEY (name=? AND value=?"}},
		{"since", nostr.Filter{Since: &until, Limit: 1000}, "", []string{"SEARCH e USING INDEX events_created (created_at>?)"}},
	} {
		for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(fx.member.PK)} {
			checkPlan(t, tc.name+" as "+string(v), positionPlan(t, fx.s, tc.f, v, tc.before), tc.want)
		}
	}
}

// positionPlan is the EXPLAIN QUERY PLAN of the statement Positions runs.
func positionPlan(t *testing.T, s *Store, f nostr.Filter, v buzz.Viewer, beforeID string) string {
	t.Helper()
	before, err := cursorKey(f, beforeID)
	if err != nil {
		t.Fatal(err)
	}
	var q sqlQuery
	err = s.readTx(context.Background(), func(tx *sql.Tx) error {
		var ok bool
		var err error
		if q, ok, err = s.translate(context.Background(), tx, f, v, before, positionSelect); err == nil && !ok {
			t.Fatalf("filter %v translated to nothing", f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return explain(t, s, q.sql, q.args...)
}
