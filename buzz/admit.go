package buzz

import (
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file is the write path: the one order of checks and writes that
// stores an event (RL-4), for live ingest, an import and the relay's own
// group state alike. A store brings the rows (WriteTx) and decides none of
// it.

// WriteTx is one event's admission inside a store's write transaction:
// what the rules read (Lookup) and the row-level writes that carry out
// their decisions. The event being admitted is the one the store bound to
// it; each method is storage and nothing else.
type WriteTx interface {
	Lookup
	// Seen answers the questions every event raises before anything else
	// is read of it.
	Seen() (Seen, error)
	// AddressDeleted reports whether a kind 5 deletion by the event's
	// author, still in force, names address addr in an `a` tag, dated at
	// or after the event (NIP-09).
	AddressDeleted(addr string) (bool, error)
	// SetThreadRepliesInChannel persists the community setting and puts
	// it in the transaction's access state (RL-15).
	SetThreadRepliesInChannel(v bool) error
	// InsertChannel creates the row of channel h and returns its number.
	InsertChannel(h string) (int64, error)
	// UpdateChannel writes ch's row: its created_at becomes createdAt
	// unless it has one (0: leave it), its deleted_at becomes deletedAt
	// unless it has one (0: leave it).
	UpdateChannel(ch *Channel, createdAt, deletedAt int64) error
	// ChildChannels numbers up to limit channels whose parent is channel
	// number parent (RL-36), by an index, not a walk of every channel.
	ChildChannels(parent int64, limit int) ([]int64, error)
	// PutMember writes pubkey's (32 bytes) role in channel number
	// channel; DeleteMember removes it.
	PutMember(channel int64, pubkey []byte, role Role) error
	DeleteMember(channel int64, pubkey []byte) error
	// InsertEvent writes the event's row and its tag index rows.
	InsertEvent(row EventRow) error
	// RaiseLastMessage makes at the last message of channel number
	// channel if it is newer (channels.last_message_at).
	RaiseLastMessage(channel, at int64) error
	// AddToAncestors counts the event, a reply, into the thread counters
	// of parent and its ancestors (CW-21).
	AddToAncestors(parent int64) error
	// SoftDelete marks t deleted at now and makes its ancestors' counters
	// exact again (RL-6); Remove takes a replaced version away (RL-9).
	// Both take an event the Lookup returned.
	SoftDelete(t *StoredEvent, now int64) error
	Remove(t *StoredEvent, now int64) error
	// ReactionsNaming lists the numbers (Ref) of the stored reactions
	// whose `e` tags name id (lowercase hex).
	ReactionsNaming(id string) ([]int64, error)
	// TagsOf reads the tags of t, an event the Lookup returned.
	TagsOf(t *StoredEvent) (nostr.Tags, error)
	// SetScope sets the scope of stored event ref.
	SetScope(ref, scope int64) error
	// RecountedThreads describes the events whose thread counters this
	// admission changed.
	RecountedThreads() ([]ThreadChange, error)
	// InviteRefs numbers (Ref) up to limit of the 9009s whose live
	// invite code in channel number channel is code, newest first, by an
	// index; PutInvite records code, in channel, as the invite of the
	// event admitted (RL-36).
	InviteRefs(channel int64, code string, limit int) ([]int64, error)
	PutInvite(channel int64, code string) error
	// DeleteInvites, PutChannel and Community (Lookup) revoke a code.
	InviteRows
	// Issue has the relay sign ev, a membership event it issues (Issued),
	// and admit it before the commit, as it does its group state
	// (GroupStateTx.AdmitOwn); without a relay key it issues nothing.
	Issue(ev *nostr.Event)
}

// Seen is what a store knows of an event before it reads anything else.
type Seen struct {
	// Stored: the event is stored already.
	Stored bool
	// DeletedBefore: a kind 5 deletion by its author, still in force,
	// names it by id: it was deleted before it arrived (NIP-09).
	DeletedBefore bool
	// NamedByReaction: a stored reaction names it in an `e` tag, one it
	// may adopt (RL-8).
	NamedByReaction bool
}

// EventRow is what the rules decided of an event the store writes.
type EventRow struct {
	// Channel is the number of the channel its h tag names, Scope the one
	// it is read in (RL-8, RL-13); 0 for none.
	Channel, Scope int64
	// Class is its place in its thread (CW-10).
	Class Classification
}

// AdmitInput is what a store parsed of the event and knows of the write.
type AdmitInput struct {
	// H is its channel (ChannelOf), "" for none; Thread its NIP-10 tags.
	H      string
	Thread ThreadTags
	// Expires says it carries a NIP-40 expiration, ExpiresAt.
	Expires   bool
	ExpiresAt int64
	// Relay is the relay's pubkey (hex), "" when it signs nothing.
	Relay string
	// Now is the write's clock (Unix seconds).
	Now int64
	// Importing marks an import: a reply whose parent is not served is
	// kept unclassified (CW-12), and no one hears of recounted threads.
	Importing bool
}

// Admit stores ev through tx by the rules of ingest, in their order, and
// says what became of it. Everything before the first write only reads:
// a refusal (a *Rejection, ErrDuplicate, ErrNewerVersionStored) leaves tx
// as it was.
func Admit(tx WriteTx, ev *nostr.Event, in AdmitInput) (Admitted, error) {
	if IsEphemeralKind(ev.Kind) {
		return Admitted{}, ErrEphemeral
	}
	// The relay's own group state is no submission: the write policy is
	// for what others send (RL-29).
	relaySigned := in.Relay != "" && ev.PubKey == in.Relay
	if !relaySigned {
		if err := tx.Community().CheckEvent(ev, in.H); err != nil {
			return Admitted{}, err
		}
	}
	if ev.Kind == KindCommunityAdmin {
		return Admitted{Applied: true}, applySetting(tx, ev, in.Now)
	}
	seen, err := tx.Seen()
	if err != nil {
		return Admitted{}, err
	}
	switch {
	case seen.Stored:
		return Admitted{}, ErrDuplicate
	case in.Expires && in.ExpiresAt <= in.Now:
		return Admitted{}, ErrExpired
	case seen.DeletedBefore:
		return Admitted{}, ErrDeletedBeforeArriving
	}

	// A channel seen for the first time gets its row with the event's
	// writes below; until then it is number 0, which no stored event has.
	var channel int64
	var ch *Channel // nil: the channel does not exist yet
	newChannel := false
	if in.H != "" {
		seq, found, err := tx.ChannelNumber(in.H)
		if err != nil {
			return Admitted{}, err
		}
		channel, newChannel = seq, !found
		if found {
			ch = stateOf(tx.Community(), seq, in.H)
		}
	}

	superseded, err := replaced(tx, ev)
	if err != nil {
		return Admitted{}, err
	}
	invited, err := Invited(tx, ev, ch, in.Now)
	if err != nil {
		return Admitted{}, err
	}
	var targets []*StoredEvent
	switch ev.Kind {
	case KindDeletion:
		targets, err = DeletionTargets(tx, ev)
	case KindGroupDelete:
		targets, err = GroupDeleteTarget(tx, ev, in.H, ch, in.Now)
	case KindEdit:
		err = CheckEdit(tx, ev, in.H, ch, in.Now)
	}
	if err != nil {
		return Admitted{}, err
	}
	scope, next, err := Access(tx, ev, in.H, ch, targets, Grant{Relay: relaySigned, Invited: invited, Replay: in.Importing})
	if err != nil {
		return Admitted{}, err
	}
	placed, err := Classify(tx, ev, in.Thread, in.H, ch, in.Now, in.Importing)
	if err != nil {
		return Admitted{}, err
	}

	// Every refusal is decided by now: the writes begin.
	if newChannel {
		if channel, err = tx.InsertChannel(in.H); err != nil {
			return Admitted{}, err
		}
		scope = channel
		if next == nil {
			// Named by an event, not created: open, without members.
			tx.PutChannel(&Channel{Seq: channel, H: in.H, Members: map[string]Role{}})
		}
	}
	if err := tx.InsertEvent(EventRow{Channel: channel, Scope: scope, Class: placed}); err != nil {
		return Admitted{}, err
	}
	if channel != 0 && placed.Row >= RowReply {
		if err := tx.RaiseLastMessage(channel, int64(ev.CreatedAt)); err != nil {
			return Admitted{}, err
		}
	}
	if placed.Classified && placed.Depth > 0 {
		if err := tx.AddToAncestors(placed.ParentRef); err != nil {
			return Admitted{}, err
		}
	}
	for _, t := range targets {
		if err := tx.SoftDelete(t, in.Now); err != nil {
			return Admitted{}, err
		}
		if t.Kind == KindCreateInvite {
			if err := revokeInvite(tx, t); err != nil {
				return Admitted{}, err
			}
		}
	}
	for _, v := range superseded {
		if err := tx.Remove(v, in.Now); err != nil {
			return Admitted{}, err
		}
	}
	if next != nil {
		next.Seq = channel
		if err := applyLifecycle(tx, ev, ch, next, in); err != nil {
			return Admitted{}, err
		}
	}
	if seen.NamedByReaction && scope != 0 && channel != 0 {
		if err := adoptReactions(tx, ev.ID, scope); err != nil {
			return Admitted{}, err
		}
	}
	var a Admitted
	if !in.Importing { // an import has no one to tell
		if a.Threads, err = tx.RecountedThreads(); err != nil {
			return Admitted{}, err
		}
	}
	if scope != 0 {
		if c := tx.Community().ChannelBySeq(scope); c != nil {
			a.Scope = c.H
		}
	}
	return a, nil
}

// applyLifecycle carries out what the lifecycle event ev, admitted, does
// to its channel, from ch to next (RL-10, RL-36): the channel's rows and
// state, the code of a 9009, and the relay's own 9000 or 9001 for a join
// or leave. An import issues none: the relay's events of the history it
// replays are in it (an export holds them), and it renews no group state
// either until its end.
func applyLifecycle(tx WriteTx, ev *nostr.Event, ch, next *Channel, in AdmitInput) error {
	if err := saveChannel(tx, ch, next, int64(ev.CreatedAt), in.Now); err != nil {
		return err
	}
	switch ev.Kind {
	case KindCreateInvite:
		code, err := InviteCode(ev.Tags)
		if err == nil {
			err = tx.PutInvite(next.Seq, code)
		}
		if err != nil {
			return fmt.Errorf("record invite code: %w", err)
		}
	case KindJoin, KindLeave:
		if !in.Importing {
			tx.Issue(Issued(ev, in.H, in.Now))
		}
	}
	return nil
}

// applySetting carries out a kind 9033 (RL-15): a relay admin sets
// thread_replies_in_channel. It is persisted, not stored as an event.
func applySetting(tx WriteTx, ev *nostr.Event, now int64) error {
	v, err := tx.Community().ApplySetting(ev, now)
	if err != nil {
		return err
	}
	return tx.SetThreadRepliesInChannel(v)
}

// replaced is what ev, when it is replaceable or addressable, replaces
// (RL-9): refused when a deletion dated at or after it names its address
// (NIP-09) or a newer version is stored.
func replaced(tx WriteTx, ev *nostr.Event) ([]*StoredEvent, error) {
	addr, ok := Address(ev)
	if !ok {
		return nil, nil
	}
	deleted, err := tx.AddressDeleted(addr)
	if err != nil {
		return nil, err
	}
	if deleted {
		return nil, ErrDeletedBeforeArriving
	}
	versions, err := tx.Versions(ev.Kind, ev.PubKey, ev.Tags.GetD())
	if err != nil {
		return nil, err
	}
	return Supersedes(ev, versions)
}

// stateOf is the state of channel h, numbered seq. A row the state does
// not know (it cannot happen while every writer bumps the access version)
// is taken as what it would be: an open channel without members.
func stateOf(c *Community, seq int64, h string) *Channel {
	if ch := c.ChannelBySeq(seq); ch != nil {
		return ch
	}
	return &Channel{Seq: seq, H: h, Members: map[string]Role{}}
}

// saveChannel writes the change from old (nil for a new channel) to next
// (RL-10): the channel's row, the members that changed, and its state.
func saveChannel(tx WriteTx, old, next *Channel, createdAt, now int64) error {
	if SameState(old, next) {
		return nil
	}
	if old == nil {
		old = &Channel{Members: map[string]Role{}}
	}
	var created, deleted int64
	if next.Created && !old.Created {
		created = createdAt
	}
	if next.Deleted {
		deleted = now
	}
	if err := tx.UpdateChannel(next, created, deleted); err != nil {
		return err
	}
	for pk, role := range next.Members {
		if old.Members[pk] == role {
			continue
		}
		key, err := nipcw.DecodeHex(pk, 32)
		if err == nil {
			err = tx.PutMember(next.Seq, key, role)
		}
		if err != nil {
			return fmt.Errorf("put member: %w", err)
		}
	}
	for pk := range old.Members {
		if _, ok := next.Members[pk]; ok {
			continue
		}
		key, err := nipcw.DecodeHex(pk, 32)
		if err == nil {
			err = tx.DeleteMember(next.Seq, key)
		}
		if err != nil {
			return fmt.Errorf("remove member: %w", err)
		}
	}
	tx.PutChannel(next)
	if next.Deleted && !old.Deleted {
		return orphanChildren(tx, next.Seq)
	}
	return nil
}

// OrphansRenewed bounds the subgroups a parent's 9008 makes roots of in
// its own transaction, renewing their group state: anyone who reads a
// channel may make it the parent of their own, and a 9008 re-signing all
// of them would cost what strangers attached (RL-27a). A subgroup past
// the bound keeps its row's parent, which every 39000 renders without
// (a deleted parent is no parent), and its group state until its next
// change: a 39000 naming a group that no longer exists, which NIP-29
// readers take as a root. A cap on subgroups would bound it too, but its
// refusal would count a public parent's private subgroups to a stranger
// (RL-29).
const OrphansRenewed = 256

// orphanChildren makes roots of up to OrphansRenewed subgroups of channel
// parent, just deleted (RL-36, NIP-29: "When a parent is deleted, its
// remaining children automatically become roots"): each child's row and
// state, whose group state is renewed. They are found by the store's
// index of parents: the cost grows with the children, not with the
// channels.
func orphanChildren(tx WriteTx, parent int64) error {
	seqs, err := tx.ChildChannels(parent, OrphansRenewed)
	if err != nil {
		return fmt.Errorf("look up subgroups: %w", err)
	}
	for _, seq := range seqs {
		ch := tx.Community().ChannelBySeq(seq)
		if ch == nil || ch.Deleted || ch.Parent != parent {
			continue
		}
		next := ch.clone()
		next.Parent = 0
		if err := tx.UpdateChannel(next, 0, 0); err != nil {
			return err
		}
		tx.PutChannel(next)
	}
	return nil
}

// adoptReactions gives scope, that of a channel event id that just
// arrived, to the reactions without a channel that named it before it did
// (RL-8).
func adoptReactions(tx WriteTx, id string, scope int64) error {
	want := strings.ToLower(id)
	refs, err := tx.ReactionsNaming(want)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		r, err := tx.EventByRef(ref)
		if err != nil {
			return err
		}
		if r == nil || r.Channel != 0 || r.Scope != 0 {
			continue
		}
		tags, err := tx.TagsOf(r)
		if err != nil {
			return err
		}
		if strings.ToLower(ScopeTarget(&nostr.Event{Kind: r.Kind, Tags: tags})) != want {
			continue
		}
		if err := tx.SetScope(r.Ref, scope); err != nil {
			return err
		}
	}
	return nil
}
