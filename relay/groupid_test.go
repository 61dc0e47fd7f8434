package relay

import (
	"slices"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/nbd-wtf/go-nostr"
)

// CW-2 (changed 2026-12-03): a NIP-29 group id names a channel end to
// end: a 9007 creates it, its group state has d = the id verbatim, and it
// is posted to, read by REQ, by the window and by the thread path, with
// the access rules of any channel.
func TestCWGroupIDChannel(t *testing.T) {
	s, c, owner := startWithClient(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	const open, priv = "abc123", "team_ops-1"
	mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), nostr.Tag{"h", open}, nostr.Tag{"name", "open"}))
	mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), nostr.Tag{"h", priv}, nostr.Tag{"private"}))
	cwAddMember(t, c, owner, priv, member.PK)

	state := fetch(t, c, nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}, Tags: nostr.TagMap{"d": {open}}})
	if len(state) != 1 || state[0].Tags.GetD() != open {
		t.Fatalf("group state: %d events %v, want one with d %q", len(state), state, open)
	}

	m := cwMsg(t, outsider, open, now()-10)
	r := cwReply(t, owner, open, now()-5, m)
	pm := cwMsg(t, member, priv, now()-10)
	pr := cwReply(t, owner, priv, now()-5, pm)
	cwPublish(t, c, m, r, pm, pr)

	cwSameSet(t, "REQ #h "+open, fetch(t, c, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {open}}}), []*nostr.Event{m, r})
	if got, closed := c.req("priv", `{"#h":["`+priv+`"]}`); len(got) != 0 || !strings.HasPrefix(closed, "auth-required:") {
		t.Errorf("anonymous REQ of the private channel: %d events, CLOSED %q", len(got), closed)
	}

	for _, who := range []*testutil.Signer{nil, &outsider} {
		p := cwWindow(t, s, who, open, cwF(open))
		cwSameIDs(t, "window "+open, p.rows, []*nostr.Event{m})
		thread := cwQuery(t, s, who, map[string]any{"#e": []string{m.ID}, "depth_limit": 2})
		cwSameSet(t, "thread of "+open, thread, []*nostr.Event{r})

		cwWantEmpty(t, s, who, `[{"top_level":true,"#h":["`+priv+`"]}]`)
		if got := cwQuery(t, s, who, map[string]any{"#e": []string{pm.ID}, "depth_limit": 2}); len(got) != 0 {
			t.Errorf("thread of the private channel, not a member: %d events", len(got))
		}
	}
	p := cwWindow(t, s, &member, priv, cwF(priv))
	cwSameIDs(t, "member: window "+priv, p.rows, []*nostr.Event{pm})
	thread := cwQuery(t, s, &member, map[string]any{"#e": []string{pm.ID}, "depth_limit": 2})
	cwSameSet(t, "member: thread of "+priv, thread, []*nostr.Event{pr})
}

// CW-2: an h value that is not a channel id is refused on a kind 9 and on
// a 9007 with the spec's message; a 9007 keeps requiring a UUID in
// canonical form.
func TestCWBadChannelIDRefused(t *testing.T) {
	_, c, a := startWithClient(t)
	const msg = "invalid: h tag must be a channel id (a UUID or a NIP-29 group id)"
	for _, h := range []string{"Gen eral", "a/b", "a:b", "a%41", "é", strings.Repeat("a", 129), "", "urn:" + newChannelID(t)} {
		mustReject(t, c, cwMsg(t, a, h, now()), msg)
		mustReject(t, c, cwEvent(t, a, buzz.KindCreateChannel, now(), nostr.Tag{"h", h}), msg)
	}
	mustReject(t, c, cwEvent(t, a, buzz.KindCreateChannel, now(), nostr.Tag{"h", strings.ToUpper(newChannelID(t))}),
		"invalid: channel id must be a lowercase UUID")
}

// CW-2, RL-36 (widened 2026-12-04): NDK's default group id, 24 mixed-case
// letters and digits, names a channel end to end, as do ids of every
// allowed punctuation and of 128 characters: a 9007 creates it, its group
// state has d = the id as written, and it is posted to and read by REQ,
// by the window (whose overlays echo the id as written) and by the thread
// path. The same letters in another case are another channel.
func TestCWGroupIDNDK(t *testing.T) {
	s, c, _ := startWithClient(t)
	ids := []string{
		"p0ZPf6Xc6Ngx7TZFdJHcWRxY", "P0zpF6xC6nGX7tzfDjhCwrXy", "a.b~C_d-e", "..", strings.Repeat("Zz9-_.~", 19)[:128],
	}
	msgs := map[string]*nostr.Event{}
	for _, h := range ids {
		owner := testutil.NewSigner(t)
		mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), nostr.Tag{"h", h}, nostr.Tag{"name", "g " + h}))
		m := cwMsg(t, owner, h, now()-10)
		r := cwReply(t, owner, h, now()-5, m)
		cwPublish(t, c, m, r)
		msgs[h] = m

		state := fetch(t, c, nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}, Tags: nostr.TagMap{"d": {h}}})
		if len(state) != 1 || state[0].Tags.GetD() != h {
			t.Fatalf("group state of %q: %v, want one 39000 with d as written", h, state)
		}
		cwSameSet(t, "REQ #h "+h, fetch(t, c, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}}), []*nostr.Event{m, r})
		p := cwWindow(t, s, nil, h, cwF(h, "include_summaries", true))
		cwSameIDs(t, "window "+h, p.rows, []*nostr.Event{m})
		if p.summary[m.ID].Reply != 1 {
			t.Errorf("window %q: summary %+v, want one reply", h, p.summary[m.ID])
		}
		thread := cwQuery(t, s, nil, map[string]any{"#e": []string{m.ID}, "depth_limit": 2})
		cwSameSet(t, "thread in "+h, thread, []*nostr.Event{r})
	}
	if evs := cwQuery(t, s, nil, cwF(strings.ToLower(ids[0]))); len(evs) != 0 {
		t.Errorf("window of the lowercase spelling, a channel that does not exist: %d events", len(evs))
	}
	p := cwWindow(t, s, nil, ids[1], cwF(ids[1]))
	cwSameIDs(t, "window of the other case", p.rows, []*nostr.Event{msgs[ids[1]]})
}

// uuidSpellings are spellings of the channel UUID u (CW-2: one channel).
func uuidSpellings(u string) map[string]string {
	upper := strings.ToUpper(u)
	return map[string]string{"canonical": u, "upper": upper, "bare": strings.ReplaceAll(u, "-", ""),
		"braced": "{" + upper + "}", "urn": "urn:uuid:" + u}
}

// CW-2, RL-13: live delivery reads a subscription's #h as its stored query
// does: a UUID in any spelling names its channel, and the subscription
// hears every event of the channel however the event's h spells the UUID;
// a NIP-29 group id is its letters (a subscription to `Ops` does not hear
// `ops`). A private channel in any spelling is heard by its member and not
// by an authenticated outsider.
func TestLiveChannelSpellings(t *testing.T) {
	s, c, owner := startWithClient(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	open, priv := newChannelID(t), newChannelID(t)
	createChannel(t, c, owner, open, false)
	createChannel(t, c, owner, priv, true)
	cwAddMember(t, c, owner, priv, member.PK)
	for _, g := range []string{"Ops", "ops"} {
		mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), hTag(g), nostr.Tag{"name", g}))
	}

	anon, mem, out := s.connectAs(t, nil), s.connectAs(t, &member), s.connectAs(t, &outsider)
	barrierTag := "barrier-" + newChannelID(t)
	listen := func(c *session, id, h string) {
		mustSubscribe(t, c.rawClient, id, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}, LimitZero: true})
	}
	for name, h := range uuidSpellings(open) {
		listen(anon, "open-"+name, h)
	}
	for name, h := range uuidSpellings(priv) {
		listen(mem, "priv-"+name, h)
		listen(out, "priv-"+name, h)
	}
	listen(anon, "Ops", "Ops")
	for _, c := range []*session{anon, mem, out} {
		mustSubscribe(t, c.rawClient, "barrier", nostr.Filter{Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
	}

	var openEvs, privEvs []*nostr.Event
	for _, h := range uuidSpellings(open) {
		openEvs = append(openEvs, cwMsg(t, outsider, h, now()))
	}
	for _, h := range uuidSpellings(priv) {
		privEvs = append(privEvs, cwMsg(t, owner, h, now()))
	}
	ops, lowerOps := cwMsg(t, owner, "Ops", now()), cwMsg(t, owner, "ops", now())
	cwPublish(t, c, append(append(openEvs, privEvs...), ops, lowerOps)...)
	barrier := owner.Event(t, 1, now(), "barrier", nostr.Tag{"t", barrierTag})
	mustPublish(t, c, barrier)

	got := drainUntil(anon.rawClient, barrier)
	for name := range uuidSpellings(open) {
		if !slices.Equal(sortedIDs(got["open-"+name]), sortedIDs(openEvs)) {
			t.Errorf("anonymous, #h spelled %s: heard %v, want the open channel's %v", name, got.ids("open-"+name), ids(openEvs))
		}
	}
	if !slices.Equal(got.ids("Ops"), ids([]*nostr.Event{ops})) {
		t.Errorf("#h Ops: heard %v, want only %s (ops is another channel)", got.ids("Ops"), ops.ID)
	}
	got = drainUntil(mem.rawClient, barrier)
	for name := range uuidSpellings(priv) {
		if !slices.Equal(sortedIDs(got["priv-"+name]), sortedIDs(privEvs)) {
			t.Errorf("member, #h spelled %s: heard %v, want the private channel's %v", name, got.ids("priv-"+name), ids(privEvs))
		}
	}
	if got = drainUntil(out.rawClient, barrier); len(got) != 0 {
		t.Errorf("outsider heard the private channel: %v", got)
	}

	// The stored query of each spelling agrees with what it heard live.
	for name, h := range uuidSpellings(open) {
		stored := fetch(t, c, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}})
		if !slices.Equal(sortedIDs(stored), sortedIDs(openEvs)) {
			t.Errorf("stored REQ #h spelled %s: %v, want %v", name, ids(stored), ids(openEvs))
		}
	}
}

// RL-13, RL-29, CW-2, CW-3: an anonymous REQ names a channel in any
// spelling: an open channel's events come without auth-required, a private
// channel's in any spelling ask to authenticate, as a nonexistent channel's
// and a value that is no channel id do, and stay unreadable to an
// authenticated outsider and unseen by an anonymous COUNT; its member
// reads them in any spelling.
func TestAnonymousReqChannelSpellings(t *testing.T) {
	s, c, owner := startWithClient(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	open, priv := newChannelID(t), newChannelID(t)
	createChannel(t, c, owner, open, false)
	createChannel(t, c, owner, priv, true)
	cwAddMember(t, c, owner, priv, member.PK)
	openMsg, privMsg := cwMsg(t, owner, open, now()), cwMsg(t, owner, priv, now())
	cwPublish(t, c, openMsg, privMsg)

	anon, mem, out := s.connectAs(t, nil), s.connectAs(t, &member), s.connectAs(t, &outsider)
	kind9 := func(h string) string { return `{"kinds":[9],"#h":[` + strconvQuote(h) + `]}` }
	for name, h := range uuidSpellings(open) {
		if evs, closed := anon.req("o-"+name, kind9(h)); closed != "" || !slices.Equal(ids(evs), ids([]*nostr.Event{openMsg})) {
			t.Errorf("anonymous REQ of the open channel spelled %s: %v, CLOSED %q; want %s", name, ids(evs), closed, openMsg.ID)
		}
		if n := anon.count("oc-"+name, kind9(h)); n != 1 {
			t.Errorf("anonymous COUNT of the open channel spelled %s: %d, want 1", name, n)
		}
	}
	refused := map[string]string{"not a channel id": "not a channel", "nonexistent": strings.ToUpper(newChannelID(t))}
	for name, h := range uuidSpellings(priv) {
		refused["private "+name] = h
		if evs, closed := mem.req("m-"+name, kind9(h)); closed != "" || !slices.Equal(ids(evs), ids([]*nostr.Event{privMsg})) {
			t.Errorf("member REQ of the private channel spelled %s: %v, CLOSED %q; want %s", name, ids(evs), closed, privMsg.ID)
		}
		if evs, closed := out.req("x-"+name, kind9(h)); closed != "" || len(evs) != 0 {
			t.Errorf("outsider REQ of the private channel spelled %s: %v, CLOSED %q; want nothing", name, ids(evs), closed)
		}
		if n := anon.count("pc-"+name, kind9(h)); n != 0 {
			t.Errorf("anonymous COUNT of the private channel spelled %s: %d, want 0", name, n)
		}
	}
	for name, h := range refused {
		if evs, closed := anon.req("p-"+name, kind9(h)); len(evs) != 0 || !strings.HasPrefix(closed, "auth-required:") {
			t.Errorf("anonymous REQ, %s: %d events, CLOSED %q; want auth-required:", name, len(evs), closed)
		}
	}
}
