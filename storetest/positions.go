package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// RL-34, RL-13: Positions reads, in chunks continued by the composite
// cursor, exactly the (created_at, id) of what Query answers the same
// viewer: a private channel's events only for its members, no deleted
// event, same-second events in Query's order.
func testPositionsMatchQuery(t *testing.T, open Opener) {
	fx := newFDFixture(t, open)
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
func filterPositions(t *testing.T, s Store, f nostr.Filter, v buzz.Viewer) []buzz.Position {
	t.Helper()
	f.Limit = 1000
	ps, err := s.Positions(context.Background(), f, v, "")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
