package buzz

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
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

// RL-12, RL-13: HiddenFrom applies CanRead to every channel and answers in
// the shorter form: the hidden channels, or the only readable ones; never
// restricted when nothing is hidden.
func TestHiddenFrom(t *testing.T) {
	open := func(seq int64) *Channel {
		return &Channel{Seq: seq, H: "open-" + string(rune('a'+seq)), Created: true, Members: staffed()}
	}
	private := func(seq int64) *Channel {
		ch := open(seq)
		ch.H = "private-" + string(rune('a'+seq))
		ch.Private = true
		return ch
	}
	deleted := func(seq int64) *Channel {
		ch := open(seq)
		ch.H = "deleted-" + string(rune('a'+seq))
		ch.Deleted = true
		return ch
	}
	for _, c := range []struct {
		name       string
		publicRead bool
		channels   []*Channel
		viewer     Viewer
		want       Visibility
	}{
		{"no channels", true, nil, Anonymous, Visibility{}},
		{"no channels, authenticated", false, nil, Viewer(pkOutsider), Visibility{}},
		{"all open, public read", true, []*Channel{open(1), open(2)}, Anonymous, Visibility{}},
		{"all open, authenticated", false, []*Channel{open(1), open(2)}, Viewer(pkOutsider), Visibility{}},
		{"one private of four: hidden form", false,
			[]*Channel{open(4), private(2), open(1), open(3)}, Viewer(pkOutsider),
			Visibility{Hidden: []int64{2}, Restricted: true}},
		{"tie prefers hidden form", false,
			[]*Channel{open(1), private(2), deleted(3), open(4)}, Viewer(pkOutsider),
			Visibility{Hidden: []int64{2, 3}, Restricted: true}},
		{"one open of four: only form", false,
			[]*Channel{private(4), open(3), deleted(1), private(2)}, Viewer(pkOutsider),
			Visibility{Only: []int64{3}, Restricted: true}},
		{"hidden sorted", false,
			[]*Channel{private(9), open(1), private(5), open(2), open(3), open(4), private(7)}, Viewer(pkOutsider),
			Visibility{Hidden: []int64{5, 7, 9}, Restricted: true}},
		{"only sorted", false,
			[]*Channel{open(9), private(1), open(5), private(2), private(3), private(4), open(7)}, Viewer(pkOutsider),
			Visibility{Only: []int64{5, 7, 9}, Restricted: true}},
		{"anonymous without public read sees nothing: empty only", false,
			[]*Channel{open(1), open(2), private(3)}, Anonymous,
			Visibility{Only: []int64{}, Restricted: true}},
		{"anonymous with public read: private and deleted hidden", true,
			[]*Channel{open(1), open(2), open(3), private(4), deleted(5)}, Anonymous,
			Visibility{Hidden: []int64{4, 5}, Restricted: true}},
		{"member reads private", false,
			[]*Channel{open(1), private(2), private(3)}, Viewer(pkMember), Visibility{}},
		{"relay admin reads all but deleted", false,
			[]*Channel{open(1), private(2), private(3), deleted(4)}, Viewer(pkRelayAdmin),
			Visibility{Hidden: []int64{4}, Restricted: true}},
		{"only deleted channels: nothing readable", true,
			[]*Channel{deleted(1), deleted(2)}, Viewer(pkRelayAdmin),
			Visibility{Only: []int64{}, Restricted: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := NewCommunity(Policy{PublicRead: c.publicRead, Admins: relayAdmins()})
			for _, ch := range c.channels {
				com.Put(ch)
			}
			got := com.HiddenFrom(c.viewer)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("HiddenFrom = %#v, want %#v", got, c.want)
			}
			if got.Restricted && (got.Hidden == nil) == (got.Only == nil) {
				t.Fatalf("restricted visibility must use exactly one form: %#v", got)
			}
			// Every channel is in the answer exactly as CanRead says.
			for _, ch := range c.channels {
				hidden := slices.Contains(got.Hidden, ch.Seq) || (got.Only != nil && !slices.Contains(got.Only, ch.Seq))
				if hidden == com.CanRead(c.viewer, ch) {
					t.Errorf("channel %d: hidden=%v but CanRead=%v", ch.Seq, hidden, com.CanRead(c.viewer, ch))
				}
			}
		})
	}
}

// RL-13: the anonymous answer is cached per community, stays correct,
// is safe to ask concurrently, and a changed clone does not inherit it.
func TestHiddenFromAnonymousCached(t *testing.T) {
	c := NewCommunity(Policy{PublicRead: true})
	c.Put(&Channel{Seq: 1, H: "a", Created: true, Members: map[string]Role{}})
	c.Put(&Channel{Seq: 2, H: "b", Created: true, Private: true, Members: map[string]Role{}})
	c.Put(&Channel{Seq: 3, H: "c", Created: true, Members: map[string]Role{}})
	want := Visibility{Hidden: []int64{2}, Restricted: true}

	var wg sync.WaitGroup
	results := make([]Visibility, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.HiddenFrom(Anonymous)
		}()
	}
	wg.Wait()
	for i, got := range results {
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("call %d: HiddenFrom(Anonymous) = %#v, want %#v", i, got, want)
		}
	}
	if got := c.HiddenFrom(Anonymous); !reflect.DeepEqual(got, want) {
		t.Fatalf("again: %#v, want %#v", got, want)
	}

	// A clone with one more private channel computes its own answer.
	n := c.Clone()
	n.Put(&Channel{Seq: 4, H: "d", Created: true, Private: true, Members: map[string]Role{}})
	if got, w := n.HiddenFrom(Anonymous), (Visibility{Hidden: []int64{2, 4}, Restricted: true}); !reflect.DeepEqual(got, w) {
		t.Fatalf("clone: %#v, want %#v", got, w)
	}
	if got := c.HiddenFrom(Anonymous); !reflect.DeepEqual(got, want) {
		t.Fatalf("original after clone: %#v, want %#v", got, want)
	}
	// Authenticated viewers are not served the anonymous answer.
	if got := c.HiddenFrom(Viewer(pkOutsider)); !reflect.DeepEqual(got, want) {
		t.Fatalf("outsider: %#v, want %#v", got, want)
	}
	c2 := NewCommunity(Policy{PublicRead: false})
	c2.Put(&Channel{Seq: 1, H: "a", Created: true, Members: map[string]Role{}})
	c2.HiddenFrom(Anonymous)
	if got := c2.HiddenFrom(Viewer(pkOutsider)); got.Restricted {
		t.Fatalf("authenticated viewer got the anonymous answer: %#v", got)
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

// RL-10: members of a channel that was deleted are members nowhere.
func TestIsMemberAnywhere(t *testing.T) {
	c := NewCommunity(Policy{})
	c.Put(&Channel{Seq: 1, H: chanID, Created: true, Members: map[string]Role{pkMember: RoleMember}})
	c.Put(&Channel{Seq: 2, H: chanIDOther, Created: true, Deleted: true, Members: map[string]Role{pkMember2: RoleOwner}})
	if !c.IsMemberAnywhere(pkMember) {
		t.Error("member of a live channel not a member anywhere")
	}
	if c.IsMemberAnywhere(pkMember2) {
		t.Error("member of a deleted channel only is a member somewhere")
	}
	if c.IsMemberAnywhere(pkOutsider) {
		t.Error("outsider is a member somewhere")
	}
}
