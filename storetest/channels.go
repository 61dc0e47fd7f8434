package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Channel lifecycle (RL-10): what the rules refuse leaves nothing, who may
// create channels, and a channel admin's group deletion (RL-6).

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
	return chChannel(&buzz.Channel{Created: created, Name: name, About: about, Private: private, Deleted: deleted, Members: members})
}

// chExpect requires channel h of s's published state to be want.
func chExpect(t testing.TB, s Store, h, want string) {
	t.Helper()
	if got := chChannel(s.Community().Channel(h)); got != want {
		t.Fatalf("channel %s:\n got  %s\n want %s", h[:8], got, want)
	}
}

// RL-10: lifecycle events that the rules refuse come back with the exact
// rejection and leave nothing: no event, no channel or member row, the
// community as it was.
func testChannelLifecycleRejections(t *testing.T, open Opener) {
	relayAdmin := testutil.NewSigner(t)
	s := open(t, Config{Admins: []string{relayAdmin.PK}})
	sg := ttSigners(t, 4)
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
		t.Fatalf("implicit channel: %s", chChannel(ch))
	}

	cases := []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"create: id not a channel id", ev(owner, 9007, ttH("General")), buzz.ErrNotChannelID}, // CW-2
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
	sg := ttSigners(t, 4)
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
	if !chSees(t, s, reader, e1.ID) {
		t.Fatal("target gone after a refused 9005")
	}
	d := ttIngest(t, s, ev(admin, 9005, ttH(ttChan), ttE(e1.ID)))
	if chSees(t, s, reader, e1.ID) || !ttMustRead(t, s, e1.ID).Deleted {
		t.Fatal("channel admin's 9005 did not delete")
	}
	if !chSees(t, s, reader, d.ID) {
		t.Error("9005 not stored or not readable by members")
	}
	if chSees(t, s, buzz.Anonymous, d.ID) {
		t.Error("9005 of a private channel read anonymously")
	}
	ttIngest(t, s, ev(owner, 9005, ttH(ttChan), ttE(e2.ID)))
	if chSees(t, s, reader, e2.ID) {
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
