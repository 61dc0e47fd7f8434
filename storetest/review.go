package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

const (
	rvOpen    = "1a2b3c4d-0000-4000-8000-000000000001"
	rvPrivate = "1a2b3c4d-0000-4000-8000-000000000002"
	rvNew     = "1a2b3c4d-0000-4000-8000-000000000003"
)

// RL-6, RL-8, RL-10, RL-14: the write rules deletions, reactions and
// self-removals cannot slip past.
func testWriteRuleHoles(t *testing.T, open Opener) {
	owner, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	// The outsider may post events of no channel (RL-29), not to channels.
	closed := buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAnyone, Allowed: map[string]bool{outsider.PK: true}}
	s := qtOpenWith(t, open, Config{Policy: &closed})
	ttIngest(t, s, owner.Event(t, 9007, 1700000000, "", ttH(rvOpen)))
	ttIngest(t, s, owner.Event(t, 9007, 1700000001, "", ttH(rvPrivate), nostr.Tag{"private"}))
	secret := ttIngest(t, s, owner.Event(t, 9, 1700000002, "secret", ttH(rvPrivate)))

	// A deletion naming the author's channel-less note does not create a
	// channel, nor post into one the author may not write to.
	note := ttIngest(t, s, outsider.Event(t, 1, 1700000003, "note"))
	Reject(t, s, outsider.Event(t, 5, 1700000004, "", ttH(rvNew), ttE(note.ID)), buzz.ErrNotMember)
	if s.Community().Channel(rvNew) != nil {
		t.Fatal("a deletion created a channel")
	}
	Reject(t, s, outsider.Event(t, 5, 1700000005, "spam", ttH(rvPrivate), ttE(note.ID)), buzz.ErrNotMember)

	// A reaction carrying the h tag of a channel its author writes to, to
	// a private event it may not read, is answered and stored as one to an
	// event not stored (RL-29): in the channel of its h tag, not the
	// private one.
	ttIngest(t, s, owner.Event(t, 9000, 1700000005, "", ttH(rvOpen), nostr.Tag{"p", outsider.PK}))
	ttIngest(t, s, outsider.Event(t, 9, 1700000006, "in the open", ttH(rvOpen)))
	for _, target := range []string{secret.ID, note.ID[:63] + "0"} {
		if scope := scAdmit(t, s, outsider.Event(t, 7, 1700000006, "+", ttH(rvOpen), ttE(target))); scope != rvOpen {
			t.Fatalf("reaction in %s to %s: scope %q", rvOpen, target, scope)
		}
	}

	// A non-member cannot post a removal of themselves into a channel, nor
	// learn that a private one exists (RL-29).
	Reject(t, s, outsider.Event(t, 9001, 1700000007, "spam", ttH(rvPrivate), nostr.Tag{"p", outsider.PK}), buzz.ErrChannelNotFound)
	Reject(t, s, outsider.Event(t, 9001, 1700000007, "spam", ttH(rvOpen), nostr.Tag{"p", owner.PK}), buzz.ErrNotChannelAdmin)

	// The author still deletes their own event in its channel, also after
	// a removal, and nothing lands in a deleted channel.
	ttIngest(t, s, owner.Event(t, 9000, 1700000008, "", ttH(rvPrivate), nostr.Tag{"p", outsider.PK}))
	mine := ttIngest(t, s, outsider.Event(t, 9, 1700000009, "mine", ttH(rvPrivate)))
	ttIngest(t, s, owner.Event(t, 9001, 1700000010, "", ttH(rvPrivate), nostr.Tag{"p", outsider.PK}))
	ttIngest(t, s, outsider.Event(t, 5, 1700000011, "", ttH(rvPrivate), ttE(mine.ID)))
	ttIngest(t, s, owner.Event(t, 9008, 1700000012, "", ttH(rvPrivate)))
	Reject(t, s, owner.Event(t, 5, 1700000013, "", ttH(rvPrivate), ttE(secret.ID)), buzz.ErrChannelDeleted)
}

// CW-3, CW-18, RL-20, NIP-40: the window judges access in its own snapshot;
// a cached page stops being served when an event on it expires; a
// channel-less root has no replies but has its aux.
func testWindowSnapshotAccessAndExpiry(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := testutil.NewClock(1700000000)
	s := qtOpen(t, open, clock)
	owner, other := testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, 1700000000, "", ttH(rvPrivate), nostr.Tag{"private"}))
	page, err := s.Window(ctx, buzz.WindowQuery{Channel: rvPrivate, Limit: 5})
	if err != nil || !page.Unreadable || len(page.Rows) != 0 {
		t.Fatalf("anonymous window of a private channel: %+v, %v", page, err)
	}
	if page, err = s.Window(ctx, buzz.WindowQuery{Channel: rvNew, Limit: 5}); err != nil || !page.Unreadable {
		t.Fatalf("window of a channel that does not exist: %+v, %v", page, err)
	}

	row := ttIngest(t, s, owner.Event(t, 9, 1700000001, "row", ttH(rvOpen)))
	ttIngest(t, s, other.Event(t, 7, 1700000002, "+", ttE(row.ID), nostr.Tag{"expiration", strconv.Itoa(1700000100)}))
	q := buzz.WindowQuery{Channel: rvOpen, Limit: 5, Aux: true}
	if page, err = s.Window(ctx, q); err != nil || len(page.Aux) != 1 {
		t.Fatalf("before the expiration: %+v, %v", page, err)
	}
	clock.Set(1700000100)
	if page, err = s.Window(ctx, q); err != nil || len(page.Aux) != 0 {
		t.Fatalf("after the expiration, before any purge: %d aux events (%v)", len(page.Aux), err)
	}

	note := ttIngest(t, s, owner.Event(t, 1, 1700000003, "note"))
	react := ttIngest(t, s, other.Event(t, 7, 1700000004, "+", ttE(note.ID)))
	th, err := s.Thread(ctx, buzz.ThreadQuery{Root: note.ID, DepthLimit: 3, Limit: 10, Aux: true})
	if err != nil || len(th.Replies) != 0 || len(th.Aux) != 1 || th.Aux[0].ID != react.ID {
		t.Fatalf("thread of a channel-less note: %+v, %v", th, err)
	}
}
