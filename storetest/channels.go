package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Channels, membership and community settings (issue 3): what the
// lifecycle's rules refuse leaves nothing (RL-10), who may create
// channels, the relay-signed group state (RL-11), write access (RL-14),
// 9005 by channel admins (RL-6) and the thread_replies_in_channel setting
// and its configuration across restarts (RL-15). Helpers start with "ch".

// Channels of the lifecycle tests besides ttChan and ttChan2.
const (
	chC3 = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
	chC4 = "3f2504e0-4f89-41d3-9a0c-0305e82c3302"
	chC5 = "3f2504e0-4f89-41d3-9a0c-0305e82c3303"
)

// chWant is the expected state of a channel.
func chWant(created bool, name, about string, private, deleted bool, members map[string]buzz.Role) string {
	if members == nil {
		members = map[string]buzz.Role{}
	}
	return ChannelState(&buzz.Channel{Created: created, Name: name, About: about, Private: private, Deleted: deleted, Members: members})
}

// chExpect requires channel h of s's published state to be want.
func chExpect(t testing.TB, s Store, h, want string) {
	t.Helper()
	if got := ChannelState(s.Community().Channel(h)); got != want {
		t.Fatalf("channel %s:\n got  %s\n want %s", h[:8], got, want)
	}
}

// RL-10: lifecycle events that the rules refuse come back with the exact
// rejection and leave nothing: the store's whole Dump and the community
// as they were.
func testChannelLifecycleRejections(t *testing.T, open Opener) {
	relayAdmin := testutil.NewSigner(t)
	s := open(t, Config{Admins: []string{relayAdmin.PK}})
	sg := testutil.SortedSigners(t, 4)
	owner, admin, member, outsider := sg[0], sg[1], sg[2], sg[3]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}
	// ttChan is private with an owner, an admin and a member; ttChan2 is
	// open with the same; chC3 exists only because an event named it.
	for _, h := range []string{ttChan, ttChan2} {
		ttIngest(t, s, ev(owner, 9007, ttH(h)))
		ttIngest(t, s, ev(owner, 9000, ttH(h), nostr.Tag{"p", admin.PK, "admin"}, nostr.Tag{"p", member.PK, "member"}))
	}
	ttIngest(t, s, ev(owner, 9002, ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, ev(outsider, 9, ttH(chC3)))
	if ch := s.Community().Channel(chC3); ch == nil || ch.Created {
		t.Fatalf("implicit channel: %s", ChannelState(ch))
	}

	cases := []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"create: id not a channel id", ev(owner, 9007, ttH("Gen eral")), buzz.ErrNotChannelID}, // CW-2
		{"create: uppercase UUID", ev(owner, 9007, ttH(strings.ToUpper(chC4))), buzz.ErrChannelID},
		{"create: exists", ev(outsider, 9007, ttH(ttChan)), buzz.ErrChannelExists},
		{"create: exists implicitly", ev(outsider, 9007, ttH(chC3)), buzz.ErrChannelExists},
		{"create: no h tag", ev(owner, 9007), buzz.ErrMissingH},
		{"edit: no h tag", ev(owner, 9002, nostr.Tag{"name", "x"}), buzz.ErrMissingH},
		{"edit: channel not found", ev(owner, 9002, ttH(chC4), nostr.Tag{"name", "x"}), buzz.ErrChannelNotFound},
		{"edit: by a member", ev(member, 9002, ttH(ttChan), nostr.Tag{"name", "x"}), buzz.ErrNotChannelAdmin},
		{"edit: by an outsider of an open channel", ev(outsider, 9002, ttH(ttChan2), nostr.Tag{"public"}), buzz.ErrNotChannelAdmin},
		{"edit: implicit channel, by its poster", ev(outsider, 9002, ttH(chC3), nostr.Tag{"private"}), buzz.ErrNotChannelAdmin},
		{"put: channel not found", ev(owner, 9000, ttH(chC4), nostr.Tag{"p", outsider.PK}), buzz.ErrChannelNotFound},
		{"put: member on a private channel", ev(member, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK}), buzz.ErrNotChannelAdmin},
		{"put: outsider on a private channel, as on none (RL-29)", ev(outsider, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK}), buzz.ErrChannelNotFound},
		{"put: outsider on an open channel", ev(outsider, 9000, ttH(ttChan2), nostr.Tag{"p", outsider.PK}), buzz.ErrNotMember},
		{"put: member grants admin on an open channel", ev(member, 9000, ttH(ttChan2), nostr.Tag{"p", outsider.PK, "admin"}), buzz.ErrRoleAboveOwn},
		{"put: member demotes the admin on an open channel", ev(member, 9000, ttH(ttChan2), nostr.Tag{"p", admin.PK}), buzz.ErrRoleAboveOwn},
		{"put: admin grants owner", ev(admin, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK, "owner"}), buzz.ErrRoleAboveOwn},
		{"put: admin demotes the owner", ev(admin, 9000, ttH(ttChan), nostr.Tag{"p", owner.PK, "member"}), buzz.ErrRoleAboveOwn},
		{"put: second tag refused, first not applied", ev(admin, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK}, nostr.Tag{"p", owner.PK, "admin"}), buzz.ErrRoleAboveOwn},
		{"put: unknown role", ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK, "moderator"}), buzz.ErrUnknownRole},
		{"put: uppercase pubkey", ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", strings.ToUpper(outsider.PK)}), buzz.ErrUserTag},
		{"put: no p tag", ev(owner, 9000, ttH(ttChan)), buzz.ErrUserTag},
		{"remove: by a member", ev(member, 9001, ttH(ttChan), nostr.Tag{"p", admin.PK}), buzz.ErrNotChannelAdmin},
		{"remove: the owner, by an admin", ev(admin, 9001, ttH(ttChan), nostr.Tag{"p", owner.PK}), buzz.ErrRoleAboveOwn},
		{"remove: no p tag", ev(owner, 9001, ttH(ttChan)), buzz.ErrUserTag},
		{"remove: channel not found", ev(owner, 9001, ttH(chC4), nostr.Tag{"p", owner.PK}), buzz.ErrChannelNotFound},
		{"join: private", ev(outsider, 9021, ttH(ttChan)), buzz.ErrCannotJoin},
		{"join: channel not found, as a private one (RL-29)", ev(outsider, 9021, ttH(chC4)), buzz.ErrCannotJoin},
		{"leave: channel not found", ev(member, 9022, ttH(chC4)), buzz.ErrChannelNotFound},
		{"delete: by an admin", ev(admin, 9008, ttH(ttChan)), buzz.ErrNotChannelOwner},
		{"delete: by a member", ev(member, 9008, ttH(ttChan2)), buzz.ErrNotChannelOwner},
		{"delete: implicit channel, by its poster", ev(outsider, 9008, ttH(chC3)), buzz.ErrNotChannelOwner},
		{"delete: channel not found", ev(owner, 9008, ttH(chC4)), buzz.ErrChannelNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { chReject(t, s, c.ev, c.want) })
	}
	if s.Community().Channel(chC4) != nil {
		t.Error("a refused lifecycle event made a channel")
	}

	// The relay admin acts as owner of every channel, the implicit one too.
	ttIngest(t, s, ev(relayAdmin, 9002, ttH(chC3), nostr.Tag{"name", "adopted"}))
	ttIngest(t, s, ev(relayAdmin, 9000, ttH(ttChan), nostr.Tag{"p", outsider.PK, "owner"}))
	ttIngest(t, s, ev(relayAdmin, 9008, ttH(ttChan2)))
	chExpect(t, s, chC3, chWant(false, "adopted", "", false, false, nil))
	if r := s.Community().Channel(ttChan).Members[outsider.PK]; r != buzz.RoleOwner {
		t.Errorf("role granted by the relay admin: %v", r)
	}
	if !s.Community().Channel(ttChan2).Deleted {
		t.Error("relay admin's 9008 did not delete the channel")
	}
}

// RL-10: who may create channels is configurable.
func testChannelCreatePolicy(t *testing.T, open Opener) {
	relayAdmin, member, outsider := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	for _, c := range []struct {
		policy                    buzz.CreatePolicy
		member, outsider, relayOK bool
	}{
		{buzz.CreateByAnyone, true, true, true},
		{buzz.CreateByMembers, true, false, true},
		{buzz.CreateByAdmins, false, false, true},
	} {
		t.Run(string(c.policy), func(t *testing.T) {
			p := buzz.DefaultPolicy()
			p.Create = c.policy
			s := open(t, Config{Policy: &p, Admins: []string{relayAdmin.PK}})
			// The member is a member of ttChan, created by the relay admin.
			ttIngest(t, s, relayAdmin.Event(t, 9007, chT, "", ttH(ttChan)))
			ttIngest(t, s, relayAdmin.Event(t, 9000, chT+1, "", ttH(ttChan), nostr.Tag{"p", member.PK}))
			for i, w := range []struct {
				who testutil.Signer
				ok  bool
			}{{member, c.member}, {outsider, c.outsider}, {relayAdmin, c.relayOK}} {
				h := []string{chC3, chC4, chC5}[i]
				e := w.who.Event(t, 9007, chT+2, "", ttH(h))
				if !w.ok {
					chReject(t, s, e, buzz.ErrCannotCreate)
					continue
				}
				ttIngest(t, s, e)
				chExpect(t, s, h, chWant(true, "", "", false, false, map[string]buzz.Role{w.who.PK: buzz.RoleOwner}))
			}
		})
	}
}

// RL-6: a 9005 may delete another author's event when its author is an
// owner or admin of the channel, given that role by a 9000; a plain member
// may not, and an admin demoted to member no longer may.
func testGroupDeleteByChannelAdmin(t *testing.T, open Opener) {
	s := open(t, Config{})
	sg := testutil.SortedSigners(t, 4)
	owner, admin, m1, m2 := sg[0], sg[1], sg[2], sg[3]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, fmt.Sprint("ev ", at), tags...)
	}
	ttIngest(t, s, ev(owner, 9007, ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", admin.PK, "admin"}, nostr.Tag{"p", m1.PK}, nostr.Tag{"p", m2.PK}))
	e1 := ttIngest(t, s, ev(m1, 9, ttH(ttChan)))
	e2 := ttIngest(t, s, ev(m2, 9, ttH(ttChan)))
	e3 := ttIngest(t, s, ev(m2, 9, ttH(ttChan)))
	reader := buzz.Viewer(m1.PK)

	chReject(t, s, ev(m2, 9005, ttH(ttChan), ttE(e1.ID)), buzz.ErrNotAuthorOrAdmin)
	if !Sees(t, s, reader, e1.ID) {
		t.Fatal("target gone after a refused 9005")
	}
	d := ttIngest(t, s, ev(admin, 9005, ttH(ttChan), ttE(e1.ID)))
	if Sees(t, s, reader, e1.ID) || !ttMustRead(t, s, e1.ID).Deleted {
		t.Fatal("channel admin's 9005 did not delete")
	}
	if !Sees(t, s, reader, d.ID) {
		t.Error("9005 not stored or not readable by members")
	}
	if Sees(t, s, buzz.Anonymous, d.ID) {
		t.Error("9005 of a private channel read anonymously")
	}
	ttIngest(t, s, ev(owner, 9005, ttH(ttChan), ttE(e2.ID)))
	if Sees(t, s, reader, e2.ID) {
		t.Fatal("owner's 9005 did not delete")
	}
	// Demoted, the admin is a plain member again.
	ttIngest(t, s, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", admin.PK, "member"}))
	chReject(t, s, ev(admin, 9005, ttH(ttChan), ttE(e3.ID)), buzz.ErrNotAuthorOrAdmin)
	// An admin of another channel is no admin here.
	ttIngest(t, s, ev(m1, 9007, ttH(ttChan2)))
	ttIngest(t, s, ev(m1, 9000, ttH(ttChan2), nostr.Tag{"p", m2.PK, "admin"}))
	e4 := ttIngest(t, s, ev(m1, 9, ttH(ttChan)))
	chReject(t, s, ev(m2, 9005, ttH(ttChan), ttE(e4.ID)), buzz.ErrNotAuthorOrAdmin)
}

// chPersisted restarts s with cfg (Reopen) and requires the same access
// state and the same stored state; it returns the new store.
func chPersisted(t testing.TB, s Store, cfg Config) Store {
	t.Helper()
	before, dump := CommunityState(s.Community()), ttSnapshot(t, s)
	s = s.Reopen(t, cfg)
	if got := CommunityState(s.Community()); got != before {
		t.Fatalf("access state after reopening:\n got  %s\n want %s", got, before)
	}
	SameSnapshot(t, "reopening", dump, ttSnapshot(t, s))
	return s
}

// chGroupState returns the group state of h that v reads, by kind, and
// checks that it is one event of each kind, signed by the relay.
func chGroupState(t testing.TB, s Store, h, relayPK string, v buzz.Viewer) map[int]*nostr.Event {
	t.Helper()
	f := nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}, Tags: nostr.TagMap{"d": {h}}}
	evs, err := s.Query(context.Background(), f, v)
	if err != nil {
		t.Fatal(err)
	}
	if n := Count(t, s, f, v); n != int64(len(evs)) {
		t.Fatalf("group state of %s as %q: Query %d events, Count %d", h[:8], v, len(evs), n)
	}
	out := map[int]*nostr.Event{}
	for _, ev := range evs {
		if out[ev.Kind] != nil {
			t.Fatalf("two kind %d events for %s", ev.Kind, h[:8])
		}
		out[ev.Kind] = ev
		if ev.PubKey != relayPK {
			t.Fatalf("kind %d signed by %s, not the relay", ev.Kind, ev.PubKey)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("kind %d: signature does not verify: %v", ev.Kind, err)
		}
	}
	return out
}

// chTags renders tags for comparison.
func chTags(tags ...nostr.Tag) string { return fmt.Sprint(nostr.Tags(tags)) }

// chPublished collects what OnPublish hands over.
type chPublished struct {
	mu  sync.Mutex
	evs []*nostr.Event
}

func (p *chPublished) add(evs []*nostr.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, evs...)
}

// take returns what was published since the last take.
func (p *chPublished) take() []*nostr.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.evs
	p.evs = nil
	return out
}

// chSameEvents requires published to be exactly the events of state.
func chSameEvents(t testing.TB, published []*nostr.Event, state map[int]*nostr.Event) {
	t.Helper()
	var got, want []string
	for _, ev := range published {
		got = append(got, fmt.Sprintf("%d:%s", ev.Kind, ev.ID))
	}
	for _, ev := range state {
		want = append(want, fmt.Sprintf("%d:%s", ev.Kind, ev.ID))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("published %v, want the stored state %v", got, want)
	}
}

// RL-11, RL-13, RL-36: with a relay key the store keeps exactly one
// 39000, 39001, 39002 and 39003 per channel, relay-signed, with the
// contract's tags (the flags of a private channel); a change
// replaces them with newer ones (even within one second); 9008 removes
// them; OnPublish hears of each new set after its commit; the group state
// of a private channel is read by its members only.
func testGroupState(t *testing.T, open Opener) {
	clock := testutil.NewClock(chT)
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := open(t, Config{RelayKey: relayKey, Now: clock.Now})
	var pub chPublished
	s.OnPublish(pub.add)
	sg := testutil.SortedSigners(t, 4)
	owner, admin, member, outsider := sg[0], sg[1], sg[2], sg[3]
	ownerV := buzz.Viewer(owner.PK)

	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"name", "Ops"}, nostr.Tag{"about", "on call"}, nostr.Tag{"private"}))
	st := chGroupState(t, s, ttChan, relayPK, ownerV)
	if len(st) != 4 || chGroupStateRows(t, s, ttChan) != 4 {
		t.Fatalf("after 9007: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	if got, want := chTags(st[39000].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"name", "Ops"}, nostr.Tag{"about", "on call"},
		nostr.Tag{"private"}, nostr.Tag{"restricted"}, nostr.Tag{"hidden"}, nostr.Tag{"closed"}); got != want {
		t.Errorf("39000 tags %s, want %s", got, want)
	}
	if roles := st[39003].Tags; len(roles) != 4 || roles[1][0] != "role" || roles[1][1] != "owner" || roles[2][1] != "admin" ||
		roles[3][1] != "member" || len(roles[3]) != 3 || roles[3][2] == "" {
		t.Errorf("39003 tags %s, want d and the roles owner, admin, member with descriptions", chTags(roles...))
	}
	if got, want := chTags(st[39001].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK, "owner"}); got != want {
		t.Errorf("39001 tags %s, want %s", got, want)
	}
	if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}); got != want {
		t.Errorf("39002 tags %s, want %s", got, want)
	}
	for _, ev := range st {
		if int64(ev.CreatedAt) != chT {
			t.Errorf("kind %d dated %d, want the store clock %d", ev.Kind, ev.CreatedAt, chT)
		}
	}
	chSameEvents(t, pub.take(), st)

	// Private: not read by anonymous viewers or non-members, by Query or
	// Count, nor by a #d-less kinds filter.
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(outsider.PK)} {
		if got := chGroupState(t, s, ttChan, relayPK, v); len(got) != 0 {
			t.Errorf("%q reads %d group state events of a private channel", v, len(got))
		}
		if n := Count(t, s, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}}, v); n != 0 {
			t.Errorf("%q counts %d group state events of a private channel", v, n)
		}
	}

	// A change, in the same second: a new set, each newer than the last.
	prev := st
	ttIngest(t, s, owner.Event(t, 9000, chT, "", ttH(ttChan), nostr.Tag{"p", member.PK}, nostr.Tag{"p", admin.PK, "admin"}))
	st = chGroupState(t, s, ttChan, relayPK, ownerV)
	if len(st) != 4 || chGroupStateRows(t, s, ttChan) != 4 {
		t.Fatalf("after 9000: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	for kind, ev := range st {
		if ev.CreatedAt <= prev[kind].CreatedAt {
			t.Errorf("kind %d: new version dated %d, not after %d", kind, ev.CreatedAt, prev[kind].CreatedAt)
		}
	}
	if got, want := chTags(st[39001].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK, "owner"}, nostr.Tag{"p", admin.PK, "admin"}); got != want {
		t.Errorf("39001 tags %s, want %s", got, want)
	}
	if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}, nostr.Tag{"p", admin.PK}, nostr.Tag{"p", member.PK}); got != want {
		t.Errorf("39002 tags %s, want %s", got, want)
	}
	chSameEvents(t, pub.take(), st)
	// Members read it now; the outsider does not.
	if got := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(member.PK)); len(got) != 4 {
		t.Errorf("member reads %d group state events", len(got))
	}
	if got := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(outsider.PK)); len(got) != 0 {
		t.Errorf("outsider reads %d group state events", len(got))
	}

	// Again in the same second: made public, renamed.
	prev = st
	ttIngest(t, s, admin.Event(t, 9002, chT, "", ttH(ttChan), nostr.Tag{"name", "Ops 2"}, nostr.Tag{"public"}))
	st = chGroupState(t, s, ttChan, relayPK, buzz.Anonymous)
	if len(st) != 4 || chGroupStateRows(t, s, ttChan) != 4 {
		t.Fatalf("after 9002: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	for kind, ev := range st {
		if ev.CreatedAt <= prev[kind].CreatedAt {
			t.Errorf("kind %d: new version dated %d, not after %d", kind, ev.CreatedAt, prev[kind].CreatedAt)
		}
	}
	if got, want := chTags(st[39000].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"name", "Ops 2"}, nostr.Tag{"about", "on call"}, nostr.Tag{"public"}); got != want {
		t.Errorf("39000 tags %s, want %s", got, want)
	}
	chSameEvents(t, pub.take(), st)
	for _, old := range prev {
		if holds(t, s, old.ID) {
			t.Errorf("replaced kind %d still stored", old.Kind)
		}
	}

	// A rejected lifecycle event publishes nothing.
	chReject(t, s, member.Event(t, 9008, chT, "", ttH(ttChan)), buzz.ErrNotChannelOwner)
	if got := pub.take(); len(got) != 0 {
		t.Errorf("a rejection published %d events", len(got))
	}

	// 9008 removes the group state; nothing new is published.
	ttIngest(t, s, owner.Event(t, 9008, chT+1, "", ttH(ttChan)))
	if n := chGroupStateRows(t, s, ttChan); n != 0 {
		t.Errorf("%d group state rows left after 9008", n)
	}
	if got := chGroupState(t, s, ttChan, relayPK, ownerV); len(got) != 0 {
		t.Errorf("group state of a deleted channel read: %d events", len(got))
	}
	if got := pub.take(); len(got) != 0 {
		t.Errorf("9008 published %d events", len(got))
	}
}

// RL-11: without a relay key the store keeps no group state.
func testGroupStateNeedsRelayKey(t *testing.T, open Opener) {
	s := open(t, Config{})
	owner := testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan)))
	if n := held(t, s, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}}); n != 0 {
		t.Errorf("%d group state events without a relay key", n)
	}
}

// RL-11, RL-25: an import (ImportBatch) leaves the group state for
// RenewGroupState, which makes it for every channel the import created.
func testGroupStateImport(t *testing.T, open Opener) {
	clock := testutil.NewClock(chT)
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := open(t, Config{RelayKey: relayKey, Now: clock.Now})
	var pub chPublished
	s.OnPublish(pub.add)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	evs := []*nostr.Event{
		owner.Event(t, 9007, chT-100, "", ttH(ttChan), nostr.Tag{"name", "imported"}),
		owner.Event(t, 9000, chT-99, "", ttH(ttChan), nostr.Tag{"p", member.PK}),
		member.Event(t, 9, chT-98, "hello", ttH(ttChan)),
		owner.Event(t, 9007, chT-97, "", ttH(ttChan2), nostr.Tag{"private"}),
	}
	outcomes, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if o != nil {
			t.Fatalf("event %d: %v", i, o)
		}
	}
	chExpect(t, s, ttChan, chWant(true, "imported", "", false, false, map[string]buzz.Role{owner.PK: buzz.RoleOwner, member.PK: buzz.RoleMember}))
	if n := held(t, s, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}}); n != 0 {
		t.Fatalf("%d group state events made during the import", n)
	}
	if got := pub.take(); len(got) != 0 {
		t.Fatalf("import published %d events", len(got))
	}

	if err := s.RenewGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	var all []*nostr.Event
	for _, h := range []string{ttChan, ttChan2} {
		st := chGroupState(t, s, h, relayPK, buzz.Viewer(owner.PK))
		if len(st) != 4 || chGroupStateRows(t, s, h) != 4 {
			t.Fatalf("%s: %d group state events after RenewGroupState", h[:8], len(st))
		}
		for _, ev := range st {
			all = append(all, ev)
		}
		if h == ttChan {
			if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}, nostr.Tag{"p", member.PK}); got != want {
				t.Errorf("39002 tags %s, want %s", got, want)
			}
		}
	}
	// The private channel's state is its members' alone.
	if got := chGroupState(t, s, ttChan2, relayPK, buzz.Anonymous); len(got) != 0 {
		t.Errorf("anonymous reads %d group state events of the private channel", len(got))
	}
	published := pub.take()
	for _, ev := range all {
		if !slices.ContainsFunc(published, func(p *nostr.Event) bool { return p.ID == ev.ID }) {
			t.Errorf("kind %d of %s not published", ev.Kind, ev.Tags.GetD()[:8])
		}
	}
	// Renewing again replaces, never duplicates.
	if err := s.RenewGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{ttChan, ttChan2} {
		if n := chGroupStateRows(t, s, h); n != 4 {
			t.Errorf("%s: %d group state rows after a second RenewGroupState", h[:8], n)
		}
	}
}

// RL-14: writes go to members; to open channels (and channels that do not
// exist yet) also anyone when open_write is on; relay admins write
// anywhere; private channels take no outsider's writes either way.
func testWriteAccess(t *testing.T, open Opener) {
	relayAdmin := testutil.NewSigner(t)
	sg := testutil.SortedSigners(t, 3)
	owner, member, outsider := sg[0], sg[1], sg[2]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, fmt.Sprint("ev ", at), tags...)
	}
	setup := func(s Store) {
		ttIngest(t, s, ev(owner, 9007, ttH(ttChan)))                             // open
		ttIngest(t, s, ev(owner, 9007, ttH(ttChan2), nostr.Tag{"private"}))      // private
		ttIngest(t, s, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", member.PK}))  // member of both
		ttIngest(t, s, ev(owner, 9000, ttH(ttChan2), nostr.Tag{"p", member.PK})) // ...
	}

	t.Run("open_write off", func(t *testing.T) {
		p := buzz.DefaultPolicy()
		p.OpenWrite = false
		opts := Config{Policy: &p, Admins: []string{relayAdmin.PK}}
		s := open(t, opts)
		setup(s)
		chReject(t, s, ev(outsider, 9, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 9, ttH(ttChan2)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 1111, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 7, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 9, ttH(chC3)), buzz.ErrNotMember)
		if s.Community().Channel(chC3) != nil {
			t.Fatal("a refused event made a channel")
		}
		for _, w := range []testutil.Signer{owner, member, relayAdmin} {
			ttIngest(t, s, ev(w, 9, ttH(ttChan)))
			ttIngest(t, s, ev(w, 9, ttH(ttChan2)))
		}
		// A relay admin may name a channel that does not exist yet.
		ttIngest(t, s, ev(relayAdmin, 9, ttH(chC3)))
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		// Events without a channel are the members' only (RL-29).
		chReject(t, s, ev(outsider, 1), buzz.ErrMembersOnly)
		ttIngest(t, s, ev(member, 1))
		// A member removed no longer writes.
		ttIngest(t, s, ev(owner, 9001, ttH(ttChan), nostr.Tag{"p", member.PK}))
		chReject(t, s, ev(member, 9, ttH(ttChan)), buzz.ErrNotMember)
		// Joining an open channel (9021) makes a writer.
		ttIngest(t, s, ev(outsider, 9021, ttH(ttChan)))
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		// The state survives a reopen: the same decisions after it.
		s = chPersisted(t, s, opts)
		chReject(t, s, ev(member, 9, ttH(ttChan)), buzz.ErrNotMember)
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		ttIngest(t, s, ev(member, 9, ttH(ttChan2)))
	})

	t.Run("open_write on", func(t *testing.T) {
		opts := Config{Admins: []string{relayAdmin.PK}} // DefaultPolicy: open writes
		s := open(t, opts)
		setup(s)
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		chReject(t, s, ev(outsider, 9, ttH(ttChan2)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 1111, ttH(ttChan2)), buzz.ErrNotMember)
		ttIngest(t, s, ev(member, 9, ttH(ttChan2)))
		// A channel that does not exist: the event makes it, open, with no
		// members and not created.
		first := ttIngest(t, s, ev(outsider, 9, ttH(chC3)))
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		if !Sees(t, s, buzz.Anonymous, first.ID) {
			t.Error("event of an implicit open channel not readable")
		}
		ttIngest(t, s, ev(member, 9, ttH(chC3)))
		s = chPersisted(t, s, opts)
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		// A deleted channel takes no writes, open or not.
		ttIngest(t, s, ev(owner, 9008, ttH(ttChan)))
		chReject(t, s, ev(outsider, 9, ttH(ttChan)), buzz.ErrChannelDeleted)
		chReject(t, s, ev(owner, 9, ttH(ttChan)), buzz.ErrChannelDeleted)
	})
}

// chSetting is a kind 9033 setting thread_replies_in_channel to v.
func chSetting(t testing.TB, sg testutil.Signer, at int64, v string) *nostr.Event {
	return sg.Event(t, 9033, at, "", nostr.Tag{"thread_replies_in_channel", v})
}

// chExpectSetting requires the community to say want.
func chExpectSetting(t testing.TB, s Store, want bool) {
	t.Helper()
	if got := s.Community().ThreadRepliesInChannel; got != want {
		t.Fatalf("community: thread_replies_in_channel %v, want %v", got, want)
	}
}

// RL-15: a relay admin's kind 9033 sets thread_replies_in_channel (every
// boolean spelling, any case); it is carried out, persisted, and not stored
// as an event; anyone else, a value that is not a boolean, or a date more
// than 120 s off is refused and changes nothing.
func testThreadRepliesSetting(t *testing.T, open Opener) {
	clock := testutil.NewClock(chT)
	relayAdmin, other := testutil.NewSigner(t), testutil.NewSigner(t)
	opts := Config{Admins: []string{relayAdmin.PK}, Now: clock.Now}
	s := open(t, opts)
	if s.Community().ThreadRepliesInChannel {
		t.Fatal("thread_replies_in_channel is on by default")
	}

	set := chSetting(t, relayAdmin, chT, "YES")
	a, err := s.Admit(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Applied {
		t.Error("9033 not reported as applied")
	}
	chExpectSetting(t, s, true)
	if holds(t, s, set.ID) || Sees(t, s, buzz.Viewer(relayAdmin.PK), set.ID) {
		t.Fatal("9033 stored as an event")
	}
	if n := held(t, s, nostr.Filter{}); n != 0 {
		t.Fatalf("%d events stored", n)
	}

	for i, c := range []struct {
		v    string
		want bool
	}{
		{"false", false}, {"true", true}, {"0", false}, {"1", true}, {"no", false}, {"yes", true},
		{"off", false}, {"on", true}, {"FALSE", false}, {"TRUE", true}, {"Off", false}, {"oN", true},
		{"nO", false}, {"Yes", true}, {"fAlSe", false},
	} {
		// Within the ±120 s window at both ends.
		at := chT - 120 + int64(i%2)*240
		ttIngest(t, s, chSetting(t, relayAdmin, at, c.v))
		chExpectSetting(t, s, c.want)
	}
	ttIngest(t, s, chSetting(t, relayAdmin, chT, "on"))
	chExpectSetting(t, s, true)

	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"not a relay admin", chSetting(t, other, chT, "off"), buzz.ErrNotRelayAdmin},
		{"not a relay admin, bad value", chSetting(t, other, chT, "maybe"), buzz.ErrNotRelayAdmin},
		{"value maybe", chSetting(t, relayAdmin, chT, "maybe"), buzz.ErrSettingNotBool},
		{"value empty", chSetting(t, relayAdmin, chT, ""), buzz.ErrSettingNotBool},
		{"value 2", chSetting(t, relayAdmin, chT, "2"), buzz.ErrSettingNotBool},
		{"value with space", chSetting(t, relayAdmin, chT, " off"), buzz.ErrSettingNotBool},
		{"no setting tag", relayAdmin.Event(t, 9033, chT, "", nostr.Tag{"other", "off"}), buzz.ErrSettingNotBool},
		{"200 s old", chSetting(t, relayAdmin, chT-200, "off"), buzz.ErrTooFarInFuture},
		{"121 s old", chSetting(t, relayAdmin, chT-121, "off"), buzz.ErrTooFarInFuture},
		{"121 s ahead", chSetting(t, relayAdmin, chT+121, "off"), buzz.ErrTooFarInFuture},
	} {
		t.Run(c.name, func(t *testing.T) {
			chReject(t, s, c.ev, c.want)
			chExpectSetting(t, s, true)
		})
	}

	// Persisted: a reopened store (no configured value) has it.
	s = s.Reopen(t, opts)
	chExpectSetting(t, s, true)
	ttIngest(t, s, chSetting(t, relayAdmin, chT+1, "off"))
	s = s.Reopen(t, opts)
	chExpectSetting(t, s, false)
}

// RL-15: the configured value and 9033 — last write wins. A config value
// that changed since the last start is the newest write; an unchanged one
// leaves a 9033's value in force; no configured value (nil) leaves the
// stored one.
func testThreadRepliesConfigPrecedence(t *testing.T, open Opener) {
	clock := testutil.NewClock(chT)
	relayAdmin := testutil.NewSigner(t)
	opts := func(cfg *bool) Config {
		return Config{Admins: []string{relayAdmin.PK}, Now: clock.Now, ThreadRepliesInChannel: cfg}
	}
	yes, no := true, false
	at := chT
	set := func(s Store, v string) {
		t.Helper()
		at++
		ttIngest(t, s, chSetting(t, relayAdmin, at, v))
	}

	s := open(t, opts(&no))
	chExpectSetting(t, s, false)
	set(s, "true")
	chExpectSetting(t, s, true)
	s = s.Reopen(t, opts(&no)) // config unchanged: the 9033 stays
	chExpectSetting(t, s, true)
	s = s.Reopen(t, opts(&yes)) // config changed to true
	chExpectSetting(t, s, true)
	set(s, "false")
	s = s.Reopen(t, opts(&yes)) // unchanged: the 9033 stays
	chExpectSetting(t, s, false)
	s = s.Reopen(t, opts(nil)) // nil: stored value as it is
	chExpectSetting(t, s, false)
	set(s, "on")
	s = s.Reopen(t, opts(nil))
	chExpectSetting(t, s, true)
	s = s.Reopen(t, opts(&yes)) // still the config of the last start
	chExpectSetting(t, s, true)
	s = s.Reopen(t, opts(&no)) // config changed to false: it wins
	chExpectSetting(t, s, false)
	s = s.Reopen(t, opts(&no))
	chExpectSetting(t, s, false)
}
