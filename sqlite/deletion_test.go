package sqlite

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Deletions in a long thread of few authors: the recount strategy of this
// store (threadRecent, issue 13). The deletion rules every store follows
// are storetest's (deletion.go).

// ttDelete has sg delete ids with one kind 5 at created_at at.
func ttDelete(t *testing.T, s *Store, sg testutil.Signer, at int64, ids ...string) *nostr.Event {
	t.Helper()
	tags := make([]nostr.Tag, len(ids))
	for i, id := range ids {
		tags[i] = ttE(id)
	}
	return ttIngest(t, s, sg.Event(t, 5, at, "", tags...))
}

// RL-6, CW-19, issue 13: a root whose newest replies (more than
// threadRecent reads at first) come from two authors, with ten other
// authors further back: deleting the newest reply recounts the root's
// participants from every author's newest reply, the same as the model.
func TestDeleteParticipantsLongThreadFewAuthors(t *testing.T) {
	s, sg, m := ttNewThread(t, 12)
	root := ttIngestAdd(t, s, m, sg[0].Event(t, 9, ttBase, "root", ttH(ttChan)), "")
	for i := 2; i < 12; i++ { // ten older authors, one reply each
		ttIngestAdd(t, s, m, sg[i].Event(t, 9, ttBase+int64(i), "older", ttH(ttChan), ttRootTag(root.ID)), root.ID)
	}
	var replies []*nostr.Event // then two authors, more than recentRows replies
	for i := range buzz.ThreadRecentRows + 40 {
		replies = append(replies, ttIngestAdd(t, s, m,
			sg[i%2].Event(t, 9, ttBase+100+int64(i), fmt.Sprint(i), ttH(ttChan), ttRootTag(root.ID)), root.ID))
	}
	ttCheckModel(t, s, m)
	for step := range 3 {
		i := len(replies) - 1 - step
		ttDelete(t, s, sg[i%2], ttBase+10_000+int64(step), replies[i].ID)
		m.Delete(replies[i].ID)
		ttCheckModel(t, s, m)
		got := ttMustRead(t, s, root.ID)
		if len(got.Participants) != 10 || !slices.Contains(got.Participants, sg[4].PK) || slices.Contains(got.Participants, sg[3].PK) {
			t.Fatalf("after deletion %d: participants %v, want authors 0, 1 and 11 down to 4", step, got.Participants)
		}
	}
}
