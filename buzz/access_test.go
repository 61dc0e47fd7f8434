package buzz

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Distinct pubkeys standing for the parties of the access rules.
var (
	pkOwner      = strings.Repeat("a", 64)
	pkAdmin      = strings.Repeat("b", 64)
	pkMember     = strings.Repeat("c", 64)
	pkOutsider   = strings.Repeat("d", 64)
	pkRelayAdmin = strings.Repeat("e", 64)
	pkNewbie     = strings.Repeat("f", 64)
	pkAdmin2     = strings.Repeat("9", 64)
	pkMember2    = strings.Repeat("8", 64)
)

// Canonical channel ids.
const (
	chanID      = "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	chanIDOther = "7a0d3b52-8c41-4f6e-b2d9-0e5c9f1a6b34"
)

// staffed is a membership with one pubkey of each role.
func staffed() map[string]Role {
	return map[string]Role{pkOwner: RoleOwner, pkAdmin: RoleAdmin, pkMember: RoleMember}
}

func openChannel() *Channel {
	return &Channel{Seq: 1, H: chanID, Created: true, Name: "general", Members: staffed()}
}

func privateChannel() *Channel {
	return &Channel{Seq: 1, H: chanID, Created: true, Name: "secret", Private: true, Members: staffed()}
}

// implicitChannel exists only because events named it: open, no members.
func implicitChannel() *Channel {
	return &Channel{Seq: 1, H: chanID, Members: map[string]Role{}}
}

func deletedChannel() *Channel {
	return &Channel{Seq: 1, H: chanID, Created: true, Deleted: true, Members: staffed()}
}

func relayAdmins() map[string]bool { return map[string]bool{pkRelayAdmin: true} }

// RL-12, RL-13, CW-3: the read matrix. Deleted and nonexistent channels are
// readable by no one, relay admins included (they answer alike, CW-3); open
// channels by every authenticated viewer and by anonymous ones only with
// public reads; private channels by members and relay admins only.
func TestCanRead(t *testing.T) {
	viewers := []struct {
		name string
		v    Viewer
	}{
		{"anonymous", Anonymous},
		{"authenticated non-member", Viewer(pkOutsider)},
		{"member", Viewer(pkMember)},
		{"admin", Viewer(pkAdmin)},
		{"owner", Viewer(pkOwner)},
		{"relay admin", Viewer(pkRelayAdmin)},
	}
	channels := []struct {
		name string
		ch   func() *Channel
		// want[viewer name] = {PublicRead off, PublicRead on}
		want map[string][2]bool
	}{
		{"nonexistent", func() *Channel { return nil }, map[string][2]bool{
			"anonymous": {false, false}, "authenticated non-member": {false, false}, "member": {false, false},
			"admin": {false, false}, "owner": {false, false}, "relay admin": {false, false},
		}},
		{"deleted", deletedChannel, map[string][2]bool{
			"anonymous": {false, false}, "authenticated non-member": {false, false}, "member": {false, false},
			"admin": {false, false}, "owner": {false, false}, "relay admin": {false, false},
		}},
		{"deleted private", func() *Channel { ch := deletedChannel(); ch.Private = true; return ch }, map[string][2]bool{
			"anonymous": {false, false}, "authenticated non-member": {false, false}, "member": {false, false},
			"admin": {false, false}, "owner": {false, false}, "relay admin": {false, false},
		}},
		{"open implicit", implicitChannel, map[string][2]bool{
			"anonymous": {false, true}, "authenticated non-member": {true, true}, "member": {true, true},
			"admin": {true, true}, "owner": {true, true}, "relay admin": {true, true},
		}},
		{"open created", openChannel, map[string][2]bool{
			"anonymous": {false, true}, "authenticated non-member": {true, true}, "member": {true, true},
			"admin": {true, true}, "owner": {true, true}, "relay admin": {true, true},
		}},
		{"private", privateChannel, map[string][2]bool{
			"anonymous": {false, false}, "authenticated non-member": {false, false}, "member": {true, true},
			"admin": {true, true}, "owner": {true, true}, "relay admin": {true, true},
		}},
	}
	for _, chc := range channels {
		for pi, publicRead := range []bool{false, true} {
			for _, vc := range viewers {
				name := chc.name + "/" + vc.name
				if publicRead {
					name += "/public_read"
				}
				t.Run(name, func(t *testing.T) {
					want, ok := chc.want[vc.name]
					if !ok {
						t.Fatalf("no expectation for viewer %q", vc.name)
					}
					c := NewCommunity(Policy{PublicRead: publicRead, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()})
					ch := chc.ch()
					if got := c.CanRead(vc.v, ch); got != want[pi] {
						t.Fatalf("CanRead = %v, want %v", got, want[pi])
					}
					// The lookups by name and by number apply the same rule.
					if ch != nil {
						c.Put(ch)
					}
					if got := c.CanReadChannel(vc.v, chanID); got != want[pi] {
						t.Fatalf("CanReadChannel = %v, want %v", got, want[pi])
					}
					if got := c.CanReadSeq(vc.v, 1); got != want[pi] {
						t.Fatalf("CanReadSeq = %v, want %v", got, want[pi])
					}
				})
			}
		}
	}
}

// CW-3: a channel the community never heard of is unreadable by name and by
// number, for everyone, whatever the policy.
func TestCanReadUnknownLookups(t *testing.T) {
	c := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Admins: relayAdmins()})
	c.Put(openChannel())
	for _, v := range []Viewer{Anonymous, Viewer(pkOutsider), Viewer(pkOwner), Viewer(pkRelayAdmin)} {
		if c.CanReadChannel(v, chanIDOther) {
			t.Errorf("%q reads unknown channel by name", v)
		}
		if c.CanReadSeq(v, 999) {
			t.Errorf("%q reads unknown channel by seq", v)
		}
	}
}

// RL-12, RL-13, RL-27a: MayHide is false only when CanRead refuses v no
// channel of the community (a read then looks at no channel), and follows
// Puts that make channels private, public or deleted.
func TestMayHide(t *testing.T) {
	open := func(seq int64) *Channel {
		return &Channel{Seq: seq, H: "open-" + string(rune('a'+seq)), Created: true, Members: staffed()}
	}
	private := func(seq int64) *Channel {
		ch := open(seq)
		ch.Private = true
		return ch
	}
	deleted := func(seq int64) *Channel {
		ch := open(seq)
		ch.Deleted = true
		return ch
	}
	viewers := []Viewer{Anonymous, Viewer(pkOutsider), Viewer(pkMember), Viewer(pkRelayAdmin)}
	for _, c := range []struct {
		name       string
		publicRead bool
		channels   []*Channel
		hiding     []Viewer // those MayHide is true for
	}{
		{"no channels", false, nil, nil},
		{"all open, public read", true, []*Channel{open(1), open(2)}, nil},
		{"all open, no public read", false, []*Channel{open(1), open(2)}, []Viewer{Anonymous}},
		{"one private", true, []*Channel{open(1), private(2)}, viewers},
		{"one deleted", true, []*Channel{open(1), deleted(2)}, viewers},
		{"private made public again", true, []*Channel{private(1), open(2), open(1)}, nil},
		{"open channel deleted", true, []*Channel{open(1), deleted(1)}, viewers},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: c.publicRead, Admins: relayAdmins()})
			for _, ch := range c.channels {
				com.Put(ch)
			}
			for _, v := range viewers {
				want := slices.Contains(c.hiding, v)
				if got := com.MayHide(v); got != want {
					t.Errorf("MayHide(%.8q) = %v, want %v", v, got, want)
				}
				refused := false
				for _, ch := range com.Channels() {
					refused = refused || !com.CanRead(v, ch)
				}
				if refused && !com.MayHide(v) {
					t.Errorf("CanRead refuses %.8q a channel, but MayHide is false", v)
				}
			}
		})
	}
}

// RL-14: write access. Relay admins always; a channel that does not exist
// yet with open writes; members; anyone on an open channel with open
// writes; otherwise "restricted: not a channel member". A deleted channel
// takes no more events.
func TestCheckWrite(t *testing.T) {
	for _, c := range []struct {
		name      string
		openWrite bool
		author    string
		ch        *Channel
		want      error
	}{
		{"relay admin, nonexistent, closed writes", false, pkRelayAdmin, nil, nil},
		{"relay admin, private non-member, closed writes", false, pkRelayAdmin, privateChannel(), nil},
		{"relay admin, open, closed writes", false, pkRelayAdmin, openChannel(), nil},
		{"relay admin, implicit, closed writes", false, pkRelayAdmin, implicitChannel(), nil},

		{"nonexistent, open writes", true, pkOutsider, nil, nil},
		{"nonexistent, closed writes", false, pkOutsider, nil, ErrNotMember},

		{"deleted, member, open writes", true, pkMember, deletedChannel(), ErrChannelDeleted},
		{"deleted, owner, closed writes", false, pkOwner, deletedChannel(), ErrChannelDeleted},
		{"deleted, outsider, open writes", true, pkOutsider, deletedChannel(), ErrChannelDeleted},
		{"deleted, outsider, closed writes", false, pkOutsider, deletedChannel(), ErrChannelDeleted},

		{"member of private, closed writes", false, pkMember, privateChannel(), nil},
		{"admin of private, closed writes", false, pkAdmin, privateChannel(), nil},
		{"owner of private, closed writes", false, pkOwner, privateChannel(), nil},
		{"member of open, closed writes", false, pkMember, openChannel(), nil},
		{"member of private, open writes", true, pkMember, privateChannel(), nil},

		{"outsider, open created, open writes", true, pkOutsider, openChannel(), nil},
		{"outsider, open created, closed writes", false, pkOutsider, openChannel(), ErrNotMember},
		{"outsider, implicit, open writes", true, pkOutsider, implicitChannel(), nil},
		{"outsider, implicit, closed writes", false, pkOutsider, implicitChannel(), ErrNotMember},

		{"outsider, private, open writes", true, pkOutsider, privateChannel(), ErrNotMember},
		{"outsider, private, closed writes", false, pkOutsider, privateChannel(), ErrNotMember},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: true, OpenWrite: c.openWrite, Create: CreateByAnyone, Admins: relayAdmins()})
			err := com.CheckWrite(c.author, c.ch)
			if c.want == nil {
				if err != nil {
					t.Fatalf("CheckWrite = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("CheckWrite = %v, want %v", err, c.want)
			}
		})
	}
}

// RL-14: the wire text of the write rejection is the contract's.
func TestCheckWriteMessage(t *testing.T) {
	com := NewCommunity(Policy{})
	err := com.CheckWrite(pkOutsider, privateChannel())
	if err == nil || err.Error() != "restricted: not a channel member" {
		t.Fatalf("got %v", err)
	}
}

// RL-10: a relay admin is owner of every channel, existing or not; others
// hold the role the channel gives them.
func TestRoleOf(t *testing.T) {
	c := NewCommunity(Policy{Admins: relayAdmins()})
	ch := privateChannel()
	for _, tc := range []struct {
		pubkey string
		ch     *Channel
		want   Role
	}{
		{pkRelayAdmin, ch, RoleOwner},
		{pkRelayAdmin, nil, RoleOwner},
		{pkOwner, ch, RoleOwner},
		{pkAdmin, ch, RoleAdmin},
		{pkMember, ch, RoleMember},
		{pkOutsider, ch, RoleNone},
		{pkOwner, nil, RoleNone},
	} {
		if got := c.RoleOf(tc.pubkey, tc.ch); got != tc.want {
			t.Errorf("RoleOf(%s…, %v) = %v, want %v", tc.pubkey[:4], tc.ch != nil, got, tc.want)
		}
	}
	if !c.IsRelayAdmin(pkRelayAdmin) || c.IsRelayAdmin(pkOwner) {
		t.Errorf("IsRelayAdmin wrong")
	}
	if NewCommunity(Policy{}).IsRelayAdmin(pkRelayAdmin) {
		t.Errorf("nil admin set makes a relay admin")
	}
}

// RL-10: the roles of a put-user p tag; an absent role is member.
func TestParseRole(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Role
		ok   bool
	}{
		{"", RoleMember, true},
		{"member", RoleMember, true},
		{"Member", RoleMember, true},
		{"admin", RoleAdmin, true},
		{"ADMIN", RoleAdmin, true},
		{"owner", RoleOwner, true},
		{"Owner", RoleOwner, true},
		{"moderator", RoleNone, false},
		{"none", RoleNone, false},
		{" admin", RoleNone, false},
		{"admins", RoleNone, false},
	} {
		got, ok := ParseRole(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRole(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// RL-10, RL-11: roles order and spell as the group state shows them.
func TestRoleString(t *testing.T) {
	if !(RoleNone < RoleMember && RoleMember < RoleAdmin && RoleAdmin < RoleOwner) {
		t.Fatal("roles out of order")
	}
	for r, want := range map[Role]string{RoleNone: "", RoleMember: "member", RoleAdmin: "admin", RoleOwner: "owner", Role(9): "Role(9)", Role(-1): "Role(-1)"} {
		if got := r.String(); got != want {
			t.Errorf("Role(%d).String() = %q, want %q", int8(r), got, want)
		}
	}
}

// RL-10: who may create is configurable: anyone, members or admins.
func TestParseCreatePolicy(t *testing.T) {
	for _, c := range []struct {
		in   string
		want CreatePolicy
		ok   bool
	}{
		{"anyone", CreateByAnyone, true},
		{"members", CreateByMembers, true},
		{"admins", CreateByAdmins, true},
		{"", "", false},
		{"Anyone", "", false},
		{"owners", "", false},
		{"member", "", false},
	} {
		got, err := ParseCreatePolicy(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseCreatePolicy(%q) = %q, %v; want %q, ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

// RL-24: with no configuration reads are public, writes open, and anyone
// creates channels.
func TestDefaultPolicy(t *testing.T) {
	p := DefaultPolicy()
	if !p.PublicRead || !p.OpenWrite || p.Create != CreateByAnyone || len(p.Admins) != 0 {
		t.Fatalf("DefaultPolicy = %+v", p)
	}
}

// RL-10, RL-13: a published community is never modified: a clone takes
// Puts (new channels, replaced channels) and setting changes without
// touching the original.
func TestCommunityCloneIndependence(t *testing.T) {
	orig := NewCommunity(Policy{PublicRead: true, Admins: relayAdmins()})
	orig.ThreadRepliesInChannel = true
	orig.Version = 7
	first := openChannel()
	orig.Put(first)

	n := orig.Clone()
	if n.Policy.PublicRead != orig.Policy.PublicRead || !n.ThreadRepliesInChannel || n.Version != 7 {
		t.Fatalf("clone lost state: %+v", n.Policy)
	}
	if n.Channel(chanID) != first || n.ChannelBySeq(1) != first {
		t.Fatal("clone does not share the original's channels")
	}

	// Replace a channel and add another in the clone.
	replaced := first.clone()
	replaced.Private = true
	replaced.Members[pkNewbie] = RoleMember
	n.Put(replaced)
	other := &Channel{Seq: 2, H: chanIDOther, Created: true, Members: map[string]Role{pkNewbie: RoleOwner}}
	n.Put(other)
	n.ThreadRepliesInChannel = false
	n.Version++

	if orig.Channel(chanID) != first || orig.ChannelBySeq(1) != first {
		t.Fatal("Put on the clone replaced the original's channel")
	}
	if first.Private || first.Members[pkNewbie] != RoleNone {
		t.Fatal("the original's channel changed")
	}
	if orig.Channel(chanIDOther) != nil || orig.ChannelBySeq(2) != nil || len(orig.Channels()) != 1 {
		t.Fatal("Put on the clone added to the original")
	}
	if !orig.ThreadRepliesInChannel || orig.Version != 7 {
		t.Fatal("clone's settings leaked into the original")
	}
	if n.Channel(chanID) != replaced || n.ChannelBySeq(2) != other || len(n.Channels()) != 2 {
		t.Fatal("clone does not hold its Puts")
	}
	// The original still reads as before the clone changed.
	if orig.CanRead(Anonymous, orig.Channel(chanID)) != true || n.CanRead(Anonymous, n.Channel(chanID)) != false {
		t.Fatal("read access of original or clone wrong after Put")
	}
}

// RL-10: Channel.clone copies the membership, so a Transition result never
// shares its map with the state it came from.
func TestChannelCloneMembers(t *testing.T) {
	ch := openChannel()
	before := maps.Clone(ch.Members)
	c := ch.clone()
	c.Members[pkNewbie] = RoleOwner
	delete(c.Members, pkOwner)
	c.Name = "changed"
	if !maps.Equal(ch.Members, before) || ch.Name != "general" {
		t.Fatal("clone shares state with the original")
	}
	empty := (&Channel{H: "x"}).clone()
	if empty.Members == nil {
		t.Fatal("clone of a channel without members has a nil map")
	}
}

// RL-10: members of a channel that was deleted are members nowhere; the
// count IsMemberAnywhere keeps follows channels replaced by Put (joins,
// removals, role changes, deletion), in a clone only.
func TestIsMemberAnywhere(t *testing.T) {
	c := NewCommunity(Policy{})
	c.Put(&Channel{Seq: 1, H: chanID, Created: true, Members: map[string]Role{pkMember: RoleMember}})
	c.Put(&Channel{Seq: 2, H: chanIDOther, Created: true, Deleted: true, Members: map[string]Role{pkMember2: RoleOwner}})
	member := func(c *Community, want map[string]bool) {
		t.Helper()
		for _, pk := range []string{pkMember, pkMember2, pkOutsider, pkAdmin, pkOwner} {
			if got := c.IsMemberAnywhere(pk); got != want[pk] {
				t.Errorf("IsMemberAnywhere(%.8s) = %v, want %v", pk, got, want[pk])
			}
		}
	}
	member(c, map[string]bool{pkMember: true})

	// pkMember in two channels, pkAdmin joins one: removal from one leaves
	// pkMember a member of the other.
	n := c.Clone()
	n.Put(&Channel{Seq: 3, H: "third", Created: true, Members: map[string]Role{pkMember: RoleOwner, pkAdmin: RoleAdmin}})
	n.Put(&Channel{Seq: 1, H: chanID, Created: true, Members: map[string]Role{pkAdmin: RoleMember}})
	member(n, map[string]bool{pkMember: true, pkAdmin: true})
	member(c, map[string]bool{pkMember: true})
	// A role change counts once; deleting channel 3 leaves pkAdmin in 1.
	n.Put(&Channel{Seq: 3, H: "third", Created: true, Members: map[string]Role{pkMember: RoleMember, pkAdmin: RoleOwner}})
	n.Put(&Channel{Seq: 3, H: "third", Created: true, Deleted: true, Members: map[string]Role{pkMember: RoleMember, pkAdmin: RoleOwner}})
	member(n, map[string]bool{pkAdmin: true})
	n.Put(&Channel{Seq: 1, H: chanID, Created: true, Members: map[string]Role{}})
	member(n, nil)
}

// RL-10, RL-13: a community built whole (as the store loads it) answers as
// one built by a Put per channel: lookups, memberships, MayHide.
func TestNewCommunityWithChannels(t *testing.T) {
	chs := []*Channel{
		{Seq: 1, H: chanID, Created: true, Members: map[string]Role{pkMember: RoleMember}},
		{Seq: 2, H: chanIDOther, Created: true, Private: true, Members: map[string]Role{pkMember: RoleOwner, pkAdmin: RoleAdmin}},
		{Seq: 3, H: "third", Created: true, Deleted: true, Members: map[string]Role{pkMember2: RoleOwner}},
	}
	put := NewCommunity(DefaultPolicy())
	for _, ch := range chs {
		put.Put(ch)
	}
	built := NewCommunity(DefaultPolicy(), chs...)
	for _, ch := range chs {
		if built.Channel(ch.H) != ch || built.ChannelBySeq(ch.Seq) != ch {
			t.Errorf("channel %d not found by h or seq", ch.Seq)
		}
	}
	if len(built.Channels()) != len(chs) {
		t.Errorf("Channels() has %d channels, want %d", len(built.Channels()), len(chs))
	}
	for _, pk := range []string{pkMember, pkAdmin, pkMember2, pkOutsider} {
		if built.IsMemberAnywhere(pk) != put.IsMemberAnywhere(pk) {
			t.Errorf("IsMemberAnywhere(%.8s): built %v, put %v", pk, built.IsMemberAnywhere(pk), put.IsMemberAnywhere(pk))
		}
	}
	for _, v := range []Viewer{Anonymous, Viewer(pkOutsider)} {
		if built.MayHide(v) != put.MayHide(v) || !built.MayHide(v) {
			t.Errorf("MayHide(%.8q): built %v, put %v", v, built.MayHide(v), put.MayHide(v))
		}
	}
}

// RL-27a: a change of the access state (a Clone and a Put, what a
// transaction creating a channel does) does not copy every channel: what it
// allocates is the same with 10,000 channels as with 10, give or take the
// depth of the maps (logarithmic). Counted in bytes, not timed.
func TestCommunityChangeCostIndependentOfChannels(t *testing.T) {
	bytesPerChange := func(n int) uint64 {
		c := NewCommunity(DefaultPolicy())
		for i := range n {
			c.Put(&Channel{Seq: int64(i + 1), H: fmt.Sprintf("ch-%d", i), Created: true, Private: i%2 == 1,
				Members: map[string]Role{fmt.Sprintf("%064x", i): RoleOwner}})
		}
		// Channels made up front: only the change itself is counted.
		const changes = 100
		next := make([]*Channel, changes)
		for i := range next {
			next[i] = &Channel{Seq: int64(n + i + 1), H: fmt.Sprintf("new-%d", i), Created: true, Private: true,
				Members: map[string]Role{pkNewbie: RoleOwner}}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, ch := range next {
			c = c.Clone()
			c.Put(ch)
		}
		runtime.ReadMemStats(&after)
		if !c.IsMemberAnywhere(pkNewbie) || c.ChannelBySeq(int64(n+changes)) == nil {
			t.Fatal("the changes did not take")
		}
		return (after.TotalAlloc - before.TotalAlloc) / changes
	}
	few, many := bytesPerChange(10), bytesPerChange(10_000)
	t.Logf("bytes allocated per change: %d with 10 channels, %d with 10,000", few, many)
	// Three more levels of 32-way nodes in each map at most.
	if many > 4*few {
		t.Errorf("a change allocates %d bytes with 10,000 channels, %d with 10: it grows with the channels", many, few)
	}
}
