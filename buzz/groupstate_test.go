package buzz

import (
	"fmt"
	"testing"
)

// RL-11, RL-36: the content of a channel's group state: 39000 its
// metadata and flags (`closed` while private without an invite code),
// 39001 its owners and admins with their roles, 39002
// every member, owners first, then admins, then members, by pubkey within
// a role; 39003 the roles.
func TestGroupState(t *testing.T) {
	ch := privateChannel()
	ch.Members[pkAdmin2] = RoleAdmin
	ch.Members[pkMember2] = RoleMember
	invited := privateChannel()
	invited.Invites = 1
	open := openChannel()
	open.Invites = 1
	c := NewCommunity(DefaultPolicy(), ch)
	if got, want := fmt.Sprint(c.GroupState(invited, KindGroupMetadata, 1).Tags), fmt.Sprintf(`[[d %s] [name secret] [about ] [private] [restricted] [hidden]]`, chanID); got != want {
		t.Errorf("private with a code: 39000 tags %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(c.GroupState(open, KindGroupMetadata, 1).Tags), fmt.Sprintf(`[[d %s] [name general] [about ] [public]]`, chanID); got != want {
		t.Errorf("open: 39000 tags %s, want %s", got, want)
	}
	tests := []struct {
		kind int
		want string
	}{
		{KindGroupMetadata, fmt.Sprintf(`[[d %s] [name secret] [about ] [private] [restricted] [hidden] [closed]]`, chanID)},
		{KindGroupAdmins, fmt.Sprintf(`[[d %s] [p %s owner] [p %s admin] [p %s admin]]`, chanID, pkOwner, pkAdmin2, pkAdmin)},
		{KindGroupMembers, fmt.Sprintf(`[[d %s] [p %s] [p %s] [p %s] [p %s] [p %s]]`, chanID, pkOwner, pkAdmin2, pkAdmin, pkMember2, pkMember)},
		{KindGroupRoles, fmt.Sprintf(`[[d %s] [role owner %s] [role admin %s] [role member %s]]`, chanID,
			groupRoles[0].about, groupRoles[1].about, groupRoles[2].about)},
	}
	for _, tc := range tests {
		ev := c.GroupState(ch, tc.kind, 1234)
		if got := fmt.Sprint(ev.Tags); got != tc.want || ev.Kind != tc.kind || ev.CreatedAt != 1234 {
			t.Errorf("kind %d at %d: tags %s, want %s", ev.Kind, ev.CreatedAt, got, tc.want)
		}
	}
}

// RL-9, RL-11: renewed group state is dated past every stored version, so
// that it replaces them even within one second.
func TestGroupStateAt(t *testing.T) {
	for _, tc := range []struct {
		now    int64
		stored []int64
		want   int64
	}{
		{100, nil, 100},
		{100, []int64{50, 99}, 100},
		{100, []int64{100}, 101},
		{100, []int64{105, 90}, 106},
	} {
		if got := GroupStateAt(tc.now, tc.stored); got != tc.want {
			t.Errorf("GroupStateAt(%d, %v) = %d, want %d", tc.now, tc.stored, got, tc.want)
		}
	}
}

// RL-11: a transition that changes nothing (a repeated join) is the same
// state, and costs no new group state; any change is not.
func TestSameState(t *testing.T) {
	joined := openChannel()
	joined.Members[pkNewbie] = RoleMember
	renamed := openChannel()
	renamed.Name = "other"
	pictured := openChannel()
	pictured.Picture = "https://example.com/p.png"
	parented := openChannel()
	parented.Parent = 7
	for _, tc := range []struct {
		name string
		a, b *Channel
		want bool
	}{
		{"unchanged", openChannel(), openChannel(), true},
		{"new channel", nil, openChannel(), false},
		{"member joined", openChannel(), joined, false},
		{"renamed", openChannel(), renamed, false},
		{"picture set (RL-36)", openChannel(), pictured, false},
		{"parent set (RL-36)", openChannel(), parented, false},
		{"parent cleared (RL-36)", parented, openChannel(), false},
		{"deleted", openChannel(), deletedChannel(), false},
	} {
		if got := SameState(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameState = %v, want %v", tc.name, got, tc.want)
		}
	}
}
