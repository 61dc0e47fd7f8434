package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// The group metadata of NIP-29 as its clients read it (RL-36): picture,
// the flags, 39003, subgroups. Helpers start with "sg".

// sgMetadata is the 39000 of channel h as v reads it, nil when v reads
// none.
func sgMetadata(t testing.TB, s Store, h string, v buzz.Viewer) *nostr.Event {
	t.Helper()
	evs, err := s.Query(context.Background(), nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}, Tags: nostr.TagMap{"d": {h}}}, v)
	if err != nil {
		t.Fatal(err)
	}
	switch len(evs) {
	case 0:
		return nil
	case 1:
		return evs[0]
	}
	t.Fatalf("%d 39000 of %s", len(evs), h)
	return nil
}

// sgExpectMetadata requires the 39000 of h, as the relay admin-free
// anonymous reader or v reads it, to carry exactly want after its d tag.
func sgExpectMetadata(t testing.TB, s Store, h string, v buzz.Viewer, want ...nostr.Tag) {
	t.Helper()
	ev := sgMetadata(t, s, h, v)
	if ev == nil {
		t.Fatalf("no 39000 of %s for %q", h, v)
	}
	if got, want := chTags(ev.Tags...), chTags(append([]nostr.Tag{{"d", h}}, want...)...); got != want {
		t.Fatalf("39000 of %s\n got  %s\n want %s", h, got, want)
	}
}

// RL-36: a 9007 or 9002 sets an http(s) picture, which the 39000 carries
// and a restart keeps; an empty one takes it away; a picture of another
// scheme refuses the event with its message and changes nothing.
func testGroupMetadataPicture(t *testing.T, open Opener) {
	cfg := Config{RelayKey: nostr.GeneratePrivateKey()}
	s := open(t, cfg)
	owner := testutil.NewSigner(t)
	const pic, pic2 = "https://example.com/pizza.png", "http://example.com/p.png"
	ttIngest(t, s, owner.Event(t, buzz.KindCreateChannel, chT, "", ttH(ttChan), nostr.Tag{"name", "Pizza"},
		nostr.Tag{"picture", pic}))
	sgExpectMetadata(t, s, ttChan, buzz.Anonymous, nostr.Tag{"name", "Pizza"}, nostr.Tag{"picture", pic},
		nostr.Tag{"about", ""}, nostr.Tag{"public"})
	for _, bad := range []string{"javascript:alert(1)", "data:image/png;base64,AAAA", "/relative.png", "ftp://example.com/x"} {
		chReject(t, s, owner.Event(t, buzz.KindEditMetadata, chT+1, "", ttH(ttChan), nostr.Tag{"picture", bad}), buzz.ErrPictureURL)
	}
	chReject(t, s, owner.Event(t, buzz.KindCreateChannel, chT+1, "", ttH(ttChan2), nostr.Tag{"picture", "file:///etc/passwd"}),
		buzz.ErrPictureURL)
	if got := buzz.ErrPictureURL.Error(); got != "invalid: picture must be an http(s) URL" {
		t.Fatalf("message %q", got)
	}
	ttIngest(t, s, owner.Event(t, buzz.KindEditMetadata, chT+2, "", ttH(ttChan), nostr.Tag{"picture", pic2}))
	s = chPersisted(t, s, cfg)
	sgExpectMetadata(t, s, ttChan, buzz.Anonymous, nostr.Tag{"name", "Pizza"}, nostr.Tag{"picture", pic2},
		nostr.Tag{"about", ""}, nostr.Tag{"public"})
	// A name-only edit (NDK's setMetadata) keeps it; an empty one clears it.
	ttIngest(t, s, owner.Event(t, buzz.KindEditMetadata, chT+3, "", ttH(ttChan), nostr.Tag{"name", "Pizza!"}))
	if got := s.Community().Channel(ttChan).Picture; got != pic2 {
		t.Fatalf("picture after a name edit: %q", got)
	}
	ttIngest(t, s, owner.Event(t, buzz.KindEditMetadata, chT+4, "", ttH(ttChan), nostr.Tag{"picture", ""}))
	sgExpectMetadata(t, s, ttChan, buzz.Anonymous, nostr.Tag{"name", "Pizza!"}, nostr.Tag{"about", ""}, nostr.Tag{"public"})
}

// RL-36: the flags of a 39000 are true to the configuration: with
// open_write off every channel is restricted, with allowed_kinds its
// supported_kinds lists them; a private channel is private, restricted,
// hidden (its non-members fetch no 39000) and closed.
func testGroupMetadataFlags(t *testing.T, open Opener) {
	admin, member := testutil.NewSigner(t), testutil.NewSigner(t)
	p := buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAnyone,
		Kinds: map[int]bool{9: true, 11: true, 1111: true, buzz.KindCreateChannel: true}}
	s := open(t, Config{Policy: &p, Admins: []string{admin.PK}, RelayKey: nostr.GeneratePrivateKey()})
	ttIngest(t, s, admin.Event(t, buzz.KindCreateChannel, chT, "", ttH(ttChan), nostr.Tag{"name", "open"}))
	ttIngest(t, s, admin.Event(t, buzz.KindCreateChannel, chT+1, "", ttH(ttChan2), nostr.Tag{"name", "closed"}, nostr.Tag{"private"}))
	ttIngest(t, s, admin.Event(t, buzz.KindPutUser, chT+2, "", ttH(ttChan2), nostr.Tag{"p", member.PK}))
	kinds := nostr.Tag{"supported_kinds", "9", "11", "1111", "9007"}
	sgExpectMetadata(t, s, ttChan, buzz.Anonymous, nostr.Tag{"name", "open"}, nostr.Tag{"about", ""}, nostr.Tag{"public"},
		nostr.Tag{"restricted"}, kinds)
	sgExpectMetadata(t, s, ttChan2, buzz.Viewer(member.PK), nostr.Tag{"name", "closed"}, nostr.Tag{"about", ""},
		nostr.Tag{"private"}, nostr.Tag{"restricted"}, nostr.Tag{"hidden"}, nostr.Tag{"closed"}, kinds)
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(testutil.NewSigner(t).PK)} {
		if ev := sgMetadata(t, s, ttChan2, v); ev != nil {
			t.Fatalf("%q fetched the 39000 of a hidden channel", v)
		}
	}
}

// RL-11, RL-36: a store's group state rendered under another open_write
// (or by an older renderer: none recorded) is renewed once when the relay
// starts, every channel's, and not again while nothing changed.
func testGroupStateRenewedOnChange(t *testing.T, open Opener) {
	ctx := context.Background()
	owner := testutil.NewSigner(t)
	cfg := Config{RelayKey: nostr.GeneratePrivateKey()}
	s := open(t, cfg)
	if err := s.RenewChangedGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	ttIngest(t, s, owner.Event(t, buzz.KindCreateChannel, chT, "", ttH(ttChan), nostr.Tag{"name", "a"}))
	ttIngest(t, s, owner.Event(t, buzz.KindCreateChannel, chT+1, "", ttH(ttChan2), nostr.Tag{"name", "b"}))
	before := sgMetadata(t, s, ttChan, buzz.Anonymous)
	if err := s.RenewChangedGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sgMetadata(t, s, ttChan, buzz.Anonymous); got.ID != before.ID {
		t.Fatal("an unchanged configuration renewed the group state")
	}
	closed := buzz.DefaultPolicy()
	closed.OpenWrite = false
	cfg.Policy = &closed
	s = s.Reopen(t, cfg)
	if err := s.RenewChangedGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{ttChan, ttChan2} {
		if ev := sgMetadata(t, s, h, buzz.Anonymous); !slices.ContainsFunc(ev.Tags, func(tag nostr.Tag) bool { return tag[0] == "restricted" }) {
			t.Fatalf("39000 of %s after open_write went off: %s", h, chTags(ev.Tags...))
		}
		if n := chGroupStateRows(t, s, h); n != 4 {
			t.Fatalf("%s: %d group state rows after the renewal", h, n)
		}
	}
	renewed := sgMetadata(t, s, ttChan, buzz.Anonymous)
	s = s.Reopen(t, cfg)
	if err := s.RenewChangedGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sgMetadata(t, s, ttChan, buzz.Anonymous); got.ID != renewed.ID {
		t.Fatal("a restart under the same configuration renewed the group state again")
	}
}

// RL-36, NIP-29 "Subgroups": a 9002 sets a parent the 39000 names, and
// clears it; a cycle (itself included) is refused; a missing parent, or
// a private one its author cannot read, makes a root, answered alike
// (RL-29); re-parenting is for the child's admins; a 9008 of the parent
// makes its children roots, their 39000 renewed; all of it survives a
// restart.
func testSubgroups(t *testing.T, open Opener) {
	cfg := Config{RelayKey: nostr.GeneratePrivateKey()}
	s := open(t, cfg)
	sg := testutil.SortedSigners(t, 3)
	owner, other, stranger := sg[0], sg[1], sg[2]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}
	const tech, nostrG, nip29, secret, missing = "tech", "nostr", "nip29", chC3, chC4
	for _, h := range []string{tech, nostrG, nip29} {
		ttIngest(t, s, ev(owner, buzz.KindCreateChannel, ttH(h), nostr.Tag{"name", h}))
	}
	ttIngest(t, s, ev(other, buzz.KindCreateChannel, ttH(secret), nostr.Tag{"private"}))
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nostrG), nostr.Tag{"parent", tech}))
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", nostrG}))
	base := []nostr.Tag{{"about", ""}, {"public"}}
	sgExpectMetadata(t, s, nostrG, buzz.Anonymous, append([]nostr.Tag{{"name", nostrG}}, append(base, nostr.Tag{"parent", tech})...)...)
	sgExpectMetadata(t, s, nip29, buzz.Anonymous, append([]nostr.Tag{{"name", nip29}}, append(base, nostr.Tag{"parent", nostrG})...)...)

	// Cycles: itself, its child, its grandchild.
	chReject(t, s, ev(owner, buzz.KindEditMetadata, ttH(tech), nostr.Tag{"parent", tech}), buzz.ErrParentCycle)
	chReject(t, s, ev(owner, buzz.KindEditMetadata, ttH(tech), nostr.Tag{"parent", nostrG}), buzz.ErrParentCycle)
	chReject(t, s, ev(owner, buzz.KindEditMetadata, ttH(tech), nostr.Tag{"parent", nip29}), buzz.ErrParentCycle)
	// Only the child's admins re-parent it.
	chReject(t, s, ev(stranger, buzz.KindEditMetadata, ttH(nostrG), nostr.Tag{"parent", ""}), buzz.ErrNotChannelAdmin)

	// A missing parent and a private one its author cannot read: both
	// accepted, both a root, the same 39000.
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", missing}))
	missingState := chTags(sgMetadata(t, s, nip29, buzz.Anonymous).Tags...)
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", nostrG}))
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", secret}))
	if got := chTags(sgMetadata(t, s, nip29, buzz.Anonymous).Tags...); got != missingState {
		t.Fatalf("a private parent answered unlike a missing one:\n %s\n %s", got, missingState)
	}
	sgExpectMetadata(t, s, nip29, buzz.Anonymous, append([]nostr.Tag{{"name", nip29}}, base...)...)
	// Its members may name it.
	ttIngest(t, s, ev(other, buzz.KindPutUser, ttH(secret), nostr.Tag{"p", owner.PK}))
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", secret}))
	sgExpectMetadata(t, s, nip29, buzz.Anonymous, append([]nostr.Tag{{"name", nip29}}, append(base, nostr.Tag{"parent", secret})...)...)
	// ["parent"] and ["parent", ""] make a root; no parent tag leaves it.
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent"}))
	if p := s.Community().Channel(nip29).Parent; p != 0 {
		t.Fatalf(`["parent"] left parent #%d`, p)
	}
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", nostrG}))
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"name", "NIP-29"}))
	if p := s.Community().Channel(nip29).Parent; p != s.Community().Channel(nostrG).Seq {
		t.Fatalf("a name edit moved the subgroup to #%d", p)
	}
	s = chPersisted(t, s, cfg)

	// Deleting nostr makes nip29 a root, its 39000 renewed; tech stays
	// untouched.
	ttIngest(t, s, ev(owner, buzz.KindDeleteChannel, ttH(nostrG)))
	sgExpectMetadata(t, s, nip29, buzz.Anonymous, append([]nostr.Tag{{"name", "NIP-29"}}, base...)...)
	if p := s.Community().Channel(nip29).Parent; p != 0 {
		t.Fatalf("the child of a deleted channel still names #%d", p)
	}
	s = chPersisted(t, s, cfg)
	if p := s.Community().Channel(nip29).Parent; p != 0 {
		t.Fatalf("after a restart the child of a deleted channel names #%d", p)
	}
	// A deleted channel is no parent.
	ttIngest(t, s, ev(owner, buzz.KindEditMetadata, ttH(nip29), nostr.Tag{"parent", nostrG}))
	sgExpectMetadata(t, s, nip29, buzz.Anonymous, append([]nostr.Tag{{"name", "NIP-29"}}, base...)...)
}

// RL-36, RL-27a, RL-29: anyone may attach subgroups to a channel they
// read, with no cap whose refusal would count its private ones; a
// subgroup deleted is no one's subgroup, also after a restart; a 9008 of
// the parent makes roots of buzz.OrphansRenewed of its subgroups at once,
// their 39000s renewed without it, and any further one renders no parent
// from its next change on.
func testSubgroupOrphansBounded(t *testing.T, open Opener) {
	cfg := Config{RelayKey: nostr.GeneratePrivateKey()}
	s := open(t, cfg)
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}
	const parent, loose, extra = "tech", "loose", 3
	ttIngest(t, s, ev(owner, buzz.KindCreateChannel, ttH(parent)))
	ttIngest(t, s, ev(stranger, buzz.KindCreateChannel, ttH(loose)))
	subs := buzz.OrphansRenewed + extra
	for i := range subs {
		ttIngest(t, s, ev(stranger, buzz.KindCreateChannel, ttH(fmt.Sprintf("sub%d", i)), nostr.Tag{"parent", parent}))
	}
	ttIngest(t, s, ev(stranger, buzz.KindEditMetadata, ttH(loose), nostr.Tag{"parent", parent}))
	ttIngest(t, s, ev(stranger, buzz.KindDeleteChannel, ttH("sub0")))
	s = chPersisted(t, s, cfg)
	if p := s.Community().Channel("sub0").Parent; p != 0 {
		t.Fatalf("a deleted subgroup still names parent #%d", p)
	}

	ttIngest(t, s, ev(owner, buzz.KindDeleteChannel, ttH(parent)))
	s = chPersisted(t, s, cfg)
	var kept []string
	for i := 1; i < subs; i++ {
		if h := fmt.Sprintf("sub%d", i); s.Community().Channel(h).Parent != 0 {
			kept = append(kept, h)
		}
	}
	if s.Community().Channel(loose).Parent != 0 {
		kept = append(kept, loose)
	}
	// subs-1 subgroups live, and loose: all but OrphansRenewed keep theirs.
	if len(kept) != subs-buzz.OrphansRenewed {
		t.Fatalf("%d subgroups still name the deleted parent, want %d", len(kept), subs-buzz.OrphansRenewed)
	}
	h := kept[0]
	ttIngest(t, s, ev(stranger, buzz.KindEditMetadata, ttH(h), nostr.Tag{"name", "renamed"}))
	sgExpectMetadata(t, s, h, buzz.Anonymous, nostr.Tag{"name", "renamed"}, nostr.Tag{"about", ""}, nostr.Tag{"public"})
}

// RL-12, RL-13, RL-36: read access stays per channel: a member of a
// private parent reads neither the events nor the group state of its
// private subgroup, and the subgroup's member none of the parent's.
func testSubgroupReadAccess(t *testing.T, open Opener) {
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey()})
	sg := testutil.SortedSigners(t, 3)
	owner, parentMember, childMember := sg[0], sg[1], sg[2]
	at := chT
	ev := func(sg testutil.Signer, kind int, content string, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, content, tags...)
	}
	ttIngest(t, s, ev(owner, buzz.KindCreateChannel, "", ttH(ttChan), nostr.Tag{"private"}))
	ttIngest(t, s, ev(owner, buzz.KindCreateChannel, "", ttH(ttChan2), nostr.Tag{"private"}, nostr.Tag{"parent", ttChan}))
	ttIngest(t, s, ev(owner, buzz.KindPutUser, "", ttH(ttChan), nostr.Tag{"p", parentMember.PK}))
	ttIngest(t, s, ev(owner, buzz.KindPutUser, "", ttH(ttChan2), nostr.Tag{"p", childMember.PK}))
	inParent := ttIngest(t, s, ev(parentMember, 9, "parent", ttH(ttChan)))
	inChild := ttIngest(t, s, ev(childMember, 9, "child", ttH(ttChan2)))
	if ch := s.Community().Channel(ttChan2); ch.Parent != s.Community().Channel(ttChan).Seq {
		t.Fatalf("the subgroup's parent is #%d", ch.Parent)
	}
	for _, c := range []struct {
		who  testutil.Signer
		h    string
		msg  *nostr.Event
		want bool
	}{
		{parentMember, ttChan, inParent, true},
		{parentMember, ttChan2, inChild, false},
		{childMember, ttChan2, inChild, true},
		{childMember, ttChan, inParent, false},
		{owner, ttChan2, inChild, true},
	} {
		v := buzz.Viewer(c.who.PK)
		n := Count(t, s, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {c.h}}}, v)
		if (n == 1) != c.want {
			t.Errorf("%.8s counts %d events of %s, want readable %v", c.who.PK, n, c.h[:8], c.want)
		}
		if got := sgMetadata(t, s, c.h, v) != nil; got != c.want {
			t.Errorf("%.8s reads the 39000 of %s: %v, want %v", c.who.PK, c.h[:8], got, c.want)
		}
		page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: c.h, Limit: 10, Viewer: v})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(page.Rows) == 1 && page.Rows[0].ID == c.msg.ID; got != c.want {
			t.Errorf("%.8s reads the window of %s: %v, want %v", c.who.PK, c.h[:8], got, c.want)
		}
	}
}
