package relay

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// fdNewest orders evs as the feed does: created_at DESC, id ASC.
func fdNewest(evs ...*nostr.Event) []string {
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return qyIDs(evs)
}

// RL-35 over POST /query: the requester is the NIP-98 signer; each type,
// the alias, unknown and repeated types, since, the limit shared across
// types with duplicates dropped, anonymous requesters, and a member
// removed from a private channel.
func TestFeedQuery(t *testing.T) {
	s := startServer(t)
	p := qySetupPrivate(t, s)
	ts := int64(p.msg.CreatedAt)
	pm := nostr.Tag{"p", p.member.PK}
	note := p.outsider.Event(t, 1, ts+2, "no channel, for member", pm)
	privMention := p.owner.Event(t, 9, ts+3, "private, for member", nostr.Tag{"h", p.h}, pm)
	openMention := p.outsider.Event(t, 9, ts+4, "open, for member", nostr.Tag{"h", p.open}, pm)
	reminder := p.owner.Event(t, 40007, ts+5, "remind member", pm)
	for _, ev := range []*nostr.Event{note, privMention, openMention, reminder} {
		mustPublish(t, p.c, ev)
	}
	activity := fdNewest(openMention, privMention, p.reply, p.msg, p.openMsg)
	openActivity := fdNewest(openMention, p.openMsg)
	member, outsider := &p.member, &p.outsider
	cases := []struct {
		name string
		who  *testutil.Signer
		body string
		want []string
	}{
		{"mentions", member, `[{"feed_types":["mentions"]}]`, qyIDs([]*nostr.Event{openMention, privMention, note})},
		{"needs_action", member, `[{"feed_types":["needs_action"]}]`, []string{reminder.ID}},
		{"activity of the readable channels", member, `[{"feed_types":["activity"]}]`, activity},
		{"the alias", member, `[{"feed_types":["agent_activity"]}]`, activity},
		{"outsider's activity", outsider, `[{"feed_types":["activity"]}]`, openActivity},
		{"outsider is mentioned by no one", outsider, `[{"feed_types":["mentions","needs_action"]}]`, []string{}},
		{"anonymous: open activity only", nil, `[{"feed_types":["mentions","needs_action","activity"]}]`, openActivity},
		{"since", member, fmt.Sprintf(`[{"feed_types":["mentions"],"since":%d}]`, ts+3), qyIDs([]*nostr.Event{openMention, privMention})},
		{"limit across types", member, `[{"feed_types":["agent_activity","bogus","mentions"],"limit":3}]`, activity[:3]},
		{"duplicates dropped", member, `[{"feed_types":["activity","mentions","activity"],"limit":100}]`, append(slices.Clone(activity), note.ID)},
		{"needs_action first", member, `[{"feed_types":["needs_action","mentions"],"limit":2}]`, []string{reminder.ID, openMention.ID}},
		{"unknown types only", member, `[{"feed_types":["bogus", 3]}]`, []string{}},
		{"limit 0", member, `[{"feed_types":["mentions"],"limit":0}]`, []string{}},
		// RL-35 settled on 2026-12-04, RL-19: until + before_id page back,
		// for each type of the filter.
		{"until", member, fmt.Sprintf(`[{"feed_types":["mentions"],"until":%d}]`, ts+3), qyIDs([]*nostr.Event{privMention, note})},
		{"until + before_id", member, fmt.Sprintf(`[{"feed_types":["activity","mentions"],"until":%d,"before_id":"%s"}]`,
			privMention.CreatedAt, strings.ToUpper(privMention.ID)), append(slices.Clone(activity[2:]), note.ID)},
	}
	run := func(name string, who *testutil.Signer, body string, want []string) {
		t.Helper()
		if got := qyIDs(qyPostAs(t, s, who, body).events(t)); !slices.Equal(got, want) {
			t.Errorf("%s: got %s, want %s", name, qyShort(got), qyShort(want))
		}
	}
	for _, c := range cases {
		run(c.name, c.who, c.body, c.want)
	}
	qyPostAs(t, s, member, `[{"feed_types":["mentions"],"since":"x"}]`).wantError(t, http.StatusBadRequest, "invalid filters: since must be an integer")
	qyPostAs(t, s, member, `[{"feed_types":["mentions"],"before_id":"`+note.ID+`"}]`).wantError(t, http.StatusBadRequest, "before_id requires until to be set")
	qyPostAs(t, s, member, `[{"feed_types":["mentions"],"before_id":"x"}]`).wantError(t, http.StatusBadRequest, "before_id must be a 64-char hex event id")

	removeUser(t, p.c, p.owner, p.h, p.member.PK)
	run("removed member's mentions", member, `[{"feed_types":["mentions"]}]`, qyIDs([]*nostr.Event{openMention, note}))
	run("removed member's activity", member, `[{"feed_types":["activity"]}]`, openActivity)
}

// RL-18, RL-35: in one body of mixed filters, windows answer first, then
// feeds, then threads, then generic filters, whatever their order in the
// body; two feed filters keep theirs.
func TestFeedDispatchOrder(t *testing.T) {
	s, c, a := startWithClient(t)
	t0 := time.Now().Unix() - 600
	w, th := newChannelID(t), newChannelID(t)
	for i := range 3 {
		mustPublish(t, c, qyMsg(t, a, w, t0+int64(i), fmt.Sprintf("window row %d", i), nil))
	}
	root := qyMsg(t, a, th, t0, "thread root", nil)
	mustPublish(t, c, root)
	mustPublish(t, c, qyMsg(t, a, th, t0+1, "reply", root))
	mustPublish(t, c, a.Event(t, 1, t0, "note"))
	window := `{"top_level":true,"#h":["` + w + `"]}`
	feed := `{"feed_types":["activity"],"limit":2}`
	feed2 := `{"feed_types":["activity"],"limit":1,"depth_limit":1,"#e":["` + root.ID + `"]}`
	thread := `{"depth_limit":1,"#e":["` + root.ID + `"]}`
	generic := `{"kinds":[1],"authors":["` + a.PK + `"]}`

	// The overlay is dated when served: compare it by kind and tags.
	key := func(ev *nostr.Event) string {
		if ev.Kind == buzz.KindWindowBounds {
			return fmt.Sprint(ev.Kind, ev.Tags)
		}
		return ev.ID
	}
	keys := func(body string) []string {
		var out []string
		for _, ev := range qyPost(t, s, body, "").events(t) {
			out = append(out, key(ev))
		}
		return out
	}
	wantW, wantF, wantF2, wantT, wantG := keys("["+window+"]"), keys("["+feed+"]"), keys("["+feed2+"]"), keys("["+thread+"]"), keys("["+generic+"]")
	if len(wantW) != 4 || len(wantF) != 2 || len(wantF2) != 1 || len(wantT) != 1 || len(wantG) != 1 {
		t.Fatalf("fixture: %d window, %d feed, %d feed, %d thread, %d generic events", len(wantW), len(wantF), len(wantF2), len(wantT), len(wantG))
	}
	want := slices.Concat(wantW, wantF, wantF2, wantT, wantG)
	for _, order := range [][]string{
		{generic, thread, feed, feed2, window},
		{thread, feed, generic, window, feed2},
		{window, generic, feed, thread, feed2},
		{feed, generic, window, feed2, thread},
	} {
		if got := keys("[" + strings.Join(order, ",") + "]"); !slices.Equal(got, want) {
			t.Errorf("body %v:\n got  %v\n want %v", order, got, want)
		}
	}
}

// RL-35, RL-22: NIP-11 names the feed among the extensions.
func TestFeedNIP11Extension(t *testing.T) {
	s := startServer(t)
	list, _ := qyNIP11(t, s)["supported_extensions"].([]any)
	if !slices.Contains(list, any("nip-cw-feed")) {
		t.Fatalf("supported_extensions %v, want it to contain \"nip-cw-feed\"", list)
	}
}
