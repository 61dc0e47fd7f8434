package storetest

// The home feed in the store (RL-35) against a model: every type, for
// every kind of requester, with deletions, events without a channel,
// since, the limit shared across types in order, duplicates, and access
// that changes. Helpers start with "fd".

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// fdChanDead is an open channel that its owner deletes.
const fdChanDead = "5a1b7c3e-2f4d-4e6a-8b9c-0d1e2f3a4b5c"

// fdEvent is what the model knows of a stored event.
type fdEvent struct {
	ev      *nostr.Event
	channel string // "" for none
	deleted bool
}

type fdFixture struct {
	s                 Store
	owner, member, x  testutil.Signer
	at                int64
	evs               []*fdEvent
	memberReadsPriv   bool
	deadChannelExists bool
}

// add stores an event dated one second after the last (or at the same
// second, tie) and records it for the model.
func (fx *fdFixture) add(t *testing.T, sg testutil.Signer, kind int, channel string, tie bool, tags ...nostr.Tag) *fdEvent {
	t.Helper()
	if !tie {
		fx.at++
	}
	if channel != "" {
		tags = append(tags, ttH(channel))
	}
	e := &fdEvent{ev: ttIngest(t, fx.s, sg.Event(t, kind, fx.at, strconv.Itoa(len(fx.evs)), tags...)), channel: channel}
	fx.evs = append(fx.evs, e)
	return e
}

func (fx *fdFixture) lifecycle(t *testing.T, kind int, channel string, tags ...nostr.Tag) {
	t.Helper()
	fx.at++
	ttIngest(t, fx.s, fx.owner.Event(t, kind, fx.at, "", append(tags, ttH(channel))...))
}

// newFDFixture: ttChan private (owner, member), ttChan2 open, fdChanDead
// open and deleted; x is in no channel. Events of every feed kind and
// others, in every channel and in none, mentioning member, x or no one,
// some deleted, some in the same second.
func newFDFixture(t *testing.T, open Opener) *fdFixture {
	t.Helper()
	sg := testutil.SortedSigners(t, 3)
	fx := &fdFixture{s: ttOpen(t, open), owner: sg[0], member: sg[1], x: sg[2], at: ttBase, memberReadsPriv: true}
	fx.lifecycle(t, 9007, ttChan, nostr.Tag{"private"})
	fx.lifecycle(t, 9000, ttChan, nostr.Tag{"p", fx.member.PK})
	fx.lifecycle(t, 9007, ttChan2)
	fx.lifecycle(t, 9007, fdChanDead)
	pm, px := nostr.Tag{"p", fx.member.PK}, nostr.Tag{"p", fx.x.PK}
	o, m, x := fx.owner, fx.member, fx.x
	fx.add(t, o, 9, ttChan2, false, pm)
	fx.add(t, x, 11, ttChan2, false)
	fx.add(t, o, 9, ttChan, false, pm)
	fx.add(t, m, 1111, ttChan, false, px)
	fx.add(t, o, 1, "", false, pm, px)
	fx.add(t, x, 9, "", false, pm)
	fx.add(t, x, 7, ttChan2, false, pm, nostr.Tag{"e", fx.evs[0].ev.ID})
	fx.add(t, o, 40007, ttChan2, false, pm)
	fx.add(t, o, 46010, ttChan, false, pm)
	fx.add(t, m, 40007, "", false, px)
	gone := fx.add(t, o, 9, ttChan2, false, pm)
	fx.add(t, o, 9, fdChanDead, false, pm)
	for range 4 {
		fx.add(t, x, 9, ttChan2, true, pm)
	}
	fx.add(t, o, 11, ttChan, true, pm, px)
	fx.add(t, x, 1, ttChan2, false, pm)
	fx.add(t, m, 11, ttChan, false)
	fx.add(t, x, 46010, "", false, pm, nostr.Tag{"p", strings.ToUpper(fx.member.PK)})
	fx.at++
	ttIngest(t, fx.s, o.Event(t, 5, fx.at, "", nostr.Tag{"e", gone.ev.ID}))
	gone.deleted = true
	fx.lifecycle(t, 9008, fdChanDead)
	return fx
}

// canRead is the model of RL-12/RL-13 for the fixture.
func (fx *fdFixture) canRead(v buzz.Viewer, channel string) bool {
	switch channel {
	case "", ttChan2:
		return true
	case ttChan:
		return v == buzz.Viewer(fx.owner.PK) || (v == buzz.Viewer(fx.member.PK) && fx.memberReadsPriv)
	}
	return false
}

// model is RL-35 written plainly: every event checked against every rule.
func (fx *fdFixture) model(v buzz.Viewer, types []buzz.FeedType, since int64, limit int) []string {
	var out []string
	served := map[string]bool{}
	for _, ty := range types {
		var picked []*nostr.Event
		for _, e := range fx.evs {
			ev := e.ev
			if e.deleted || int64(ev.CreatedAt) < since || !fx.canRead(v, e.channel) || served[ev.ID] {
				continue
			}
			mentioned := v != buzz.Anonymous && slices.ContainsFunc(ev.Tags, func(tag nostr.Tag) bool {
				return len(tag) >= 2 && tag[0] == "p" && tag[1] == string(v)
			})
			switch {
			case ty == buzz.FeedMentions && mentioned && slices.Contains(buzz.MentionKinds, ev.Kind),
				ty == buzz.FeedNeedsAction && mentioned && slices.Contains(buzz.NeedsActionKinds, ev.Kind),
				ty == buzz.FeedActivity && e.channel != "" && slices.Contains(buzz.ActivityKinds, ev.Kind):
				picked = append(picked, ev)
			}
		}
		slices.SortFunc(picked, func(a, b *nostr.Event) int {
			if a.CreatedAt != b.CreatedAt {
				return int(b.CreatedAt - a.CreatedAt)
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, ev := range picked {
			if len(out) == limit {
				return out
			}
			served[ev.ID] = true
			out = append(out, ev.ID)
		}
	}
	return out
}

func fdIDs(evs []*nostr.Event) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// check compares the store's feed with the model's for every viewer, type
// list, since and limit.
func (fx *fdFixture) check(t *testing.T, viewers []buzz.Viewer) {
	t.Helper()
	const (
		m  = buzz.FeedMentions
		na = buzz.FeedNeedsAction
		a  = buzz.FeedActivity
	)
	for _, v := range viewers {
		for _, types := range [][]buzz.FeedType{{m}, {na}, {a}, {m, a}, {a, m}, {na, m, a}, {a, na, m}} {
			for _, since := range []int64{0, ttBase + 12} {
				for _, limit := range []int{0, 1, 3, 6, 20, 100} {
					q := buzz.FeedQuery{Viewer: v, Types: types, Limit: limit}
					if since > 0 {
						q.Since = &since
					}
					got, err := fx.s.Feed(context.Background(), q)
					if err != nil {
						t.Fatal(err)
					}
					want := fx.model(v, types, since, limit)
					if !slices.Equal(fdIDs(got), want) {
						t.Errorf("viewer %.8s types %v since %d limit %d:\n got %v\nwant %v", v, types, since, limit,
							short(fdIDs(got)), short(want))
					}
				}
			}
		}
	}
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:8]
	}
	return out
}

// RL-35, RL-13: mentions, needs_action and activity, alone and together,
// match the model for the owner and member of a private channel, an
// outsider and an anonymous requester: mentions across readable channels
// only and without a channel, no deleted event and nothing of a deleted
// channel, since, the limit counted across types in the order given, an
// event that is both a mention and activity served once, and nothing but
// activity of open channels for the anonymous.
func testFeedModel(t *testing.T, open Opener) {
	fx := newFDFixture(t, open)
	fx.check(t, []buzz.Viewer{buzz.Viewer(fx.owner.PK), buzz.Viewer(fx.member.PK), buzz.Viewer(fx.x.PK), buzz.Anonymous})
	if got := fx.model(buzz.Viewer(fx.member.PK), []buzz.FeedType{buzz.FeedMentions, buzz.FeedActivity}, 0, 100); len(got) < 10 {
		t.Fatalf("the fixture feeds the member only %d events", len(got))
	}
}

// RL-35, RL-13: a member removed from a private channel no longer finds
// its mentions, needs_action or messages in the feed, from the next
// request on.
func testFeedRemovedMember(t *testing.T, open Opener) {
	fx := newFDFixture(t, open)
	member := buzz.Viewer(fx.member.PK)
	before, err := fx.s.Feed(context.Background(), buzz.FeedQuery{Viewer: member, Types: []buzz.FeedType{buzz.FeedMentions}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	fx.lifecycle(t, 9001, ttChan, nostr.Tag{"p", fx.member.PK})
	fx.memberReadsPriv = false
	after, err := fx.s.Feed(context.Background(), buzz.FeedQuery{Viewer: member, Types: []buzz.FeedType{buzz.FeedMentions}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) >= len(before) {
		t.Fatalf("removal left %d mentions of %d", len(after), len(before))
	}
	fx.check(t, []buzz.Viewer{member})
}

// RL-35, RL-27a: a feed larger than its byte bound is refused whole.
func testFeedByteBound(t *testing.T, open Opener) {
	fx := newFDFixture(t, open)
	q := buzz.FeedQuery{Viewer: buzz.Viewer(fx.member.PK), Types: []buzz.FeedType{buzz.FeedActivity}, Limit: 100, MaxBytes: 600}
	if _, err := fx.s.Feed(context.Background(), q); err != buzz.ErrTooLarge {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
}

// RL-35, RL-12: where reads are not public, an anonymous requester reads
// no channel, and its activity is empty without a walk.
func testFeedNoPublicRead(t *testing.T, open Opener) {
	closed := buzz.DefaultPolicy()
	closed.PublicRead = false
	s := qtOpenWith(t, open, Config{Policy: &closed})
	o := testutil.NewSigner(t)
	ttIngest(t, s, o.Event(t, 9, ttBase, "", ttH(ttChan2)))
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(o.PK)} {
		got, err := s.Feed(context.Background(), buzz.FeedQuery{Viewer: v, Types: []buzz.FeedType{buzz.FeedActivity}, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if want := v != buzz.Anonymous; (len(got) == 1) != want {
			t.Errorf("viewer %q: %d events", v, len(got))
		}
	}
}

// RL-35: activity of one crowded second is served in id order across the
// walk's pages: 300 messages of a private channel the requester may not
// read and 30 of an open one, all dated alike, ids interleaved, so that
// the walk passes its first page of candidates inside the second and
// continues after its last position, skipping nothing and nothing twice.
func testFeedCrowdedSecond(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	owner, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	ctx := context.Background()
	ttIngest(t, s, owner.Event(t, 9007, ttBase, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9007, ttBase, "", ttH(ttChan2)))
	var evs []*nostr.Event
	var open2 []string
	for i := range 330 {
		ch := ttChan
		if i%11 == 0 {
			ch = ttChan2
		}
		ev := owner.Event(t, 9, ttBase+10, "crowded "+strconv.Itoa(i), ttH(ch))
		if ch == ttChan2 {
			open2 = append(open2, ev.ID)
		}
		evs = append(evs, ev)
	}
	outcomes, err := s.ImportBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range outcomes {
		if err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
	}
	slices.Sort(open2)
	for _, limit := range []int{20, 30, 40} {
		got, err := s.Feed(ctx, buzz.FeedQuery{Viewer: buzz.Viewer(outsider.PK), Types: []buzz.FeedType{buzz.FeedActivity}, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if ids, want := testutil.IDs(got...), open2[:min(limit, len(open2))]; !slices.Equal(ids, want) {
			t.Fatalf("limit %d: feed %v, want the open channel's %d smallest ids %v", limit, ids, len(want), want)
		}
	}
}

// fdImport stores evs in one batch, each accepted.
func fdImport(t *testing.T, s Store, evs []*nostr.Event) {
	t.Helper()
	outcomes, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range outcomes {
		if err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
	}
}

// RL-35 (settled on 2026-12-04): answers are complete. 5,500 newer
// mentions of x in a private channel x is not in, and a flood of 5,500
// newer messages there, neither shorten x's mentions nor an anonymous or
// an outsider's activity; the channel's member still gets them all.
func testFeedComplete(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	sg := testutil.SortedSigners(t, 2)
	owner, x := sg[0], sg[1]
	ctx := context.Background()
	ttIngest(t, s, owner.Event(t, 9007, ttBase, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9007, ttBase, "", ttH(ttChan2)))
	px := nostr.Tag{"p", x.PK}
	openMention := ttIngest(t, s, owner.Event(t, 9, ttBase+1, "open mention", ttH(ttChan2), px))
	note := ttIngest(t, s, owner.Event(t, 1, ttBase+2, "note", px))
	var flood []*nostr.Event
	for i := range 5500 {
		flood = append(flood, owner.Event(t, 9, ttBase+10+int64(i), "private "+strconv.Itoa(i), ttH(ttChan), px))
	}
	fdImport(t, s, flood)
	for _, c := range []struct {
		v    buzz.Viewer
		ty   buzz.FeedType
		want []string
	}{
		{buzz.Viewer(x.PK), buzz.FeedMentions, testutil.IDs(note, openMention)},
		{buzz.Viewer(x.PK), buzz.FeedActivity, testutil.IDs(openMention)},
		{buzz.Anonymous, buzz.FeedActivity, testutil.IDs(openMention)},
	} {
		got, err := s.Feed(ctx, buzz.FeedQuery{Viewer: c.v, Types: []buzz.FeedType{c.ty}, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if ids := testutil.IDs(got...); !slices.Equal(ids, c.want) {
			t.Errorf("viewer %.8s %s: %v, want %v", c.v, c.ty, short(ids), short(c.want))
		}
	}
	got, err := s.Feed(ctx, buzz.FeedQuery{Viewer: buzz.Viewer(owner.PK), Types: []buzz.FeedType{buzz.FeedActivity}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if ids, want := testutil.IDs(got...), testutil.IDs(flood[5499], flood[5498], flood[5497]); !slices.Equal(ids, want) {
		t.Errorf("the owner's activity: %v, want the newest of the channel %v", short(ids), short(want))
	}
}

// RL-35 (settled), RL-19: until + before_id page every type, and several
// at once, back to the end of the feed: walked page by page from the
// head, each page continuing after the last event of the one before, the
// pages together are the feed in one piece, no event missing or twice,
// through seconds that hold more events than a page. until alone leaves
// out what is newer than it; limit 0 serves nothing.
func testFeedPaging(t *testing.T, open Opener) {
	fx := newFDFixture(t, open)
	for i := range 12 { // a crowded second, in both channels the member reads
		ch := ttChan
		if i%2 == 0 {
			ch = ttChan2
		}
		fx.add(t, fx.owner, 9, ch, i > 0, nostr.Tag{"p", fx.member.PK})
	}
	const (
		m  = buzz.FeedMentions
		na = buzz.FeedNeedsAction
		a  = buzz.FeedActivity
	)
	ctx := context.Background()
	for _, v := range []buzz.Viewer{buzz.Viewer(fx.member.PK), buzz.Viewer(fx.x.PK), buzz.Anonymous} {
		for _, types := range [][]buzz.FeedType{{m}, {na}, {a}} {
			whole := fx.model(v, types, 0, 1000)
			for _, size := range []int{1, 2, 5} {
				var walked []string
				var before *buzz.Position
				for range len(whole) + 2 {
					got, err := fx.s.Feed(ctx, buzz.FeedQuery{Viewer: v, Types: types, Limit: size, Before: before})
					if err != nil {
						t.Fatal(err)
					}
					if len(got) == 0 {
						break
					}
					walked = append(walked, fdIDs(got)...)
					last := got[len(got)-1]
					before = &buzz.Position{CreatedAt: int64(last.CreatedAt), ID: last.ID}
				}
				if !slices.Equal(walked, whole) {
					t.Errorf("viewer %.8s %v by pages of %d:\n got %v\nwant %v", v, types, size, short(walked), short(whole))
				}
			}
			if len(whole) > 0 {
				if got, err := fx.s.Feed(ctx, buzz.FeedQuery{Viewer: v, Types: types, Limit: 0}); err != nil || len(got) != 0 {
					t.Errorf("viewer %.8s %v, limit 0: %d events, %v", v, types, len(got), err)
				}
			}
		}
		// until alone, and a cursor shared by several types: each type
		// continues after it.
		until := fx.at - 3
		var want []string
		for _, ty := range []buzz.FeedType{a, m} {
			for _, id := range fx.model(v, []buzz.FeedType{ty}, 0, 1000) {
				if ev := fx.byID(id); int64(ev.CreatedAt) <= until && !slices.Contains(want, id) {
					want = append(want, id)
				}
			}
		}
		got, err := fx.s.Feed(ctx, buzz.FeedQuery{Viewer: v, Types: []buzz.FeedType{a, m}, Limit: 100, Before: &buzz.Position{CreatedAt: until}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fdIDs(got), want) {
			t.Errorf("viewer %.8s until %d:\n got %v\nwant %v", v, until, short(fdIDs(got)), short(want))
		}
	}
}

func (fx *fdFixture) byID(id string) *nostr.Event {
	for _, e := range fx.evs {
		if e.ev.ID == id {
			return e.ev
		}
	}
	return nil
}

// RL-35 (settled): activity is every kind 9 and 11 event of the channels
// the requester reads, replies included; an event without a channel is
// no activity, whatever its kind.
func testFeedActivityReplies(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	o := testutil.NewSigner(t)
	ttIngest(t, s, o.Event(t, 9007, ttBase, "", ttH(ttChan2)))
	root := ttIngest(t, s, o.Event(t, 11, ttBase+1, "thread", ttH(ttChan2)))
	reply := ttIngest(t, s, o.Event(t, 9, ttBase+2, "reply", ttH(ttChan2), ttRootTag(root.ID), ttReplyTag(root.ID)))
	ttIngest(t, s, o.Event(t, 9, ttBase+3, "no channel"))
	ttIngest(t, s, o.Event(t, 11, ttBase+4, "no channel either"))
	got, err := s.Feed(context.Background(), buzz.FeedQuery{Types: []buzz.FeedType{buzz.FeedActivity}, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if ids, want := testutil.IDs(got...), testutil.IDs(reply, root); !slices.Equal(ids, want) {
		t.Errorf("activity %v, want the reply and its root %v", short(ids), short(want))
	}
}

// RL-35, RL-13: a channel that becomes private takes its messages and
// mentions out of the feeds of those who no longer read it, and back in
// when it opens again; its members and the relay admin keep them all
// along; a deleted channel's leave every feed.
func testFeedChannelChanges(t *testing.T, open Opener) {
	sg := testutil.SortedSigners(t, 4)
	owner, member, x, admin := sg[0], sg[1], sg[2], sg[3]
	s := open(t, Config{Admins: []string{admin.PK}})
	ctx := context.Background()
	at := int64(ttBase)
	post := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		t.Helper()
		at++
		return ttIngest(t, s, sg.Event(t, kind, at, "", tags...))
	}
	post(owner, 9007, ttH(ttChan))
	post(owner, 9000, ttH(ttChan), nostr.Tag{"p", member.PK})
	px, pm := nostr.Tag{"p", x.PK}, nostr.Tag{"p", member.PK}
	msg := post(owner, 9, ttH(ttChan), px, pm)
	thread := post(owner, 11, ttH(ttChan))
	note := post(owner, 1, px, pm)
	check := func(state string, xReads bool) {
		t.Helper()
		for _, c := range []struct {
			v     buzz.Viewer
			reads bool
		}{{buzz.Viewer(x.PK), xReads}, {buzz.Anonymous, xReads}, {buzz.Viewer(member.PK), state != "deleted"},
			{buzz.Viewer(admin.PK), state != "deleted"}} {
			for _, ty := range []buzz.FeedType{buzz.FeedActivity, buzz.FeedMentions} {
				var want []*nostr.Event
				switch {
				case ty == buzz.FeedActivity && c.reads:
					want = []*nostr.Event{thread, msg}
				case ty == buzz.FeedMentions && c.v == buzz.Viewer(x.PK) && c.reads,
					ty == buzz.FeedMentions && c.v == buzz.Viewer(member.PK) && c.reads:
					want = []*nostr.Event{note, msg}
				case ty == buzz.FeedMentions && (c.v == buzz.Viewer(x.PK) || c.v == buzz.Viewer(member.PK)):
					want = []*nostr.Event{note}
				}
				got, err := s.Feed(ctx, buzz.FeedQuery{Viewer: c.v, Types: []buzz.FeedType{ty}, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				if ids, want := testutil.IDs(got...), testutil.IDs(want...); !slices.Equal(ids, want) {
					t.Errorf("%s, viewer %.8s %s: %v, want %v", state, c.v, ty, short(ids), short(want))
				}
			}
		}
	}
	check("open", true)
	post(owner, 9002, ttH(ttChan), nostr.Tag{"private"})
	check("private", false)
	post(owner, 9002, ttH(ttChan), nostr.Tag{"public"})
	check("open again", true)
	post(owner, 9008, ttH(ttChan))
	check("deleted", false)
}
