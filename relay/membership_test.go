package relay

import (
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-36, RL-13, RL-34: over real connections, an accepted join makes the
// relay publish its own 9000 put-user and a leave its 9001 remove-user:
// delivered live to who may read the channel (anyone on an open channel,
// members on a private one, which a stranger's join with a live invite
// code enters), answered to a REQ, and in a NIP-77 set; a member's second
// join is refused with exactly "duplicate: already a member", and a
// stranger's join with a wrong code as any stranger's.
func TestMembershipEventsLive(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	relayPK := s.relay.PubKey()
	owner := s.client(t)
	member := s.connectAs(t, &f.member)
	outsider := s.connectAs(t, &f.outsider)
	anon := s.connectAs(t, nil)
	barrierTag := "barrier-" + newChannelID(t)
	issued := []int{buzz.KindPutUser, buzz.KindRemoveUser}
	for _, c := range []*session{member, outsider, anon} {
		mustSubscribe(t, c.rawClient, "open", nostr.Filter{Kinds: issued, Authors: []string{relayPK}, Tags: nostr.TagMap{"h": {f.open.h}}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
	}
	for _, c := range []*session{member, outsider} {
		mustSubscribe(t, c.rawClient, "priv", nostr.Filter{Kinds: issued, Authors: []string{relayPK}, Tags: nostr.TagMap{"h": {f.private.h}}, LimitZero: true})
	}
	newcomer := testutil.NewSigner(t)
	round := 0
	// step publishes req and requires every subscriber who may read
	// channel h (sub) to receive the relay's one event of kind naming the
	// request, and no one else anything.
	step := func(req *nostr.Event, sub string, kind int, readers ...*session) *nostr.Event {
		t.Helper()
		mustPublish(t, owner, req)
		round++
		barrier := f.ownerK.Event(t, 1, now(), fmt.Sprintf("barrier %d", round), nostr.Tag{"t", barrierTag})
		mustPublish(t, owner, barrier)
		var seen *nostr.Event
		for name, c := range map[string]*session{"member": member, "outsider": outsider, "anonymous": anon} {
			got := drainUntil(c.rawClient, barrier)
			if !slices.Contains(readers, c) {
				if len(got[sub]) != 0 {
					t.Fatalf("kind %d: %s received %d events of a channel it may not read", req.Kind, name, len(got[sub]))
				}
				continue
			}
			if len(got[sub]) != 1 {
				t.Fatalf("kind %d: %s received %d events on %q, want the relay's %d", req.Kind, name, len(got[sub]), sub, kind)
			}
			ev := got[sub][0]
			if ok, err := ev.CheckSignature(); !ok || err != nil || ev.PubKey != relayPK || ev.Kind != kind ||
				ev.Tags.FindWithValue("e", req.ID) == nil || ev.Tags.FindWithValue("p", req.PubKey) == nil {
				t.Fatalf("kind %d: %s received %v", req.Kind, name, ev)
			}
			seen = ev
		}
		return seen
	}

	put := step(newcomer.Event(t, buzz.KindJoin, now(), "", hTag(f.open.h)), "open", buzz.KindPutUser, member, outsider, anon)
	if role := put.Tags.FindWithValue("p", newcomer.PK); len(role) != 3 || role[2] != "member" {
		t.Fatalf("the relay's 9000 names %v, want the joiner as member", role)
	}
	mustReject(t, owner, newcomer.Event(t, buzz.KindJoin, now(), "again", hTag(f.open.h)), "duplicate: already a member")
	step(newcomer.Event(t, buzz.KindLeave, now(), "", hTag(f.open.h)), "open", buzz.KindRemoveUser, member, outsider, anon)

	// A private channel: a wrong code answers as no code does; a live one
	// lets the stranger in, and the relay's 9000 reaches members only.
	const refused = "restricted: no such channel, or it is private"
	mustReject(t, owner, newcomer.Event(t, buzz.KindJoin, now(), "", hTag(f.private.h)), refused)
	mustPublish(t, owner, f.ownerK.Event(t, buzz.KindCreateInvite, now(), "", hTag(f.private.h), nostr.Tag{"code", "welcome"}))
	mustReject(t, owner, newcomer.Event(t, buzz.KindJoin, now(), "", hTag(f.private.h), nostr.Tag{"code", "welcome!"}), refused)
	mustReject(t, owner, newcomer.Event(t, buzz.KindJoin, now(), "", hTag(f.none.h), nostr.Tag{"code", "welcome"}), refused)
	private := step(newcomer.Event(t, buzz.KindJoin, now(), "", hTag(f.private.h), nostr.Tag{"code", "welcome"}),
		"priv", buzz.KindPutUser, member)

	// Stored: a REQ answers them to a reader of the channel, and a NIP-77
	// sync of the same filter reconciles them.
	filter := nostr.Filter{Kinds: issued, Authors: []string{relayPK}}
	want := mustSubscribe(t, member.rawClient, "stored", filter)
	if len(want) != 3 || !slices.ContainsFunc(want, func(ev *nostr.Event) bool { return ev.ID == private.ID }) {
		t.Fatalf("REQ of the relay's membership events: %d events, want the 3 issued", len(want))
	}
	if got := mustSubscribe(t, outsider.rawClient, "stored", filter); len(got) != 2 {
		t.Fatalf("a non-member's REQ: %d events, want the open channel's 2", len(got))
	}
	sync := negSync(t, member.rawClient, "neg", filter, nil)
	if !slices.Equal(sync.haveNots, sortedIDs(want)) {
		t.Fatalf("NIP-77 set %v, want the REQ's %v", sync.haveNots, sortedIDs(want))
	}
}
