package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// NIP-29 as its clients read it (RL-36): a member's second join, the
// membership events the relay issues for joins and leaves, and invite
// codes. Helpers start with "iv".

// ivNow is the store's clock in these tests: later than every event's
// date, so that what the relay dates by its clock is told apart.
const ivNow = chT + 1000

// ivIssued are the relay's own events of kind in channel h, as v reads them.
func ivIssued(t testing.TB, s Store, relayPK, h string, kind int, v buzz.Viewer) []*nostr.Event {
	t.Helper()
	evs, err := s.Query(context.Background(), nostr.Filter{Kinds: []int{kind}, Authors: []string{relayPK},
		Tags: nostr.TagMap{"h": {h}}}, v)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// ivExpectIssued requires the one relay event of kind in channel h that
// answers request req: dated by the store's clock, naming its author with
// tag user and the request with an `e` tag, and handed to OnPublish.
func ivExpectIssued(t testing.TB, s Store, pub *chPublished, relayPK, h string, kind int, req *nostr.Event, user nostr.Tag) *nostr.Event {
	t.Helper()
	var mine []*nostr.Event
	for _, ev := range ivIssued(t, s, relayPK, h, kind, buzz.Viewer(req.PubKey)) {
		if ev.Tags.FindWithValue("e", req.ID) != nil {
			mine = append(mine, ev)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("relay's %d for request %.8s: %d stored, want 1", kind, req.ID, len(mine))
	}
	ev := mine[0]
	want := nostr.Tags{{"h", h}, user, {"e", req.ID}}
	if ok, err := ev.CheckSignature(); !ok || err != nil || ev.PubKey != relayPK || int64(ev.CreatedAt) != ivNow ||
		chTags(ev.Tags...) != chTags(want...) {
		t.Fatalf("relay's %d: by %.8s at %d, tags %v, signature %v %v; want the relay's at %d, tags %v",
			kind, ev.PubKey, ev.CreatedAt, ev.Tags, ok, err, ivNow, want)
	}
	if !slices.ContainsFunc(pub.take(), func(p *nostr.Event) bool { return p.ID == ev.ID }) {
		t.Fatalf("relay's %d not published after the commit", kind)
	}
	return ev
}

// RL-36: a member's second 9021 is refused with exactly "duplicate:
// already a member" and leaves everything as it was; to anyone who may
// not read a private channel, a join answers as before, as for a channel
// that does not exist (RL-29).
func testJoinDuplicate(t *testing.T, open Opener) {
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey()})
	sg := testutil.SortedSigners(t, 3)
	owner, member, outsider := sg[0], sg[1], sg[2]
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan)))
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan2), nostr.Tag{"private"}))
	ttIngest(t, s, member.Event(t, 9021, chT+1, "", ttH(ttChan)))
	ttIngest(t, s, owner.Event(t, 9000, chT+1, "", ttH(ttChan2), nostr.Tag{"p", member.PK}))
	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"member joins an open channel again", member.Event(t, 9021, chT+2, "", ttH(ttChan)), buzz.ErrAlreadyMember},
		{"owner joins", owner.Event(t, 9021, chT+2, "", ttH(ttChan)), buzz.ErrAlreadyMember},
		{"member joins a private channel again", member.Event(t, 9021, chT+2, "", ttH(ttChan2)), buzz.ErrAlreadyMember},
		{"outsider joins a private channel", outsider.Event(t, 9021, chT+2, "", ttH(ttChan2)), buzz.ErrCannotJoin},
	} {
		t.Run(c.name, func(t *testing.T) { chReject(t, s, c.ev, c.want) })
	}
	if got := buzz.ErrAlreadyMember.Error(); got != "duplicate: already a member" {
		t.Fatalf("wire text %q", got)
	}
}

// RL-36: an accepted 9021 makes the relay issue a 9000 put-user naming
// the joiner as member, a 9022 a 9001 remove-user; signed by the relay
// key, dated by the store's clock, stored in the channel (read as its
// events are: anyone on an open channel, members on a private one) and
// published after the commit. It passes a write policy that would refuse
// its kind, and changes no membership again: the channel's members and
// last message are what the join and leave made them. Without a relay key
// no such event is issued.
func testIssuedMembershipEvents(t *testing.T, open Opener) {
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	policy := buzz.DefaultPolicy()
	policy.Kinds = map[int]bool{9: true, 9007: true, 9009: true, 9021: true, 9022: true}
	s := open(t, Config{RelayKey: relayKey, Now: testutil.NewClock(ivNow).Now, Policy: &policy})
	var pub chPublished
	s.OnPublish(pub.add)
	sg := testutil.SortedSigners(t, 3)
	owner, joiner, outsider := sg[0], sg[1], sg[2]
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan)))
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan2), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9009, chT, "", ttH(ttChan2), nostr.Tag{"code", "c"}))
	ttIngest(t, s, owner.Event(t, 9, chT+1, "hello", ttH(ttChan)))
	pub.take()
	before, err := s.ChannelsByActivity(context.Background(), nil, 10)
	if err != nil {
		t.Fatal(err)
	}

	join := ttIngest(t, s, joiner.Event(t, 9021, chT+2, "", ttH(ttChan)))
	put := ivExpectIssued(t, s, &pub, relayPK, ttChan, 9000, join, nostr.Tag{"p", joiner.PK, "member"})
	if !Sees(t, s, buzz.Anonymous, put.ID) {
		t.Error("the relay's 9000 of an open channel is not read by anyone")
	}
	leave := ttIngest(t, s, joiner.Event(t, 9022, chT+3, "", ttH(ttChan)))
	ivExpectIssued(t, s, &pub, relayPK, ttChan, 9001, leave, nostr.Tag{"p", joiner.PK})
	// Join, leave and join within one second: three events of their own.
	again := ttIngest(t, s, joiner.Event(t, 9021, chT+4, "", ttH(ttChan)))
	ivExpectIssued(t, s, &pub, relayPK, ttChan, 9000, again, nostr.Tag{"p", joiner.PK, "member"})
	if n := len(ivIssued(t, s, relayPK, ttChan, 9000, buzz.Anonymous)); n != 2 {
		t.Errorf("relay's 9000s of the open channel: %d, want 2", n)
	}
	chExpect(t, s, ttChan, chWant(true, "", "", false, false,
		map[string]buzz.Role{owner.PK: buzz.RoleOwner, joiner.PK: buzz.RoleMember}))
	after, err := s.ChannelsByActivity(context.Background(), nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("channels by activity %v after joins, was %v", after, before)
	}

	// A private channel's: its members read it, a stranger does not.
	invited := ttIngest(t, s, outsider.Event(t, 9021, chT+5, "", ttH(ttChan2), nostr.Tag{"code", "c"}))
	put = ivExpectIssued(t, s, &pub, relayPK, ttChan2, 9000, invited, nostr.Tag{"p", outsider.PK, "member"})
	if Sees(t, s, buzz.Viewer(joiner.PK), put.ID) || Sees(t, s, buzz.Anonymous, put.ID) {
		t.Error("the relay's 9000 of a private channel read by a non-member")
	}

	bare := open(t, Config{})
	ttIngest(t, bare, owner.Event(t, 9007, chT, "", ttH(ttChan)))
	ttIngest(t, bare, joiner.Event(t, 9021, chT+1, "", ttH(ttChan)))
	ttIngest(t, bare, joiner.Event(t, 9022, chT+2, "", ttH(ttChan)))
	if n := held(t, bare, nostr.Filter{Kinds: []int{9000, 9001}}); n != 0 {
		t.Errorf("without a relay key: %d membership events issued", n)
	}
}

// RL-36, RL-10: a 9009 by an owner or admin gives its channel a code (and
// a 39000 without `closed`); anyone else is refused as for a 9002; a 9005
// of the 9009, by an admin, or a kind 5 by its author revokes the code
// (`closed` again once none is left).
func testInvites(t *testing.T, open Opener) {
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := open(t, Config{RelayKey: relayKey, Now: testutil.NewClock(ivNow).Now})
	sg := testutil.SortedSigners(t, 5)
	owner, admin, member, outsider, guest := sg[0], sg[1], sg[2], sg[3], sg[4]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}
	code := func(c string) nostr.Tag { return nostr.Tag{"code", c} }
	for _, h := range []string{ttChan, ttChan2} {
		ttIngest(t, s, ev(owner, 9007, ttH(h)))
		ttIngest(t, s, ev(owner, 9000, ttH(h), nostr.Tag{"p", admin.PK, "admin"}, nostr.Tag{"p", member.PK}))
	}
	ttIngest(t, s, ev(owner, 9002, ttH(ttChan), nostr.Tag{"private"}))
	closed := func() bool {
		t.Helper()
		tags := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(owner.PK))[39000].Tags
		return slices.ContainsFunc(tags, func(tag nostr.Tag) bool { return len(tag) == 1 && tag[0] == "closed" })
	}
	if !closed() {
		t.Fatalf("a private channel without codes: 39000 %v, not closed", chGroupState(t, s, ttChan, relayPK, buzz.Viewer(owner.PK))[39000].Tags)
	}

	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"by a member", ev(member, 9009, ttH(ttChan), code("m")), buzz.ErrNotChannelAdmin},
		{"by an outsider of an open channel", ev(outsider, 9009, ttH(ttChan2), code("o")), buzz.ErrNotChannelAdmin},
		{"by an outsider of a private channel, as for none (RL-29)", ev(outsider, 9009, ttH(ttChan), code("o")), buzz.ErrChannelNotFound},
		{"no code", ev(owner, 9009, ttH(ttChan)), buzz.ErrInviteCode},
		{"two codes", ev(owner, 9009, ttH(ttChan), code("a"), code("b")), buzz.ErrInviteCode},
		{"code too long", ev(owner, 9009, ttH(ttChan), code(string(make([]byte, buzz.MaxInviteCode+1)))), buzz.ErrInviteCode},
	} {
		t.Run(c.name, func(t *testing.T) { chReject(t, s, c.ev, c.want) })
	}

	byOwner := ttIngest(t, s, ev(owner, 9009, ttH(ttChan), code("one")))
	byAdmin := ttIngest(t, s, ev(admin, 9009, ttH(ttChan), code("two")))
	if n := s.Community().Channel(ttChan).Invites; n != 2 || closed() {
		t.Fatalf("after two 9009s: %d live codes, closed %v", n, closed())
	}
	ttIngest(t, s, ev(guest, 9021, ttH(ttChan), code("one")))
	ttIngest(t, s, ev(guest, 9022, ttH(ttChan)))

	ttIngest(t, s, ev(admin, 9005, ttH(ttChan), ttE(byOwner.ID)))
	Reject(t, s, ev(guest, 9021, ttH(ttChan), code("one")), buzz.ErrCannotJoin)
	if n := s.Community().Channel(ttChan).Invites; n != 1 || closed() {
		t.Fatalf("after one revocation: %d live codes, closed %v", n, closed())
	}
	ttIngest(t, s, ev(admin, 5, ttE(byAdmin.ID)))
	Reject(t, s, ev(guest, 9021, ttH(ttChan), code("two")), buzz.ErrCannotJoin)
	if n := s.Community().Channel(ttChan).Invites; n != 0 || !closed() {
		t.Fatalf("after both revocations: %d live codes, closed %v", n, closed())
	}
}

// RL-36, RL-29: the access matrix of joins to a private channel: without
// a code, with a wrong one, a revoked one, an expired one, another
// channel's, or to a channel that does not exist, a stranger's 9021 gets
// one answer, the same text, and changes nothing; only a live code of the
// channel lets them in.
func testInviteAccessMatrix(t *testing.T, open Opener) {
	clock := testutil.NewClock(ivNow)
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey(), Now: clock.Now})
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	code := func(c string) nostr.Tag { return nostr.Tag{"code", c} }
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan2), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), code("live")))
	gone := ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), code("gone")))
	ttIngest(t, s, owner.Event(t, 9005, chT+2, "", ttH(ttChan), ttE(gone.ID)))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), code("expired"), nostr.Tag{"expiration", fmt.Sprint(ivNow + 5)}))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan2), code("elsewhere")))
	clock.Set(ivNow + 5)

	at := chT + 10
	join := func(h string, tags ...nostr.Tag) *nostr.Event {
		at++
		return stranger.Event(t, 9021, at, "", append([]nostr.Tag{ttH(h)}, tags...)...)
	}
	for _, c := range []struct {
		name string
		ev   *nostr.Event
	}{
		{"no code", join(ttChan)},
		{"wrong code", join(ttChan, code("guess"))},
		{"revoked code", join(ttChan, code("gone"))},
		{"expired code", join(ttChan, code("expired"))},
		{"another channel's code", join(ttChan, code("elsewhere"))},
		{"code of another letter case", join(ttChan, code("LIVE"))},
		{"empty code", join(ttChan, code(""))},
		{"channel that does not exist", join(chC4, code("live"))},
	} {
		t.Run(c.name, func(t *testing.T) { chReject(t, s, c.ev, buzz.ErrCannotJoin) })
	}
	ttIngest(t, s, join(ttChan, code("live")))
	if r := s.Community().Channel(ttChan).Members[stranger.PK]; r != buzz.RoleMember {
		t.Fatalf("joined with a live code: role %v", r)
	}
	if r := s.Community().Channel(ttChan2).Members[stranger.PK]; r != buzz.RoleNone {
		t.Fatalf("a code of one channel let them into another: role %v", r)
	}
}

// RL-36, RL-22: the purge of an expired 9009 revokes its code as a
// deletion does: the channel counts no live code, and a private channel
// left without one is closed in a new 39000, which a restart keeps. Until
// the purge the expired 9009 counts for `closed` but lets no one in.
func testInvitePurged(t *testing.T, open Opener) {
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	clock := testutil.NewClock(ivNow)
	cfg := Config{RelayKey: relayKey, Now: clock.Now}
	s := open(t, cfg)
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), nostr.Tag{"code", "c"}, nostr.Tag{"expiration", fmt.Sprint(ivNow + 5)}))
	closed := func() (bool, *nostr.Event) {
		t.Helper()
		meta := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(owner.PK))[39000]
		return slices.ContainsFunc(meta.Tags, func(tag nostr.Tag) bool { return len(tag) == 1 && tag[0] == "closed" }), meta
	}
	if c, _ := closed(); c || s.Community().Channel(ttChan).Invites != 1 {
		t.Fatalf("with a live code: closed %v, %d codes", c, s.Community().Channel(ttChan).Invites)
	}
	clock.Set(ivNow + 5)
	Reject(t, s, stranger.Event(t, 9021, chT+2, "", ttH(ttChan), nostr.Tag{"code", "c"}), buzz.ErrCannotJoin)
	_, before := closed()
	clock.Set(ivNow + 60)
	if n, err := s.PurgeExpired(context.Background()); err != nil || n != 1 {
		t.Fatalf("purge: %d removed, %v; want 1", n, err)
	}
	ch := s.Community().Channel(ttChan)
	if c, meta := closed(); ch.Invites != 0 || !ch.Closed() || !c || meta.ID == before.ID || int64(meta.CreatedAt) <= int64(before.CreatedAt) {
		t.Fatalf("after the purge: %d codes, Closed %v, 39000 %v at %d (before: %s at %d); want none, closed, a new 39000 with closed",
			ch.Invites, ch.Closed(), meta.Tags, meta.CreatedAt, before.ID, before.CreatedAt)
	}
	s = s.Reopen(t, cfg)
	if ch := s.Community().Channel(ttChan); ch.Invites != 0 || !ch.Closed() {
		t.Fatalf("after a restart: %d codes, Closed %v", ch.Invites, ch.Closed())
	}
}

// RL-36, RL-27a: a join reads at most buzz.InviteLookups of the 9009s of
// its code, the newest first: behind that many expired ones, an older
// live 9009 lets no one in until the purge takes them away (within
// buzz.PurgeEvery), and then it does.
func testInviteLookupsBound(t *testing.T, open Opener) {
	clock := testutil.NewClock(ivNow)
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey(), Now: clock.Now})
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	code := nostr.Tag{"code", "c"}
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), code))
	for i := range buzz.InviteLookups {
		ttIngest(t, s, owner.Event(t, 9009, chT+2+int64(i), "", ttH(ttChan), code, nostr.Tag{"expiration", fmt.Sprint(ivNow + 5)}))
	}
	clock.Set(ivNow + 5)
	Reject(t, s, stranger.Event(t, 9021, chT+20, "", ttH(ttChan), code), buzz.ErrCannotJoin)
	if n, err := s.PurgeExpired(context.Background()); err != nil || n != buzz.InviteLookups {
		t.Fatalf("purge: %d removed, %v; want %d", n, err, buzz.InviteLookups)
	}
	ttIngest(t, s, stranger.Event(t, 9021, chT+21, "", ttH(ttChan), code))
	if ch := s.Community().Channel(ttChan); ch.Members[stranger.PK] != buzz.RoleMember || ch.Invites != 1 {
		t.Fatalf("joined with the live code: role %v, %d codes; want member, 1", ch.Members[stranger.PK], ch.Invites)
	}
}

// RL-25, RL-36: an export writes the relay's 9000 and 9001 as the other
// moderation events, and a deleted 9009 with its deletion; an import into
// a store of the same relay key keeps them as they are, issues none of its
// own (no doubles), and gives the same members and codes.
func testExportIssuedMembership(t *testing.T, open Opener) {
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := open(t, Config{RelayKey: relayKey, Now: testutil.NewClock(ivNow).Now})
	owner, joiner := testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"private"}))
	gone := ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), nostr.Tag{"code", "gone"}))
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), nostr.Tag{"code", "kept"}))
	ttIngest(t, s, owner.Event(t, 9005, chT+2, "", ttH(ttChan), ttE(gone.ID)))
	ttIngest(t, s, joiner.Event(t, 9021, chT+3, "", ttH(ttChan), nostr.Tag{"code", "kept"}))
	ttIngest(t, s, joiner.Event(t, 9022, chT+4, "", ttH(ttChan)))
	ttIngest(t, s, joiner.Event(t, 9021, chT+5, "", ttH(ttChan), nostr.Tag{"code", "kept"}))

	for _, f := range []buzz.ExportFilter{{}, {Channel: ttChan}} {
		got := exportLines(t, s, f)
		kinds := map[int]int{}
		for _, ev := range got {
			if ev.PubKey == relayPK {
				kinds[ev.Kind]++
			}
		}
		if kinds[9000] != 2 || kinds[9001] != 1 || !slices.ContainsFunc(got, func(ev *nostr.Event) bool { return ev.ID == gone.ID }) {
			t.Fatalf("export %+v: the relay's events by kind %v, deleted 9009 exported %v; want two 9000s, one 9001, the 9009",
				f, kinds, slices.ContainsFunc(got, func(ev *nostr.Event) bool { return ev.ID == gone.ID }))
		}
		if f.Channel != "" {
			continue
		}
		copied := open(t, Config{RelayKey: relayKey, Now: testutil.NewClock(ivNow + 10).Now})
		for i, err := range imImport(t, copied, got) {
			if err != nil {
				t.Fatalf("import of %d (kind %d): %v", i, got[i].Kind, err)
			}
		}
		if err := copied.RenewGroupState(context.Background()); err != nil {
			t.Fatal(err)
		}
		if a, b := ChannelState(copied.Community().Channel(ttChan)), ChannelState(s.Community().Channel(ttChan)); a != b {
			t.Fatalf("imported channel %s, source %s", a, b)
		}
		if n := held(t, copied, nostr.Filter{Kinds: []int{9000, 9001}, Authors: []string{relayPK}}); n != 3 {
			t.Fatalf("after the import: %d membership events of the relay, want the source's 3", n)
		}
	}
}

// RL-25, RL-36: an import keeps the members an invite code let in, as the
// relay's own 9000 records them, even where the import judges their join
// again and refuses it: a join dated in the second of its code's 9009, one
// dated before it (the joiner's clock behind), a code expired by the time
// of the import. Their posts are imported with them.
func testImportInvitedMembers(t *testing.T, open Opener) {
	relayKey := nostr.GeneratePrivateKey()
	clock := testutil.NewClock(chT)
	s := open(t, Config{RelayKey: relayKey, Now: clock.Now})
	owner, early, skewed := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"private"}))
	clock.Set(chT + 1)
	ttIngest(t, s, owner.Event(t, 9009, chT+1, "", ttH(ttChan), nostr.Tag{"code", "c"},
		nostr.Tag{"expiration", strconv.FormatInt(chT+100, 10)}))
	ttIngest(t, s, early.Event(t, 9021, chT+1, "", ttH(ttChan), nostr.Tag{"code", "c"}))
	clock.Set(chT + 2)
	ttIngest(t, s, skewed.Event(t, 9021, chT, "", ttH(ttChan), nostr.Tag{"code", "c"}))
	clock.Set(chT + 3)
	posts := []*nostr.Event{
		ttIngest(t, s, early.Event(t, 9, chT+3, "in early", ttH(ttChan))),
		ttIngest(t, s, skewed.Event(t, 9, chT+3, "in late", ttH(ttChan))),
	}
	got := exportLines(t, s, buzz.ExportFilter{})
	copied := open(t, Config{RelayKey: relayKey, Now: testutil.NewClock(chT + 200).Now})
	imImport(t, copied, got)
	ch := copied.Community().Channel(ttChan)
	for _, who := range []testutil.Signer{early, skewed} {
		if ch == nil || ch.Members[who.PK] != buzz.RoleMember {
			t.Fatalf("imported channel %s: %s is no member", ChannelState(ch), who.PK)
		}
	}
	for _, p := range posts {
		if n := held(t, copied, nostr.Filter{IDs: []string{p.ID}}); n != 1 {
			t.Fatalf("the post %q of an invited member was not imported", p.Content)
		}
	}
}
