package buzz

import "encoding/hex"

// MemberRow is one row of a channel's membership as a store reads it.
type MemberRow struct {
	// Channel is the channel's number (Channel.Seq).
	Channel int64
	// PubKey is the member's pubkey, 32 bytes.
	PubKey []byte
	Role   Role
}

// CommunityOf is the whole access state made of a store's rows: its
// channels (their Members left out), their members, the access version
// and the thread_replies_in_channel setting (RL-15). Channels go into the
// state whole, their members with them, since the state keeps counts of
// them (NewCommunity); a member of no channel among them is dropped.
func CommunityOf(policy Policy, version int64, threadReplies bool, channels []*Channel, members []MemberRow) *Community {
	bySeq := make(map[int64]*Channel, len(channels))
	for _, ch := range channels {
		ch.Members = map[string]Role{}
		bySeq[ch.Seq] = ch
	}
	for _, m := range members {
		if ch := bySeq[m.Channel]; ch != nil {
			ch.Members[hex.EncodeToString(m.PubKey)] = m.Role
		}
	}
	c := NewCommunity(policy, channels...)
	c.Version = version
	c.ThreadRepliesInChannel = threadReplies
	return c
}
