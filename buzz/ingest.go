package buzz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file holds the rules of ingest that read stored events: a reply's
// place in its thread (CW-10..CW-12), what a deletion deletes (RL-6), what
// an edit may edit (RL-7), which channel an event is read in (RL-8,
// RL-13), which versions an event replaces (RL-9). They read through a
// Lookup, so that every store applies the same rules and only stores.

// MaxDepth is the deepest reply live ingest accepts (CW-10).
const MaxDepth = 100

// StoredEvent is what the rules of ingest know of a stored event.
type StoredEvent struct {
	// Ref is the store's own number of the event, which the rules hand
	// back untouched (sqlite: events.seq).
	Ref int64
	// ID and PubKey are in lowercase hex.
	ID, PubKey string
	Kind       int
	CreatedAt  int64
	// Channel is the number (Channel.Seq) of the channel its h tag names;
	// 0 for none.
	Channel int64
	// Scope is the number of the channel it is read in (RL-8, RL-13); 0
	// when everyone may read it.
	Scope int64
	// Classified says that it has a place in a thread: Depth below its
	// root, which is the event RootRef names unless Depth is 0.
	Classified bool
	Depth      int64
	RootRef    int64
	Deleted    bool
	// ExpiresAt is its NIP-40 expiration; 0 for none.
	ExpiresAt int64
}

// Live reports whether the event is still served at now: neither deleted
// nor expired (RL-6, NIP-40).
func (e *StoredEvent) Live(now int64) bool {
	return !e.Deleted && (e.ExpiresAt == 0 || e.ExpiresAt > now)
}

// Lookup is what the rules of ingest read of a store, inside the
// transaction that will write the event.
type Lookup interface {
	// EventByID is the stored event with id (lowercase hex), deleted or
	// expired ones too; nil when none is stored.
	EventByID(id string) (*StoredEvent, error)
	// EventByRef is the stored event the store numbers ref; nil when none.
	EventByRef(ref int64) (*StoredEvent, error)
	// Versions are the stored versions of a replaceable (d ignored) or
	// addressable event of kind by pubkey (lowercase hex), deleted ones
	// too, in any order.
	Versions(kind int, pubkey, d string) ([]*StoredEvent, error)
	// ChannelNumber is the number of channel h; found is false when no
	// event or lifecycle event has named it yet.
	ChannelNumber(h string) (seq int64, found bool, err error)
	// Community is the access state as the transaction sees it.
	Community() *Community
}

// RowClass is whether an event is a row of a channel window (CW-9,
// CW-13): the values of sqlite's events.row_class.
type RowClass int

const (
	// RowNever: no row in either row mode.
	RowNever RowClass = 0
	// RowReply: a row in projection mode only.
	RowReply RowClass = 1
	// RowTopLevel: a row in both row modes.
	RowTopLevel RowClass = 2
)

// Classification is an event's place in a thread (CW-10, CW-11, CW-12).
type Classification struct {
	// Classified says it has a place: at Depth, below ParentRef, in the
	// thread of RootRef (both 0 for a root).
	Classified         bool
	Depth              int64
	ParentRef, RootRef int64
	// Broadcast is the NIP-10 broadcast marker of a direct reply.
	Broadcast bool
	Row       RowClass
}

// Address is the NIP-01 address ("kind:pubkey:d") of a replaceable or
// addressable event, as deletions name it in `a` tags.
func Address(ev *nostr.Event) (string, bool) {
	switch {
	case IsReplaceableKind(ev.Kind):
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":", true
	case IsAddressableKind(ev.Kind):
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":" + ev.Tags.GetD(), true
	}
	return "", false
}

// Supersedes decides what ev does to the stored versions at its address
// (RL-9): refused with ErrNewerVersionStored when one is newer (the
// higher created_at, or the lower id within one second), else it replaces
// the ones not deleted. A deleted version still counts as the newest, so
// that re-sending an older one does not bring back what its author
// replaced and then deleted.
func Supersedes(ev *nostr.Event, versions []*StoredEvent) ([]*StoredEvent, error) {
	var superseded []*StoredEvent
	for _, v := range versions {
		if v.CreatedAt > int64(ev.CreatedAt) || (v.CreatedAt == int64(ev.CreatedAt) && v.ID < strings.ToLower(ev.ID)) {
			return nil, ErrNewerVersionStored
		}
		if !v.Deleted {
			superseded = append(superseded, v)
		}
	}
	return superseded, nil
}

// Knows reports whether author may know of stored event t: it is their
// own, of no channel, or of a channel they may read (RL-13; a relay admin
// reads every channel that was not deleted). A refusal that names any
// other would tell them that it exists, so every rule that looks up an
// event an author names treats it as not stored (RL-29).
func Knows(c *Community, author string, t *StoredEvent) bool {
	return t.wroteBy(author) || t.Scope == 0 || c.CanReadSeq(Viewer(author), t.Scope)
}

// wroteBy reports whether pubkey, hex of either case, signed the event.
func (e *StoredEvent) wroteBy(pubkey string) bool { return e.PubKey == strings.ToLower(pubkey) }

// knownByID is the stored event with id (hex of either case) that
// author may know of; nil when there is none.
func knownByID(l Lookup, author, id string) (*StoredEvent, error) {
	if !nipcw.IsHex64(id) {
		return nil, nil
	}
	t, err := l.EventByID(strings.ToLower(id))
	if err != nil || t == nil || !Knows(l.Community(), author, t) {
		return nil, err
	}
	return t, nil
}

// Classify places ev, a new event of channel h (none: "") whose state is
// ch (nil: not created yet), in its thread by its NIP-10 tags (CW-10,
// CW-11). A reply whose parent is not served is refused, unless importing:
// then it is kept unclassified until a backfill finds the parent (CW-12).
func Classify(l Lookup, ev *nostr.Event, thread ThreadTags, h string, ch *Channel, now int64, importing bool) (Classification, error) {
	c := Classification{Broadcast: thread.Broadcast}
	channel := seqOf(ch)
	if h == "" || !nipcw.IsClassifiedKind(ev.Kind) {
		return c, nil
	}
	c.Row = RowTopLevel
	if thread.Parent == "" {
		c.Classified = true
		return c, nil
	}
	p, err := knownByID(l, ev.PubKey, thread.Parent)
	if err != nil {
		return c, err
	}
	switch {
	case (p == nil || !p.Live(now)) && importing:
		return c, nil
	case p == nil || !p.Live(now):
		return c, ErrParentNotFound
	case p.Channel == 0:
		return c, ErrParentNoChannel
	case p.Channel != channel:
		return c, ErrParentOtherChannel
	case !nipcw.IsClassifiedKind(p.Kind):
		// A reaction, edit, deletion or moderation event is no thread
		// message: nothing can be a reply to it.
		return c, ErrParentNotFound
	case !p.Classified:
		// The parent is unclassified itself (legacy, or not a thread kind):
		// so is this reply, and it stays visible as a row until a backfill
		// classifies both (CW-12).
		return c, nil
	}
	rootRef, rootID := p.Ref, p.ID
	if p.Depth > 0 {
		rootRef = p.RootRef
		if thread.Root != "" {
			root, err := l.EventByRef(rootRef)
			if err != nil {
				return c, err
			}
			if root == nil {
				return c, fmt.Errorf("thread root #%d of %s is missing", rootRef, p.ID)
			}
			rootID = root.ID
		}
	}
	if thread.Root != "" && thread.Root != rootID {
		return c, ErrRootMismatch
	}
	depth := p.Depth + 1
	if depth > MaxDepth {
		return c, ErrDepthExceeded
	}
	c.Classified = true
	c.ParentRef, c.RootRef, c.Depth = p.Ref, rootRef, depth
	if depth > 1 || !c.Broadcast {
		c.Row = RowReply
	}
	return c, nil
}

// DeletionTargets resolves the targets of a kind 5 deletion (RL-6): every
// stored event its `e` tags name and every version up to its date of the
// addresses its `a` tags name. One target of another author refuses the
// whole deletion, unless its author may not know of it: that one is
// ignored, as a target not stored is (RL-29). A deletion deletes no
// deletion (NIP-09).
func DeletionTargets(l Lookup, ev *nostr.Event) ([]*StoredEvent, error) {
	var targets []*StoredEvent
	for _, tag := range ev.Tags {
		if len(tag) < 2 {
			continue
		}
		var found []*StoredEvent
		switch tag[0] {
		case "e":
			// Only the canonical (lowercase) spelling deletes: it is the one
			// the check for deletions that arrive first looks up.
			if !nipcw.IsLowerHex64(tag[1]) {
				continue
			}
			t, err := l.EventByID(tag[1])
			if err != nil {
				return nil, err
			}
			if t != nil {
				found = append(found, t)
			}
		case "a":
			vs, err := addressed(l, tag[1])
			if err != nil {
				return nil, err
			}
			for _, v := range vs {
				if v.CreatedAt <= int64(ev.CreatedAt) {
					found = append(found, v)
				}
			}
		}
		for _, t := range found {
			if !Knows(l.Community(), ev.PubKey, t) {
				continue
			}
			if !t.wroteBy(ev.PubKey) {
				return nil, ErrNotAuthor
			}
			if t.Kind != KindDeletion {
				targets = append(targets, t)
			}
		}
	}
	return targets, nil
}

// GroupDeleteTarget resolves the one target of a NIP-29 kind 9005
// deletion in channel h whose state is ch (RL-6), checked in the order of
// the contract: by the target's author or an owner or admin of the
// channel.
func GroupDeleteTarget(l Lookup, ev *nostr.Event, h string, ch *Channel, now int64) ([]*StoredEvent, error) {
	var ref nostr.Tag
	n := 0
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && (tag[0] == "e" || tag[0] == "a") {
			ref = tag
			n++
		}
	}
	if n != 1 {
		return nil, ErrDeletionTargets
	}
	if h == "" {
		return nil, ErrMissingH
	}
	var t *StoredEvent
	if ref[0] == "e" {
		if nipcw.IsLowerHex64(ref[1]) {
			var err error
			if t, err = knownByID(l, ev.PubKey, ref[1]); err != nil {
				return nil, err
			}
		}
	} else {
		vs, err := addressed(l, ref[1])
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 && Knows(l.Community(), ev.PubKey, vs[0]) {
			t = vs[0]
		}
	}
	switch {
	case t == nil || (!t.Deleted && !t.Live(now)): // deleting a deleted event again is harmless
		return nil, ErrTargetNotFound
	case t.Scope == 0 || t.Scope != seqOf(ch):
		// A reaction without an h tag belongs to its target's channel
		// (RL-8), and a channel admin may delete it there.
		return nil, ErrTargetOtherChannel
	case !t.wroteBy(ev.PubKey) && l.Community().RoleOf(ev.PubKey, ch) < RoleAdmin:
		return nil, ErrNotAuthorOrAdmin
	}
	return []*StoredEvent{t}, nil
}

// CheckEdit enforces RL-7 on ev, an edit in channel h whose state is ch:
// it names its target with its first `e` tag, in its own channel, and only
// the target's author may edit it.
func CheckEdit(l Lookup, ev *nostr.Event, h string, ch *Channel, now int64) error {
	if h == "" {
		return ErrMissingH
	}
	ref := ev.Tags.Find("e")
	if ref == nil {
		return ErrEditTarget
	}
	if !nipcw.IsHex64(ref[1]) {
		return ErrTargetNotFound
	}
	t, err := knownByID(l, ev.PubKey, ref[1])
	switch {
	case err != nil:
		return err
	case t == nil || !t.Live(now):
		return ErrTargetNotFound
	case t.Channel == 0 || t.Channel != seqOf(ch):
		return ErrTargetOtherChannel
	case !t.wroteBy(ev.PubKey):
		return ErrNotAuthor
	}
	return nil
}

// addressed resolves an `a` tag value ("kind:pubkey:d") to the stored
// versions at that address, newest first. Only the canonical spelling (the
// one Address writes: lowercase pubkey, empty d for replaceable kinds)
// names anything, as only it is found by the check for deletions that
// arrive before their target.
func addressed(l Lookup, a string) ([]*StoredEvent, error) {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 || !nipcw.IsLowerHex64(parts[1]) {
		return nil, nil
	}
	kind, err := strconv.Atoi(parts[0])
	if err != nil || strconv.Itoa(kind) != parts[0] {
		return nil, nil
	}
	if !IsAddressableKind(kind) && !(IsReplaceableKind(kind) && parts[2] == "") {
		return nil, nil
	}
	vs, err := l.Versions(kind, parts[1], parts[2])
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(vs, func(a, b *StoredEvent) int {
		switch {
		case a.CreatedAt > b.CreatedAt:
			return -1
		case a.CreatedAt < b.CreatedAt:
			return 1
		}
		return 0
	})
	return vs, nil
}

// Grant is what lets an event past the write rules of Access: Relay marks
// the relay's own events (its group state, the membership events it
// issues), which no write policy applies to (RL-29); Invited a 9021 that
// carries a live invite code of its channel (Invited, RL-36); Replay an
// import, which replays another relay's history.
type Grant struct {
	Relay, Invited, Replay bool
}

// Access decides whether ev, an event of channel h (none: "") whose state
// is ch (nil: it does not exist), may be written (RL-10, RL-14), and which
// channel it is read in, its scope (RL-8, RL-13): a channel number, 0 for
// none or for a channel not created yet; targets are what it deletes. For
// a lifecycle event, next is the channel's state after it.
func Access(l Lookup, ev *nostr.Event, h string, ch *Channel, targets []*StoredEvent, g Grant) (scope int64, next *Channel, err error) {
	scope, next, err = access(l, ev, h, ch, targets, g)
	if err != nil {
		return 0, nil, err
	}
	// A reaction or deletion of no channel, its targets' included, is an
	// event of no channel (RL-29), except a deletion of its author's own
	// events: an author may always delete what they wrote (RL-6).
	if h == "" && scope == 0 && !g.Relay && (ev.Kind == KindReaction || (ev.Kind == KindDeletion && len(targets) == 0)) {
		if err := l.Community().CheckNoChannel(ev.PubKey); err != nil {
			return 0, nil, err
		}
	}
	return scope, next, nil
}

func access(l Lookup, ev *nostr.Event, h string, ch *Channel, targets []*StoredEvent, g Grant) (scope int64, next *Channel, err error) {
	c := l.Community()
	channel := seqOf(ch)
	switch {
	case IsLifecycleKind(ev.Kind):
		switch {
		case h == "":
			return 0, nil, ErrMissingH
		case g.Relay && isIssuedKind(ev.Kind) && ch != nil && !g.Replay:
			// The relay's own 9000 or 9001 records a join or leave
			// already carried out (Issued): it changes nothing again.
			return channel, nil, nil
		case g.Relay && isIssuedKind(ev.Kind) && ch != nil:
			next, err = replayIssued(l, ev, ch)
			return channel, next, err
		}
		next, err = c.Transition(ev, h, ch, g.Invited)
		return channel, next, err
	case h != "":
		switch {
		case (ev.Kind == KindDeletion || ev.Kind == KindGroupDelete) && deletesOnlyIn(ch, targets):
			// A deletion of events of its own channel has rules of its
			// own: an author may always delete what they wrote (RL-6), a
			// removed member too. Any other is an ordinary post.
		case ev.Kind == KindReaction:
			// A reaction belongs to its target's channel too (RL-8): an h
			// tag of another channel does not carry it past that
			// channel's write rule.
			if err = c.CheckWrite(ev.PubKey, ch); err == nil {
				err = checkTargetWrite(l, ev, channel)
			}
		default:
			err = c.CheckWrite(ev.PubKey, ch)
		}
		return channel, nil, err
	case ev.Kind == KindReaction:
		t, err := reactionTarget(l, ev)
		if err != nil || t == nil || t.Scope == 0 {
			return 0, nil, err
		}
		return t.Scope, nil, c.CheckWrite(ev.PubKey, channelState(c, t.Scope))
	case ev.Kind == KindDeletion:
		for _, t := range targets {
			switch {
			case t.Scope == 0:
			case scope == 0:
				scope = t.Scope
			case scope != t.Scope:
				return 0, nil, ErrCrossChannelDeletion
			}
		}
		return scope, nil, nil
	case IsRelayOnlyKind(ev.Kind):
		// The relay's own group state belongs to the channel it describes.
		seq, found, err := l.ChannelNumber(ev.Tags.GetD())
		if !found {
			return 0, nil, err
		}
		return seq, nil, err
	}
	return 0, nil, nil
}

// seqOf is the number of channel ch, 0 when it does not exist yet.
func seqOf(ch *Channel) int64 {
	if ch == nil {
		return 0
	}
	return ch.Seq
}

// channelState is the state of the channel numbered seq. A channel the
// state does not know (a store whose writers all publish their changes
// has none) is taken as what it would be: an open channel without members.
func channelState(c *Community, seq int64) *Channel {
	if ch := c.ChannelBySeq(seq); ch != nil {
		return ch
	}
	return &Channel{Seq: seq, Members: map[string]Role{}}
}

// deletesOnlyIn reports whether every target of a deletion is an event of
// channel ch, which exists and was not deleted.
func deletesOnlyIn(ch *Channel, targets []*StoredEvent) bool {
	if ch == nil || ch.Deleted || len(targets) == 0 {
		return false
	}
	for _, t := range targets {
		if t.Scope != ch.Seq {
			return false
		}
	}
	return true
}

// checkTargetWrite applies the write rule of the channel of a reaction's
// stored target when it is not the reaction's own.
func checkTargetWrite(l Lookup, ev *nostr.Event, channel int64) error {
	t, err := reactionTarget(l, ev)
	if err != nil || t == nil || t.Scope == 0 || t.Scope == channel {
		return err
	}
	return l.Community().CheckWrite(ev.PubKey, channelState(l.Community(), t.Scope))
}

// reactionTarget is the stored target of reaction ev as its author may
// know of it (see Knows): nil when there is none.
func reactionTarget(l Lookup, ev *nostr.Event) (*StoredEvent, error) {
	return knownByID(l, ev.PubKey, ScopeTarget(ev))
}
