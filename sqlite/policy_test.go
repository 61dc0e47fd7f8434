package sqlite

// The write policy across a restart that closes writes (RL-6, RL-29); the
// policy every store applies in its ingest is storetest's (policy.go).

import (
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// RL-6, RL-29: with writes closed, an author who is no member anywhere
// still deletes their own events of no channel; a deletion naming nothing
// of theirs is an event of no channel like any other.
func TestClosedWritesOwnDeletion(t *testing.T) {
	former := testutil.NewSigner(t)
	open := buzz.DefaultPolicy()
	path := chPath(t)
	s := chOpen(t, path, Options{Policy: &open})
	note := ttIngest(t, s, former.Event(t, 1, 1_700_000_000, "from when writes were open"))
	s.Close()

	closed := open
	closed.OpenWrite = false
	s = chOpen(t, path, Options{Policy: &closed})
	storetest.Reject(t, s, former.Event(t, 5, 1_700_000_001, "", ttE(strings.Repeat("ab", 32))), buzz.ErrMembersOnly)
	ttIngest(t, s, former.Event(t, 5, 1_700_000_002, "", ttE(note.ID)))
	if storetest.Sees(t, s, buzz.Anonymous, note.ID) {
		t.Fatal("the deleted note is still served")
	}
}
