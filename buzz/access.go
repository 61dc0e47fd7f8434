package buzz

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// Viewer is who reads: the hex pubkey a connection authenticated with
// (NIP-42 on WebSocket, NIP-98 on HTTP), or Anonymous.
type Viewer string

// Anonymous is a viewer that has not authenticated.
const Anonymous Viewer = ""

// Role is a pubkey's standing in a channel (RL-10). Higher roles include
// the rights of the lower ones.
type Role int8

const (
	RoleNone Role = iota
	RoleMember
	RoleAdmin
	RoleOwner
)

var roleNames = [...]string{RoleNone: "", RoleMember: "member", RoleAdmin: "admin", RoleOwner: "owner"}

func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("Role(%d)", int8(r))
	}
	return roleNames[r]
}

// ParseRole reads the role of a put-user `p` tag; an absent role is member.
func ParseRole(s string) (Role, bool) {
	switch strings.ToLower(s) {
	case "", "member":
		return RoleMember, true
	case "admin":
		return RoleAdmin, true
	case "owner":
		return RoleOwner, true
	}
	return RoleNone, false
}

// CreatePolicy says who may create channels with kind 9007.
type CreatePolicy string

const (
	CreateByAnyone  CreatePolicy = "anyone"
	CreateByMembers CreatePolicy = "members" // members of some channel, and relay admins
	CreateByAdmins  CreatePolicy = "admins"  // relay admins only
)

// ParseCreatePolicy checks a configured create policy.
func ParseCreatePolicy(s string) (CreatePolicy, error) {
	switch p := CreatePolicy(s); p {
	case CreateByAnyone, CreateByMembers, CreateByAdmins:
		return p, nil
	}
	return "", fmt.Errorf("unknown channel create policy %q (want anyone, members or admins)", s)
}

// Policy is the community's access configuration (RL-12, RL-14).
type Policy struct {
	// PublicRead lets anonymous viewers read open channels.
	PublicRead bool
	// OpenWrite lets anyone write to open channels, and to channels that
	// do not exist yet (which then exist, open, with no members).
	OpenWrite bool
	// Create says who may create channels.
	Create CreatePolicy
	// Admins are the relay admins (hex pubkeys): they act as owner of every
	// channel and may change community settings (kind 9033).
	Admins map[string]bool
	// Allowed (hex pubkeys) may write events of no channel while OpenWrite
	// is off, as relay admins and members of some channel may (RL-29).
	Allowed map[string]bool
	// Blocked (hex pubkeys) may write nothing at all (RL-29).
	Blocked map[string]bool
	// Kinds, when not empty, are the only kinds accepted (RL-29).
	Kinds map[int]bool
}

// RestrictedWrites is NIP-11's restricted_writes: whether a user must know
// the relay's policy before writing to it, because only members write
// (OpenWrite off) or only some kinds are accepted. A block list does not
// count: like other anti-spam measures it is no condition an ordinary user
// has to meet.
func (p Policy) RestrictedWrites() bool { return !p.OpenWrite || len(p.Kinds) > 0 }

// DefaultPolicy is the policy of a relay started with no configuration
// (RL-24): public reads, open writes, anyone creates channels.
func DefaultPolicy() Policy {
	return Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone}
}

// Channel is the state of one channel.
type Channel struct {
	// Seq is the store's number of the channel.
	Seq int64
	// H is the channel id, the value of its events' `h` tag.
	H string
	// Created is set once a kind 9007 created the channel. A channel that
	// exists only because events name it is open and has no members.
	Created bool
	Name    string
	About   string
	Private bool
	// Deleted is set by kind 9008: the channel then answers as one that
	// does not exist, to everyone, and takes no more events.
	Deleted bool
	// Members maps hex pubkeys to their roles; no entry is RoleNone.
	Members map[string]Role
}

func (ch *Channel) clone() *Channel {
	c := *ch
	c.Members = make(map[string]Role, len(ch.Members))
	for k, v := range ch.Members {
		c.Members[k] = v
	}
	return &c
}

// Community is the access state of the relay at one moment: its policy, its
// channels, its settings. A published Community is never modified; changes
// are made to a Clone and published whole, so readers need no lock.
type Community struct {
	Policy Policy
	// ThreadRepliesInChannel is the community setting of RL-15.
	ThreadRepliesInChannel bool
	// Version counts committed changes of the state; it tells a process
	// that another process changed the state under it.
	Version int64

	bySeq map[int64]*Channel
	byH   map[string]*Channel

	// anonymousHidden caches HiddenFrom(Anonymous), asked by every
	// anonymous query.
	anonymousOnce   sync.Once
	anonymousHidden Visibility
}

// NewCommunity returns a community with policy and no channels.
func NewCommunity(policy Policy) *Community {
	return &Community{Policy: policy, bySeq: map[int64]*Channel{}, byH: map[string]*Channel{}}
}

// Clone returns a copy that can be changed without touching c. Channels
// are shared until Put replaces them.
func (c *Community) Clone() *Community {
	n := &Community{Policy: c.Policy, ThreadRepliesInChannel: c.ThreadRepliesInChannel, Version: c.Version,
		bySeq: make(map[int64]*Channel, len(c.bySeq)), byH: make(map[string]*Channel, len(c.byH))}
	for k, v := range c.bySeq {
		n.bySeq[k] = v
	}
	for k, v := range c.byH {
		n.byH[k] = v
	}
	return n
}

// Put adds or replaces a channel of an unpublished community.
func (c *Community) Put(ch *Channel) {
	c.bySeq[ch.Seq] = ch
	c.byH[ch.H] = ch
}

// Channel returns channel h, or nil when no event or 9007 ever named it.
func (c *Community) Channel(h string) *Channel { return c.byH[h] }

// ChannelBySeq returns the channel the store numbers seq, or nil.
func (c *Community) ChannelBySeq(seq int64) *Channel { return c.bySeq[seq] }

// Channels returns every channel, in no particular order.
func (c *Community) Channels() []*Channel {
	out := make([]*Channel, 0, len(c.bySeq))
	for _, ch := range c.bySeq {
		out = append(out, ch)
	}
	return out
}

// IsRelayAdmin reports whether pubkey is a relay admin.
func (c *Community) IsRelayAdmin(pubkey string) bool { return c.Policy.Admins[pubkey] }

// RoleOf is pubkey's role in ch; a relay admin is owner of every channel.
func (c *Community) RoleOf(pubkey string, ch *Channel) Role {
	if c.IsRelayAdmin(pubkey) {
		return RoleOwner
	}
	if ch == nil {
		return RoleNone
	}
	return ch.Members[pubkey]
}

// CanRead is the one rule of read access (RL-12, RL-13, CW-3): may v read
// the events of channel ch (nil: a channel that does not exist)? A channel
// that does not exist or was deleted is readable by no one; an open channel
// by everyone who has authenticated, and by anonymous viewers too when
// reads are public; a private one by its members and the relay admins.
// Events without a channel are not asked about: everyone reads them.
func (c *Community) CanRead(v Viewer, ch *Channel) bool {
	switch {
	case ch == nil || ch.Deleted:
		return false
	case !ch.Private:
		return v != Anonymous || c.Policy.PublicRead
	}
	return v != Anonymous && c.RoleOf(string(v), ch) >= RoleMember
}

// CanReadChannel is CanRead for the channel named h.
func (c *Community) CanReadChannel(v Viewer, h string) bool { return c.CanRead(v, c.byH[h]) }

// CanReadSeq is CanRead for the channel the store numbers seq.
func (c *Community) CanReadSeq(v Viewer, seq int64) bool { return c.CanRead(v, c.bySeq[seq]) }

// Visibility is what CanRead says of every channel for one viewer, in the
// shorter of two forms a query can apply: the channels it may not read
// (Only nil), or the only channels it may read.
type Visibility struct {
	Hidden []int64
	Only   []int64
	// Restricted is false when no channel is hidden.
	Restricted bool
}

// HiddenFrom applies CanRead to every channel for v.
func (c *Community) HiddenFrom(v Viewer) Visibility {
	if v == Anonymous {
		c.anonymousOnce.Do(func() { c.anonymousHidden = c.visibility(v) })
		return c.anonymousHidden
	}
	return c.visibility(v)
}

func (c *Community) visibility(v Viewer) Visibility {
	var hidden, readable []int64
	for seq, ch := range c.bySeq {
		if c.CanRead(v, ch) {
			readable = append(readable, seq)
		} else {
			hidden = append(hidden, seq)
		}
	}
	slices.Sort(hidden)
	slices.Sort(readable)
	switch {
	case len(hidden) == 0:
		return Visibility{}
	case len(hidden) <= len(readable):
		return Visibility{Hidden: hidden, Restricted: true}
	}
	if readable == nil {
		readable = []int64{}
	}
	return Visibility{Only: readable, Restricted: true}
}

// CheckWrite is the rule of write access for an ordinary channel event
// (RL-14): may author post to ch (nil: a channel that does not exist yet)?
func (c *Community) CheckWrite(author string, ch *Channel) error {
	switch {
	case ch != nil && ch.Deleted:
		return ErrChannelDeleted
	case c.IsRelayAdmin(author):
		return nil
	case ch == nil && c.Policy.OpenWrite:
		return nil
	case ch == nil:
		return ErrNotMember
	case ch.Members[author] >= RoleMember:
		return nil
	case !ch.Private && c.Policy.OpenWrite:
		return nil
	}
	return ErrNotMember
}

// CheckSender applies the rules of the write policy that depend only on
// who signed an event and its kind (RL-29). A blocked pubkey writes
// nothing, even a relay admin's: blocking is the operator's last word.
// Relay admins write any kind: they run the community with lifecycle
// events and settings, whatever kinds its members may post.
func (c *Community) CheckSender(pubkey string, kind int) error {
	switch {
	case c.Policy.Blocked[pubkey]:
		return ErrBlocked
	case len(c.Policy.Kinds) > 0 && !c.Policy.Kinds[kind] && !c.IsRelayAdmin(pubkey):
		return KindNotAccepted(kind)
	}
	return nil
}

// CheckNoChannel is the rule of write access for an event that belongs to
// no channel (RL-29): anyone's while writes are open; else only relay
// admins', members' of some channel and the allowed pubkeys'.
func (c *Community) CheckNoChannel(author string) error {
	if c.Policy.OpenWrite || c.IsRelayAdmin(author) || c.Policy.Allowed[author] || c.IsMemberAnywhere(author) {
		return nil
	}
	return ErrMembersOnly
}

// CheckEvent applies the write policy to what ev says of itself, before
// anything it names is looked up (RL-14, RL-29); h is its channel, "" for
// none. An ephemeral event is never stored, so this is the whole of its
// check. Reactions and deletions without a channel belong to their
// targets' (RL-8): only the store can tell which, and it applies
// CheckNoChannel to those that turn out to have none.
func (c *Community) CheckEvent(ev *nostr.Event, h string) error {
	if err := c.CheckSender(ev.PubKey, ev.Kind); err != nil {
		return err
	}
	switch {
	case IsEphemeralKind(ev.Kind) && h != "":
		return c.CheckWrite(ev.PubKey, c.Channel(h))
	case h == "" && ev.Kind != KindReaction && ev.Kind != KindDeletion:
		return c.CheckNoChannel(ev.PubKey)
	}
	return nil
}

// IsMemberAnywhere reports whether pubkey holds a role in some channel that
// was not deleted.
func (c *Community) IsMemberAnywhere(pubkey string) bool {
	for _, ch := range c.bySeq {
		if !ch.Deleted && ch.Members[pubkey] >= RoleMember {
			return true
		}
	}
	return false
}

// Admitted is what became of an event the store accepted.
type Admitted struct {
	// Scope is the channel whose readers may read the event (RL-8, RL-13):
	// its own, or for a reaction or deletion without an h tag its
	// target's; "" when everyone may.
	Scope string
	// Applied marks a community setting (kind 9033): carried out and
	// persisted, not stored as an event, and not to be delivered.
	Applied bool
	// Threads are the events whose thread counters changed: the ancestors
	// of a reply stored or deleted (CW-21).
	Threads []ThreadChange
}

// ThreadChange is an event whose thread summary changed.
type ThreadChange struct {
	ID      string
	Channel string
	// Root is set for a thread root; TopLevel for a row of the default row
	// mode (CW-9). In projection mode every classified event is a row.
	Root, TopLevel bool
}
