package buzz

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// GroupStateKinds are the kinds of a channel's relay-signed group state
// (RL-11, RL-36), in the order they are renewed.
var GroupStateKinds = [...]int{KindGroupMetadata, KindGroupAdmins, KindGroupMembers, KindGroupRoles}

// GroupState is the unsigned group state event of ch of kind (one of
// GroupStateKinds) dated at (RL-11, RL-36): 39000 its metadata and flags
// (metadataTags), 39001 the owners and admins with their roles, 39002
// every member, owners first, then admins, then members, by pubkey within
// a role; 39003 the roles (groupRoles). The store signs it with the relay
// key.
func (c *Community) GroupState(ch *Channel, kind int, at int64) *nostr.Event {
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: nostr.Tags{{"d", ch.H}}}
	switch kind {
	case KindGroupMetadata:
		ev.Tags = append(ev.Tags, c.metadataTags(ch)...)
	case KindGroupAdmins, KindGroupMembers:
		pubkeys := make([]string, 0, len(ch.Members))
		for pk, role := range ch.Members {
			if kind == KindGroupMembers || role >= RoleAdmin {
				pubkeys = append(pubkeys, pk)
			}
		}
		slices.SortFunc(pubkeys, func(a, b string) int {
			if ra, rb := ch.Members[a], ch.Members[b]; ra != rb {
				return int(rb) - int(ra)
			}
			return strings.Compare(a, b)
		})
		for _, pk := range pubkeys {
			tag := nostr.Tag{"p", pk}
			if kind == KindGroupAdmins {
				tag = append(tag, ch.Members[pk].String())
			}
			ev.Tags = append(ev.Tags, tag)
		}
	case KindGroupRoles:
		for _, r := range groupRoles {
			ev.Tags = append(ev.Tags, nostr.Tag{"role", r.role.String(), r.about})
		}
	}
	return ev
}

// metadataTags are the tags of ch's 39000 after its d (RL-11, RL-36), each
// flag true to what the relay does: name, picture (when it has one),
// about; private when only members read, else public; restricted when
// only members write (a private channel, or every channel while
// open_write is off); hidden when non-members cannot fetch this very
// event (a private channel's group state is read as its events are,
// RL-13); closed when a join is not honoured (Closed); supported_kinds
// when access.allowed_kinds limits the kinds; parent for a subgroup whose
// parent is there.
func (c *Community) metadataTags(ch *Channel) nostr.Tags {
	tags := nostr.Tags{{"name", ch.Name}}
	if ch.Picture != "" {
		tags = append(tags, nostr.Tag{"picture", ch.Picture})
	}
	tags = append(tags, nostr.Tag{"about", ch.About})
	if ch.Private {
		tags = append(tags, nostr.Tag{"private"})
	} else {
		tags = append(tags, nostr.Tag{"public"})
	}
	if ch.Private || !c.Policy.OpenWrite {
		tags = append(tags, nostr.Tag{"restricted"})
	}
	if ch.Private {
		tags = append(tags, nostr.Tag{"hidden"})
	}
	if ch.Closed() {
		tags = append(tags, nostr.Tag{"closed"})
	}
	if len(c.Policy.Kinds) > 0 {
		tag := nostr.Tag{"supported_kinds"}
		for _, k := range c.Policy.sortedKinds() {
			tag = append(tag, strconv.Itoa(k))
		}
		tags = append(tags, tag)
	}
	if p := c.ChannelBySeq(ch.Parent); ch.Parent != 0 && p != nil && !p.Deleted {
		tags = append(tags, nostr.Tag{"parent", p.H})
	}
	return tags
}

// groupRoles are the roles of every channel with what each may do, as
// 39003 lists them (RL-10, RL-36).
var groupRoles = [...]struct {
	role  Role
	about string
}{
	{RoleOwner, "all an admin may do, and grants the owner role and deletes the channel"},
	{RoleAdmin, "edits the metadata, adds and removes members and admins, grants the admin role, deletes events"},
	{RoleMember, "reads and writes the channel, adds members to an open channel"},
}

// groupStateForm says what the group state's form depends on beyond the
// channels: the renderer's own version, bumped whenever GroupState's
// output changes form, and the configuration it reads (open_write for
// restricted, allowed_kinds for supported_kinds).
const groupStateForm = 2

// GroupStateFingerprint is what the group state of every channel was
// rendered from, besides the channels themselves, under policy p, as a
// number a store's settings keep: when the one a store recorded differs
// (an upgrade, a change of the configuration), every channel's group
// state is renewed (TxCommunity.RenewIfChanged).
func GroupStateFingerprint(p Policy) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "form=%d open_write=%t limits_kinds=%t kinds=%v", groupStateForm, p.OpenWrite, len(p.Kinds) > 0, p.sortedKinds())
	return int64(h.Sum64())
}

// GroupStateAt is the date of a renewed group state event, given the
// dates of the versions stored: now, or one second past the newest
// version if that is later, so that a newer state replaces the older even
// within one second (RL-9, RL-11).
func GroupStateAt(now int64, stored []int64) int64 {
	at := now
	for _, t := range stored {
		at = max(at, t+1)
	}
	return at
}

// SameState reports whether a transition from a (nil: no channel) to b
// changed nothing: a repeated join, for one, which must not cost a new
// signed group state.
func SameState(a, b *Channel) bool {
	if a == nil || a.Created != b.Created || a.Name != b.Name || a.Picture != b.Picture || a.About != b.About ||
		a.Private != b.Private || a.Parent != b.Parent || a.Deleted != b.Deleted || a.Invites != b.Invites || len(a.Members) != len(b.Members) {
		return false
	}
	for pk, role := range b.Members {
		if a.Members[pk] != role {
			return false
		}
	}
	return true
}

// ApplySetting reads the value a kind 9033 by author gives
// thread_replies_in_channel at now (RL-15): only a relay admin may set it.
func (c *Community) ApplySetting(ev *nostr.Event, now int64) (bool, error) {
	if !c.IsRelayAdmin(ev.PubKey) {
		return false, ErrNotRelayAdmin
	}
	return ThreadRepliesSetting(ev, time.Unix(now, 0))
}

// RenewGroupState is what renewing ch's relay-signed group state (RL-11)
// does, from the versions lk finds at its addresses: for a deleted
// channel, every version removed; else each kind's event for ch now,
// dated past the versions stored (GroupStateAt) and signed with key,
// which replaces them when stored.
func RenewGroupState(lk Lookup, ch *Channel, key, pubkey string, now int64) (remove []*StoredEvent, store []*nostr.Event, err error) {
	for _, kind := range GroupStateKinds {
		versions, err := lk.Versions(kind, pubkey, ch.H)
		if err != nil {
			return nil, nil, err
		}
		if ch.Deleted {
			remove = append(remove, versions...)
			continue
		}
		dates := make([]int64, len(versions))
		for i, v := range versions {
			dates[i] = v.CreatedAt
		}
		ev := lk.Community().GroupState(ch, kind, GroupStateAt(now, dates))
		if err := ev.Sign(key); err != nil {
			return nil, nil, fmt.Errorf("sign group state: %w", err)
		}
		store = append(store, ev)
	}
	return remove, store, nil
}

// GroupStateTx is a store's write transaction as group state renewal uses
// it: what the rules read (Lookup) and the row-level writes that carry
// out their decisions.
type GroupStateTx interface {
	Lookup
	// Remove takes away a version the Lookup returned (RL-9).
	Remove(t *StoredEvent, now int64) error
	// AdmitOwn stores ev, signed by the relay key, as ingest does, and
	// publishes it after the commit.
	AdmitOwn(ev *nostr.Event, now int64) error
	// ForeignGroupState numbers (Ref) the group state in force
	// (39000-39003) that pubkey (hex) did not sign.
	ForeignGroupState(pubkey string) ([]int64, error)
	// StateChanged marks the group state of channel number seq for
	// renewal before the commit.
	StateChanged(seq int64)
}

// ReplaceGroupState renews ch's relay-signed group state through tx
// (RenewGroupState): the versions it replaces removed, the new events
// admitted.
func ReplaceGroupState(tx GroupStateTx, ch *Channel, key, pubkey string, now int64) error {
	old, fresh, err := RenewGroupState(tx, ch, key, pubkey, now)
	if err != nil {
		return err
	}
	for _, v := range old {
		if err := tx.Remove(v, now); err != nil {
			return err
		}
	}
	for _, ev := range fresh {
		if err := tx.AdmitOwn(ev, now); err != nil {
			return fmt.Errorf("store group state: %w", err)
		}
	}
	return nil
}

// DropForeignGroupState removes the group state in force that pubkey, the
// relay key, did not sign, and has the state of its channels signed
// afresh: a data directory whose relay key changed (an import under a new
// key, then the old relay.key copied in) answers with state its NIP-11
// self did not sign, which clients refuse (RL-11, RL-21).
func DropForeignGroupState(tx GroupStateTx, pubkey string, now int64) error {
	refs, err := tx.ForeignGroupState(pubkey)
	if err != nil {
		return fmt.Errorf("look up group state: %w", err)
	}
	foreign := make([]*StoredEvent, len(refs))
	for i, ref := range refs {
		if foreign[i], err = tx.EventByRef(ref); err != nil {
			return fmt.Errorf("look up group state: %w", err)
		}
		if foreign[i] == nil {
			return fmt.Errorf("look up group state: #%d is not stored", ref)
		}
	}
	for _, v := range foreign {
		if err := tx.Remove(v, now); err != nil {
			return fmt.Errorf("remove group state #%d: %w", v.Ref, err)
		}
		if v.Scope != 0 && tx.Community().ChannelBySeq(v.Scope) != nil {
			tx.StateChanged(v.Scope)
		}
	}
	return nil
}
