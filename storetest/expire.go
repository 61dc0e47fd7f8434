package storetest

// NIP-40 expiration (RL-22): refused when already expired, readable until it
// expires, hidden from every read from that second on, removed by
// PurgeExpired. The store's clock is Config.Now, moved by the test.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

func exTag(unix int64) nostr.Tag { return nostr.Tag{"expiration", strconv.FormatInt(unix, 10)} }

// exStart is where the store clock of every test here starts.
const exStart = qtT0 + 1000

// exOpen opens a fresh store whose clock starts at exStart.
func exOpen(t testing.TB, open Opener) (Store, *testutil.Clock) {
	t.Helper()
	clock := testutil.NewClock(exStart)
	return qtOpen(t, open, clock), clock
}

// exHeld reports whether the store keeps ev in any form.
func exHeld(t testing.TB, s Store, ev *nostr.Event) bool {
	t.Helper()
	return holds(t, s, ev.ID)
}

// exVerify runs the store's consistency check: no index entry outlives
// its event.
func exVerify(t testing.TB, s Store) {
	t.Helper()
	if err := Verify(context.Background(), s); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// NIP-40 (RL-22): an event whose expiration is not after the store's clock is
// refused with ErrExpired and nothing of it is stored.
func testExpireRefusedOnArrival(t *testing.T, open Opener) {
	now := exStart
	s, _ := exOpen(t, open)
	a := testutil.NewSigner(t)
	for _, tc := range []struct {
		name string
		exp  int64
	}{
		{"long ago", now - 86400},
		{"a second ago", now - 1},
		{"this very second", now},
		{"before its own created_at", qtT0 - 10},
		{"zero", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := a.Event(t, 1, qtT0, tc.name, exTag(tc.exp), nostr.Tag{"t", "exp"})
			if err := ingest(s, context.Background(), ev); !errors.Is(err, buzz.ErrExpired) {
				t.Fatalf("ingest: got %v, want ErrExpired", err)
			}
			if r, ok := buzz.AsRejection(ingest(s, context.Background(), ev)); !ok || r.Error() != "invalid: event has expired" {
				t.Errorf("rejection %v, want %q", r, "invalid: event has expired")
			}
			if exHeld(t, s, ev) {
				t.Errorf("expired event stored")
			}
		})
	}
	exVerify(t, s)
}

// NIP-40 (RL-22): an event that expires later is returned by every read
// until the clock reaches its expiration, then hidden from Query and Count
// while the store keeps it, then removed, index entries too, by
// PurgeExpired.
// Malformed expiration tags are ignored.
func testExpireLifecycle(t *testing.T, open Opener) {
	ctx := context.Background()
	s, clock := exOpen(t, open)
	a := testutil.NewSigner(t)
	const ch = "9a0c7d4e-3b2f-4c1a-8e5d-6f7a8b9c0d1e"

	soon := a.Event(t, 9, qtT0, "soon", exTag(exStart+100), nostr.Tag{"t", "exp"}, nostr.Tag{"h", ch})
	later := a.Event(t, 9, qtT0+1, "later", exTag(exStart+200), nostr.Tag{"t", "exp"}, nostr.Tag{"h", ch})
	never := a.Event(t, 9, qtT0+2, "never", nostr.Tag{"t", "exp"}, nostr.Tag{"h", ch})
	// Unparsable expiration tags are ignored.
	junk := a.Event(t, 9, qtT0+3, "junk", nostr.Tag{"expiration", "soon"}, nostr.Tag{"t", "exp"}, nostr.Tag{"h", ch})
	empty := a.Event(t, 9, qtT0+4, "empty", nostr.Tag{"expiration"}, nostr.Tag{"expiration", ""}, nostr.Tag{"t", "exp"}, nostr.Tag{"h", ch})
	qtIngest(t, s, soon, later, never, junk, empty)

	filters := []nostr.Filter{
		{Tags: nostr.TagMap{"t": {"exp"}}},
		{Tags: nostr.TagMap{"h": {ch}}},
		{Authors: []string{a.PK}},
		{Kinds: []int{9}},
		{IDs: testutil.IDs(soon, later, never, junk, empty)},
		{},
	}
	check := func(step string, want ...*nostr.Event) {
		t.Helper()
		ids := Ordered(want)
		for _, f := range filters {
			if got := QueryIDs(t, s, f, buzz.Anonymous); !slices.Equal(got, ids) {
				t.Errorf("%s: Query(%v) = %v, want %v", step, f, got, ids)
			}
			if n := Count(t, s, f, buzz.Anonymous); n != int64(len(want)) {
				t.Errorf("%s: Count(%v) = %d, want %d", step, f, n, len(want))
			}
		}
	}

	check("before", soon, later, never, junk, empty)
	clock.Set(exStart + 99)
	check("a second before expiry", soon, later, never, junk, empty)
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("purge before expiry: %d, %v; want 0", n, err)
	}
	clock.Set(exStart + 100)
	check("at expiry", later, never, junk, empty)
	if !exHeld(t, s, soon) {
		t.Errorf("before purge: the expired event is gone; want it kept until the purge")
	}
	// Submitting it again once expired: still the duplicate row, or refused
	// as expired; never readable.
	if err := ingest(s, ctx, soon); !errors.Is(err, buzz.ErrDuplicate) && !errors.Is(err, buzz.ErrExpired) {
		t.Errorf("resubmitted expired event: %v", err)
	}

	n, err := s.PurgeExpired(ctx)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1", n, err)
	}
	if exHeld(t, s, soon) {
		t.Errorf("after purge: the event is still stored")
	}
	exVerify(t, s)
	check("after purge", later, never, junk, empty)
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v; want 0", n, err)
	}
	// Once purged, the event is refused as expired.
	if err := ingest(s, ctx, soon); !errors.Is(err, buzz.ErrExpired) {
		t.Errorf("purged event again: %v, want ErrExpired", err)
	}

	clock.Set(exStart + 1_000_000)
	check("much later", never, junk, empty)
	if n, err := s.PurgeExpired(ctx); err != nil || n != 1 {
		t.Errorf("last purge: %d, %v; want 1", n, err)
	}
	for _, ev := range []*nostr.Event{later, never, junk, empty} {
		if held := exHeld(t, s, ev); held != (ev != later) {
			t.Errorf("event %q stored: %v, want %v", ev.Content, held, ev != later)
		}
	}
}

// NIP-40, RL-5: an expired thread root with replies is hidden and purged
// out of every read, but its row stays as the anchor of the replies, which
// remain readable; the purge does not find it again.
func testExpireRootWithReplies(t *testing.T, open Opener) {
	ctx := context.Background()
	s, clock := exOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "9a0c7d4e-3b2f-4c1a-8e5d-6f7a8b9c0d1f"
	root := a.Event(t, 9, qtT0, "root", exTag(exStart+10), nostr.Tag{"h", ch})
	qtIngest(t, s, root)
	reply := b.Event(t, 9, qtT0+1, "reply", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	qtIngest(t, s, reply)

	clock.Set(exStart + 10)
	if got := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(reply)) {
		t.Errorf("after expiry: got %v, want only the reply", got)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1", n, err)
	}
	if got := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous); !slices.Equal(got, testutil.IDs(reply)) {
		t.Errorf("after purge: got %v, want only the reply", got)
	}
	if n := Count(t, s, nostr.Filter{IDs: []string{root.ID}}, buzz.Anonymous); n != 0 {
		t.Errorf("purged root counted")
	}
	if !exHeld(t, s, root) {
		t.Errorf("root row removed although a reply hangs below it")
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v; want 0", n, err)
	}
	// A new reply to the expired root is refused like one to a deleted root.
	late := b.Event(t, 9, qtT0+2, "late", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	if err := ingest(s, ctx, late); !errors.Is(err, buzz.ErrParentNotFound) {
		t.Errorf("reply to a purged root: %v, want ErrParentNotFound", err)
	}
}

// NIP-40, RL-5, RL-7: an expired event that is not purged yet is hidden
// from every read, so nothing may reply to it, edit it or delete it by
// 9005 any more.
func testExpiredTargetsAreGone(t *testing.T, open Opener) {
	s, clock := exOpen(t, open)
	ctx := context.Background()
	a := testutil.NewSigner(t)
	ch := "11111111-1111-4111-8111-111111111111"
	parent := a.Event(t, 9, exStart, "soon gone", nostr.Tag{"h", ch}, exTag(exStart+10))
	if err := ingest(s, ctx, parent); err != nil {
		t.Fatal(err)
	}
	clock.Set(exStart + 10)
	for _, c := range []struct {
		ev   *nostr.Event
		want error
	}{
		{a.Event(t, 9, exStart+10, "reply", nostr.Tag{"h", ch}, nostr.Tag{"e", parent.ID, "", "reply"}), buzz.ErrParentNotFound},
		{a.Event(t, 40003, exStart+10, "edit", nostr.Tag{"h", ch}, nostr.Tag{"e", parent.ID}), buzz.ErrTargetNotFound},
		{a.Event(t, 9005, exStart+10, "", nostr.Tag{"h", ch}, nostr.Tag{"e", parent.ID}), buzz.ErrTargetNotFound},
	} {
		if err := ingest(s, ctx, c.ev); !errors.Is(err, c.want) {
			t.Errorf("kind %d: got %v, want %v", c.ev.Kind, err, c.want)
		}
	}
}
