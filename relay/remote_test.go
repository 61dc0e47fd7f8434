package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-33, RL-8, RL-13, CW-21: two relays on one PostgreSQL database, as two
// `serve` processes of one community. What is published through one is
// delivered live by the other to its subscriptions, under the same
// delivery-time access check as its own events: a private channel's
// message and an h-less reaction to it reach its readers only; the thread
// summary a reply changed is pushed by the process holding the
// subscription, signed with the shared key; the group state re-signed on
// a removal reaches the channel's readers; and a member removed through
// one process stops receiving on the other from the next event on.
func TestRemoteEventsDeliveredWithAccess(t *testing.T) {
	f := newAccessFixture(t)
	a := f.s
	b := a.startTwin(t)
	owner := a.client(t)

	barrierTag := "barrier-" + newChannelID(t)
	barrierFilter := nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true}
	readers := map[string]*testutil.Signer{
		"anonymous": nil, "non-member": &f.outsider, "removed": &f.removed,
		"member": &f.member, "relay admin": &f.relayAdmin,
	}
	mayRead := map[string]bool{"member": true, "relay admin": true}
	on := map[string]*session{}
	for name, who := range readers {
		c := b.connectAs(t, who)
		on[name] = c
		// Not by the channel's h: an anonymous REQ naming a private
		// channel is answered CLOSED (RL-13).
		mustSubscribe(t, c.rawClient, "priv", nostr.Filter{Kinds: []int{9}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "reactions", nostr.Filter{Kinds: []int{buzz.KindReaction}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "sum", nostr.Filter{Kinds: []int{buzz.KindThreadSummary}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "members", nostr.Filter{Kinds: []int{buzz.KindGroupMembers}, Tags: nostr.TagMap{"d": {f.private.h}}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "barrier", barrierFilter)
	}
	barrier := func(content string) *nostr.Event {
		ev := f.ownerK.Event(t, 1, now(), content, nostr.Tag{"t", barrierTag})
		mustPublish(t, owner, ev)
		return ev
	}

	msg := chat(t, f.ownerK, f.private.h, "through A")
	mustPublish(t, owner, msg)
	react := reaction(t, f.chanAdmin, msg, "+")
	mustPublish(t, owner, react)
	reply := cwReply(t, f.member, f.private.h, now(), msg)
	mustPublish(t, owner, reply)
	first := barrier("barrier 1")
	for name, c := range on {
		got := drainUntil(c.rawClient, first)
		want := map[string][]string{"priv": nil, "reactions": nil}
		if mayRead[name] {
			want = map[string][]string{"priv": {msg.ID, reply.ID}, "reactions": {react.ID}}
		}
		for sub, ids := range want {
			if !slices.Equal(got.ids(sub), ids) {
				t.Errorf("%s on B, %s: received %v, want %v", name, sub, got.ids(sub), ids)
			}
		}
		sums := got["sum"]
		if !mayRead[name] {
			if len(sums) != 0 {
				t.Errorf("%s on B: received thread summaries %v", name, ids(sums))
			}
			continue
		}
		if len(sums) != 1 || sums[0].Tags.GetD() != msg.ID || sums[0].PubKey != a.relay.PubKey() {
			t.Fatalf("%s on B: summaries %v, want one of %s signed by the shared key", name, sums, msg.ID)
		}
		if ok, _ := sums[0].CheckSignature(); !ok {
			t.Errorf("%s on B: summary signature does not verify", name)
		}
		if s := cwParseSummary(t, sums[0].Content); s.Reply != 1 || s.Desc != 1 || !slices.Equal(s.Parts, []string{f.member.PK}) {
			t.Errorf("%s on B: summary %v, want one reply by the member", name, s)
		}
	}

	removeUser(t, owner, f.ownerK, f.private.h, f.member.PK)
	after := chat(t, f.ownerK, f.private.h, "after the removal, through A")
	mustPublish(t, owner, after)
	second := barrier("barrier 2")
	for name, c := range on {
		got := drainUntil(c.rawClient, second)
		if name == "relay admin" {
			if !slices.Equal(got.ids("priv"), []string{after.ID}) {
				t.Errorf("relay admin on B: received %v, want [%s]", got.ids("priv"), after.ID)
			}
			if ms := got["members"]; len(ms) != 1 || ms[0].PubKey != a.relay.PubKey() || ms[0].Tags.FindWithValue("p", f.member.PK) != nil {
				t.Errorf("relay admin on B: group members %v, want the one re-signed without the member", ms)
			}
			continue
		}
		if len(got["priv"]) != 0 || len(got["members"]) != 0 {
			t.Errorf("%s on B after the removal: received %v and group state %v, want nothing", name, got.ids("priv"), got.ids("members"))
		}
	}
}

// RL-33, RL-11, CW-19: two relays sharing a database and its key answer a
// window page alike, byte for byte: the same rows and aux events, and the
// overlays (thread summaries, bounds) each signs itself identical for the
// same state and second.
func TestTwinsAnswerAlike(t *testing.T) {
	clock := func(cfg *Config) { cfg.Now = func() time.Time { return time.Unix(1_900_000_000, 0) } }
	a, pub, owner := startWithClient(t, clock)
	b := a.startTwin(t, clock)
	member := testutil.NewSigner(t)
	ch := newChannelID(t)
	cwCreate(t, pub, owner, ch, false)
	root := cwMsg(t, owner, ch, now())
	mustPublish(t, pub, root)
	mustPublish(t, pub, cwReply(t, member, ch, now(), root))
	mustPublish(t, pub, cwReaction(t, member, now(), root))

	body, err := json.Marshal([]any{cwF(ch, "limit", 10, "include_summaries", true, "include_aux", true)})
	if err != nil {
		t.Fatal(err)
	}
	statusA, fromA := cwDo(t, a, nil, body)
	statusB, fromB := cwDo(t, b, nil, body)
	if statusA != http.StatusOK || statusB != http.StatusOK {
		t.Fatalf("status %d from A, %d from B", statusA, statusB)
	}
	if !bytes.Equal(fromA, fromB) {
		t.Fatalf("the twins answer differently:\nA: %s\nB: %s", fromA, fromB)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(fromA, &evs); err != nil || !slices.ContainsFunc(evs, func(ev *nostr.Event) bool { return ev.Kind == buzz.KindThreadSummary }) {
		t.Fatalf("the page holds no thread summary (%v): %s", err, fromA)
	}
}

// RL-33, RL-13: an ephemeral event (never stored) published through one
// relay reaches the subscribers of the other under the same access check:
// a typing indicator in a private channel reaches its members there, not
// an outsider.
func TestRemoteEphemeralEvents(t *testing.T) {
	f := newAccessFixture(t)
	a := f.s
	b := a.startTwin(t)
	owner := a.client(t)
	filter := nostr.Filter{Kinds: []int{20001}, LimitZero: true}
	member, outsider := b.connectAs(t, &f.member), b.connectAs(t, &f.outsider)
	for _, c := range []*session{member, outsider} {
		mustSubscribe(t, c.rawClient, "typing", filter)
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Kinds: []int{20002}, LimitZero: true})
	}
	typing := f.ownerK.Event(t, 20001, now(), "", hTag(f.private.h))
	mustPublish(t, owner, typing)
	barrier := f.ownerK.Event(t, 20002, now(), "")
	mustPublish(t, owner, barrier)
	if got := drainUntil(member.rawClient, barrier); !slices.Equal(got.ids("typing"), []string{typing.ID}) {
		t.Errorf("member on B: received %v, want [%s]", got.ids("typing"), typing.ID)
	}
	if got := drainUntil(outsider.rawClient, barrier); len(got["typing"]) != 0 {
		t.Errorf("outsider on B: received %v, want nothing", got.ids("typing"))
	}
}
