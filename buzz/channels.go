package buzz

import (
	"net/url"
	"strings"
	"time"

	"github.com/buzz-lite/buzz-lite/nipcw"
	"github.com/nbd-wtf/go-nostr"
)

// NIP-29 lifecycle kinds buzz-lite acts on (RL-10).
const (
	KindPutUser       = 9000
	KindRemoveUser    = 9001
	KindEditMetadata  = 9002
	KindCreateChannel = 9007
	KindDeleteChannel = 9008
	KindCreateInvite  = 9009
	KindJoin          = 9021
	KindLeave         = 9022
)

// Relay-signed group state (RL-11).
const (
	KindGroupMetadata = 39000
	KindGroupAdmins   = 39001
	KindGroupMembers  = 39002
	KindGroupRoles    = 39003
)

// IsLifecycleKind reports whether events of kind k change a channel's state.
func IsLifecycleKind(k int) bool {
	switch k {
	case KindPutUser, KindRemoveUser, KindEditMetadata, KindCreateChannel, KindDeleteChannel, KindCreateInvite,
		KindJoin, KindLeave:
		return true
	}
	return false
}

// Transition returns the state of channel h after the lifecycle event ev
// (RL-10), or the rejection that leaves it as it is. ch is the channel's
// state now, nil when it does not exist; a channel created here has Seq 0
// until the store numbers it. The result is a new Channel: ch is not
// modified. A private channel its author may not read is answered as one
// that does not exist, so that no refusal tells a stranger that it does
// (RL-29). (Channel ids are one namespace: a 9007, or with open writes any
// post, finds out whether an id is taken by the answer it gets, so only
// the difference between a channel taken and a private one is kept.)
// invited says that ev, a 9021, carries a live invite code of ch (Invited):
// it lets its author join a private channel (RL-36).
func (c *Community) Transition(ev *nostr.Event, h string, ch *Channel, invited bool) (*Channel, error) {
	author := ev.PubKey
	if ch != nil && ch.Deleted {
		return nil, ErrChannelDeleted
	}
	if ev.Kind == KindCreateChannel {
		return c.create(ev, h, ch)
	}
	if !c.CanRead(Viewer(author), ch) && !(ev.Kind == KindJoin && invited && ch != nil) {
		if ev.Kind == KindJoin {
			return nil, ErrCannotJoin
		}
		return nil, ErrChannelNotFound
	}
	role := c.RoleOf(author, ch)
	next := ch.clone()
	switch ev.Kind {
	case KindEditMetadata:
		if role < RoleAdmin {
			return nil, ErrNotChannelAdmin
		}
		if err := c.applyMetadata(next, ev.Tags, author); err != nil {
			return nil, err
		}
	case KindPutUser:
		if err := c.putUsers(next, ev.Tags, role); err != nil {
			return nil, err
		}
	case KindRemoveUser:
		if err := removeUsers(next, ev.Tags, author, role); err != nil {
			return nil, err
		}
	case KindJoin:
		// Only a member is told so: to anyone else a private channel
		// answered as one that does not exist above (RL-29, RL-36).
		if ch.Members[author] != RoleNone {
			return nil, ErrAlreadyMember
		}
		next.Members[author] = RoleMember
	case KindLeave:
		if ch.Members[author] == RoleNone {
			return nil, ErrNotMember
		}
		delete(next.Members, author)
	case KindCreateInvite:
		if role < RoleAdmin {
			return nil, ErrNotChannelAdmin
		}
		if _, err := InviteCode(ev.Tags); err != nil {
			return nil, err
		}
		next.Invites++
	case KindDeleteChannel:
		if role < RoleOwner {
			return nil, ErrNotChannelOwner
		}
		// A deleted channel is no one's subgroup: its row leaves the
		// index of parents, which a 9008 of its parent then does not read.
		next.Deleted, next.Parent = true, 0
	}
	return next, nil
}

func (c *Community) create(ev *nostr.Event, h string, ch *Channel) (*Channel, error) {
	if err := checkCreateID(ev.Tags); err != nil {
		return nil, err
	}
	// Whether one may create comes first: someone who may not learns
	// nothing of which ids are taken (RL-29).
	switch {
	case !c.mayCreate(ev.PubKey):
		return nil, ErrCannotCreate
	case ch != nil:
		return nil, ErrChannelExists
	}
	next := &Channel{H: h, Created: true, Members: map[string]Role{ev.PubKey: RoleOwner}}
	if err := c.applyMetadata(next, ev.Tags, ev.PubKey); err != nil {
		return nil, err
	}
	return next, nil
}

// mayCreate applies the configured create policy to pubkey.
func (c *Community) mayCreate(pubkey string) bool {
	switch c.Policy.Create {
	case CreateByAdmins:
		return c.IsRelayAdmin(pubkey)
	case CreateByMembers:
		return c.IsRelayAdmin(pubkey) || c.IsMemberAnywhere(pubkey)
	}
	return true
}

// CreatesChannel reports whether ev, accepted now, would create channel
// h: a 9007 the create policy allows, or the first stored event to name a
// channel that its author may write to (RL-14). Both count against the
// channel creation rate (RL-27). Ephemeral events are never stored, and a
// group deletion or an edit names a target in its channel, which a new
// channel cannot hold.
func (c *Community) CreatesChannel(ev *nostr.Event, h string) bool {
	switch {
	case h == "" || IsEphemeralKind(ev.Kind) || c.Channel(h) != nil:
		return false
	case ev.Kind == KindCreateChannel:
		return checkCreateID(ev.Tags) == nil && c.mayCreate(ev.PubKey)
	case IsLifecycleKind(ev.Kind), ev.Kind == KindGroupDelete, ev.Kind == KindEdit:
		return false
	}
	return c.CheckWrite(ev.PubKey, nil) == nil
}

// applyMetadata applies the tags of a 9002 (or 9007) by author (RL-10,
// RL-36): name, picture, about, private or public and parent, the last of
// each winning; a tag left out leaves its field as it was (NDK's
// setMetadata sends only what it changes). A picture must be an http(s)
// URL ("" takes it away).
func (c *Community) applyMetadata(ch *Channel, tags nostr.Tags, author string) error {
	if err := readMetadata(ch, tags); err != nil {
		return err
	}
	return c.applyParent(ch, tags, author)
}

// readMetadata applies the metadata tags that name nothing else: all but
// parent. A picture that is no http(s) URL is left out, and refused
// (ErrPictureURL) once the rest is read.
func readMetadata(ch *Channel, tags nostr.Tags) error {
	var err error
	for _, tag := range tags {
		switch {
		case len(tag) >= 2 && tag[0] == "name":
			ch.Name = tag[1]
		case len(tag) >= 2 && tag[0] == "picture" && tag[1] != "" && !IsPictureURL(tag[1]):
			err = ErrPictureURL
		case len(tag) >= 2 && tag[0] == "picture":
			ch.Picture = tag[1]
		case len(tag) >= 2 && tag[0] == "about":
			ch.About = tag[1]
		case len(tag) >= 1 && tag[0] == "private":
			ch.Private = true
		case len(tag) >= 1 && tag[0] == "public":
			ch.Private = false
		}
	}
	return err
}

// IsPictureURL reports whether s may be a channel's picture (RL-36): an
// absolute http or https URL with a host. Another scheme (javascript:,
// data:, file:) is nothing a client should fetch or show.
func IsPictureURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// MaxSubgroupDepth is how many channels a new parent and those above it
// may be: the walk that refuses a cycle reads no more than that.
const MaxSubgroupDepth = 32

// applyParent applies the last parent tag of a 9002 (or 9007) by author to
// ch (RL-36, NIP-29 "Subgroups"): ["parent", id] makes ch a subgroup of
// channel id, ["parent"] or ["parent", ""] a root; no parent tag leaves
// it as it was. A parent that does not exist, was deleted, or that author
// may not read makes a root too: a stranger learns nothing of a private
// channel by naming it (RL-29). A parent that is ch itself or one of its
// descendants is refused (ErrParentCycle), as is one with more than
// MaxSubgroupDepth channels above it and itself (ErrSubgroupDepth).
func (c *Community) applyParent(ch *Channel, tags nostr.Tags, author string) error {
	var id string
	found := false
	for _, tag := range tags {
		if len(tag) >= 1 && tag[0] == "parent" {
			found, id = true, ""
			if len(tag) >= 2 {
				id = tag[1]
			}
		}
	}
	if !found {
		return nil
	}
	ch.Parent = 0
	if canonical, ok := nipcw.ParseChannelID(id); ok {
		id = canonical
	}
	p := c.Channel(id)
	if id == "" || p == nil || p.Deleted || !c.CanRead(Viewer(author), p) {
		return nil
	}
	// Each step up is one lookup in the access state, and the chain has no
	// cycle to go round; MaxSubgroupDepth bounds the walk, so that no chain
	// anyone builds makes a 9002 cost more (RL-27a).
	depth := 0
	for q := p; q != nil; q = c.ChannelBySeq(q.Parent) {
		if q.H == ch.H {
			return ErrParentCycle
		}
		if depth++; depth > MaxSubgroupDepth {
			return ErrSubgroupDepth
		}
		if q.Parent == 0 {
			break
		}
	}
	ch.Parent = p.Seq
	return nil
}

// MetadataOf is the name, picture, about and privacy that group metadata
// tags (a 9002, a 9007, the relay's 39000) give a channel, as the relay
// reads them; a picture that is no http(s) URL is left out.
func MetadataOf(tags nostr.Tags) Channel {
	var ch Channel
	_ = readMetadata(&ch, tags) // its one refusal is a picture, left out
	return ch
}

// userTags returns the `p` tags of a 9000 or 9001: at least one, each
// naming a lowercase hex pubkey.
func userTags(tags nostr.Tags) ([]nostr.Tag, error) {
	var users []nostr.Tag
	for _, tag := range tags {
		if len(tag) < 2 || tag[0] != "p" {
			continue
		}
		if !nipcw.IsLowerHex64(tag[1]) {
			return nil, ErrUserTag
		}
		users = append(users, tag)
	}
	if len(users) == 0 {
		return nil, ErrUserTag
	}
	return users, nil
}

// putUsers applies a 9000: every `p` tag names a pubkey and optionally a
// role. Owners and admins may grant roles up to their own and change the
// roles of those not above them; on an open channel any member may add
// members.
func (c *Community) putUsers(ch *Channel, tags nostr.Tags, role Role) error {
	users, err := userTags(tags)
	if err != nil {
		return err
	}
	for _, tag := range users {
		want := RoleMember
		if len(tag) >= 3 {
			var ok bool
			if want, ok = ParseRole(tag[2]); !ok {
				return ErrUnknownRole
			}
		}
		current := ch.Members[tag[1]]
		switch {
		case role >= RoleAdmin:
			if want > role || current > role {
				return ErrRoleAboveOwn
			}
		case role == RoleMember && !ch.Private:
			if want > RoleMember || current > RoleMember {
				return ErrRoleAboveOwn
			}
		case !ch.Private:
			return ErrNotMember
		default:
			return ErrNotChannelAdmin
		}
		ch.Members[tag[1]] = want
	}
	return nil
}

// removeUsers applies a 9001: owners and admins remove anyone not above
// them; members may remove themselves.
func removeUsers(ch *Channel, tags nostr.Tags, author string, role Role) error {
	users, err := userTags(tags)
	if err != nil {
		return err
	}
	for _, tag := range users {
		switch {
		case tag[1] == author && ch.Members[author] == RoleNone:
			return ErrNotMember
		case tag[1] == author:
		case role < RoleAdmin:
			return ErrNotChannelAdmin
		case ch.Members[tag[1]] > role:
			return ErrRoleAboveOwn
		}
		delete(ch.Members, tag[1])
	}
	return nil
}

// IsCanonicalUUID reports whether s is a UUID in canonical form: lowercase
// hex, hyphenated 8-4-4-4-12.
func IsCanonicalUUID(s string) bool {
	u, ok := nipcw.ParseUUID(s)
	return ok && u == s
}

// IsChannelID reports whether s may name a channel in an h tag (CW-2): a
// UUID in any spelling, or a NIP-29 group id.
func IsChannelID(s string) bool {
	_, ok := nipcw.ParseChannelID(s)
	return ok
}

// checkCreateID says whether the h tags of a 9007 may create a channel:
// a channel id (CW-2), and a UUID only in canonical form, the form the
// window echoes, so that a group client never takes another spelling for
// the channel's id. A group id is its own form.
func checkCreateID(tags nostr.Tags) error {
	for _, tag := range tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		id, ok := nipcw.ParseChannelID(tag[1])
		switch {
		case !ok:
			return ErrNotChannelID
		case id != tag[1]:
			return ErrChannelID
		}
	}
	return nil
}

// SettingWindow is how far a kind 9033's date may be from the relay's clock
// (RL-15).
const SettingWindow = 120 * time.Second

// ThreadRepliesSetting reads the value a kind 9033 gives
// thread_replies_in_channel (RL-15).
func ThreadRepliesSetting(ev *nostr.Event, now time.Time) (bool, error) {
	at := time.Unix(int64(ev.CreatedAt), 0)
	if at.Before(now.Add(-SettingWindow)) || at.After(now.Add(SettingWindow)) {
		return false, ErrTooFarInFuture
	}
	tag := ev.Tags.Find("thread_replies_in_channel")
	if tag == nil {
		return false, ErrSettingNotBool
	}
	switch strings.ToLower(tag[1]) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, ErrSettingNotBool
}

// ScopeTarget returns the id whose channel an event without an `h` tag
// belongs to for access purposes, if any: a reaction belongs to the channel
// of its target, the last `e` tag (RL-8). Deletions (several targets) are
// resolved by the store.
func ScopeTarget(ev *nostr.Event) string {
	if ev.Kind != KindReaction {
		return ""
	}
	var target string
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "e" {
			target = tag[1]
		}
	}
	return target
}
