package storetest

// Read scopes in the store (RL-8, RL-12, RL-13): the channel an event
// belongs to for reading, for reactions and deletions without an h tag
// too; Query and Count show each viewer only what it may read; and the
// Helpers start with "sc".

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// scFixture: ttChan is private (owner and member), ttChan2 open.
type scFixture struct {
	s                        Store
	owner, member, outsider  testutil.Signer
	relayAdmin               testutil.Signer
	ownerV, memberV, outV    buzz.Viewer
	at                       int64
	readers, nonReaders      []buzz.Viewer // of ttChan
	everyone                 []buzz.Viewer
	privMsg, openMsg, noChan *nostr.Event
}

func newSCFixture(t *testing.T, open Opener) *scFixture {
	t.Helper()
	fx := &scFixture{at: chT}
	sg := testutil.SortedSigners(t, 4)
	fx.owner, fx.member, fx.outsider, fx.relayAdmin = sg[0], sg[1], sg[2], sg[3]
	fx.s = open(t, Config{Admins: []string{fx.relayAdmin.PK}})
	fx.ownerV, fx.memberV, fx.outV = buzz.Viewer(fx.owner.PK), buzz.Viewer(fx.member.PK), buzz.Viewer(fx.outsider.PK)
	fx.readers = []buzz.Viewer{fx.ownerV, fx.memberV, buzz.Viewer(fx.relayAdmin.PK)}
	fx.nonReaders = []buzz.Viewer{buzz.Anonymous, fx.outV}
	fx.everyone = append(append([]buzz.Viewer{}, fx.readers...), fx.nonReaders...)
	fx.ingest(t, fx.owner, 9007, ttH(ttChan), nostr.Tag{"private"})
	fx.ingest(t, fx.owner, 9000, ttH(ttChan), nostr.Tag{"p", fx.member.PK})
	fx.ingest(t, fx.owner, 9007, ttH(ttChan2))
	fx.privMsg = fx.ingest(t, fx.owner, 9, ttH(ttChan))
	fx.openMsg = fx.ingest(t, fx.owner, 9, ttH(ttChan2))
	fx.noChan = fx.ingest(t, fx.owner, 1)
	return fx
}

// event signs an event, one second after the last.
func (fx *scFixture) event(t *testing.T, sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	fx.at++
	return sg.Event(t, kind, fx.at, "", tags...)
}

func (fx *scFixture) ingest(t *testing.T, sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	return ttIngest(t, fx.s, fx.event(t, sg, kind, tags...))
}

// private requires event id to be read by the readers of ttChan only.
func (fx *scFixture) private(t *testing.T, id string) {
	t.Helper()
	for _, v := range fx.readers {
		if !Sees(t, fx.s, v, id) {
			t.Errorf("event %s: reader %s does not read it", id[:8], string(v)[:8])
		}
	}
	for _, v := range fx.nonReaders {
		if Sees(t, fx.s, v, id) {
			t.Errorf("event %s: non-member %q reads it", id[:8], v)
		}
	}
}

// public requires event id to be read by everyone.
func (fx *scFixture) public(t *testing.T, id string) {
	t.Helper()
	for _, v := range fx.everyone {
		if !Sees(t, fx.s, v, id) {
			t.Errorf("event %s: %q does not read it", id[:8], v)
		}
	}
}

// scAdmit stores ev and returns the scope Admit reports.
func scAdmit(t *testing.T, s Store, ev *nostr.Event) string {
	t.Helper()
	a, err := s.Admit(context.Background(), ev)
	if err != nil {
		t.Fatalf("admit kind %d (tags %v): %v", ev.Kind, ev.Tags, err)
	}
	return a.Scope
}

// RL-8, RL-13: a reaction without an h tag belongs to the channel of its
// target (its last e tag): hidden, by Query and Count, from everyone who
// may not read that channel. A reaction stored before its target takes the
// target's channel when the target arrives. Only the last e tag counts.
func testReactionScope(t *testing.T, open Opener) {
	fx := newSCFixture(t, open)
	s := fx.s

	// Target stored: the reaction is in its channel.
	r1 := fx.event(t, fx.member, 7, ttE(fx.privMsg.ID))
	if got := scAdmit(t, s, r1); got != ttChan {
		t.Errorf("reaction to a private message: scope %q, want %q", got, ttChan)
	}
	fx.private(t, r1.ID)
	// A non-member's reaction to a private message is one to an event
	// they cannot know of: it is taken as one to an event not stored, of
	// no channel (RL-29), and the private channel is not its scope.
	if got := scAdmit(t, s, fx.event(t, fx.outsider, 7, ttE(fx.privMsg.ID))); got != "" {
		t.Errorf("non-member's reaction to a private message: scope %q, want none", got)
	}

	// Reactions to open and channel-less events.
	r2 := fx.event(t, fx.outsider, 7, ttE(fx.openMsg.ID))
	if got := scAdmit(t, s, r2); got != ttChan2 {
		t.Errorf("reaction to an open message: scope %q, want %q", got, ttChan2)
	}
	fx.public(t, r2.ID)
	r3 := fx.event(t, fx.outsider, 7, ttE(fx.noChan.ID))
	if got := scAdmit(t, s, r3); got != "" {
		t.Errorf("reaction to a channel-less event: scope %q", got)
	}
	fx.public(t, r3.ID)

	// The last e tag decides: private first, public last stays public;
	// public first, private last is private.
	r4 := fx.event(t, fx.member, 7, ttE(fx.privMsg.ID), nostr.Tag{"p", fx.owner.PK}, ttE(fx.openMsg.ID))
	if got := scAdmit(t, s, r4); got != ttChan2 {
		t.Errorf("last e tag open: scope %q, want %q", got, ttChan2)
	}
	fx.public(t, r4.ID)
	r5 := fx.event(t, fx.member, 7, ttE(fx.openMsg.ID), ttE(fx.privMsg.ID), nostr.Tag{"k", "9"})
	if got := scAdmit(t, s, r5); got != ttChan {
		t.Errorf("last e tag private: scope %q, want %q", got, ttChan)
	}
	fx.private(t, r5.ID)

	// Target later: public until it arrives, then its channel's.
	late := fx.event(t, fx.owner, 9, ttH(ttChan))
	early := fx.event(t, fx.member, 7, ttE(late.ID))
	earlyLastOpen := fx.event(t, fx.member, 7, ttE(late.ID), ttE(fx.openMsg.ID))
	earlyNotLast := fx.event(t, fx.member, 7, ttE(fx.noChan.ID), ttE(late.ID), ttE(fx.noChan.ID))
	earlyWithH := fx.event(t, fx.member, 7, ttH(ttChan2), ttE(late.ID))
	for _, ev := range []*nostr.Event{early, earlyLastOpen, earlyNotLast, earlyWithH} {
		ttIngest(t, s, ev)
	}
	if got := scAdmit(t, s, fx.event(t, fx.outsider, 7, ttE(late.ID))); got != "" {
		t.Errorf("reaction to an unknown target: scope %q", got)
	}
	fx.public(t, early.ID)
	ttIngest(t, s, late)
	fx.private(t, late.ID)
	fx.private(t, early.ID)
	// Not adopted: a reaction whose last e tag names another event, and
	// one with its own channel.
	fx.public(t, earlyLastOpen.ID)
	fx.public(t, earlyNotLast.ID)
	fx.public(t, earlyWithH.ID)

	// The member's reactions, as non-members see them by kind and author:
	// the public ones only, by Query and Count.
	public := testutil.IDs(r4, earlyLastOpen, earlyNotLast, earlyWithH)
	f := nostr.Filter{Kinds: []int{7}, Authors: []string{fx.member.PK}}
	for _, v := range fx.nonReaders {
		if got := QueryIDs(t, s, f, v); !testutil.SameSet(got, public) {
			t.Errorf("%q reads the member's reactions %v, want %v", v, got, public)
		}
		if n := Count(t, s, f, v); n != int64(len(public)) {
			t.Errorf("%q counts %d of the member's reactions, want %d", v, n, len(public))
		}
	}
	if n := Count(t, s, f, fx.memberV); n != 7 {
		t.Errorf("the member counts %d of their reactions, want 7", n)
	}
}

// RL-6, RL-8, RL-13: a kind 5 without an h tag belongs to the channel of
// its targets; targets in two different channels refuse it (nothing
// deleted, nothing stored); targets without a channel do not count.
func testDeletionScope(t *testing.T, open Opener) {
	fx := newSCFixture(t, open)
	s := fx.s
	m := fx.member
	inPriv := fx.ingest(t, m, 9, ttH(ttChan))
	inPriv2 := fx.ingest(t, m, 9, ttH(ttChan))
	inOpen := fx.ingest(t, m, 9, ttH(ttChan2))
	inOpen2 := fx.ingest(t, m, 9, ttH(ttChan2))
	free := fx.ingest(t, m, 1)
	free2 := fx.ingest(t, m, 1)

	chReject(t, s, fx.event(t, m, 5, ttE(inPriv.ID), ttE(inOpen.ID)), buzz.ErrCrossChannelDeletion)
	chReject(t, s, fx.event(t, m, 5, ttE(free.ID), ttE(inOpen.ID), ttE(inPriv.ID)), buzz.ErrCrossChannelDeletion)
	fx.private(t, inPriv.ID)
	fx.public(t, inOpen.ID)
	fx.public(t, free.ID)

	// One channel (with an event without a channel): that channel's scope.
	d1 := fx.event(t, m, 5, ttE(inPriv.ID), ttE(free.ID))
	if got := scAdmit(t, s, d1); got != ttChan {
		t.Errorf("deletion in the private channel: scope %q, want %q", got, ttChan)
	}
	fx.private(t, d1.ID)
	for _, id := range []string{inPriv.ID, free.ID} {
		if !ttMustRead(t, s, id).Deleted {
			t.Errorf("target %s not deleted", id[:8])
		}
	}
	d2 := fx.event(t, m, 5, ttE(inOpen.ID))
	if got := scAdmit(t, s, d2); got != ttChan2 {
		t.Errorf("deletion in the open channel: scope %q, want %q", got, ttChan2)
	}
	fx.public(t, d2.ID)
	d3 := fx.event(t, m, 5, ttE(free2.ID))
	if got := scAdmit(t, s, d3); got != "" {
		t.Errorf("deletion of a channel-less event: scope %q", got)
	}
	fx.public(t, d3.ID)
	// Targets not stored do not count; a deleted target still does.
	notStored := "00" + inOpen2.ID[2:]
	if notStored == inOpen2.ID { // one id in 256 begins 00 already
		notStored = "ff" + inOpen2.ID[2:]
	}
	d4 := fx.event(t, m, 5, ttE(inPriv2.ID), ttE(inPriv.ID), ttE(notStored))
	if got := scAdmit(t, s, d4); got != ttChan {
		t.Errorf("deletion in the private channel: scope %q, want %q", got, ttChan)
	}
	fx.private(t, d4.ID)
	// A deletion with an h tag is in that channel.
	d5 := fx.event(t, m, 5, ttH(ttChan2), ttE(inOpen2.ID))
	if got := scAdmit(t, s, d5); got != ttChan2 {
		t.Errorf("deletion with an h tag: scope %q, want %q", got, ttChan2)
	}
}

// RL-13: the scope applies whatever drives the query: an ids-only filter
// and an #e-only filter for a private event return nothing to non-members
// and the event to members; Count agrees.
func testQueryScopeFilters(t *testing.T, open Opener) {
	fx := newSCFixture(t, open)
	s := fx.s
	root := fx.privMsg
	reply := fx.ingest(t, fx.member, 9, ttH(ttChan), ttReplyTag(root.ID), nostr.Tag{"p", fx.owner.PK})
	openRef := fx.ingest(t, fx.outsider, 1, ttE(root.ID)) // a public event naming it
	for _, c := range []struct {
		name           string
		f              nostr.Filter
		member, others []string
	}{
		{"ids", nostr.Filter{IDs: []string{root.ID, reply.ID}}, testutil.IDs(reply, root), nil},
		{"ids mixed case", nostr.Filter{IDs: []string{qtMixedCase(reply.ID)}}, testutil.IDs(reply), nil},
		{"#e", nostr.Filter{Tags: nostr.TagMap{"e": {root.ID}}}, testutil.IDs(openRef, reply), testutil.IDs(openRef)},
		{"#e with kind", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"e": {root.ID}}}, testutil.IDs(reply), nil},
		{"#e two values", nostr.Filter{Tags: nostr.TagMap{"e": {root.ID, reply.ID}}}, testutil.IDs(openRef, reply), testutil.IDs(openRef)},
		{"#p", nostr.Filter{Tags: nostr.TagMap{"p": {fx.owner.PK}}}, testutil.IDs(reply), nil},
		{"#h", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ttChan}}}, testutil.IDs(reply, root), nil},
		{"author", nostr.Filter{Authors: []string{fx.member.PK}}, testutil.IDs(reply), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range fx.everyone {
				want := c.others
				if v != buzz.Anonymous && v != fx.outV {
					want = c.member
				}
				got := QueryIDs(t, s, c.f, v)
				if !testutil.SameSet(got, want) {
					t.Errorf("%q: Query %v, want %v", v, got, want)
				}
				if n := Count(t, s, c.f, v); n != int64(len(want)) {
					t.Errorf("%q: Count %d, want %d", v, n, len(want))
				}
			}
		})
	}
	// Removed from the channel, the member reads none of it any more.
	fx.ingest(t, fx.owner, 9001, ttH(ttChan), nostr.Tag{"p", fx.member.PK})
	if got := QueryIDs(t, s, nostr.Filter{IDs: []string{root.ID, reply.ID}}, fx.memberV); len(got) != 0 {
		t.Errorf("removed member reads %d events", len(got))
	}
	if n := Count(t, s, nostr.Filter{Tags: nostr.TagMap{"e": {root.ID}}}, fx.memberV); n != 1 {
		t.Errorf("removed member counts %d events by #e, want 1", n)
	}
}

// CW-18, RL-20, RL-29: a channel-less aux event is served on rows of open
// channels only. On a private channel's rows, the window and the thread
// path with include_aux serve only aux events stored in that channel: not
// a non-member's reaction, edit or deletion naming a private message
// (stored without a channel, as if the target did not exist), not a
// member's reaction whose last e tag leaves it channel-less, not one
// stored in another channel, nor a channel-less deletion of those; the
// open channel's rows serve a channel-less reaction as before, until the
// channel becomes private (its cached page too).
func testAuxChannellessOpenOnly(t *testing.T, open Opener) {
	fx := newSCFixture(t, open)
	s := fx.s
	ctx := context.Background()
	// Naming the private message: the member's own reaction (in the
	// channel) is served; the rest is not.
	inPriv := fx.ingest(t, fx.member, 7, ttE(fx.privMsg.ID))
	stranger := fx.ingest(t, fx.outsider, 7, ttE(fx.privMsg.ID))
	fx.ingest(t, fx.outsider, 5, ttE(fx.privMsg.ID))
	fx.ingest(t, fx.outsider, 5, ttE(stranger.ID))
	fx.ingest(t, fx.member, 7, ttE(fx.privMsg.ID), ttE(fx.noChan.ID))
	fx.ingest(t, fx.member, 7, ttH(ttChan2), ttE(fx.privMsg.ID))
	// Naming the open message: a channel-less reaction (its last e tag
	// names the channel-less note) is served.
	channelless := fx.event(t, fx.outsider, 7, ttE(fx.openMsg.ID), ttE(fx.noChan.ID))
	if got := scAdmit(t, s, channelless); got != "" {
		t.Fatalf("fixture: the reaction is not channel-less (scope %q)", got)
	}
	inOpen := fx.ingest(t, fx.outsider, 7, ttE(fx.openMsg.ID))
	onOpen := testutil.IDs(inOpen, channelless)
	for _, v := range fx.readers {
		for _, c := range []struct {
			channel string
			root    *nostr.Event
			want    []string
		}{
			{ttChan, fx.privMsg, testutil.IDs(inPriv)},
			{ttChan2, fx.openMsg, onOpen},
		} {
			page, err := s.Window(ctx, buzz.WindowQuery{Channel: c.channel, Viewer: v, Limit: 10, Aux: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := rawIDs(page.Aux); !testutil.SameSet(got, c.want) {
				t.Errorf("viewer %.8s: window of %s serves aux %v, want %v", v, c.channel, short(got), short(c.want))
			}
			th, err := s.Thread(ctx, buzz.ThreadQuery{Root: c.root.ID, Viewer: v, DepthLimit: 3, Limit: 10, Aux: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := rawIDs(th.Aux); !testutil.SameSet(got, c.want) {
				t.Errorf("viewer %.8s: thread of the %s message serves aux %v, want %v", v, c.channel, short(got), short(c.want))
			}
		}
	}
	// The open channel's page, served from a cache above, stops serving
	// the channel-less reaction once the channel is private.
	fx.ingest(t, fx.owner, 9002, ttH(ttChan2), nostr.Tag{"private"})
	page, err := s.Window(ctx, buzz.WindowQuery{Channel: ttChan2, Viewer: fx.ownerV, Limit: 10, Aux: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rawIDs(page.Aux), testutil.IDs(inOpen); !testutil.SameSet(got, want) {
		t.Errorf("window of the channel made private serves aux %v, want %v", short(got), short(want))
	}
}

func rawIDs(evs []buzz.RawEvent) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}
