package relay

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// This file tests the write policy of RL-29 through a real relay: who may
// write events of no channel, blocked pubkeys, allowed kinds, what NIP-11
// says of them, and that no write refusal tells whether a private event
// or channel exists.

const (
	membersOnly   = "restricted: this relay accepts events from its members only"
	blockedPubkey = "blocked: this pubkey may not post here"
)

// startWithPolicy starts a relay whose store has policy p and the relay
// admin admin.
func startWithPolicy(t *testing.T, p buzz.Policy, admin string, edit ...func(*Config)) *testServer {
	t.Helper()
	return startServerWith(t, func(o *testStoreOptions) { o.Policy = &p; o.Admins = []string{admin} }, edit...)
}

// nip11Limitation is the NIP-11 `limitation` object of s.
func nip11Limitation(t *testing.T, s *testServer) map[string]any {
	t.Helper()
	doc, _ := nip11(t, s)
	lim, ok := doc["limitation"].(map[string]any)
	if !ok {
		t.Fatalf("limitation = %v", doc["limitation"])
	}
	return lim
}

// ephemeral is who's ephemeral event with tags, unpublished.
func ephemeral(t *testing.T, who testutil.Signer, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	return who.Event(t, 20001, now(), "typing", tags...)
}

// mustPass publishes an event the policy lets through: stored (OK true),
// or, for an ephemeral event nobody listens for, "mute:".
func mustPass(t *testing.T, c *rawClient, ev *nostr.Event) {
	t.Helper()
	if err := publish(t, c, ev); err != nil && !strings.HasPrefix(err.Error(), "mute:") {
		t.Fatalf("kind %d refused: %v", ev.Kind, err)
	}
}

// RL-29, finding 10: with open_write off and channels created by admins,
// a stranger stores nothing, a note of no channel, a DM, a large article,
// a reaction or deletion naming nothing, an ephemeral event; members of
// some channel, the allowed pubkeys and the relay admins write events of
// no channel. NIP-11 says restricted_writes.
func TestClosedRelayRefusesStrangers(t *testing.T) {
	admin, member, allowed, stranger := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	p := buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAdmins, Allowed: map[string]bool{allowed.PK: true}}
	s := startWithPolicy(t, p, admin.PK)
	c := s.client(t)
	h := newChannelID(t)
	createChannel(t, c, admin, h, false)
	putUser(t, c, admin, h, member.PK, "")

	refused := []*nostr.Event{
		stranger.Event(t, 1, now(), "hello"),
		stranger.Event(t, 4, now(), "a DM", nostr.Tag{"p", member.PK}),
		stranger.Event(t, 30023, now(), strings.Repeat("x", 120_000), nostr.Tag{"d", "big"}),
		stranger.Event(t, 0, now(), `{"name":"spam"}`),
		stranger.Event(t, buzz.KindReaction, now(), "+", nostr.Tag{"e", randomID(t)}),
		stranger.Event(t, buzz.KindDeletion, now(), "", nostr.Tag{"e", randomID(t)}),
		ephemeral(t, stranger),
	}
	for _, ev := range refused {
		mustReject(t, c, ev, membersOnly)
	}
	// A burst is refused as a whole (nothing of it is stored either).
	for i := range 50 {
		mustReject(t, c, stranger.Event(t, 1, now()+int64(i), "burst"), membersOnly)
	}
	if got := fetch(t, c, nostr.Filter{Authors: []string{stranger.PK}}); len(got) != 0 {
		t.Fatalf("a stranger's events were stored: %d", len(got))
	}
	mustReject(t, c, chat(t, stranger, h, "hi"), "restricted: not a channel member")

	for name, who := range map[string]testutil.Signer{"member": member, "allowed pubkey": allowed, "relay admin": admin} {
		mustPublish(t, c, who.Event(t, 1, now(), "a note by the "+name))
		mustPublish(t, c, who.Event(t, 30023, now(), "an article", nostr.Tag{"d", "a"}))
		mustPass(t, c, ephemeral(t, who))
	}
	// A member removed from their only channel is a stranger again.
	removeUser(t, c, admin, h, member.PK)
	mustReject(t, c, member.Event(t, 1, now(), "still here?"), membersOnly)

	if lim := nip11Limitation(t, s); lim["restricted_writes"] != true {
		t.Errorf("restricted_writes = %v with open_write off", lim["restricted_writes"])
	}
}

// RL-29: blocked pubkeys are refused everywhere, relay admins included;
// allowed_kinds refuses every other kind, ephemeral ones too, except from
// relay admins, who run lifecycle events (and whose group state the relay
// signs whatever the kinds); NIP-11 says restricted_writes for the kinds,
// not for a block list.
func TestBlockedPubkeysAndAllowedKinds(t *testing.T) {
	admin, member, blocked := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	open := buzz.DefaultPolicy()
	open.Blocked = map[string]bool{blocked.PK: true}

	t.Run("blocked", func(t *testing.T) {
		s := startWithPolicy(t, open, admin.PK)
		c := s.client(t)
		h := newChannelID(t)
		createChannel(t, c, admin, h, false)
		for _, ev := range []*nostr.Event{
			blocked.Event(t, 1, now(), "hello"),
			chat(t, blocked, h, "hi"),
			blocked.Event(t, buzz.KindJoin, now(), "", hTag(h)),
			blocked.Event(t, buzz.KindCreateChannel, now(), "", hTag(newChannelID(t))),
			blocked.Event(t, buzz.KindReaction, now(), "+", nostr.Tag{"e", randomID(t)}),
			ephemeral(t, blocked, hTag(h)),
		} {
			mustReject(t, c, ev, blockedPubkey)
		}
		mustPublish(t, c, chat(t, member, h, "others post"))
		if lim := nip11Limitation(t, s); lim["restricted_writes"] != false {
			t.Errorf("restricted_writes = %v with only a block list", lim["restricted_writes"])
		}
	})

	t.Run("blocked relay admin", func(t *testing.T) {
		p := open
		p.Blocked = map[string]bool{admin.PK: true}
		s := startWithPolicy(t, p, admin.PK)
		mustReject(t, s.client(t), admin.Event(t, buzz.KindCreateChannel, now(), "", hTag(newChannelID(t))), blockedPubkey)
	})

	t.Run("allowed kinds", func(t *testing.T) {
		p := open
		p.Kinds = map[int]bool{1: true, 9: true, buzz.KindReaction: true}
		s := startWithPolicy(t, p, admin.PK)
		c := s.client(t)
		h := newChannelID(t)
		createChannel(t, c, admin, h, false) // a relay admin's 9007
		putUser(t, c, admin, h, member.PK, "")
		if got := fetch(t, c, nostr.Filter{Kinds: []int{buzz.KindGroupMembers}, Tags: nostr.TagMap{"d": {h}}}); len(got) != 1 ||
			got[0].Tags.FindWithValue("p", member.PK) == nil {
			t.Fatalf("group state of the relay admin's channel: %v", got)
		}
		for _, ev := range []*nostr.Event{
			member.Event(t, 4, now(), "a DM"),
			member.Event(t, 30023, now(), "an article", nostr.Tag{"d", "a"}),
			member.Event(t, buzz.KindLeave, now(), "", hTag(h)),
			member.Event(t, buzz.KindCreateChannel, now(), "", hTag(newChannelID(t))),
			ephemeral(t, member),
		} {
			mustReject(t, c, ev, "blocked: kind "+strconv.Itoa(ev.Kind)+" is not accepted here")
		}
		note := member.Event(t, 1, now(), "a note")
		mustPublish(t, c, note)
		mustPublish(t, c, chat(t, member, h, "a chat message"))
		mustPublish(t, c, reaction(t, member, note, "+"))
		mustPublish(t, c, admin.Event(t, buzz.KindEditMetadata, now(), "", hTag(h), nostr.Tag{"name", "renamed"}))
		if lim := nip11Limitation(t, s); lim["restricted_writes"] != true {
			t.Errorf("restricted_writes = %v with allowed_kinds", lim["restricted_writes"])
		}
	})
}

// RL-29: NIP-11 auth_required is true when reads need AUTH (public_read
// off), and false otherwise (TestNIP11Document).
func TestNIP11AuthRequired(t *testing.T) {
	p := buzz.DefaultPolicy()
	p.PublicRead = false
	s := startWithPolicy(t, p, testutil.NewSigner(t).PK)
	lim := nip11Limitation(t, s)
	if lim["auth_required"] != true {
		t.Errorf("auth_required = %v with public_read off", lim["auth_required"])
	}
	if lim["restricted_writes"] != false {
		t.Errorf("restricted_writes = %v with open writes", lim["restricted_writes"])
	}
}

// oracleTarget is what a probe may name: an event (id, and the address of
// an addressable event) or a channel.
type oracleTarget struct {
	name    string
	id      string
	address string
	channel string
}

// oracleCase is a row of the oracle table: a probe naming each of targets
// gets the answer want ("OK" for accepted).
type oracleCase struct {
	name    string
	targets []oracleTarget
	probe   func(o oracleTarget) *nostr.Event
	want    string
}

// RL-29, finding 9: the oracle table. For every write that names another
// event or a channel, the answer for an existing private target, and for
// an event of a deleted channel, is the answer for one that does not
// exist; the expected answers are the contract's. The prober owns an open
// channel of their own, so that their writes are refused only for what
// they name. An accepted kind 5 naming a private event deletes nothing.
func TestWriteRejectionsAreNoOracle(t *testing.T) {
	for _, openWrite := range []bool{true, false} {
		name := map[bool]string{true: "open writes", false: "closed writes"}[openWrite]
		t.Run(name, func(t *testing.T) { oracleTable(t, openWrite) })
	}
}

func oracleTable(t *testing.T, openWrite bool) {
	owner, prober := testutil.NewSigner(t), testutil.NewSigner(t)
	p := buzz.DefaultPolicy()
	p.OpenWrite = openWrite
	s := startWithPolicy(t, p, testutil.NewSigner(t).PK)
	c := s.client(t)
	mine, priv, gone := newChannelID(t), newChannelID(t), newChannelID(t)
	createChannel(t, c, prober, mine, false)
	createChannel(t, c, owner, priv, true)
	createChannel(t, c, owner, gone, false)
	secret := chat(t, owner, priv, "secret")
	secretArticle := owner.Event(t, 30023, now(), "secret article", hTag(priv), nostr.Tag{"d", "plans"})
	lost := chat(t, owner, gone, "in a channel deleted since")
	lostArticle := owner.Event(t, 30023, now(), "lost article", hTag(gone), nostr.Tag{"d", "old"})
	for _, ev := range []*nostr.Event{secret, secretArticle, lost, lostArticle} {
		mustPublish(t, c, ev)
	}
	mustPublish(t, c, owner.Event(t, buzz.KindDeleteChannel, now(), "", hTag(gone)))
	// Control: what the prober may read still answers RL-6's refusal.
	public := owner.Event(t, 1, now(), "public note")
	mustPublish(t, c, public)
	mustReject(t, c, prober.Event(t, buzz.KindDeletion, now(), "", nostr.Tag{"e", public.ID}), "invalid: must be event author")

	addr := func(ev *nostr.Event) string { return "30023:" + ev.PubKey + ":" + ev.Tags.GetD() }
	events := []oracleTarget{
		{"private event", secret.ID, addr(secretArticle), ""},
		{"event of a deleted channel", lost.ID, addr(lostArticle), ""},
		{"nothing", randomID(t), "30023:" + owner.PK + ":none", ""},
	}
	channels := []oracleTarget{
		{"private channel", "", "", priv},
		{"nothing", "", "", newChannelID(t)},
	}
	reply := func(id string) []nostr.Tag {
		return []nostr.Tag{{"e", id, "", "root"}, {"e", id, "", "reply"}}
	}
	const accepted = "OK"
	cases := []oracleCase{
		{"reply in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, 9, now(), "re", append(reply(o.id), hTag(mine))...)
		}, "invalid: reply parent not found"},
		{"reply in the private channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, 9, now(), "re", append(reply(o.id), hTag(priv))...)
		}, "restricted: not a channel member"},
		{"reaction without h", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindReaction, now(), "+", nostr.Tag{"e", o.id})
		}, accepted},
		{"reaction in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindReaction, now(), "+", hTag(mine), nostr.Tag{"e", o.id})
		}, accepted},
		{"edit in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindEdit, now(), "edited", hTag(mine), nostr.Tag{"e", o.id})
		}, "invalid: target event not found"},
		{"edit in the private channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindEdit, now(), "edited", hTag(priv), nostr.Tag{"e", o.id})
		}, "invalid: target event not found"},
		{"kind 5 without h", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindDeletion, now(), "", nostr.Tag{"e", o.id})
		}, accepted},
		{"kind 5 by address", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindDeletion, now(), "", nostr.Tag{"a", o.address})
		}, accepted},
		{"kind 5 in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindDeletion, now(), "", hTag(mine), nostr.Tag{"e", o.id})
		}, accepted},
		{"9005 in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindGroupDelete, now(), "", hTag(mine), nostr.Tag{"e", o.id})
		}, "invalid: target event not found"},
		{"9005 by address in the prober's channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindGroupDelete, now(), "", hTag(mine), nostr.Tag{"a", o.address})
		}, "invalid: target event not found"},
		{"9005 in the private channel", events, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindGroupDelete, now(), "", hTag(priv), nostr.Tag{"e", o.id})
		}, "invalid: target event not found"},
		{"9021 join", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindJoin, now(), "", hTag(o.channel))
		}, "restricted: no such channel, or it is private"},
		{"9022 leave", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindLeave, now(), "", hTag(o.channel))
		}, "invalid: channel not found"},
		{"9000 put-user of oneself", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindPutUser, now(), "", hTag(o.channel), nostr.Tag{"p", prober.PK})
		}, "invalid: channel not found"},
		{"9000 put-user of another as admin", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindPutUser, now(), "", hTag(o.channel), nostr.Tag{"p", owner.PK, "admin"})
		}, "invalid: channel not found"},
		{"9001 remove-user", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindRemoveUser, now(), "", hTag(o.channel), nostr.Tag{"p", owner.PK})
		}, "invalid: channel not found"},
		{"9002 edit metadata", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindEditMetadata, now(), "", hTag(o.channel), nostr.Tag{"name", "mine"})
		}, "invalid: channel not found"},
		{"9008 delete channel", channels, func(o oracleTarget) *nostr.Event {
			return prober.Event(t, buzz.KindDeleteChannel, now(), "", hTag(o.channel))
		}, "invalid: channel not found"},
	}
	if !openWrite {
		// With open writes, a post to a fresh id creates that channel: ids
		// are one namespace, and only closed writes answer alike.
		cases = append(cases, oracleCase{"post to the channel", channels, func(o oracleTarget) *nostr.Event {
			return chat(t, prober, o.channel, "hi")
		}, "restricted: not a channel member"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range tc.targets {
				got := accepted
				if err := publish(t, c, tc.probe(o)); err != nil {
					got = err.Error()
				}
				if got != tc.want {
					t.Errorf("naming %s: answered %q, want %q", o.name, got, tc.want)
				}
			}
		})
	}

	// The kinds 5 accepted above deleted nothing.
	reader := s.connectAs(t, &owner)
	if got := fetch(t, reader.rawClient, nostr.Filter{IDs: []string{secret.ID, secretArticle.ID}}); len(got) != 2 {
		t.Fatalf("the private events after the prober's deletions: %d of 2 served", len(got))
	}
}
