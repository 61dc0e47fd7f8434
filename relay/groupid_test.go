package relay

import (
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
