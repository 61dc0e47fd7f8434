package buzz

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

const chanIDDeleted = "c0ffee00-1234-4abc-8def-0123456789ab"

// lifecycle builds an unsigned lifecycle event of kind by author on chanID.
func lifecycle(kind int, author string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{
		Kind:      kind,
		PubKey:    author,
		CreatedAt: nostr.Timestamp(1_700_000_000),
		Tags:      append(nostr.Tags{{"h", chanID}}, tags...),
	}
}

// transition runs c.Transition and checks what every call must keep: ch is
// not modified, a rejection returns no channel, and an accepted result is a
// new channel whose membership is not ch's map.
func transition(t *testing.T, c *Community, ev *nostr.Event, h string, ch *Channel) (*Channel, error) {
	t.Helper()
	return transitionWith(t, c, ev, h, ch, false)
}

// transitionWith is transition of a 9021 that invited says carries a
// live invite code (RL-36).
func transitionWith(t *testing.T, c *Community, ev *nostr.Event, h string, ch *Channel, invited bool) (*Channel, error) {
	t.Helper()
	var before Channel
	if ch != nil {
		before = *ch
		before.Members = maps.Clone(ch.Members)
	}
	next, err := c.Transition(ev, h, ch, invited)
	if ch != nil && !reflect.DeepEqual(*ch, before) {
		t.Fatalf("Transition modified its input: %+v, was %+v", *ch, before)
	}
	if err != nil {
		if next != nil {
			t.Fatalf("rejection %v came with a channel %+v", err, next)
		}
		return nil, err
	}
	if next == nil {
		t.Fatal("accepted transition returned no channel")
	}
	if ch != nil {
		if next == ch {
			t.Fatal("Transition returned its input")
		}
		const sentinel = "sentinel"
		next.Members[sentinel] = RoleOwner
		_, shared := ch.Members[sentinel]
		delete(next.Members, sentinel)
		if shared {
			t.Fatal("result shares its Members map with the input")
		}
	}
	return next, nil
}

// checkErr compares a result with an expected rejection (nil: accepted).
func checkErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("got %v, want accepted", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}

func createCommunity(create CreatePolicy) *Community {
	c := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: create, Admins: relayAdmins()})
	c.Put(&Channel{Seq: 5, H: chanIDOther, Created: true, Members: map[string]Role{pkMember: RoleMember}})
	c.Put(&Channel{Seq: 6, H: chanIDDeleted, Created: true, Deleted: true, Members: map[string]Role{pkMember2: RoleOwner}})
	return c
}

// RL-10: 9007 creates a channel whose creator becomes owner; who may
// create is configurable (anyone, members of some live channel, relay
// admins); the id is a canonical UUID; an existing or deleted channel is
// not created again.
func TestTransitionCreate(t *testing.T) {
	created := func(owner string) *Channel {
		return &Channel{H: chanID, Created: true, Members: map[string]Role{owner: RoleOwner}}
	}
	for _, c := range []struct {
		name   string
		policy CreatePolicy
		author string
		h      string
		ch     *Channel
		tags   nostr.Tags
		want   *Channel
		err    error
	}{
		{"anyone: outsider creates", CreateByAnyone, pkOutsider, chanID, nil, nil, created(pkOutsider), nil},
		{"anyone: relay admin creates and is owner", CreateByAnyone, pkRelayAdmin, chanID, nil, nil, created(pkRelayAdmin), nil},
		{"members: outsider refused", CreateByMembers, pkOutsider, chanID, nil, nil, nil, ErrCannotCreate},
		{"members: member of another channel creates", CreateByMembers, pkMember, chanID, nil, nil, created(pkMember), nil},
		{"members: member of a deleted channel only refused", CreateByMembers, pkMember2, chanID, nil, nil, nil, ErrCannotCreate},
		{"members: relay admin creates", CreateByMembers, pkRelayAdmin, chanID, nil, nil, created(pkRelayAdmin), nil},
		{"admins: outsider refused", CreateByAdmins, pkOutsider, chanID, nil, nil, nil, ErrCannotCreate},
		{"admins: member refused", CreateByAdmins, pkMember, chanID, nil, nil, nil, ErrCannotCreate},
		{"admins: relay admin creates", CreateByAdmins, pkRelayAdmin, chanID, nil, nil, created(pkRelayAdmin), nil},

		// CW-2, RL-36: a NIP-29 group id is a channel id, taken verbatim,
		// letter case included.
		{"id a NIP-29 group id", CreateByAnyone, pkOutsider, "abc123", nil, nil,
			&Channel{H: "abc123", Created: true, Members: map[string]Role{pkOutsider: RoleOwner}}, nil},
		{"id NDK's mixed-case group id", CreateByAnyone, pkOutsider, "p0ZPf6Xc6Ngx7TZFdJHcWRxY", nil, nil,
			&Channel{H: "p0ZPf6Xc6Ngx7TZFdJHcWRxY", Created: true, Members: map[string]Role{pkOutsider: RoleOwner}}, nil},
		{"id of 128 characters of every kind", CreateByAnyone, pkOutsider, strings.Repeat("Az9-_.~~", 16), nil, nil,
			&Channel{H: strings.Repeat("Az9-_.~~", 16), Created: true, Members: map[string]Role{pkOutsider: RoleOwner}}, nil},
		{"id not a channel id", CreateByAnyone, pkOutsider, "Gen/eral", nil, nil, nil, ErrNotChannelID},
		{"id of 129 characters", CreateByAnyone, pkOutsider, strings.Repeat("a", 129), nil, nil, nil, ErrNotChannelID},
		{"id with a space", CreateByAnyone, pkOutsider, "a b", nil, nil, nil, ErrNotChannelID},
		{"id uppercase", CreateByAnyone, pkOutsider, strings.ToUpper(chanID), nil, nil, nil, ErrChannelID},
		{"id without hyphens", CreateByAnyone, pkOutsider, strings.ReplaceAll(chanID, "-", ""), nil, nil, nil, ErrChannelID},
		{"id in braces", CreateByAnyone, pkOutsider, "{" + chanID + "}", nil, nil, nil, ErrChannelID},
		{"id empty", CreateByAnyone, pkOutsider, "", nil, nil, nil, ErrNotChannelID},
		{"id not a channel id, relay admin", CreateByAdmins, pkRelayAdmin, "Gen eral", nil, nil, nil, ErrNotChannelID},

		{"exists (created)", CreateByAnyone, pkOutsider, chanID, openChannel(), nil, nil, ErrChannelExists},
		{"exists (created), by its owner", CreateByAnyone, pkOwner, chanID, openChannel(), nil, nil, ErrChannelExists},
		{"exists (created), by relay admin", CreateByAnyone, pkRelayAdmin, chanID, privateChannel(), nil, nil, ErrChannelExists},
		{"exists (implicit)", CreateByAnyone, pkOutsider, chanID, implicitChannel(), nil, nil, ErrChannelExists},
		// RL-29: one who may not create learns nothing of which ids are taken.
		{"exists (private), by one who may not create", CreateByAdmins, pkOutsider, chanID, privateChannel(), nil, nil, ErrCannotCreate},
		{"deleted", CreateByAnyone, pkOwner, chanID, deletedChannel(), nil, nil, ErrChannelDeleted},
		{"deleted, by relay admin", CreateByAnyone, pkRelayAdmin, chanID, deletedChannel(), nil, nil, ErrChannelDeleted},

		{"metadata name, about, private", CreateByAnyone, pkOwner, chanID, nil,
			nostr.Tags{{"name", "Design"}, {"about", "pixels"}, {"private"}},
			&Channel{H: chanID, Created: true, Name: "Design", About: "pixels", Private: true, Members: map[string]Role{pkOwner: RoleOwner}}, nil},
		{"metadata public", CreateByAnyone, pkOwner, chanID, nil,
			nostr.Tags{{"public"}},
			&Channel{H: chanID, Created: true, Members: map[string]Role{pkOwner: RoleOwner}}, nil},
		{"metadata last wins", CreateByAnyone, pkOwner, chanID, nil,
			nostr.Tags{{"private"}, {"name", "one"}, {"public"}, {"name", "two"}},
			&Channel{H: chanID, Created: true, Name: "two", Members: map[string]Role{pkOwner: RoleOwner}}, nil},
		{"metadata private last", CreateByAnyone, pkOwner, chanID, nil,
			nostr.Tags{{"public"}, {"private"}},
			&Channel{H: chanID, Created: true, Private: true, Members: map[string]Role{pkOwner: RoleOwner}}, nil},
		{"metadata without values ignored", CreateByAnyone, pkOwner, chanID, nil,
			nostr.Tags{{"name"}, {"about"}, {"p", pkMember}},
			&Channel{H: chanID, Created: true, Members: map[string]Role{pkOwner: RoleOwner}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := createCommunity(c.policy)
			ev := lifecycle(KindCreateChannel, c.author, c.tags...)
			// The h tag as written; the channel as ChannelOf reads it,
			// a UUID in canonical form.
			ev.Tags[0] = nostr.Tag{"h", c.h}
			h := c.h
			if id, ok := nipcw.ParseChannelID(c.h); ok {
				h = id
			}
			next, err := transition(t, com, ev, h, c.ch)
			checkErr(t, err, c.err)
			if c.want != nil && !reflect.DeepEqual(next, c.want) {
				t.Fatalf("got %+v, want %+v", next, c.want)
			}
		})
	}
}

// RL-10: 9002 edits name, about, private/public; owner or admin (a relay
// admin acts as owner); the last of each tag wins.
func TestTransitionEditMetadata(t *testing.T) {
	with := func(base func() *Channel, f func(*Channel)) *Channel {
		ch := base()
		f(ch)
		return ch
	}
	for _, c := range []struct {
		name   string
		base   func() *Channel
		author string
		tags   nostr.Tags
		want   *Channel
		err    error
	}{
		{"owner renames", openChannel, pkOwner, nostr.Tags{{"name", "random"}, {"about", "chatter"}},
			with(openChannel, func(ch *Channel) { ch.Name = "random"; ch.About = "chatter" }), nil},
		{"admin makes private", openChannel, pkAdmin, nostr.Tags{{"private"}},
			with(openChannel, func(ch *Channel) { ch.Private = true }), nil},
		{"relay admin makes public", privateChannel, pkRelayAdmin, nostr.Tags{{"public"}},
			with(privateChannel, func(ch *Channel) { ch.Private = false }), nil},
		{"relay admin edits implicit", implicitChannel, pkRelayAdmin, nostr.Tags{{"name", "x"}},
			with(implicitChannel, func(ch *Channel) { ch.Name = "x" }), nil},
		{"last wins: public", privateChannel, pkOwner, nostr.Tags{{"private"}, {"public"}},
			with(privateChannel, func(ch *Channel) { ch.Private = false }), nil},
		{"last wins: private", openChannel, pkOwner, nostr.Tags{{"public"}, {"private"}, {"name", "a"}, {"name", "b"}},
			with(openChannel, func(ch *Channel) { ch.Private = true; ch.Name = "b" }), nil},
		{"empty about clears", openChannel, pkOwner, nostr.Tags{{"about", ""}},
			with(openChannel, func(ch *Channel) { ch.About = "" }), nil},
		{"name without value ignored", openChannel, pkOwner, nostr.Tags{{"name"}}, openChannel(), nil},
		{"no metadata: unchanged", openChannel, pkAdmin, nil, openChannel(), nil},
		{"membership untouched by p tags", openChannel, pkOwner, nostr.Tags{{"p", pkNewbie, "owner"}}, openChannel(), nil},

		{"member refused", openChannel, pkMember, nostr.Tags{{"name", "x"}}, nil, ErrNotChannelAdmin},
		{"member of private refused", privateChannel, pkMember, nostr.Tags{{"public"}}, nil, ErrNotChannelAdmin},
		{"outsider refused", openChannel, pkOutsider, nostr.Tags{{"name", "x"}}, nil, ErrNotChannelAdmin},
		{"outsider on implicit refused", implicitChannel, pkOutsider, nostr.Tags{{"name", "x"}}, nil, ErrNotChannelAdmin},
		{"deleted", deletedChannel, pkOwner, nostr.Tags{{"name", "x"}}, nil, ErrChannelDeleted},
		{"nonexistent", func() *Channel { return nil }, pkRelayAdmin, nostr.Tags{{"name", "x"}}, nil, ErrChannelNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			next, err := transition(t, com, lifecycle(KindEditMetadata, c.author, c.tags...), chanID, c.base())
			checkErr(t, err, c.err)
			if c.want != nil && !reflect.DeepEqual(next, c.want) {
				t.Fatalf("got %+v, want %+v", next, c.want)
			}
		})
	}
}

// putUserBase is a channel with two of each role below owner.
func putUserBase(private bool) *Channel {
	m := staffed()
	m[pkAdmin2] = RoleAdmin
	m[pkMember2] = RoleMember
	return &Channel{Seq: 1, H: chanID, Created: true, Private: private, Members: m}
}

// RL-10: 9000 put-user. Owners and admins grant roles up to their own and
// change the roles of those not above them; on an open channel any member
// may add members; a role must be member, admin or owner; every p tag
// names a lowercase hex pubkey.
func TestTransitionPutUser(t *testing.T) {
	for _, c := range []struct {
		name    string
		private bool
		author  string
		tags    nostr.Tags
		changes map[string]Role // applied to the base membership when accepted
		err     error
	}{
		{"owner grants owner", true, pkOwner, nostr.Tags{{"p", pkNewbie, "owner"}}, map[string]Role{pkNewbie: RoleOwner}, nil},
		{"owner grants admin", true, pkOwner, nostr.Tags{{"p", pkNewbie, "admin"}}, map[string]Role{pkNewbie: RoleAdmin}, nil},
		{"owner promotes member to owner", false, pkOwner, nostr.Tags{{"p", pkMember, "owner"}}, map[string]Role{pkMember: RoleOwner}, nil},
		{"owner demotes admin", true, pkOwner, nostr.Tags{{"p", pkAdmin, "member"}}, map[string]Role{pkAdmin: RoleMember}, nil},
		{"admin grants admin", true, pkAdmin, nostr.Tags{{"p", pkNewbie, "admin"}}, map[string]Role{pkNewbie: RoleAdmin}, nil},
		{"admin adds member, role absent", true, pkAdmin, nostr.Tags{{"p", pkNewbie}}, map[string]Role{pkNewbie: RoleMember}, nil},
		{"admin adds member, role empty", true, pkAdmin, nostr.Tags{{"p", pkNewbie, ""}}, map[string]Role{pkNewbie: RoleMember}, nil},
		{"role in any case", true, pkAdmin, nostr.Tags{{"p", pkNewbie, "Admin"}}, map[string]Role{pkNewbie: RoleAdmin}, nil},
		{"admin changes another admin", true, pkAdmin, nostr.Tags{{"p", pkAdmin2, "member"}}, map[string]Role{pkAdmin2: RoleMember}, nil},
		{"admin grants owner refused", true, pkAdmin, nostr.Tags{{"p", pkNewbie, "owner"}}, nil, ErrRoleAboveOwn},
		{"admin promotes self to owner refused", false, pkAdmin, nostr.Tags{{"p", pkAdmin, "owner"}}, nil, ErrRoleAboveOwn},
		{"admin changes owner refused", true, pkAdmin, nostr.Tags{{"p", pkOwner, "member"}}, nil, ErrRoleAboveOwn},
		{"admin re-puts owner refused", false, pkAdmin, nostr.Tags{{"p", pkOwner, "admin"}}, nil, ErrRoleAboveOwn},
		{"several p tags", true, pkOwner, nostr.Tags{{"p", pkNewbie}, {"p", pkOutsider, "admin"}},
			map[string]Role{pkNewbie: RoleMember, pkOutsider: RoleAdmin}, nil},
		{"one bad p tag rejects all", true, pkOwner, nostr.Tags{{"p", pkNewbie}, {"p", strings.ToUpper(pkOutsider)}}, nil, ErrUserTag},
		{"relay admin, not a member, grants owner on private", true, pkRelayAdmin, nostr.Tags{{"p", pkNewbie, "owner"}},
			map[string]Role{pkNewbie: RoleOwner}, nil},
		{"relay admin demotes owner", true, pkRelayAdmin, nostr.Tags{{"p", pkOwner, "member"}}, map[string]Role{pkOwner: RoleMember}, nil},

		{"member adds member on open", false, pkMember, nostr.Tags{{"p", pkNewbie}}, map[string]Role{pkNewbie: RoleMember}, nil},
		{"member re-puts member on open", false, pkMember, nostr.Tags{{"p", pkMember2, "member"}}, map[string]Role{}, nil},
		{"member grants admin on open refused", false, pkMember, nostr.Tags{{"p", pkNewbie, "admin"}}, nil, ErrRoleAboveOwn},
		{"member demotes admin on open refused", false, pkMember, nostr.Tags{{"p", pkAdmin, "member"}}, nil, ErrRoleAboveOwn},
		{"member on private refused", true, pkMember, nostr.Tags{{"p", pkNewbie}}, nil, ErrNotChannelAdmin},
		{"non-member on open refused", false, pkOutsider, nostr.Tags{{"p", pkNewbie}}, nil, ErrNotMember},
		{"non-member adds self on open refused", false, pkOutsider, nostr.Tags{{"p", pkOutsider}}, nil, ErrNotMember},
		{"non-member on private: as if there were no channel (RL-29)", true, pkOutsider, nostr.Tags{{"p", pkNewbie}}, nil, ErrChannelNotFound},

		{"unknown role", true, pkOwner, nostr.Tags{{"p", pkNewbie, "moderator"}}, nil, ErrUnknownRole},
		{"uppercase pubkey", true, pkOwner, nostr.Tags{{"p", strings.ToUpper(pkNewbie)}}, nil, ErrUserTag},
		{"short pubkey", true, pkOwner, nostr.Tags{{"p", pkNewbie[:63]}}, nil, ErrUserTag},
		{"npub-like pubkey", true, pkOwner, nostr.Tags{{"p", "npub1" + pkNewbie[:59]}}, nil, ErrUserTag},
		{"empty pubkey", true, pkOwner, nostr.Tags{{"p", ""}}, nil, ErrUserTag},
		{"no p tag", true, pkOwner, nil, nil, ErrUserTag},
		{"p tag without value", true, pkOwner, nostr.Tags{{"p"}}, nil, ErrUserTag},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			base := putUserBase(c.private)
			next, err := transition(t, com, lifecycle(KindPutUser, c.author, c.tags...), chanID, base)
			checkErr(t, err, c.err)
			if c.err != nil {
				return
			}
			want := putUserBase(c.private)
			maps.Copy(want.Members, c.changes)
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("got %+v, want %+v", next, want)
			}
		})
	}
}

// RL-10: 9000 on a channel that does not exist or was deleted.
func TestTransitionPutUserMissingChannel(t *testing.T) {
	com := NewCommunity(Policy{Admins: relayAdmins()})
	ev := lifecycle(KindPutUser, pkRelayAdmin, nostr.Tag{"p", pkNewbie})
	_, err := transition(t, com, ev, chanID, nil)
	checkErr(t, err, ErrChannelNotFound)
	_, err = transition(t, com, ev, chanID, deletedChannel())
	checkErr(t, err, ErrChannelDeleted)
}

// RL-29: every lifecycle event of someone who may not read a private
// channel is answered exactly as for a channel that does not exist, so
// that no refusal tells them it exists; a removed member is such a one.
func TestTransitionPrivateAnswersAsMissing(t *testing.T) {
	com := NewCommunity(Policy{PublicRead: true, OpenWrite: false, Create: CreateByAnyone, Admins: relayAdmins()})
	removed := privateChannel()
	delete(removed.Members, pkMember)
	for _, ev := range []*nostr.Event{
		lifecycle(KindPutUser, pkOutsider, nostr.Tag{"p", pkOutsider}),
		lifecycle(KindPutUser, pkOutsider, nostr.Tag{"p", pkNewbie, "admin"}),
		lifecycle(KindRemoveUser, pkOutsider, nostr.Tag{"p", pkOutsider}),
		lifecycle(KindRemoveUser, pkOutsider, nostr.Tag{"p", pkMember}),
		lifecycle(KindEditMetadata, pkOutsider, nostr.Tag{"name", "mine"}),
		lifecycle(KindDeleteChannel, pkOutsider),
		lifecycle(KindJoin, pkOutsider),
		lifecycle(KindLeave, pkOutsider),
		lifecycle(KindLeave, pkMember),
		lifecycle(KindRemoveUser, pkMember, nostr.Tag{"p", pkMember}),
		lifecycle(KindCreateInvite, pkOutsider, nostr.Tag{"code", "let-me-in"}),
		lifecycle(KindJoin, pkOutsider, nostr.Tag{"code", "a-guess"}),
	} {
		ch := privateChannel()
		if ev.PubKey == pkMember {
			ch = removed
		}
		_, missing := transition(t, com, ev, chanID, nil)
		_, private := transition(t, com, ev, chanID, ch)
		if missing == nil || private == nil || missing.Error() != private.Error() {
			t.Errorf("kind %d %v: private channel answers %v, a missing one %v", ev.Kind, ev.Tags, private, missing)
		}
	}
}

// RL-10: 9001 remove-user. Anyone may remove themselves; owners and admins
// remove those not above them; nobody else removes anyone.
func TestTransitionRemoveUser(t *testing.T) {
	for _, c := range []struct {
		name    string
		private bool
		author  string
		tags    nostr.Tags
		removed []string
		err     error
	}{
		{"member removes self", true, pkMember, nostr.Tags{{"p", pkMember}}, []string{pkMember}, nil},
		{"owner removes self", true, pkOwner, nostr.Tags{{"p", pkOwner}}, []string{pkOwner}, nil},
		{"non-member removes self: refused", false, pkOutsider, nostr.Tags{{"p", pkOutsider}}, nil, ErrNotMember},
		{"admin removes member", true, pkAdmin, nostr.Tags{{"p", pkMember}}, []string{pkMember}, nil},
		{"admin removes admin", true, pkAdmin, nostr.Tags{{"p", pkAdmin2}}, []string{pkAdmin2}, nil},
		{"admin removes non-member: no change", true, pkAdmin, nostr.Tags{{"p", pkNewbie}}, nil, nil},
		{"owner removes admin and member", true, pkOwner, nostr.Tags{{"p", pkAdmin}, {"p", pkMember}}, []string{pkAdmin, pkMember}, nil},
		{"relay admin removes owner", true, pkRelayAdmin, nostr.Tags{{"p", pkOwner}}, []string{pkOwner}, nil},
		{"admin removes owner refused", true, pkAdmin, nostr.Tags{{"p", pkOwner}}, nil, ErrRoleAboveOwn},
		{"admin removes self and owner refused", false, pkAdmin, nostr.Tags{{"p", pkAdmin}, {"p", pkOwner}}, nil, ErrRoleAboveOwn},
		{"member removes other refused (open)", false, pkMember, nostr.Tags{{"p", pkMember2}}, nil, ErrNotChannelAdmin},
		{"member removes other refused (private)", true, pkMember, nostr.Tags{{"p", pkMember2}}, nil, ErrNotChannelAdmin},
		{"outsider removes member refused", false, pkOutsider, nostr.Tags{{"p", pkMember}}, nil, ErrNotChannelAdmin},
		{"uppercase pubkey", true, pkOwner, nostr.Tags{{"p", strings.ToUpper(pkMember)}}, nil, ErrUserTag},
		{"short pubkey", true, pkOwner, nostr.Tags{{"p", "abc"}}, nil, ErrUserTag},
		{"no p tag", true, pkOwner, nil, nil, ErrUserTag},
		{"p tag without value", true, pkOwner, nostr.Tags{{"p"}}, nil, ErrUserTag},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			next, err := transition(t, com, lifecycle(KindRemoveUser, c.author, c.tags...), chanID, putUserBase(c.private))
			checkErr(t, err, c.err)
			if c.err != nil {
				return
			}
			want := putUserBase(c.private)
			for _, pk := range c.removed {
				delete(want.Members, pk)
			}
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("got %+v, want %+v", next, want)
			}
		})
	}
}

// RL-10, RL-29, RL-36: 9021 join (open channels, and private ones with a
// live invite code; else "restricted: no such channel, or it is private",
// the same for a channel that does not exist), refused to a member with
// "duplicate: already a member", and 9022 leave.
func TestTransitionJoinLeave(t *testing.T) {
	for _, c := range []struct {
		name    string
		kind    int
		base    func() *Channel
		author  string
		invited bool
		role    Role // the author's role afterwards
		err     error
		wireErr string
	}{
		{"join open", KindJoin, openChannel, pkOutsider, false, RoleMember, nil, ""},
		{"join implicit", KindJoin, implicitChannel, pkOutsider, false, RoleMember, nil, ""},
		{"admin joins again", KindJoin, openChannel, pkAdmin, false, RoleAdmin, ErrAlreadyMember, "duplicate: already a member"},
		{"owner joins private again", KindJoin, privateChannel, pkOwner, false, RoleOwner, ErrAlreadyMember, "duplicate: already a member"},
		{"member joins private again", KindJoin, privateChannel, pkMember, false, RoleMember, ErrAlreadyMember, "duplicate: already a member"},
		{"member joins private again with a code", KindJoin, privateChannel, pkMember, true, RoleMember, ErrAlreadyMember, "duplicate: already a member"},
		{"relay admin joins private", KindJoin, privateChannel, pkRelayAdmin, false, RoleMember, nil, ""},
		{"outsider joins private", KindJoin, privateChannel, pkOutsider, false, RoleNone, ErrCannotJoin, "restricted: no such channel, or it is private"},
		{"outsider joins private with a live code", KindJoin, privateChannel, pkOutsider, true, RoleMember, nil, ""},
		{"join nonexistent", KindJoin, func() *Channel { return nil }, pkOutsider, false, RoleNone, ErrCannotJoin, "restricted: no such channel, or it is private"},
		{"join nonexistent, invited", KindJoin, func() *Channel { return nil }, pkOutsider, true, RoleNone, ErrCannotJoin, "restricted: no such channel, or it is private"},
		{"join deleted", KindJoin, deletedChannel, pkOutsider, false, RoleNone, ErrChannelDeleted, ""},

		{"member leaves", KindLeave, openChannel, pkMember, false, RoleNone, nil, ""},
		{"owner leaves", KindLeave, privateChannel, pkOwner, false, RoleNone, nil, ""},
		{"admin leaves private", KindLeave, privateChannel, pkAdmin, false, RoleNone, nil, ""},
		{"non-member leaves: refused", KindLeave, openChannel, pkOutsider, false, RoleNone, ErrNotMember, ""},
		{"leave nonexistent", KindLeave, func() *Channel { return nil }, pkMember, false, RoleNone, ErrChannelNotFound, ""},
		{"leave deleted", KindLeave, deletedChannel, pkMember, false, RoleNone, ErrChannelDeleted, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			base := c.base()
			next, err := transitionWith(t, com, lifecycle(c.kind, c.author), chanID, base, c.invited)
			checkErr(t, err, c.err)
			if c.wireErr != "" && err.Error() != c.wireErr {
				t.Fatalf("wire text %q, want %q", err.Error(), c.wireErr)
			}
			if c.err != nil {
				return
			}
			want := c.base()
			if c.role == RoleNone {
				delete(want.Members, c.author)
			} else {
				want.Members[c.author] = c.role
			}
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("got %+v, want %+v", next, want)
			}
		})
	}
}

// RL-36: 9009 create-invite, by an owner or admin of the channel (a relay
// admin acts as owner), with exactly one code of 1 to MaxInviteCode bytes,
// counts one more live code. Anyone else is refused as for a 9002: on an
// open channel "must be channel owner or admin", on a private one they
// may not read as a channel that does not exist (RL-29).
func TestTransitionCreateInvite(t *testing.T) {
	code := func(c string) nostr.Tag { return nostr.Tag{"code", c} }
	for _, c := range []struct {
		name   string
		base   func() *Channel
		author string
		tags   []nostr.Tag
		err    error
	}{
		{"owner", privateChannel, pkOwner, []nostr.Tag{code("abc")}, nil},
		{"admin", privateChannel, pkAdmin, []nostr.Tag{code("abc")}, nil},
		{"admin of an open channel", openChannel, pkAdmin, []nostr.Tag{code("abc")}, nil},
		{"relay admin", privateChannel, pkRelayAdmin, []nostr.Tag{code("abc")}, nil},
		{"code of the longest length", privateChannel, pkOwner, []nostr.Tag{code(strings.Repeat("c", MaxInviteCode))}, nil},
		{"member of a private channel", privateChannel, pkMember, []nostr.Tag{code("abc")}, ErrNotChannelAdmin},
		{"member of an open channel", openChannel, pkMember, []nostr.Tag{code("abc")}, ErrNotChannelAdmin},
		{"outsider of an open channel", openChannel, pkOutsider, []nostr.Tag{code("abc")}, ErrNotChannelAdmin},
		{"outsider of a private channel", privateChannel, pkOutsider, []nostr.Tag{code("abc")}, ErrChannelNotFound},
		{"nonexistent channel", func() *Channel { return nil }, pkOwner, []nostr.Tag{code("abc")}, ErrChannelNotFound},
		{"deleted channel", deletedChannel, pkOwner, []nostr.Tag{code("abc")}, ErrChannelDeleted},
		{"no code", privateChannel, pkOwner, nil, ErrInviteCode},
		{"code without value", privateChannel, pkOwner, []nostr.Tag{{"code"}}, ErrInviteCode},
		{"empty code", privateChannel, pkOwner, []nostr.Tag{code("")}, ErrInviteCode},
		{"two codes", privateChannel, pkOwner, []nostr.Tag{code("a"), code("b")}, ErrInviteCode},
		{"code too long", privateChannel, pkOwner, []nostr.Tag{code(strings.Repeat("c", MaxInviteCode+1))}, ErrInviteCode},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			next, err := transition(t, com, lifecycle(KindCreateInvite, c.author, c.tags...), chanID, c.base())
			checkErr(t, err, c.err)
			if c.err != nil {
				return
			}
			want := c.base()
			want.Invites = 1
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("got %+v, want %+v", next, want)
			}
		})
	}
}

// RL-36: a private channel is closed (NIP-29 `closed`: joins are not
// honoured) while it has no live invite code; an open channel never is.
func TestChannelClosed(t *testing.T) {
	for _, c := range []struct {
		private bool
		invites int
		want    bool
	}{{false, 0, false}, {false, 2, false}, {true, 0, true}, {true, 1, false}} {
		ch := &Channel{Private: c.private, Invites: c.invites}
		if got := ch.Closed(); got != c.want {
			t.Errorf("private %v, %d codes: Closed() = %v, want %v", c.private, c.invites, got, c.want)
		}
	}
}

// RL-10: 9008 deletes a channel, by its owner only (a relay admin acts as
// owner); the channel is then Deleted and takes no more lifecycle events.
func TestTransitionDeleteChannel(t *testing.T) {
	for _, c := range []struct {
		name   string
		base   func() *Channel
		author string
		err    error
	}{
		{"owner deletes", openChannel, pkOwner, nil},
		{"owner deletes private", privateChannel, pkOwner, nil},
		{"relay admin deletes", privateChannel, pkRelayAdmin, nil},
		{"relay admin deletes implicit", implicitChannel, pkRelayAdmin, nil},
		{"admin refused", openChannel, pkAdmin, ErrNotChannelOwner},
		{"member refused", openChannel, pkMember, ErrNotChannelOwner},
		{"outsider refused", openChannel, pkOutsider, ErrNotChannelOwner},
		{"outsider refused on implicit", implicitChannel, pkOutsider, ErrNotChannelOwner},
		{"already deleted", deletedChannel, pkOwner, ErrChannelDeleted},
		{"nonexistent", func() *Channel { return nil }, pkRelayAdmin, ErrChannelNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
			next, err := transition(t, com, lifecycle(KindDeleteChannel, c.author), chanID, c.base())
			checkErr(t, err, c.err)
			if c.err != nil {
				return
			}
			want := c.base()
			want.Deleted = true
			if !reflect.DeepEqual(next, want) {
				t.Fatalf("got %+v, want %+v", next, want)
			}
			// Deleted: no more lifecycle events, no reads, no writes.
			for _, kind := range []int{KindJoin, KindLeave, KindEditMetadata, KindDeleteChannel, KindCreateChannel} {
				if _, err := com.Transition(lifecycle(kind, pkRelayAdmin), chanID, next, false); !errors.Is(err, ErrChannelDeleted) {
					t.Errorf("kind %d on deleted channel: %v", kind, err)
				}
			}
			if com.CanRead(Viewer(pkOwner), next) || com.CanRead(Viewer(pkRelayAdmin), next) {
				t.Error("deleted channel readable")
			}
			if err := com.CheckWrite(pkOwner, next); !errors.Is(err, ErrChannelDeleted) {
				t.Errorf("write to deleted channel: %v", err)
			}
		})
	}
}

// RL-10: Transition returns a new channel and never modifies the one it is
// given, accepted or not, whatever the kind.
func TestTransitionDoesNotMutate(t *testing.T) {
	com := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
	ch := privateChannel()
	members := maps.Clone(ch.Members)
	events := []*nostr.Event{
		lifecycle(KindPutUser, pkOwner, nostr.Tag{"p", pkNewbie, "admin"}),
		lifecycle(KindPutUser, pkOwner, nostr.Tag{"p", pkNewbie}, nostr.Tag{"p", "BAD"}), // rejected after a change
		lifecycle(KindRemoveUser, pkOwner, nostr.Tag{"p", pkMember}),
		lifecycle(KindRemoveUser, pkAdmin, nostr.Tag{"p", pkMember}, nostr.Tag{"p", pkOwner}), // rejected after a change
		lifecycle(KindEditMetadata, pkOwner, nostr.Tag{"name", "renamed"}, nostr.Tag{"public"}),
		lifecycle(KindJoin, pkRelayAdmin),
		lifecycle(KindLeave, pkMember),
		lifecycle(KindDeleteChannel, pkOwner),
		lifecycle(KindCreateChannel, pkOwner),
	}
	for _, ev := range events {
		next, _ := com.Transition(ev, chanID, ch, false)
		if next != nil {
			next.Members[pkOutsider] = RoleOwner
		}
		if !maps.Equal(ch.Members, members) || ch.Name != "secret" || !ch.Private || ch.Deleted || !ch.Created {
			t.Fatalf("kind %d modified the input: %+v", ev.Kind, ch)
		}
	}
}

// RL-15: kind 9033 sets thread_replies_in_channel from true/1/yes/on or
// false/0/no/off in any letter case, dated within ±120 s of the relay's
// clock; anything else is "invalid: thread_replies_in_channel must be a
// boolean".
func TestThreadRepliesSetting(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	ev := func(offset time.Duration, tags ...nostr.Tag) *nostr.Event {
		return &nostr.Event{Kind: KindCommunityAdmin, PubKey: pkRelayAdmin, CreatedAt: nostr.Timestamp(now.Add(offset).Unix()), Tags: tags}
	}
	setting := func(v string) nostr.Tag { return nostr.Tag{"thread_replies_in_channel", v} }
	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want bool
		err  error
	}{
		{"true", ev(0, setting("true")), true, nil},
		{"TRUE", ev(0, setting("TRUE")), true, nil},
		{"True", ev(0, setting("True")), true, nil},
		{"1", ev(0, setting("1")), true, nil},
		{"yes", ev(0, setting("yes")), true, nil},
		{"Yes", ev(0, setting("Yes")), true, nil},
		{"on", ev(0, setting("on")), true, nil},
		{"oN", ev(0, setting("oN")), true, nil},
		{"false", ev(0, setting("false")), false, nil},
		{"FaLsE", ev(0, setting("FaLsE")), false, nil},
		{"0", ev(0, setting("0")), false, nil},
		{"no", ev(0, setting("no")), false, nil},
		{"NO", ev(0, setting("NO")), false, nil},
		{"off", ev(0, setting("off")), false, nil},
		{"Off", ev(0, setting("Off")), false, nil},

		{"maybe", ev(0, setting("maybe")), false, ErrSettingNotBool},
		{"empty", ev(0, setting("")), false, ErrSettingNotBool},
		{"padded", ev(0, setting(" true")), false, ErrSettingNotBool},
		{"2", ev(0, setting("2")), false, ErrSettingNotBool},
		{"missing tag", ev(0), false, ErrSettingNotBool},
		{"tag without value", ev(0, nostr.Tag{"thread_replies_in_channel"}), false, ErrSettingNotBool},
		{"other setting only", ev(0, nostr.Tag{"something_else", "true"}), false, ErrSettingNotBool},

		{"+120 s accepted", ev(120*time.Second, setting("on")), true, nil},
		{"-120 s accepted", ev(-120*time.Second, setting("on")), true, nil},
		{"+60 s accepted", ev(60*time.Second, setting("off")), false, nil},
		{"+121 s refused", ev(121*time.Second, setting("on")), false, ErrTooFarInFuture},
		{"-121 s refused", ev(-121*time.Second, setting("on")), false, ErrTooFarInFuture},
		{"an hour old refused", ev(-time.Hour, setting("on")), false, ErrTooFarInFuture},
		{"a day ahead refused", ev(24*time.Hour, setting("on")), false, ErrTooFarInFuture},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ThreadRepliesSetting(c.ev, now)
			checkErr(t, err, c.err)
			if got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	// The wire text is the contract's.
	if _, err := ThreadRepliesSetting(ev(0, setting("maybe")), now); err.Error() != "invalid: thread_replies_in_channel must be a boolean" {
		t.Fatalf("wire text %q", err.Error())
	}
}

// RL-8: a reaction belongs to the channel of its target, the last e tag;
// other kinds have no scope target.
func TestScopeTarget(t *testing.T) {
	for _, c := range []struct {
		name string
		kind int
		tags nostr.Tags
		want string
	}{
		{"reaction, one e", KindReaction, nostr.Tags{{"e", idA}}, idA},
		{"reaction, last e wins", KindReaction, nostr.Tags{{"e", idA}, {"p", pkOwner}, {"e", idB, "wss://r"}, {"k", "1"}}, idB},
		{"reaction, e without value skipped", KindReaction, nostr.Tags{{"e", idA}, {"e"}}, idA},
		{"reaction, no e", KindReaction, nostr.Tags{{"p", pkOwner}}, ""},
		{"reaction, no tags", KindReaction, nil, ""},
		{"note", 1, nostr.Tags{{"e", idA}}, ""},
		{"deletion", KindDeletion, nostr.Tags{{"e", idA}}, ""},
		{"edit", KindEdit, nostr.Tags{{"e", idA}}, ""},
		{"group delete", KindGroupDelete, nostr.Tags{{"e", idA}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ScopeTarget(&nostr.Event{Kind: c.kind, Tags: c.tags}); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// RL-10: a channel id is a UUID in canonical form (lowercase, 8-4-4-4-12).
func TestIsCanonicalUUID(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{chanID, true},
		{chanIDOther, true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{strings.ToUpper(chanID), false},
		{"3F1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", false},
		{strings.ReplaceAll(chanID, "-", ""), false},
		{"{" + chanID + "}", false},
		{chanID + "0", false},
		{chanID[:35], false},
		{"3f1c2f6e1-d7a-4c3e-9a59-4c2b1a0e7b11", false},
		{"3f1c2f6e-1d7a-4c3e-9a59_4c2b1a0e7b11", false},
		{"3f1c2f6g-1d7a-4c3e-9a59-4c2b1a0e7b11", false},
		{"urn:uuid:" + chanID, false},
		{"", false},
		{"general", false},
		{"------------------------------------", false},
	} {
		if got := IsCanonicalUUID(c.in); got != c.want {
			t.Errorf("IsCanonicalUUID(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// RL-10, RL-36: the lifecycle kinds, and only they, change a channel's
// state.
func TestIsLifecycleKind(t *testing.T) {
	want := map[int]bool{9000: true, 9001: true, 9002: true, 9007: true, 9008: true, 9009: true, 9021: true, 9022: true}
	for k := 0; k < 40010; k++ {
		if k > 10 && k < 8990 || k > 9030 && k < 38990 {
			continue
		}
		if got := IsLifecycleKind(k); got != want[k] {
			t.Errorf("IsLifecycleKind(%d) = %v", k, got)
		}
	}
}
