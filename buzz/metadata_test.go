package buzz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Channels of a small tree for the subgroup tests: root <- mid <- leaf,
// an unrelated open channel, a private one the owner of the others does
// not belong to, and a deleted one.
const (
	chanRoot    = "10000000-0000-4000-8000-000000000001"
	chanMid     = "10000000-0000-4000-8000-000000000002"
	chanLeaf    = "10000000-0000-4000-8000-000000000003"
	chanLoose   = "10000000-0000-4000-8000-000000000004"
	chanSecret  = "10000000-0000-4000-8000-000000000005"
	chanGone    = "10000000-0000-4000-8000-000000000006"
	chanMissing = "10000000-0000-4000-8000-000000000007"
)

// treeCommunity is the community of the subgroup tests: pkOwner owns
// root, mid, leaf and loose; secret is private, pkMember's alone.
func treeCommunity() *Community {
	owned := func(seq int64, h string, parent int64) *Channel {
		return &Channel{Seq: seq, H: h, Created: true, Parent: parent, Members: map[string]Role{pkOwner: RoleOwner}}
	}
	return NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone, Admins: relayAdmins()},
		owned(1, chanRoot, 0), owned(2, chanMid, 1), owned(3, chanLeaf, 2), owned(4, chanLoose, 0),
		&Channel{Seq: 5, H: chanSecret, Created: true, Private: true, Members: map[string]Role{pkMember: RoleOwner}},
		&Channel{Seq: 6, H: chanGone, Created: true, Deleted: true, Members: map[string]Role{pkOwner: RoleOwner}})
}

// editOf is a 9002 by author on channel h.
func editOf(author, h string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{Kind: KindEditMetadata, PubKey: author, CreatedAt: 1_700_000_000,
		Tags: append(nostr.Tags{{"h", h}}, tags...)}
}

// RL-36: a 9002 or 9007 sets a picture that is an http(s) URL; an empty
// one takes it away; any other value refuses the event, and one without a
// picture tag leaves it as it was.
func TestTransitionPicture(t *testing.T) {
	const pic = "https://example.com/pizza.png"
	for _, c := range []struct {
		name   string
		before string
		tag    nostr.Tag
		want   string
		err    error
	}{
		{"https", "", nostr.Tag{"picture", pic}, pic, nil},
		{"http", "", nostr.Tag{"picture", "http://example.com/a.png"}, "http://example.com/a.png", nil},
		{"upper-case scheme", "", nostr.Tag{"picture", "HTTPS://example.com/a.png"}, "HTTPS://example.com/a.png", nil},
		{"empty clears", pic, nostr.Tag{"picture", ""}, "", nil},
		{"no tag keeps", pic, nostr.Tag{"name", "x"}, pic, nil},
		{"javascript", "", nostr.Tag{"picture", "javascript:alert(1)"}, "", ErrPictureURL},
		{"data", "", nostr.Tag{"picture", "data:image/png;base64,AAAA"}, "", ErrPictureURL},
		{"relative", "", nostr.Tag{"picture", "/a.png"}, "", ErrPictureURL},
		{"no host", "", nostr.Tag{"picture", "https:///a.png"}, "", ErrPictureURL},
		{"ftp", "", nostr.Tag{"picture", "ftp://example.com/a.png"}, "", ErrPictureURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := treeCommunity()
			ch := com.Channel(chanLoose).clone()
			ch.Picture = c.before
			next, err := transition(t, com, editOf(pkOwner, chanLoose, c.tag), chanLoose, ch)
			checkErr(t, err, c.err)
			if err == nil && next.Picture != c.want {
				t.Fatalf("picture %q, want %q", next.Picture, c.want)
			}
			created, err := transition(t, com, &nostr.Event{Kind: KindCreateChannel, PubKey: pkOwner,
				Tags: nostr.Tags{{"h", chanMissing}, c.tag}}, chanMissing, nil)
			checkErr(t, err, c.err)
			if err == nil && c.tag[0] == "picture" && created.Picture != c.want {
				t.Fatalf("9007: picture %q, want %q", created.Picture, c.want)
			}
		})
	}
}

// RL-36, NIP-29 "Subgroups": a 9002 sets the parent with ["parent", id]
// and makes a root with ["parent"] or ["parent", ""]; without a parent
// tag it leaves it. A parent that does not exist, was deleted, or that
// the author may not read makes a root, answered as the missing one is
// (RL-29); a parent that is the channel itself or below it is refused.
func TestTransitionParent(t *testing.T) {
	for _, c := range []struct {
		name   string
		author string
		h      string
		tags   nostr.Tags
		want   int64
		err    error
	}{
		{"set", pkOwner, chanLoose, nostr.Tags{{"parent", chanLeaf}}, 3, nil},
		{"re-parent", pkOwner, chanMid, nostr.Tags{{"parent", chanLoose}}, 4, nil},
		{"clear, no value", pkOwner, chanMid, nostr.Tags{{"parent"}}, 0, nil},
		{"clear, empty value", pkOwner, chanMid, nostr.Tags{{"parent", ""}}, 0, nil},
		{"no tag keeps", pkOwner, chanMid, nostr.Tags{{"name", "x"}}, 1, nil},
		{"last wins", pkOwner, chanLoose, nostr.Tags{{"parent", chanRoot}, {"parent", chanMid}}, 2, nil},
		{"UUID in another spelling", pkOwner, chanLoose, nostr.Tags{{"parent", strings.ToUpper(chanRoot)}}, 1, nil},
		{"missing makes a root", pkOwner, chanMid, nostr.Tags{{"parent", chanMissing}}, 0, nil},
		{"not a channel id makes a root", pkOwner, chanMid, nostr.Tags{{"parent", "no such/id"}}, 0, nil},
		{"deleted makes a root", pkOwner, chanMid, nostr.Tags{{"parent", chanGone}}, 0, nil},
		{"unreadable private answers as missing", pkOwner, chanMid, nostr.Tags{{"parent", chanSecret}}, 0, nil},
		{"readable private", pkRelayAdmin, chanMid, nostr.Tags{{"parent", chanSecret}}, 5, nil},
		{"self", pkOwner, chanRoot, nostr.Tags{{"parent", chanRoot}}, 0, ErrParentCycle},
		{"child", pkOwner, chanRoot, nostr.Tags{{"parent", chanMid}}, 0, ErrParentCycle},
		{"grandchild", pkOwner, chanRoot, nostr.Tags{{"parent", chanLeaf}}, 0, ErrParentCycle},
		{"sibling's child is fine", pkOwner, chanLoose, nostr.Tags{{"parent", chanMid}}, 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := treeCommunity()
			ch := com.Channel(c.h)
			next, err := transition(t, com, editOf(c.author, c.h, c.tags...), c.h, ch)
			checkErr(t, err, c.err)
			if err == nil && next.Parent != c.want {
				t.Fatalf("parent #%d, want #%d", next.Parent, c.want)
			}
		})
	}
	// RL-27a: the walk that refuses a cycle is bounded: a parent with
	// MaxSubgroupDepth channels above it and itself is the deepest taken.
	var chain []*Channel
	for i := range MaxSubgroupDepth + 2 {
		chain = append(chain, &Channel{Seq: int64(i + 1), H: fmt.Sprintf("c%d", i), Created: true,
			Parent: int64(i), Members: map[string]Role{pkOwner: RoleOwner}})
	}
	deep := NewCommunity(Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone}, chain...)
	last := chain[len(chain)-1]
	for _, c := range []struct {
		parent string
		err    error
	}{
		{chain[MaxSubgroupDepth-1].H, nil},
		{chain[MaxSubgroupDepth].H, ErrSubgroupDepth},
	} {
		_, err := transition(t, deep, editOf(pkOwner, last.H, nostr.Tag{"parent", c.parent}), last.H, last)
		checkErr(t, err, c.err)
	}
	// Re-parenting is the child's admins' business: the parent's owner
	// is a stranger to the child (NIP-29: admin roles do not inherit).
	com := treeCommunity()
	mid := com.Channel(chanMid).clone()
	mid.Members = map[string]Role{pkAdmin: RoleAdmin}
	if _, err := transition(t, com, editOf(pkOwner, chanMid, nostr.Tag{"parent", ""}), chanMid, mid); err != ErrNotChannelAdmin {
		t.Fatalf("the parent's owner re-parented the child: %v", err)
	}
	if next, err := transition(t, com, editOf(pkAdmin, chanMid, nostr.Tag{"parent", ""}), chanMid, mid); err != nil || next.Parent != 0 {
		t.Fatalf("the child's admin: %v, parent #%d", err, next.Parent)
	}
	// A 9007 may name its parent too; a new channel is in no cycle.
	created, err := transition(t, com, &nostr.Event{Kind: KindCreateChannel, PubKey: pkOutsider,
		Tags: nostr.Tags{{"h", chanMissing}, {"parent", chanLeaf}}}, chanMissing, nil)
	if err != nil || created.Parent != 3 {
		t.Fatalf("9007 with a parent: %v, %+v", err, created)
	}
}

// RL-36: a deleted channel is no one's subgroup: its 9008 clears its
// parent, so that its row leaves the index a 9008 of that parent reads.
func TestDeleteChannelLeavesParent(t *testing.T) {
	com := treeCommunity()
	deleted, err := transition(t, com, &nostr.Event{Kind: KindDeleteChannel, PubKey: pkOwner,
		Tags: nostr.Tags{{"h", chanMid}}}, chanMid, com.Channel(chanMid))
	if err != nil || !deleted.Deleted || deleted.Parent != 0 {
		t.Fatalf("9008 of a subgroup: %v, %+v; want deleted, no parent", err, deleted)
	}
}

// RL-12: read access stays per channel: a member of a private parent is
// no reader of its private subgroup, nor the reverse.
func TestSubgroupReadsPerChannel(t *testing.T) {
	parent := &Channel{Seq: 1, H: chanRoot, Created: true, Private: true, Members: map[string]Role{pkMember: RoleMember}}
	child := &Channel{Seq: 2, H: chanMid, Created: true, Private: true, Parent: 1, Members: map[string]Role{pkMember2: RoleMember}}
	c := NewCommunity(DefaultPolicy(), parent, child)
	for _, tc := range []struct {
		v    string
		ch   *Channel
		want bool
	}{
		{pkMember, parent, true}, {pkMember, child, false},
		{pkMember2, parent, false}, {pkMember2, child, true},
	} {
		if got := c.CanRead(Viewer(tc.v), tc.ch); got != tc.want {
			t.Errorf("%s… reads %s: %v, want %v", tc.v[:4], tc.ch.H, got, tc.want)
		}
	}
}

// RL-36: every flag of a 39000 is true to what the relay does: private
// when only members read (else public), restricted when only members
// write (a private channel, or every one with open_write off), hidden
// when non-members cannot fetch it (a private channel: RL-13), closed
// when a join is not honoured, supported_kinds when allowed_kinds limits
// the kinds, picture when there is one, parent when the parent is there.
func TestGroupMetadataFlags(t *testing.T) {
	const pic = "https://example.com/p.png"
	for _, c := range []struct {
		name    string
		private bool
		open    bool
		kinds   map[int]bool
		picture string
		parent  int64
		want    string
	}{
		{"open channel, open writes", false, true, nil, "", 0, `[name n] [about a] [public]`},
		{"open channel, closed writes", false, false, nil, "", 0, `[name n] [about a] [public] [restricted]`},
		{"private channel", true, true, nil, "", 0, `[name n] [about a] [private] [restricted] [hidden] [closed]`},
		{"private, closed writes", true, false, nil, "", 0, `[name n] [about a] [private] [restricted] [hidden] [closed]`},
		{"allowed kinds", false, true, map[int]bool{11: true, 9: true, 1111: true}, "", 0,
			`[name n] [about a] [public] [supported_kinds 9 11 1111]`},
		{"picture", false, true, nil, pic, 0, `[name n] [picture ` + pic + `] [about a] [public]`},
		{"subgroup", false, true, nil, "", 1, `[name n] [about a] [public] [parent ` + chanRoot + `]`},
		{"parent deleted", false, true, nil, "", 6, `[name n] [about a] [public]`},
		{"parent unknown", false, true, nil, "", 99, `[name n] [about a] [public]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := treeCommunity()
			com.Policy.OpenWrite, com.Policy.Kinds = c.open, c.kinds
			ch := &Channel{Seq: 10, H: chanMissing, Created: true, Name: "n", About: "a", Picture: c.picture,
				Private: c.private, Parent: c.parent, Members: map[string]Role{}}
			ev := com.GroupState(ch, KindGroupMetadata, 1)
			want := fmt.Sprintf(`[[d %s] %s]`, chanMissing, c.want)
			if got := fmt.Sprint(ev.Tags); got != want {
				t.Fatalf("39000 tags\n got  %s\n want %s", got, want)
			}
			if ch.Closed() != c.private {
				t.Fatalf("Closed() = %v for a channel private %v", ch.Closed(), c.private)
			}
		})
	}
}

// RL-36: deleting a channel (9008) makes roots of its subgroups, each
// row and state written and its group state renewed; its other channels
// keep their parents.
func TestDeleteChannelOrphansChildren(t *testing.T) {
	tx := newMemTx(lifecycle(KindDeleteChannel, pkOwner))
	tx.community = treeCommunity()
	tx.channels[chanRoot] = 1
	tx.ev.Tags = nostr.Tags{{"h", chanRoot}}
	tx.ev.ID = id(900)
	if _, err := Admit(tx, tx.ev, AdmitInput{H: chanRoot, Now: ruleNow}); err != nil {
		t.Fatal(err)
	}
	if mid := tx.community.Channel(chanMid); mid.Parent != 0 {
		t.Fatalf("mid still names parent #%d", mid.Parent)
	}
	if leaf := tx.community.Channel(chanLeaf); leaf.Parent != 2 {
		t.Fatalf("leaf's parent became #%d, want mid (#2)", leaf.Parent)
	}
	want := []string{"event", "update channel 1", "state 1", "update channel 2", "state 2"}
	if got := fmt.Sprint(tx.writes); got != fmt.Sprint(want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
}

// RL-11, RL-36: the group state's fingerprint changes with what it is
// rendered from beyond the channels, and only with that: a change marks
// every channel for renewal once, and no key signs nothing.
func TestRenewIfChanged(t *testing.T) {
	base := treeCommunity()
	fp := GroupStateFingerprint(base.Policy)
	for _, p := range []Policy{
		{OpenWrite: false, PublicRead: true},
		{OpenWrite: true, Kinds: map[int]bool{9: true}},
		{OpenWrite: true, Kinds: map[int]bool{9: true, 11: true}},
		{OpenWrite: true, Kinds: map[int]bool{9: false}},
	} {
		if GroupStateFingerprint(p) == fp {
			t.Errorf("policy %+v has the fingerprint of %+v", p, base.Policy)
		}
	}
	if other := (Policy{OpenWrite: true, PublicRead: false, Admins: map[string]bool{pkOwner: true}}); GroupStateFingerprint(other) != fp {
		t.Errorf("public_read and admins changed the fingerprint: they are not rendered")
	}
	tx := NewTxCommunity(base)
	recorded := memSettings{FingerprintSetting: fp}
	if err := tx.RenewIfChanged(recorded, "key"); err != nil || tx.Changed() != nil {
		t.Fatalf("unchanged fingerprint: %v, changed %v", err, tx.Changed() != nil)
	}
	if err := tx.RenewIfChanged(memSettings{FingerprintSetting: fp + 1}, ""); err != nil || tx.Changed() != nil {
		t.Fatalf("without a key: %v, changed %v", err, tx.Changed() != nil)
	}
	for _, recorded := range []memSettings{{FingerprintSetting: fp + 1}, {}} {
		tx := NewTxCommunity(base)
		if err := tx.RenewIfChanged(recorded, "key"); err != nil || recorded[FingerprintSetting] != fp {
			t.Fatalf("recorded %v after a renewal (%v); want %d", recorded, err, fp)
		}
		if n := len(tx.renew); n != len(base.Channels()) {
			t.Fatalf("%d channels marked, want all %d", n, len(base.Channels()))
		}
	}
}

// memSettings are buzz.Settings in a map.
type memSettings map[string]int64

func (m memSettings) Setting(key string) (int64, bool, error) {
	v, ok := m[key]
	return v, ok, nil
}

func (m memSettings) PutSetting(key string, v int64) error {
	m[key] = v
	return nil
}
