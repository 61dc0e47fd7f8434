package buzz

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/benbjohnson/immutable"
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

// sortedKinds are the kinds Kinds accepts, in ascending order (with an
// empty Kinds every kind is accepted, and none listed).
func (p Policy) sortedKinds() []int {
	kinds := make([]int, 0, len(p.Kinds))
	for k, ok := range p.Kinds {
		if ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

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
	// Picture is an http(s) URL, "" for none (RL-36).
	Picture string
	About   string
	Private bool
	// Parent is the number (Seq) of the channel this one is a subgroup
	// of, 0 for a root (RL-36, NIP-29 "Subgroups"): one its author could
	// read when a 9002 or 9007 named it, never itself or a descendant.
	Parent int64
	// Deleted is set by kind 9008: the channel then answers as one that
	// does not exist, to everyone, and takes no more events.
	Deleted bool
	// Members maps hex pubkeys to their roles; no entry is RoleNone.
	Members map[string]Role
	// Invites counts its live invite codes: the 9009s not revoked (RL-36).
	// A number, not the codes: the state of every channel is held in
	// memory, and the codes are looked up in the store when a join names
	// one (Invited).
	Invites int
}

// Closed reports whether ch does not honour join requests (NIP-29
// `closed`, RL-36): a private channel without an invite code.
func (ch *Channel) Closed() bool { return ch.Private && ch.Invites == 0 }

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

	// The maps are persistent: a Clone shares them whole and a Put copies
	// only the path to one entry, so that a change costs the same with ten
	// channels or a hundred thousand, which anyone may create (RL-27a).
	bySeq *immutable.Map[int64, *Channel]
	byH   *immutable.Map[string, *Channel]
	// memberships counts, per pubkey, the channels not deleted in which it
	// holds a role: IsMemberAnywhere without a walk of every channel.
	memberships *immutable.Map[string, int]
	// hiding counts the channels that CanRead refuses to some
	// authenticated viewer: the private and the deleted ones.
	hiding int
}

// stringKeys hashes the string keys of the maps (channel ids, pubkeys) with
// a seed of this process: channel ids are chosen by clients, and with a
// hash they could predict, they could pile channels into one collision
// list that every lookup walks.
type stringKeys struct{ seed maphash.Seed }

func (h stringKeys) Hash(k string) uint32 { return uint32(maphash.String(h.seed, k)) }

func (h stringKeys) Equal(a, b string) bool { return a == b }

var keyHasher = stringKeys{seed: maphash.MakeSeed()}

// NewCommunity returns a community with policy and channels (each with
// its own Seq and H; none to be modified afterwards). It builds the maps in
// place, which a Put per channel would copy a path of each time.
func NewCommunity(policy Policy, channels ...*Channel) *Community {
	bySeq := immutable.NewMapBuilder[int64, *Channel](immutable.NewHasher(int64(0)))
	byH := immutable.NewMapBuilder[string, *Channel](keyHasher)
	memberships := immutable.NewMapBuilder[string, int](keyHasher)
	c := &Community{Policy: policy}
	for _, ch := range channels {
		bySeq.Set(ch.Seq, ch)
		byH.Set(ch.H, ch)
		if hides(ch) {
			c.hiding++
		}
		for pk := range ch.Members {
			if countsMember(ch, pk) {
				n, _ := memberships.Get(pk)
				memberships.Set(pk, n+1)
			}
		}
	}
	c.bySeq, c.byH, c.memberships = bySeq.Map(), byH.Map(), memberships.Map()
	return c
}

// Clone returns a copy that can be changed without touching c. It shares
// everything with c until Put replaces a channel, and costs the same
// however many channels c has.
func (c *Community) Clone() *Community {
	n := *c
	return &n
}

// Put adds or replaces a channel of an unpublished community. ch must not
// be modified afterwards: the counts of the community are taken from it.
// Its cost grows with the members of ch and of the channel it replaces,
// not with the channels of the community.
func (c *Community) Put(ch *Channel) {
	old, _ := c.bySeq.Get(ch.Seq)
	c.bySeq = c.bySeq.Set(ch.Seq, ch)
	c.byH = c.byH.Set(ch.H, ch)
	if hides(ch) {
		c.hiding++
	}
	if old != nil && hides(old) {
		c.hiding--
	}
	for pk := range ch.Members {
		if countsMember(ch, pk) && !countsMember(old, pk) {
			c.addMembership(pk, 1)
		}
	}
	if old != nil {
		for pk := range old.Members {
			if countsMember(old, pk) && !countsMember(ch, pk) {
				c.addMembership(pk, -1)
			}
		}
	}
}

// hides reports whether CanRead refuses ch to some authenticated viewer.
func hides(ch *Channel) bool { return ch.Private || ch.Deleted }

// countsMember reports whether ch (nil: none) makes pubkey a member
// somewhere.
func countsMember(ch *Channel, pubkey string) bool {
	return ch != nil && !ch.Deleted && ch.Members[pubkey] >= RoleMember
}

func (c *Community) addMembership(pubkey string, d int) {
	n, _ := c.memberships.Get(pubkey)
	if n += d; n == 0 {
		c.memberships = c.memberships.Delete(pubkey)
		return
	}
	c.memberships = c.memberships.Set(pubkey, n)
}

// Channel returns channel h, or nil when no event or 9007 ever named it.
func (c *Community) Channel(h string) *Channel {
	ch, _ := c.byH.Get(h)
	return ch
}

// ChannelBySeq returns the channel the store numbers seq, or nil.
func (c *Community) ChannelBySeq(seq int64) *Channel {
	ch, _ := c.bySeq.Get(seq)
	return ch
}

// Channels returns every channel, in no particular order. It is for
// operator work (a renewal of every group state), not for serving.
func (c *Community) Channels() []*Channel {
	out := make([]*Channel, 0, c.bySeq.Len())
	for it := c.bySeq.Iterator(); !it.Done(); {
		_, ch, _ := it.Next()
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

// CanRead is the rule of read access (RL-12, RL-13, CW-3), Scope.Reads,
// for one question: may v read the events of channel ch (nil: a channel
// that does not exist)? A read request decides its scope once instead.
// Whether v is a relay admin is looked up only where it counts, for a
// private channel: the live delivery of an event asks this of every
// subscriber.
func (c *Community) CanRead(v Viewer, ch *Channel) bool {
	s := Scope{Viewer: v, Open: c.CanReadOpen(v)}
	if ch != nil && ch.Private {
		s.Admin = v != Anonymous && c.IsRelayAdmin(string(v))
	}
	return s.Reads(ch)
}

// CanReadOpen is what CanRead says of every open channel for v.
func (c *Community) CanReadOpen(v Viewer) bool { return v != Anonymous || c.Policy.PublicRead }

// CanReadChannel is CanRead for the channel named h.
func (c *Community) CanReadChannel(v Viewer, h string) bool { return c.CanRead(v, c.Channel(h)) }

// CanReadSeq is CanRead for the channel the store numbers seq.
func (c *Community) CanReadSeq(v Viewer, seq int64) bool { return c.CanRead(v, c.ChannelBySeq(seq)) }

// MayHide reports whether CanRead may refuse v some channel of c. When it
// does not, a read need not look at channels at all; when it does, a read
// asks CanRead of the channel of each event it examines, never of every
// channel (RL-27a).
func (c *Community) MayHide(v Viewer) bool {
	return c.hiding > 0 || (!c.CanReadOpen(v) && c.bySeq.Len() > 0)
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
	n, _ := c.memberships.Get(pubkey)
	return n > 0
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
