package buzz

import "encoding/hex"

// Scope is what one read request may see (RL-12, RL-13, CW-3, CW-18),
// decided once at the top of the request from the access state and
// carried down to the store as data: whether the viewer reads open
// channels, and private ones as a relay admin. What it says of a channel
// depends only on the channel's own row (private, deleted, members), so a
// store judges the channels of its own snapshot by it, in SQL or by Reads,
// and asks the access state nothing more: a removal or a 9002 committed
// since the request was decided still holds for its page.
type Scope struct {
	Viewer Viewer
	// Open says that Viewer reads every open channel.
	Open bool
	// Admin says that Viewer is a relay admin, who reads every channel
	// that exists and is not deleted.
	Admin bool
}

// ScopeOf decides v's scope in c.
func (c *Community) ScopeOf(v Viewer) Scope {
	return Scope{Viewer: v, Open: c.CanReadOpen(v), Admin: v != Anonymous && c.IsRelayAdmin(string(v))}
}

// Reads is the one rule of read access (RL-12, RL-13, CW-3): may the
// scope's viewer read the events of ch (nil: a channel that does not
// exist)? A channel that does not exist or was deleted is readable by no
// one; an open channel by everyone who has authenticated, and by anonymous
// viewers too when reads are public; a private one by its members and the
// relay admins. Events without a channel are not asked about: everyone
// reads them.
func (s Scope) Reads(ch *Channel) bool {
	switch {
	case ch == nil || ch.Deleted:
		return false
	case !ch.Private:
		return s.Open
	}
	return s.Viewer != Anonymous && (s.Admin || ch.Members[string(s.Viewer)] >= RoleMember)
}

// MemberKey is the viewer's pubkey as a store holds it in its members
// table, for a read that checks membership in SQL: nil, which matches no
// member, for anonymous viewers and for anything but the lowercase hex the
// access state keys members by.
func (s Scope) MemberKey() []byte {
	if b, err := hex.DecodeString(string(s.Viewer)); err == nil && len(b) == 32 && hex.EncodeToString(b) == string(s.Viewer) {
		return b
	}
	return nil
}
