package relay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// This file tests the one read rule (RL-12, RL-13, CW-3) on every
// WebSocket surface, the write rules of channels (RL-10, RL-14), the
// community setting (RL-15) and the live group state (RL-11), all through
// real signed events over real connections.

// session is a connection and the NIP-42 challenge the relay sent on it,
// as its first message.
type session struct {
	*rawClient
	challenge string
}

// connect dials s and reads the AUTH challenge, which must come first
// (RL-13: a client may authenticate before it asks for a private channel).
func (s *testServer) connect(t *testing.T) *session {
	t.Helper()
	c := s.client(t)
	msg, err := c.read()
	if err != nil {
		t.Fatalf("reading the AUTH challenge: %v", err)
	}
	if label(msg) != "AUTH" || str(msg, 1) == "" {
		t.Fatalf("first message %s, want [\"AUTH\", challenge]", joinRaw(msg))
	}
	return &session{rawClient: c, challenge: str(msg, 1)}
}

// connectAs dials s and authenticates as who; nil stays anonymous.
func (s *testServer) connectAs(t *testing.T, who *testutil.Signer) *session {
	t.Helper()
	c := s.connect(t)
	if who != nil {
		s.authenticate(t, c, *who)
	}
	return c
}

// authenticate sends a NIP-42 AUTH event for c's challenge and waits for
// the relay to accept it (khatru handles messages concurrently: a REQ sent
// before the OK might be handled first).
func (s *testServer) authenticate(t *testing.T, c *session, who testutil.Signer) {
	t.Helper()
	ev := who.Event(t, nostr.KindClientAuthentication, time.Now().Unix(), "",
		nostr.Tag{"relay", s.wsURL}, nostr.Tag{"challenge", c.challenge})
	c.send("AUTH", ev)
	msg := c.await("OK of AUTH", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
	var ok bool
	if len(msg) < 3 || json.Unmarshal(msg[2], &ok) != nil || !ok {
		t.Fatalf("AUTH refused: %s", joinRaw(msg))
	}
}

// hTag names channel h.
func hTag(h string) nostr.Tag { return nostr.Tag{"h", h} }

// createChannel publishes who's kind 9007 for h.
func createChannel(t *testing.T, c *rawClient, who testutil.Signer, h string, private bool) *nostr.Event {
	t.Helper()
	tags := []nostr.Tag{hTag(h), {"name", "test " + h[:8]}}
	if private {
		tags = append(tags, nostr.Tag{"private"})
	}
	ev := who.Event(t, buzz.KindCreateChannel, now(), "", tags...)
	mustPublish(t, c, ev)
	return ev
}

// putUser publishes by's kind 9000 giving pk role ("" for a plain member).
func putUser(t *testing.T, c *rawClient, by testutil.Signer, h, pk, role string) *nostr.Event {
	t.Helper()
	p := nostr.Tag{"p", pk}
	if role != "" {
		p = append(p, role)
	}
	ev := by.Event(t, buzz.KindPutUser, now(), "", hTag(h), p)
	mustPublish(t, c, ev)
	return ev
}

// removeUser publishes by's kind 9001 removing pk.
func removeUser(t *testing.T, c *rawClient, by testutil.Signer, h, pk string) *nostr.Event {
	t.Helper()
	ev := by.Event(t, buzz.KindRemoveUser, now(), "", hTag(h), nostr.Tag{"p", pk})
	mustPublish(t, c, ev)
	return ev
}

// chat returns who's chat message (kind 9) in channel h, unpublished.
func chat(t *testing.T, who testutil.Signer, h, content string) *nostr.Event {
	t.Helper()
	return who.Event(t, 9, now(), content, hTag(h))
}

// reaction returns who's reaction to target without an h tag (RL-8: it
// belongs to its target's channel), unpublished.
func reaction(t *testing.T, who testutil.Signer, target *nostr.Event, content string) *nostr.Event {
	t.Helper()
	return who.Event(t, buzz.KindReaction, now(), content,
		nostr.Tag{"e", target.ID}, nostr.Tag{"p", target.PubKey}, nostr.Tag{"k", fmt.Sprint(target.Kind)})
}

// filterJSON is f as a REQ filter.
func filterJSON(t *testing.T, f nostr.Filter) string {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// subscribe opens subscription id for f and waits for its EOSE; it
// returns the stored events, or the CLOSED reason.
func subscribe(t *testing.T, c *rawClient, id string, f nostr.Filter) ([]*nostr.Event, string) {
	t.Helper()
	return c.req(id, filterJSON(t, f))
}

// mustSubscribe is subscribe that fails the test on CLOSED.
func mustSubscribe(t *testing.T, c *rawClient, id string, f nostr.Filter) []*nostr.Event {
	t.Helper()
	evs, closed := subscribe(t, c, id, f)
	if closed != "" {
		t.Fatalf("REQ %s %s: CLOSED %q", id, filterJSON(t, f), closed)
	}
	return evs
}

// received are the live events a connection got, by subscription id.
type received map[string][]*nostr.Event

func (r received) ids(sub string) []string { return ids(r[sub]) }

// has reports whether sub received the event id.
func (r received) has(sub, id string) bool {
	return slices.ContainsFunc(r[sub], func(ev *nostr.Event) bool { return ev.ID == id })
}

// drainUntil reads c's messages until the event barrier arrives on any
// subscription, and returns the events that arrived before it. Live events
// reach one connection in the order they were delivered, so an event
// delivered before the barrier that was not received was not delivered.
func drainUntil(c *rawClient, barrier *nostr.Event) received {
	c.t.Helper()
	got := received{}
	c.await("barrier "+barrier.ID[:8], func(m []json.RawMessage) bool {
		if label(m) != "EVENT" || len(m) < 3 {
			return false
		}
		var ev nostr.Event
		if err := json.Unmarshal(m[2], &ev); err != nil {
			c.t.Fatalf("bad EVENT %s", joinRaw(m))
		}
		if ev.ID == barrier.ID {
			return true
		}
		got[str(m, 1)] = append(got[str(m, 1)], &ev)
		return false
	})
	return got
}

// sortedIDs are the ids of evs, sorted.
func sortedIDs(evs []*nostr.Event) []string {
	out := ids(evs)
	slices.Sort(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// accessFixture is a relay with an open and a private channel, each with
// an owner, a member, a channel admin, and a member who was removed; a
// relay admin; and an id no channel has.
type accessFixture struct {
	s     *testServer
	owner *rawClient

	ownerK, member, chanAdmin, removed, outsider, relayAdmin testutil.Signer

	open, private, none *channelFixture
}

// channelFixture is one channel of the fixture and what is stored in it.
type channelFixture struct {
	name string
	h    string
	// exists is false for the channel no event ever named.
	exists bool
	// withH are the ids of the stored events whose h tag names it.
	withH []string
	// msg is a chat message of the channel and react an h-less reaction
	// to it (zero for the nonexistent channel).
	msg, react *nostr.Event
	// state is how many relay-signed group state events (39000, 39001,
	// 39002) describe the channel.
	state int
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	f := &accessFixture{
		ownerK: testutil.NewSigner(t), member: testutil.NewSigner(t), chanAdmin: testutil.NewSigner(t),
		removed: testutil.NewSigner(t), outsider: testutil.NewSigner(t), relayAdmin: testutil.NewSigner(t),
	}
	f.s = startServerWith(t, func(o *testStoreOptions) { o.Admins = []string{f.relayAdmin.PK} })
	f.owner = f.s.client(t)
	f.open = f.setupChannel(t, "open", false)
	f.private = f.setupChannel(t, "private", true)
	f.none = &channelFixture{name: "nonexistent", h: newChannelID(t)}
	return f
}

func (f *accessFixture) setupChannel(t *testing.T, name string, private bool) *channelFixture {
	t.Helper()
	ch := &channelFixture{name: name, h: newChannelID(t), exists: true, state: 3}
	add := func(ev *nostr.Event) { ch.withH = append(ch.withH, ev.ID) }
	add(createChannel(t, f.owner, f.ownerK, ch.h, private))
	add(putUser(t, f.owner, f.ownerK, ch.h, f.member.PK, ""))
	add(putUser(t, f.owner, f.ownerK, ch.h, f.chanAdmin.PK, "admin"))
	add(putUser(t, f.owner, f.ownerK, ch.h, f.removed.PK, ""))
	add(removeUser(t, f.owner, f.ownerK, ch.h, f.removed.PK))
	ch.msg = chat(t, f.ownerK, ch.h, "hello "+name)
	mustPublish(t, f.owner, ch.msg)
	add(ch.msg)
	ch.react = reaction(t, f.member, ch.msg, "+")
	mustPublish(t, f.owner, ch.react)
	return ch
}

// requester is one row of the matrix: who reads, and whether they may read
// the private channel.
type requester struct {
	name        string
	who         *testutil.Signer // nil: anonymous
	readPrivate bool
}

func (f *accessFixture) requesters() []requester {
	return []requester{
		{"anonymous", nil, false},
		{"non-member", &f.outsider, false},
		{"member", &f.member, true},
		{"removed member", &f.removed, false},
		{"channel admin", &f.chanAdmin, true},
		{"relay admin", &f.relayAdmin, true},
	}
}

// canRead is the expected answer of the read rule for rq on ch.
func (rq requester) canRead(ch *channelFixture) bool {
	switch {
	case !ch.exists:
		return false
	case ch.name == "private":
		return rq.readPrivate
	}
	return true // open, and public reads are on by default
}

// RL-12, RL-13, CW-3: requester × surface × channel. Every surface answers
// for a channel by the one read rule; a private channel the requester may
// not read and a channel that does not exist answer alike: to an
// anonymous REQ naming it, CLOSED "auth-required: "; to anyone else, EOSE
// with nothing.
func TestAccessMatrix(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	channels := []*channelFixture{f.open, f.private, f.none}
	for _, rq := range f.requesters() {
		t.Run(rq.name, func(t *testing.T) {
			c := s.connectAs(t, rq.who).rawClient
			owner := s.client(t)
			// answers records, per channel, what a REQ by #h answered, to
			// compare private with nonexistent (CW-3).
			answers := map[string]string{}

			for _, ch := range channels {
				may := rq.canRead(ch)
				mustClose := rq.who == nil && !may // RL-13: anonymous must authenticate first

				// REQ of stored events by #h.
				evs, closed := subscribe(t, c, "h-"+ch.name, nostr.Filter{Tags: nostr.TagMap{"h": {ch.h}}})
				switch {
				case mustClose:
					if !strings.HasPrefix(closed, "auth-required: ") {
						t.Errorf("%s: REQ #h: got CLOSED %q and %d events, want CLOSED \"auth-required: ...\"", ch.name, closed, len(evs))
					}
				case closed != "":
					t.Errorf("%s: REQ #h: CLOSED %q, want EOSE", ch.name, closed)
				case may:
					if got, want := sortedIDs(evs), sorted(ch.withH); !slices.Equal(got, want) {
						t.Errorf("%s: REQ #h: got %d events %v, want the %d stored %v", ch.name, len(got), got, len(want), want)
					}
				case len(evs) != 0:
					t.Errorf("%s: REQ #h: got %d events, want none", ch.name, len(evs))
				}
				answers[ch.name] = fmt.Sprintf("closed=%t events=%d", closed != "", len(evs))
				if closed == "" {
					c.send("CLOSE", "h-"+ch.name)
				}

				// REQ by ids only: the message and the h-less reaction to it
				// (RL-8: the reaction belongs to the message's channel).
				var byID []string
				if ch.exists {
					byID = []string{ch.msg.ID, ch.react.ID}
				} else {
					byID = []string{strings.Repeat("ab", 32)}
				}
				got := fetch(t, c, nostr.Filter{IDs: byID})
				if want := map[bool]int{true: len(byID), false: 0}[may]; len(got) != want {
					t.Errorf("%s: REQ by ids: got %d events, want %d", ch.name, len(got), want)
				}

				// REQ by #e only: the reaction, which has no h tag.
				target := strings.Repeat("cd", 32)
				if ch.exists {
					target = ch.msg.ID
				}
				got = fetch(t, c, nostr.Filter{Tags: nostr.TagMap{"e": {target}}})
				switch {
				case may:
					if !slices.Equal(ids(got), []string{ch.react.ID}) {
						t.Errorf("%s: REQ #e: got %v, want the reaction %s", ch.name, ids(got), ch.react.ID)
					}
				case len(got) != 0:
					t.Errorf("%s: REQ #e: got %d events (%v), want none", ch.name, len(got), ids(got))
				}

				// COUNT by #h: never refused, counts what the requester may
				// read.
				n := countFilter(t, c, nostr.Filter{Tags: nostr.TagMap{"h": {ch.h}}})
				if want := map[bool]int64{true: int64(len(ch.withH)), false: 0}[may]; n != want {
					t.Errorf("%s: COUNT #h: got %d, want %d", ch.name, n, want)
				}
				// COUNT by ids, reaching the reaction too.
				n = countFilter(t, c, nostr.Filter{IDs: byID})
				if want := map[bool]int64{true: int64(len(byID)), false: 0}[may]; n != want {
					t.Errorf("%s: COUNT by ids: got %d, want %d", ch.name, n, want)
				}

				// Group state 39000/39001/39002 by #d: no h tag, so never a
				// CLOSED; scoped as the channel it describes.
				got = fetch(t, c, nostr.Filter{
					Kinds: []int{buzz.KindGroupMetadata, buzz.KindGroupAdmins, buzz.KindGroupMembers},
					Tags:  nostr.TagMap{"d": {ch.h}},
				})
				if want := map[bool]int{true: ch.state, false: 0}[may]; len(got) != want {
					t.Errorf("%s: group state: got %d events, want %d", ch.name, len(got), want)
				}
				for _, ev := range got {
					if ev.PubKey != s.relay.PubKey() {
						t.Errorf("%s: group state kind %d signed by %s, want the relay %s", ch.name, ev.Kind, ev.PubKey, s.relay.PubKey())
					}
				}
			}
			if !rq.readPrivate && answers["private"] != answers["nonexistent"] {
				t.Errorf("CW-3: private answers %s, nonexistent %s: want them alike", answers["private"], answers["nonexistent"])
			}

			// Live: limit:0 and a normal limit, for each channel; then the
			// owner publishes to the channels that exist (publishing to the
			// nonexistent one would create it), then a barrier.
			barrierTag := "barrier-" + newChannelID(t)
			mustSubscribe(t, c, "barrier", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
			opened := map[string]bool{}
			for _, ch := range channels {
				for _, limit := range []int{0, 10} {
					sub := fmt.Sprintf("live%d-%s", limit, ch.name)
					flt := nostr.Filter{Tags: nostr.TagMap{"h": {ch.h}}, Limit: limit, LimitZero: limit == 0}
					_, closed := subscribe(t, c, sub, flt)
					switch {
					case rq.who == nil && !rq.canRead(ch):
						if !strings.HasPrefix(closed, "auth-required: ") {
							t.Errorf("%s: live REQ limit %d: got %q, want CLOSED \"auth-required: ...\"", ch.name, limit, closed)
						}
					case closed != "":
						t.Errorf("%s: live REQ limit %d: CLOSED %q, want EOSE", ch.name, limit, closed)
					default:
						opened[sub] = true
					}
				}
			}
			live := map[string]*nostr.Event{}
			for _, ch := range channels[:2] {
				ev := chat(t, f.ownerK, ch.h, "live "+ch.name+" for "+rq.name)
				mustPublish(t, owner, ev)
				ch.withH = append(ch.withH, ev.ID)
				live[ch.name] = ev
			}
			barrier := f.ownerK.Event(t, 1, now(), "barrier", nostr.Tag{"t", barrierTag})
			mustPublish(t, owner, barrier)
			got := drainUntil(c, barrier)
			for _, ch := range channels {
				for _, limit := range []int{0, 10} {
					sub := fmt.Sprintf("live%d-%s", limit, ch.name)
					var want []string
					if ev := live[ch.name]; ev != nil && rq.canRead(ch) {
						want = []string{ev.ID}
					}
					if !slices.Equal(got.ids(sub), want) {
						t.Errorf("%s: live limit %d: received %v, want %v", ch.name, limit, got.ids(sub), want)
					}
				}
			}
			for sub := range got {
				if !opened[sub] {
					t.Errorf("events on %q, which is not open: %v", sub, got.ids(sub))
				}
			}
		})
	}
}

// RL-13: an anonymous REQ for a private (or nonexistent) channel closes
// with "auth-required: " after the challenge was sent; the client
// authenticates on the same connection and asks again, with a new
// subscription id or the same one, and is served.
func TestAuthRequiredThenRetry(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	for _, retry := range []string{"new id", "same id"} {
		t.Run(retry, func(t *testing.T) {
			c := s.connect(t) // the challenge came first
			flt := nostr.Filter{Tags: nostr.TagMap{"h": {f.private.h}}}
			evs, closed := subscribe(t, c.rawClient, "priv", flt)
			if !strings.HasPrefix(closed, "auth-required: ") || len(evs) != 0 {
				t.Fatalf("anonymous REQ: %d events, CLOSED %q; want CLOSED \"auth-required: ...\"", len(evs), closed)
			}
			s.authenticate(t, c, f.member)
			id := "priv"
			if retry == "new id" {
				id = "priv-2"
			}
			evs = mustSubscribe(t, c.rawClient, id, flt)
			if !slices.Contains(ids(evs), f.private.msg.ID) {
				t.Fatalf("after AUTH: got %v, want the channel's message %s", ids(evs), f.private.msg.ID)
			}
			// And it is live: the next message arrives, once.
			owner := s.client(t)
			ev := chat(t, f.ownerK, f.private.h, "after auth "+retry)
			barrier := chat(t, f.ownerK, f.open.h, "barrier "+retry)
			mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{IDs: []string{barrier.ID}, LimitZero: true})
			mustPublish(t, owner, ev)
			mustPublish(t, owner, barrier)
			got := drainUntil(c.rawClient, barrier)
			if !slices.Equal(got.ids(id), []string{ev.ID}) {
				t.Fatalf("live after AUTH on %q: received %v, want [%s]", id, got.ids(id), ev.ID)
			}
		})
	}
	// The nonexistent channel asks to authenticate too, and after AUTH
	// answers EOSE with nothing (CW-3).
	c := s.connect(t)
	flt := nostr.Filter{Tags: nostr.TagMap{"h": {f.none.h}}}
	if _, closed := subscribe(t, c.rawClient, "none", flt); !strings.HasPrefix(closed, "auth-required: ") {
		t.Fatalf("anonymous REQ for a nonexistent channel: CLOSED %q, want \"auth-required: ...\"", closed)
	}
	s.authenticate(t, c, f.member)
	if evs := mustSubscribe(t, c.rawClient, "none", flt); len(evs) != 0 {
		t.Fatalf("nonexistent channel after AUTH: %d events", len(evs))
	}
}

// RL-13: an anonymous REQ whose second filter names a private channel is
// closed as a whole: nothing of its first filter arrives afterwards on that
// subscription id, and after AUTH the same id is served once per event.
func TestAuthRequiredClosesWholeREQ(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	owner := s.client(t)
	c := s.connect(t)
	open := filterJSON(t, nostr.Filter{Tags: nostr.TagMap{"h": {f.open.h}}, LimitZero: true})
	priv := filterJSON(t, nostr.Filter{Tags: nostr.TagMap{"h": {f.private.h}}, LimitZero: true})
	if _, closed := c.req("both", open, priv); !strings.HasPrefix(closed, "auth-required: ") {
		t.Fatalf("anonymous REQ: CLOSED %q, want \"auth-required: ...\"", closed)
	}
	barrierSub := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"closes-whole"}}, LimitZero: true}
	mustSubscribe(t, c.rawClient, "barrier", barrierSub)
	ev := chat(t, f.ownerK, f.open.h, "open, after CLOSED")
	mustPublish(t, owner, ev)
	barrier := f.ownerK.Event(t, 1, now(), "barrier 1", nostr.Tag{"t", "closes-whole"})
	mustPublish(t, owner, barrier)
	if got := drainUntil(c.rawClient, barrier); len(got["both"]) != 0 {
		t.Errorf("a CLOSED subscription still receives: %v", got.ids("both"))
	}

	s.authenticate(t, c, f.member)
	if _, closed := c.req("both", open, priv); closed != "" {
		t.Fatalf("after AUTH: CLOSED %q", closed)
	}
	ev = chat(t, f.ownerK, f.open.h, "open, after AUTH")
	mustPublish(t, owner, ev)
	barrier = f.ownerK.Event(t, 1, now(), "barrier 2", nostr.Tag{"t", "closes-whole"})
	mustPublish(t, owner, barrier)
	if got := drainUntil(c.rawClient, barrier); !slices.Equal(got.ids("both"), []string{ev.ID}) {
		t.Errorf("after AUTH, same id: received %v, want [%s] once", got.ids("both"), ev.ID)
	}
}

// RL-13: live delivery is checked at delivery time: a member removed by
// 9001 stops receiving the channel's messages from the next one on.
func TestRemovalStopsLiveDelivery(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	owner := s.client(t)
	who := testutil.NewSigner(t)
	putUser(t, owner, f.ownerK, f.private.h, who.PK, "")

	c := s.connectAs(t, &who)
	mustSubscribe(t, c.rawClient, "priv", nostr.Filter{Tags: nostr.TagMap{"h": {f.private.h}}, LimitZero: true})
	mustSubscribe(t, c.rawClient, "open", nostr.Filter{Tags: nostr.TagMap{"h": {f.open.h}}, LimitZero: true})

	before := chat(t, f.ownerK, f.private.h, "before removal")
	mustPublish(t, owner, before)
	barrier := chat(t, f.ownerK, f.open.h, "barrier 1")
	mustPublish(t, owner, barrier)
	if got := drainUntil(c.rawClient, barrier); !slices.Equal(got.ids("priv"), []string{before.ID}) {
		t.Fatalf("before removal: received %v, want [%s]", got.ids("priv"), before.ID)
	}

	removal := removeUser(t, owner, f.ownerK, f.private.h, who.PK)
	after := chat(t, f.ownerK, f.private.h, "after removal")
	mustPublish(t, owner, after)
	barrier = chat(t, f.ownerK, f.open.h, "barrier 2")
	mustPublish(t, owner, barrier)
	got := drainUntil(c.rawClient, barrier)
	if got.has("priv", after.ID) {
		t.Fatal("a removed member received the channel's next message")
	}
	if len(got["priv"]) != 0 {
		// The removal itself is delivered after it took effect: the
		// removed member may no longer read it either.
		t.Errorf("after removal: received %v (the 9001 is %s), want nothing", got.ids("priv"), removal.ID)
	}
	// And the subscription stays closed to them after it: a stored query
	// too answers nothing.
	if evs := fetch(t, c.rawClient, nostr.Filter{Tags: nostr.TagMap{"h": {f.private.h}}}); len(evs) != 0 {
		t.Fatalf("removed member's REQ: %d events", len(evs))
	}
}

// RL-8, RL-13: a reaction without an h tag to a private message is
// delivered live only to those who may read the message's channel.
func TestLiveHlessReactionScoped(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	owner := s.client(t)
	subscribers := map[string]*session{
		"anonymous":   s.connectAs(t, nil),
		"non-member":  s.connectAs(t, &f.outsider),
		"removed":     s.connectAs(t, &f.removed),
		"member":      s.connectAs(t, &f.member),
		"relay admin": s.connectAs(t, &f.relayAdmin),
	}
	mayRead := map[string]bool{"member": true, "relay admin": true}
	barrierTag := "barrier-" + newChannelID(t)
	for _, c := range subscribers {
		mustSubscribe(t, c.rawClient, "reactions", nostr.Filter{Kinds: []int{buzz.KindReaction}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
	}
	privReact := reaction(t, f.chanAdmin, f.private.msg, "🔥")
	mustPublish(t, owner, privReact)
	openReact := reaction(t, f.outsider, f.open.msg, "🔥")
	mustPublish(t, owner, openReact)
	barrier := f.ownerK.Event(t, 1, now(), "barrier", nostr.Tag{"t", barrierTag})
	mustPublish(t, owner, barrier)
	for name, c := range subscribers {
		want := []string{openReact.ID}
		if mayRead[name] {
			want = []string{privReact.ID, openReact.ID}
		}
		if got := drainUntil(c.rawClient, barrier); !slices.Equal(got.ids("reactions"), want) {
			t.Errorf("%s: received %v, want %v (private reaction %s, open reaction %s)",
				name, got.ids("reactions"), want, privReact.ID, openReact.ID)
		}
	}
}

// RL-15, RL-22: thread_replies_in_channel is false by default, set at
// runtime by a relay admin's 9033, shown in NIP-11; a 9033 is carried out,
// never stored nor delivered; others may not send one.
func TestCommunitySettingByRelayAdmin(t *testing.T) {
	admin, other := testutil.NewSigner(t), testutil.NewSigner(t)
	s := startServerWith(t, func(o *testStoreOptions) { o.Admins = []string{admin.PK} })
	setting := func() any {
		doc, _ := nip11(t, s)
		v, ok := doc["thread_replies_in_channel"]
		if !ok {
			t.Fatal("NIP-11 has no thread_replies_in_channel")
		}
		return v
	}
	if v := setting(); v != false {
		t.Fatalf("default thread_replies_in_channel = %v, want false", v)
	}

	adminConn := s.connectAs(t, &admin)
	anon := s.connectAs(t, nil)
	barrierTag := "barrier-" + newChannelID(t)
	for _, c := range []*session{adminConn, anon} {
		mustSubscribe(t, c.rawClient, "settings", nostr.Filter{Kinds: []int{buzz.KindCommunityAdmin}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "all", nostr.Filter{LimitZero: true})
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
	}
	pub := s.client(t)
	set := func(who testutil.Signer, v string) *nostr.Event {
		return who.Event(t, buzz.KindCommunityAdmin, now(), "", nostr.Tag{"thread_replies_in_channel", v})
	}

	mustReject(t, pub, set(other, "on"), "restricted: must be a relay admin")
	mustReject(t, pub, set(admin, "maybe"), "invalid: thread_replies_in_channel must be a boolean")
	if v := setting(); v != false {
		t.Fatalf("after refused 9033s: thread_replies_in_channel = %v, want false", v)
	}
	on := set(admin, "on")
	mustPublish(t, pub, on)
	if v := setting(); v != true {
		t.Fatalf("after 9033 on: thread_replies_in_channel = %v, want true", v)
	}
	off := admin.Event(t, buzz.KindCommunityAdmin, now()+1, "", nostr.Tag{"thread_replies_in_channel", "OFF"})
	mustPublish(t, pub, off)
	if v := setting(); v != false {
		t.Fatalf("after 9033 OFF: thread_replies_in_channel = %v, want false", v)
	}
	on2 := admin.Event(t, buzz.KindCommunityAdmin, now()+2, "", nostr.Tag{"thread_replies_in_channel", "Yes"})
	mustPublish(t, pub, on2)
	if v := setting(); v != true {
		t.Fatalf("after 9033 Yes: thread_replies_in_channel = %v, want true", v)
	}

	barrier := admin.Event(t, 1, now(), "barrier", nostr.Tag{"t", barrierTag})
	mustPublish(t, pub, barrier)
	for name, c := range map[string]*session{"relay admin": adminConn, "anonymous": anon} {
		got := drainUntil(c.rawClient, barrier)
		for sub, evs := range got {
			for _, ev := range evs {
				if ev.Kind == buzz.KindCommunityAdmin {
					t.Errorf("%s: a 9033 was delivered on %q", name, sub)
				}
			}
		}
	}
	for _, c := range []*session{adminConn, anon} {
		if evs := fetch(t, c.rawClient, nostr.Filter{Kinds: []int{buzz.KindCommunityAdmin}}); len(evs) != 0 {
			t.Errorf("REQ kinds 9033: %d events, want none", len(evs))
		}
		if evs := fetch(t, c.rawClient, nostr.Filter{IDs: []string{on.ID, off.ID, on2.ID}}); len(evs) != 0 {
			t.Errorf("REQ of the 9033 ids: %d events, want none", len(evs))
		}
	}
}

// RL-10, RL-11, RL-14, RL-29: write refusals over WebSocket, with the
// exact messages of buzz/errors.go. (Those that name a private event are
// in TestWriteRejectionsAreNoOracle.)
func TestChannelWriteRejections(t *testing.T) {
	f := newAccessFixture(t)
	c := f.s.client(t)
	stranger := testutil.NewSigner(t)
	priv, open := f.private.h, f.open.h

	cases := []struct {
		name string
		ev   *nostr.Event
		want string
	}{
		{"join a private channel", stranger.Event(t, buzz.KindJoin, now(), "", hTag(priv)), "restricted: no such channel, or it is private"},
		{"non-member posts to a private channel", chat(t, stranger, priv, "hi"), "restricted: not a channel member"},
		{"removed member posts to a private channel", chat(t, f.removed, priv, "hi"), "restricted: not a channel member"},
		{"non-member adds a user to a private channel", stranger.Event(t, buzz.KindPutUser, now(), "", hTag(priv), nostr.Tag{"p", stranger.PK}), "invalid: channel not found"},
		{"member edits metadata", f.member.Event(t, buzz.KindEditMetadata, now(), "", hTag(priv), nostr.Tag{"name", "mine"}), "restricted: must be channel owner or admin"},
		{"member removes another member", f.member.Event(t, buzz.KindRemoveUser, now(), "", hTag(priv), nostr.Tag{"p", f.chanAdmin.PK}), "restricted: must be channel owner or admin"},
		{"channel admin grants owner", f.chanAdmin.Event(t, buzz.KindPutUser, now(), "", hTag(priv), nostr.Tag{"p", stranger.PK, "owner"}), "restricted: cannot grant or change a role above your own"},
		{"channel admin removes the owner", f.chanAdmin.Event(t, buzz.KindRemoveUser, now(), "", hTag(priv), nostr.Tag{"p", f.ownerK.PK}), "restricted: cannot grant or change a role above your own"},
		{"channel admin deletes the channel", f.chanAdmin.Event(t, buzz.KindDeleteChannel, now(), "", hTag(priv)), "restricted: must be channel owner"},
		{"member of an open channel grants admin", f.member.Event(t, buzz.KindPutUser, now(), "", hTag(open), nostr.Tag{"p", stranger.PK, "admin"}), "restricted: cannot grant or change a role above your own"},
		{"create an existing channel", stranger.Event(t, buzz.KindCreateChannel, now(), "", hTag(priv)), "invalid: channel already exists"},
		{"create with an uppercase id", stranger.Event(t, buzz.KindCreateChannel, now(), "", hTag(strings.ToUpper(newChannelID(t)))), "invalid: channel id must be a lowercase UUID"},
		{"remove from a nonexistent channel", f.ownerK.Event(t, buzz.KindRemoveUser, now(), "", hTag(f.none.h), nostr.Tag{"p", f.member.PK}), "invalid: channel not found"},
		{"unknown role", f.ownerK.Event(t, buzz.KindPutUser, now(), "", hTag(priv), nostr.Tag{"p", stranger.PK, "king"}), "invalid: role must be member, admin or owner"},
		{"lifecycle event without h", f.ownerK.Event(t, buzz.KindPutUser, now(), "", nostr.Tag{"p", stranger.PK}), "invalid: missing h tag"},
		{"client-signed group members", stranger.Event(t, buzz.KindGroupMembers, now(), "", nostr.Tag{"d", priv}), "restricted: relay-only kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { mustReject(t, c, tc.ev, tc.want) })
	}
	// Nothing of it changed the channel: the stranger is no member.
	if got := fetch(t, c, nostr.Filter{Kinds: []int{buzz.KindGroupMembers}, Tags: nostr.TagMap{"d": {open}}}); len(got) != 1 {
		t.Fatalf("open channel's 39002: %d events", len(got))
	} else if got[0].Tags.FindWithValue("p", stranger.PK) != nil {
		t.Fatal("a refused put-user changed the open channel's members")
	}
	// Members of an open channel may add members (RL-10), and anyone may
	// post to it (open writes on by default, RL-14).
	mustPublish(t, c, f.member.Event(t, buzz.KindPutUser, now(), "", hTag(open), nostr.Tag{"p", stranger.PK}))
	mustPublish(t, c, chat(t, testutil.NewSigner(t), open, "anyone may post here"))
}

// RL-11, RL-13: the relay-signed group state is pushed live to a member
// subscribed to it when membership changes, and, for a private channel,
// to nobody else.
func TestGroupStateLive(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	owner := s.client(t)
	member := s.connectAs(t, &f.member)
	outsider := s.connectAs(t, &f.outsider)
	anon := s.connectAs(t, nil)
	barrierTag := "barrier-" + newChannelID(t)
	for _, c := range []*session{member, outsider, anon} {
		mustSubscribe(t, c.rawClient, "priv", nostr.Filter{Kinds: []int{buzz.KindGroupMembers}, Tags: nostr.TagMap{"d": {f.private.h}}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "open", nostr.Filter{Kinds: []int{buzz.KindGroupMembers}, Tags: nostr.TagMap{"d": {f.open.h}}, LimitZero: true})
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
	}
	newcomer := testutil.NewSigner(t)

	checkState := func(what string, ev *nostr.Event, h string, present bool) {
		t.Helper()
		if ev.PubKey != s.relay.PubKey() {
			t.Errorf("%s: 39002 signed by %s, want the relay %s", what, ev.PubKey, s.relay.PubKey())
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil || !ev.CheckID() {
			t.Errorf("%s: 39002 does not verify (%v)", what, err)
		}
		if d := ev.Tags.GetD(); d != h {
			t.Errorf("%s: 39002 d = %q, want %q", what, d, h)
		}
		if got := ev.Tags.FindWithValue("p", newcomer.PK) != nil; got != present {
			t.Errorf("%s: newcomer listed = %t, want %t: %v", what, got, present, ev.Tags)
		}
	}

	round := 0
	step := func(what string, change func(), h string, present bool) {
		t.Helper()
		change()
		round++
		barrier := f.ownerK.Event(t, 1, now(), fmt.Sprintf("barrier %d", round), nostr.Tag{"t", barrierTag})
		mustPublish(t, owner, barrier)
		sub := map[string]string{f.private.h: "priv", f.open.h: "open"}[h]
		for name, c := range map[string]*session{"member": member, "non-member": outsider, "anonymous": anon} {
			got := drainUntil(c.rawClient, barrier)
			mayRead := name == "member" || h == f.open.h
			switch {
			case mayRead && len(got[sub]) != 1:
				t.Errorf("%s: %s: received %d 39002 on %q, want 1", what, name, len(got[sub]), sub)
			case mayRead:
				checkState(what+": "+name, got[sub][0], h, present)
			case len(got[sub]) != 0:
				t.Errorf("%s: %s: received %d 39002 of a private channel, want none", what, name, len(got[sub]))
			}
			for other, evs := range got {
				if other != sub && len(evs) != 0 {
					t.Errorf("%s: %s: received %d events on %q", what, name, len(evs), other)
				}
			}
		}
	}
	step("put-user, private", func() { putUser(t, owner, f.ownerK, f.private.h, newcomer.PK, "") }, f.private.h, true)
	step("remove-user, private", func() { removeUser(t, owner, f.ownerK, f.private.h, newcomer.PK) }, f.private.h, false)
	step("put-user, open", func() { putUser(t, owner, f.ownerK, f.open.h, newcomer.PK, "") }, f.open.h, true)
	step("leave, open", func() {
		mustPublish(t, owner, newcomer.Event(t, buzz.KindLeave, now(), "", hTag(f.open.h)))
	}, f.open.h, false)
}
