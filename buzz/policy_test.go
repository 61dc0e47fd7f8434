package buzz

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Channels of policyCommunity besides chanID (open, staffed).
const (
	chanIDPrivate = "0b7c4f2e-5a61-4d3b-8e90-1f2a3b4c5d6e"
	chanIDGone    = "9e8d7c6b-5a49-4382-a716-f5e4d3c2b1a0"
	chanIDFresh   = "12345678-9abc-4def-8123-456789abcdef"
)

var pkAllowed, pkBlocked = "1" + pkOutsider[1:], "2" + pkOutsider[1:]

// policyCommunity has an open channel (chanID, staffed), a private one
// whose only member is pkOwner, and a deleted one whose only member was
// pkMember2; p is its policy, with the relay admins of relayAdmins.
func policyCommunity(p Policy) *Community {
	p.Admins = relayAdmins()
	c := NewCommunity(p)
	c.Put(openChannel())
	c.Put(&Channel{Seq: 2, H: chanIDPrivate, Created: true, Private: true, Members: map[string]Role{pkOwner: RoleOwner}})
	c.Put(&Channel{Seq: 3, H: chanIDGone, Created: true, Deleted: true, Members: map[string]Role{pkMember2: RoleOwner}})
	return c
}

func event(kind int, author string, tags ...nostr.Tag) *nostr.Event {
	return &nostr.Event{Kind: kind, PubKey: author, CreatedAt: 1_700_000_000, Tags: tags}
}

// RL-29, RL-14: the write policy as far as an event says it of itself,
// with the exact wire text of every refusal. With open writes off, an
// event of no channel comes only from relay admins, members of some
// channel and the allowed pubkeys; blocked pubkeys write nothing, relay
// admins included; allowed_kinds refuses every other kind, except from
// relay admins; ephemeral events follow the same rules, those of a channel
// its write rule.
func TestCheckEvent(t *testing.T) {
	const (
		membersOnly = "restricted: this relay accepts events from its members only"
		blocked     = "blocked: this pubkey may not post here"
		notMember   = "restricted: not a channel member"
	)
	open := Policy{PublicRead: true, OpenWrite: true, Create: CreateByAnyone}
	closed := Policy{PublicRead: true, OpenWrite: false, Create: CreateByAdmins, Allowed: map[string]bool{pkAllowed: true}}
	blocking := func(p Policy) Policy {
		p.Blocked = map[string]bool{pkBlocked: true, pkRelayAdmin: true}
		return p
	}
	kinds := func(p Policy, k ...int) Policy {
		p.Kinds = map[int]bool{}
		for _, k := range k {
			p.Kinds[k] = true
		}
		return p
	}
	h := func(id string) nostr.Tag { return nostr.Tag{"h", id} }
	for _, c := range []struct {
		name   string
		policy Policy
		ev     *nostr.Event
		want   string // "" for accepted
	}{
		{"open writes: a stranger's note", open, event(1, pkOutsider), ""},
		{"closed: a stranger's note", closed, event(1, pkOutsider), membersOnly},
		{"closed: a stranger's DM", closed, event(4, pkOutsider), membersOnly},
		{"closed: a stranger's article", closed, event(30023, pkOutsider, nostr.Tag{"d", "a"}), membersOnly},
		{"closed: a stranger's profile", closed, event(0, pkOutsider), membersOnly},
		{"closed: a stranger's 9033", closed, event(KindCommunityAdmin, pkOutsider), membersOnly},
		{"closed: a member's note", closed, event(1, pkMember), ""},
		{"closed: a private channel's member's note", closed, event(1, pkOwner), ""},
		{"closed: a deleted channel's member's note", closed, event(1, pkMember2), membersOnly},
		{"closed: an allowed pubkey's note", closed, event(1, pkAllowed), ""},
		{"closed: a relay admin's note", closed, event(1, pkRelayAdmin), ""},
		{"closed: a stranger's ephemeral event", closed, event(20001, pkOutsider), membersOnly},
		{"closed: a member's ephemeral event", closed, event(20001, pkMember), ""},
		{"closed: a stranger's ephemeral event in an open channel", closed, event(20001, pkOutsider, h(chanID)), notMember},
		{"open writes: a stranger's ephemeral event in an open channel", open, event(20001, pkOutsider, h(chanID)), ""},
		{"open writes: a stranger's ephemeral event in a private channel", open, event(20001, pkOutsider, h(chanIDPrivate)), notMember},
		{"closed: a stranger's reaction, its target's channel unknown yet", closed, event(KindReaction, pkOutsider), ""},
		{"closed: a stranger's deletion, its targets unknown yet", closed, event(KindDeletion, pkOutsider), ""},
		{"closed: a stranger's channel message, for the store", closed, event(9, pkOutsider, h(chanID)), ""},

		{"blocked: a note", blocking(open), event(1, pkBlocked), blocked},
		{"blocked: a channel message", blocking(open), event(9, pkBlocked, h(chanID)), blocked},
		{"blocked: a reaction", blocking(open), event(KindReaction, pkBlocked), blocked},
		{"blocked: an ephemeral event", blocking(open), event(20001, pkBlocked), blocked},
		{"blocked: a relay admin too", blocking(closed), event(KindCreateChannel, pkRelayAdmin, h(chanIDFresh)), blocked},
		{"blocked: not the others", blocking(open), event(1, pkOutsider), ""},

		{"allowed kinds: another", kinds(open, 1, 7), event(4, pkOutsider), "blocked: kind 4 is not accepted here"},
		{"allowed kinds: a lifecycle kind", kinds(open, 1, 7), event(KindJoin, pkMember, h(chanID)), "blocked: kind 9021 is not accepted here"},
		{"allowed kinds: an ephemeral kind", kinds(open, 1, 7), event(20001, pkMember), "blocked: kind 20001 is not accepted here"},
		{"allowed kinds: one of them", kinds(open, 1, 7), event(7, pkOutsider), ""},
		{"allowed kinds: a relay admin's lifecycle event", kinds(open, 1, 7), event(KindCreateChannel, pkRelayAdmin, h(chanIDFresh)), ""},
		{"allowed kinds: a relay admin's setting", kinds(open, 1, 7), event(KindCommunityAdmin, pkRelayAdmin), ""},
		{"allowed kinds before open writes", kinds(closed, 1), event(4, pkOutsider), "blocked: kind 4 is not accepted here"},
		{"blocked before allowed kinds", kinds(blocking(open), 1), event(4, pkBlocked), blocked},
	} {
		t.Run(c.name, func(t *testing.T) {
			com := policyCommunity(c.policy)
			h, err := ChannelOf(c.ev.Tags)
			if err != nil {
				t.Fatal(err)
			}
			err = com.CheckEvent(c.ev, h)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("CheckEvent = %v, want nil", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("CheckEvent = %v, want %q", err, c.want)
			}
			if _, ok := AsRejection(err); err != nil && !ok {
				t.Fatalf("%v is no Rejection", err)
			}
		})
	}
}

// RL-29: CheckNoChannel is the rule the store applies to reactions and
// deletions that turn out to belong to no channel.
func TestCheckNoChannel(t *testing.T) {
	closed := policyCommunity(Policy{Allowed: map[string]bool{pkAllowed: true}})
	for pk, want := range map[string]error{
		pkOutsider: ErrMembersOnly, pkMember2: ErrMembersOnly,
		pkMember: nil, pkOwner: nil, pkAllowed: nil, pkRelayAdmin: nil,
	} {
		if err := closed.CheckNoChannel(pk); err != want {
			t.Errorf("closed writes, %s…: %v, want %v", pk[:4], err, want)
		}
	}
	if err := policyCommunity(Policy{OpenWrite: true}).CheckNoChannel(pkOutsider); err != nil {
		t.Errorf("open writes, a stranger: %v", err)
	}
}

// RL-29: NIP-11 restricted_writes tells a client whether it must know the
// policy before writing: only members write, or only some kinds are
// taken. A block list, an allow list that open writes make moot, or who
// may create channels, is no such condition.
func TestRestrictedWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy Policy
		want   bool
	}{
		{"default", DefaultPolicy(), false},
		{"open writes off", Policy{PublicRead: true, OpenWrite: false}, true},
		{"allowed kinds", Policy{OpenWrite: true, Kinds: map[int]bool{1: true}}, true},
		{"blocked pubkeys only", Policy{OpenWrite: true, Blocked: map[string]bool{pkBlocked: true}}, false},
		{"allowed pubkeys with open writes", Policy{OpenWrite: true, Allowed: map[string]bool{pkAllowed: true}}, false},
		{"channels created by admins only", Policy{OpenWrite: true, Create: CreateByAdmins}, false},
		{"reads need AUTH", Policy{PublicRead: false, OpenWrite: true}, false},
	} {
		if got := c.policy.RestrictedWrites(); got != c.want {
			t.Errorf("%s: RestrictedWrites = %t, want %t", c.name, got, c.want)
		}
	}
}

// RL-27: what counts against the channel creation rate: a 9007 that the
// create policy allows, and the first stored event to name a fresh
// channel its author may write to; nothing else.
func TestCreatesChannel(t *testing.T) {
	open := Policy{OpenWrite: true, Create: CreateByAnyone}
	closed := Policy{OpenWrite: false, Create: CreateByMembers}
	h := func(id string) nostr.Tag { return nostr.Tag{"h", id} }
	for _, c := range []struct {
		name   string
		policy Policy
		ev     *nostr.Event
		want   bool
	}{
		{"9007", open, event(KindCreateChannel, pkOutsider, h(chanIDFresh)), true},
		{"9007 of an existing channel", open, event(KindCreateChannel, pkOutsider, h(chanID)), false},
		{"9007 of a deleted channel", open, event(KindCreateChannel, pkOutsider, h(chanIDGone)), false},
		{"9007 with an uppercase id", open, event(KindCreateChannel, pkOutsider, h("ABCDEF00-9abc-4def-8123-456789abcdef")), false},
		{"9007 the create policy refuses", closed, event(KindCreateChannel, pkOutsider, h(chanIDFresh)), false},
		{"9007 of a member, policy members", closed, event(KindCreateChannel, pkMember, h(chanIDFresh)), true},
		{"first message, open writes", open, event(9, pkOutsider, h(chanIDFresh)), true},
		{"first message, any id", open, event(9, pkOutsider, h("general")), true},
		{"first reaction with h, open writes", open, event(KindReaction, pkOutsider, h(chanIDFresh)), true},
		{"first message, closed writes", closed, event(9, pkOutsider, h(chanIDFresh)), false},
		{"first message of a relay admin, closed writes", closed, event(9, pkRelayAdmin, h(chanIDFresh)), true},
		{"message to an existing channel", open, event(9, pkOutsider, h(chanID)), false},
		{"event of no channel", open, event(1, pkOutsider), false},
		{"ephemeral event", open, event(20001, pkOutsider, h(chanIDFresh)), false},
		{"9021 of a fresh channel", open, event(KindJoin, pkOutsider, h(chanIDFresh)), false},
		{"9005 in a fresh channel", open, event(KindGroupDelete, pkOutsider, h(chanIDFresh)), false},
		{"edit in a fresh channel", open, event(KindEdit, pkOutsider, h(chanIDFresh)), false},
	} {
		hv, _ := ChannelOf(c.ev.Tags)
		if got := policyCommunity(c.policy).CreatesChannel(c.ev, hv); got != c.want {
			t.Errorf("%s: CreatesChannel = %t, want %t", c.name, got, c.want)
		}
	}
}
