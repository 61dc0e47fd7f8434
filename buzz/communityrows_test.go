package buzz

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// RL-12, RL-13, RL-15: the access state a store loads is its channels
// with their members and roles, the access version and the community
// setting; a member row of a channel that is not loaded counts nowhere.
func TestCommunityOf(t *testing.T) {
	key := func(pk string) []byte {
		b, _ := hex.DecodeString(pk)
		return b
	}
	for _, tc := range []struct {
		name        string
		members     []MemberRow
		wantMembers map[string]Role
		replies     bool
	}{
		{"no members", nil, map[string]Role{}, false},
		{"roles", []MemberRow{{1, key(pkOwner), RoleOwner}, {1, key(pkMember), RoleMember}},
			map[string]Role{pkOwner: RoleOwner, pkMember: RoleMember}, true},
		{"member of no channel", []MemberRow{{1, key(pkAdmin), RoleAdmin}, {9, key(pkOutsider), RoleMember}},
			map[string]Role{pkAdmin: RoleAdmin}, false},
	} {
		channels := []*Channel{{Seq: 1, H: chanID, Created: true, Private: true}, {Seq: 2, H: chanIDOther}}
		c := CommunityOf(Policy{OpenWrite: true}, 42, tc.replies, channels, tc.members)
		if c.Version != 42 || c.ThreadRepliesInChannel != tc.replies || !c.Policy.OpenWrite {
			t.Errorf("%s: version %d, replies %v, policy %+v", tc.name, c.Version, c.ThreadRepliesInChannel, c.Policy)
		}
		ch := c.Channel(chanID)
		if ch == nil || c.ChannelBySeq(2) == nil || !ch.Private {
			t.Fatalf("%s: channels %v", tc.name, c.Channels())
		}
		if len(ch.Members) != len(tc.wantMembers) {
			t.Errorf("%s: members %v, want %v", tc.name, ch.Members, tc.wantMembers)
		}
		for pk, role := range tc.wantMembers {
			if ch.Members[pk] != role {
				t.Errorf("%s: %s is %v, want %v", tc.name, pk[:8], ch.Members[pk], role)
			}
		}
		if m := c.ChannelBySeq(2).Members; m == nil || len(m) != 0 {
			t.Errorf("%s: channel without members has %v", tc.name, m)
		}
		for _, m := range tc.members {
			if bytes.Equal(m.PubKey, key(pkOutsider)) && c.IsMemberAnywhere(pkOutsider) {
				t.Errorf("%s: the member of no channel counts", tc.name)
			}
		}
	}
}
