package buzz

import (
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// This file holds the rules of NIP-29 invites and of the membership events
// the relay issues (RL-36). A 9009 create-invite by an owner or admin of a
// channel gives it a code; a 9021 carrying a live code of a private channel
// joins it. A code belongs to the channel of its 9009: the same string in
// another channel is another code, and no one learns from a 9009 whether
// another channel has it (RL-29). A code lives while its 9009 does: a 9005
// of it, or a kind 5 of it by its author (NIP-09: a deletion request by the
// author is honoured as for any event), revokes it, and a 9009 past its
// NIP-40 expiration admits no one and is revoked by the purge that removes
// it (PurgeExpiredBatch).

// MaxInviteCode bounds an invite code, in bytes: what an admin makes the
// relay hold and look up is bounded.
const MaxInviteCode = 128

// InviteLookups bounds the 9009s of one code a join reads (InviteRefs),
// newest first. An admin may post any number of 9009s with one code, and
// a stranger's join must not walk them all (RL-27a). The newest is the
// one an admin issued last, the likeliest live; an expired one keeps its
// row only until the next purge (PurgeEvery), so 8 is room for re-issuing
// a code several times within that minute, and a join reads at most 8
// events whatever was posted.
const InviteLookups = 8

// InviteCode is the code a 9009 carries: exactly one `code` tag, of 1 to
// MaxInviteCode bytes.
func InviteCode(tags nostr.Tags) (string, error) {
	var code string
	n := 0
	for _, tag := range tags {
		if len(tag) >= 1 && tag[0] == "code" {
			n++
			if len(tag) >= 2 {
				code = tag[1]
			}
		}
	}
	if n != 1 || code == "" || len(code) > MaxInviteCode {
		return "", ErrInviteCode
	}
	return code, nil
}

// Invited reports whether ev, a 9021 to channel ch (nil: none), is let in
// by a live invite code of ch: its author may not read ch (a member of a
// private channel needs no code, and an open channel takes anyone), and
// the first `code` tag names a code of ch whose 9009 is still served at
// now. A wrong, revoked or expired code is no code: the join is then
// refused as any stranger's is (RL-29).
func Invited(tx WriteTx, ev *nostr.Event, ch *Channel, now int64) (bool, error) {
	if ev.Kind != KindJoin || ch == nil || ch.Deleted || ch.Invites == 0 ||
		tx.Community().CanRead(Viewer(ev.PubKey), ch) {
		return false, nil
	}
	tag := ev.Tags.Find("code")
	if tag == nil || tag[1] == "" || len(tag[1]) > MaxInviteCode {
		return false, nil
	}
	refs, err := tx.InviteRefs(ch.Seq, tag[1], InviteLookups)
	if err != nil {
		return false, fmt.Errorf("look up invite code: %w", err)
	}
	for _, ref := range refs {
		t, err := tx.EventByRef(ref)
		if err != nil {
			return false, err
		}
		if t != nil && t.Live(now) {
			return true, nil
		}
	}
	return false, nil
}

// InviteRows is what revoking an invite code reads and writes: the
// transaction's access state (TxCommunity) and the invites rows. An
// admission (WriteTx) is one, and so is a purge of expired events
// (ExpiredRows).
type InviteRows interface {
	// Community is the access state as the transaction sees it.
	Community() *Community
	// PutChannel makes ch the transaction's state of its channel, whose
	// group state is renewed before the commit (or, importing, later).
	PutChannel(ch *Channel)
	// DeleteInvites takes away the invite of the 9009 numbered ref and
	// says how many it took (RL-36).
	DeleteInvites(ref int64) (int, error)
}

// revokeInvite takes away the code of t, a 9009 deleted (a 9005, its
// author's kind 5) or purged past its expiration, and counts it out of
// its channel's live codes (Channel.Invites). The channel's state is
// changed, so its group state is renewed (`closed` once no code is left)
// and the access version bumped before the commit, as for any change of
// a channel. Before the event's row goes: its invites row would go with
// it, uncounted.
func revokeInvite(tx InviteRows, t *StoredEvent) error {
	n, err := tx.DeleteInvites(t.Ref)
	if err != nil {
		return fmt.Errorf("revoke invite code: %w", err)
	}
	ch := tx.Community().ChannelBySeq(t.Channel)
	if n == 0 || ch == nil {
		return nil
	}
	next := ch.clone()
	next.Invites = max(0, next.Invites-n)
	tx.PutChannel(next)
	return nil
}

// Issued is the membership event the relay issues, unsigned, for ev, an
// accepted 9021 join or 9022 leave of channel h (RL-36; NIP-29: "The relay
// will automatically issue a kind:9001 in response"): a 9000 put-user
// naming its author as member, or a 9001 remove-user naming its author.
// It is dated now, when the relay acted on it, so that a subscriber
// listening since then hears of it whatever date the request carried; its
// `e` tag names the request, which makes each issued event one of its own
// even when one user joins, leaves and joins within a second.
func Issued(ev *nostr.Event, h string, now int64) *nostr.Event {
	user := nostr.Tag{"p", ev.PubKey, RoleMember.String()}
	kind := KindPutUser
	if ev.Kind == KindLeave {
		user, kind = nostr.Tag{"p", ev.PubKey}, KindRemoveUser
	}
	return &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(now),
		Tags: nostr.Tags{{"h", h}, user, {"e", ev.ID}}}
}

// replayIssued is the state of ch after the relay's own 9000 or 9001
// (Issued), replayed by an import (nil: no change). An import judges the
// join it records again, and may refuse it where the relay let it in (its
// code expired since, its 9009 dated after it by a joiner's clock): the
// 9000 of a join the import did not store lets the member in, so that
// neither they nor their posts are lost. Otherwise it is the record it
// was live, and so is every 9001: the leave it answers replays itself.
func replayIssued(l Lookup, ev *nostr.Event, ch *Channel) (*Channel, error) {
	request := ev.Tags.Find("e")
	if ev.Kind == KindRemoveUser || request == nil {
		return nil, nil
	}
	if join, err := l.EventByID(strings.ToLower(request[1])); err != nil || join != nil {
		return nil, err
	}
	if ch.Deleted {
		return nil, ErrChannelDeleted
	}
	users, err := userTags(ev.Tags)
	if err != nil {
		return nil, err
	}
	next := ch.clone()
	for _, tag := range users {
		if next.Members[tag[1]] == RoleNone {
			next.Members[tag[1]] = RoleMember
		}
	}
	return next, nil
}

// isIssuedKind reports whether the relay issues events of kind k itself
// (Issued): signed by its key, they record a transition already made, and
// make none (RL-36).
func isIssuedKind(k int) bool { return k == KindPutUser || k == KindRemoveUser }
