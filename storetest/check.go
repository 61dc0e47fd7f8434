package storetest

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-33, RL-5, RL-3, issue 8: check passes on a store built by ingest and
// deletions, reports every damaged counter and tag index row, and repair
// restores exactly what ingest had built.
func testCheckAndRepair(t *testing.T, open Opener) {
	ctx := context.Background()
	s := ttOpen(t, open)
	evs := testutil.Threads(t, 80)
	qtIngest(t, s, evs...)
	a := testutil.NewSigner(t)
	qtIngest(t, s, a.Event(t, 1, 5000, "tagged", nostr.Tag{"t", "go"}, nostr.Tag{"p", a.PK}, nostr.Tag{"e", evs[0].ID}))
	// A thread of a's with some replies deleted, so that counters have been
	// decremented and recomputed too.
	ch := "44444444-4444-4444-8444-444444444444"
	root := a.Event(t, 9, 6000, "root", nostr.Tag{"h", ch})
	qtIngest(t, s, root)
	parent := root
	var replies []*nostr.Event
	for i := range 6 {
		r := a.Event(t, 9, int64(6001+i), "reply", nostr.Tag{"h", ch}, nostr.Tag{"e", parent.ID, "", "reply"})
		qtIngest(t, s, r)
		replies = append(replies, r)
		if i%2 == 1 {
			parent = r
		}
	}
	for _, r := range []*nostr.Event{replies[5], replies[2]} {
		qtIngest(t, s, a.Event(t, 5, 7000, "", nostr.Tag{"e", r.ID}))
	}
	rep, err := s.Check(ctx, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check of a healthy store: %+v %v", rep, err)
	}
	want := ttSnapshot(t, s)

	for _, harm := range []Harm{HarmReplyCount, HarmParticipants, HarmDropTags, HarmTagKind, HarmStrayTag} {
		if err := s.Damage(ctx, harm); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = s.Check(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Counters) != 2 || rep.MissingTags != 1 || rep.ExtraTags != 2 || rep.Repaired {
		t.Fatalf("check of a damaged store: %+v", rep)
	}
	if rep, err = s.Check(ctx, true); err != nil || !rep.Repaired {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err = s.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check after repair: %+v %v", rep, err)
	}
	SameSnapshot(t, "damage and repair", want, ttSnapshot(t, s))
}

// ckGroupStateSigners counts the group state in force (39000-39003) by
// signer.
func ckGroupStateSigners(t *testing.T, s Store) map[string]int {
	t.Helper()
	query := func(f nostr.Filter) ([]*nostr.Event, error) { return s.Query(context.Background(), f, buzz.Anonymous) }
	return testutil.Signers(t, query, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}})
}

// RL-33, RL-11, RL-21, issue 14: group state imported under one relay key
// and served under another is a finding of check; check --repair removes
// it and signs the channels' state with the store's key, after which
// check is clean; a store without a key reports the state and cannot
// repair it.
func testCheckGroupStateSigner(t *testing.T, open Opener) {
	ctx := context.Background()
	keyA, keyB := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	pkA, _ := nostr.GetPublicKey(keyA)
	pkB, _ := nostr.GetPublicKey(keyB)
	s := open(t, Config{RelayKey: keyA})
	owner := testutil.NewSigner(t)
	chans := []string{"55555555-5555-4555-8555-555555555555", "66666666-6666-4666-8666-666666666666"}
	var evs []*nostr.Event
	for i, ch := range chans {
		evs = append(evs, owner.Event(t, 9007, int64(1000+i), "", nostr.Tag{"h", ch}),
			owner.Event(t, 9, int64(1010+i), "hello", nostr.Tag{"h", ch}))
	}
	for i, err := range imImport(t, s, evs) {
		if err != nil {
			t.Fatalf("import of event %d: %v", i, err)
		}
	}
	if err := s.RenewGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ckGroupStateSigners(t, s); got[pkA] != 8 || len(got) != 1 {
		t.Fatalf("group state after the import under key A: %v", got)
	}
	if rep, err := s.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check under the key that signed: %+v, %v", rep, err)
	}

	s = s.Reopen(t, Config{})
	rep, err := s.Check(ctx, true)
	if err == nil || len(rep.GroupState) != 8 {
		t.Fatalf("check --repair without a relay key: %d findings, %v", len(rep.GroupState), err)
	}

	s = s.Reopen(t, Config{RelayKey: keyB})
	rep, err = s.Check(ctx, false)
	if err != nil || rep.OK() || len(rep.GroupState) != 8 {
		t.Fatalf("check under key B: %+v, %v", rep, err)
	}
	want := "kind 39000 of channel " + chans[0] + " is signed by " + pkA + ", not by the relay key " + pkB
	if rep.GroupState[0] != want {
		t.Errorf("finding %q, want %q", rep.GroupState[0], want)
	}
	if rep, err = s.Check(ctx, true); err != nil || !rep.Repaired {
		t.Fatalf("check --repair under key B: %+v, %v", rep, err)
	}
	if got := ckGroupStateSigners(t, s); got[pkB] != 8 || len(got) != 1 {
		t.Fatalf("group state after the repair: %v", got)
	}
	if rep, err := s.Check(ctx, false); err != nil || !rep.OK() {
		t.Fatalf("check after the repair: %+v, %v", rep, err)
	}

	// An import's renewal under another key replaces the state the same way.
	s = s.Reopen(t, Config{RelayKey: keyA})
	if err := s.RenewGroupState(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ckGroupStateSigners(t, s); got[pkA] != 8 || len(got) != 1 {
		t.Fatalf("group state after a renewal under key A: %v", got)
	}
}
