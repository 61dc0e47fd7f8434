package sqlite

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Read scopes across processes (RL-13, RL-14): the access state another
// process changes reaches this one (access_version), for writes at once
// and for reads within the watcher's poll. The scopes every store keeps
// are storetest's (scope.go).

// scWait polls cond every few milliseconds until it holds, for at most 5 s.
func scWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// RL-13, RL-14: two stores on one file (as the relay and an import beside
// it): what one commits to the access state reaches the other, on its next
// write at once (its writer reads access_version in its transaction) and
// for reads within the watcher's poll.
func TestAccessStateAcrossProcesses(t *testing.T) {
	p := buzz.DefaultPolicy()
	p.OpenWrite = false
	opts := Options{Policy: &p}
	path := chPath(t)
	a := chOpen(t, path, opts)
	b := chOpen(t, path, opts)
	sg := testutil.SortedSigners(t, 3)
	owner, x, y := sg[0], sg[1], sg[2]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}

	// A creates a private channel; B's writer knows it at once: the owner
	// may write there (to a channel B did not know, with open writes off,
	// nobody could).
	ttIngest(t, a, ev(owner, 9007, ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, b, ev(owner, 9, ttH(ttChan)))
	// A makes x a member; B accepts x's message at once, y's not.
	ttIngest(t, a, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", x.PK}))
	msg := ttIngest(t, b, ev(x, 9, ttH(ttChan)))
	chReject(t, b, ev(y, 9, ttH(ttChan)), buzz.ErrNotMember)
	chExpect(t, b, ttChan, chWant(true, "", "", true, false, map[string]buzz.Role{owner.PK: buzz.RoleOwner, x.PK: buzz.RoleMember}))
	if !storetest.Sees(t, b, buzz.Viewer(x.PK), msg.ID) || storetest.Sees(t, b, buzz.Viewer(y.PK), msg.ID) {
		t.Fatal("B's reads do not follow the access state its writer read")
	}

	// A removes x; B, which writes nothing, learns it from its watcher.
	ttIngest(t, a, ev(owner, 9001, ttH(ttChan), nostr.Tag{"p", x.PK}))
	scWait(t, "B's community still has x as a member", func() bool {
		return b.Community().Channel(ttChan).Members[x.PK] == buzz.RoleNone
	})
	if b.Community().Version != a.Community().Version {
		t.Errorf("versions differ: A %d, B %d", a.Community().Version, b.Community().Version)
	}
	if storetest.Sees(t, b, buzz.Viewer(x.PK), msg.ID) {
		t.Error("B still serves x a private channel x was removed from")
	}
	chReject(t, b, ev(x, 9, ttH(ttChan)), buzz.ErrNotMember)
	// And the other way round: B's change reaches A's writer.
	ttIngest(t, b, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", y.PK}))
	ttIngest(t, a, ev(y, 9, ttH(ttChan)))
	if storetest.CommunityState(a.Community()) != storetest.CommunityState(b.Community()) {
		t.Errorf("A and B disagree:\n A %s\n B %s", storetest.CommunityState(a.Community()), storetest.CommunityState(b.Community()))
	}
}

// RL-13: a store does not serve the events of a private channel another
// process just created (an import beside the relay) under its own older
// state that does not know the channel: Query and Count judge what their
// snapshot holds by the state that snapshot holds, without waiting for
// the watcher. Both forms of the scope condition: nothing hidden yet
// (only open channels known), and some channels hidden.
func TestQueryScopeOtherProcessChannel(t *testing.T) {
	for _, known := range []string{"open only", "open and private"} {
		t.Run(known, func(t *testing.T) {
			path := chPath(t)
			a := chOpen(t, path, Options{})
			b := chOpen(t, path, Options{})
			sg := testutil.SortedSigners(t, 2)
			owner, outsider := sg[0], sg[1]
			ownerV, outV := buzz.Viewer(owner.PK), buzz.Viewer(outsider.PK)
			// B writes, so that its writer knows what A did so far.
			ttIngest(t, a, owner.Event(t, 9007, chT, "", ttH(ttChan2)))
			if known == "open and private" {
				ttIngest(t, a, owner.Event(t, 9007, chT+1, "", ttH(chC3), nostr.Tag{"private"}))
			}
			ttIngest(t, b, owner.Event(t, 9, chT+2, "", ttH(ttChan2)))
			if b.Community().Channel(ttChan2) == nil {
				t.Fatal("B does not know the open channel")
			}
			// A creates a private channel and posts there; B is asked at once.
			ttIngest(t, a, owner.Event(t, 9007, chT+3, "", ttH(ttChan), nostr.Tag{"private"}))
			secret := ttIngest(t, a, owner.Event(t, 9, chT+4, "secret", ttH(ttChan), ttE(strings.Repeat("ab", 32))))
			for _, f := range []nostr.Filter{
				{IDs: []string{secret.ID}},
				{Kinds: []int{9}},
				{Tags: nostr.TagMap{"e": {strings.Repeat("ab", 32)}}},
				{Tags: nostr.TagMap{"h": {ttChan}}},
			} {
				for _, v := range []buzz.Viewer{buzz.Anonymous, outV} {
					if got := storetest.QueryIDs(t, b, f, v); slices.Contains(got, secret.ID) {
						t.Errorf("%v as %q: B serves the private event", f, v)
					}
					want := int64(0)
					if f.Kinds != nil {
						want = 1 // B's own message in the open channel
					}
					if n := storetest.Count(t, b, f, v); n != want {
						t.Errorf("%v as %q: B counts %d, want %d", f, v, n, want)
					}
				}
				if got := storetest.QueryIDs(t, b, f, ownerV); !slices.Contains(got, secret.ID) {
					t.Errorf("%v: B does not serve the owner their private event", f)
				}
			}
		})
	}
}
