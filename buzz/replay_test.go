package buzz_test

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	_ "modernc.org/sqlite"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-25, issue 29 item 9: the replay rank the stores compute in SQL is
// ReplayRank, kind by kind and depth by depth (an unclassified event's
// depth is NULL, 0 to ReplayRank).
func TestReplayRankSQL(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	query := "SELECT " + buzz.ReplayRankSQL("e") + " FROM (SELECT ? AS kind, ? AS depth) e"
	for _, kind := range []int{0, 1, 5, 7, 9, 11, 1111, 9000, 9001, 9002, 9005, 9007, 9008, 9009, 9021, 9022, 30023, 40003} {
		for _, depth := range []any{nil, int64(0), int64(1), int64(7), int64(buzz.MaxDepth)} {
			var got int64
			if err := db.QueryRow(query, kind, depth).Scan(&got); err != nil {
				t.Fatal(err)
			}
			d, _ := depth.(int64)
			if want := buzz.ReplayRank(kind, d); got != want {
				t.Errorf("kind %d depth %v: SQL ranks %d, ReplayRank %d", kind, depth, got, want)
			}
		}
	}
}

// RL-25, RL-36: within one second a channel is created before its invite
// codes, and a code before the joins that may name it and the posts of
// those it lets in, so that an import admits them as the relay did.
func TestReplayRankInvites(t *testing.T) {
	order := []int{buzz.KindCreateChannel, buzz.KindCreateInvite, buzz.KindJoin, 9}
	for i := 1; i < len(order); i++ {
		if a, b := buzz.ReplayRank(order[i-1], 0), buzz.ReplayRank(order[i], 0); a >= b {
			t.Errorf("kind %d ranks %d, not before kind %d (%d)", order[i-1], a, order[i], b)
		}
	}
}

// RL-34, issue 29 item 9: SortForReplay puts, within one second, a parent
// before its replies by the depths the set itself shows, whatever their
// ids, a reply whose parent the set lacks at depth 0, and sorts by
// created_at first.
func TestSortForReplay(t *testing.T) {
	a := testutil.NewSigner(t)
	h := nostr.Tag{"h", "0d8e7f6a-5b4c-4d3e-8f2a-1b0c9d8e7f6a"}
	evs := testutil.SameSecondThreads(t, a, testutil.NewSigner(t), h[1], 1000, 2, 3, 6)
	orphan := a.EventInBand(t, 0, 2, 9, 1000, "parent elsewhere", h, nostr.Tag{"e", "ff" + evs[0].ID[2:], "", "root"})
	earlier := a.EventInBand(t, 1, 2, 1, 999, "a second earlier")
	all := append(slices.Clone(evs), orphan, earlier)
	slices.Reverse(all)
	buzz.SortForReplay(all)
	testutil.ReplayedInOrder(t, all)
	if all[0].ID != earlier.ID {
		t.Fatalf("first %q, want the event a second earlier", all[0].Content)
	}
	at := slices.Index(all, orphan)
	for _, ev := range all[at+1:] {
		if ev.Kind == 9 && buzz.ParseThreadTags(ev.Tags).Parent == "" && ev.ID < orphan.ID {
			t.Fatalf("top-level %q sorts after the orphan reply %q with an id below it", ev.Content, orphan.Content)
		}
	}
}
