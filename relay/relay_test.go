package relay

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-22 (NIP-01 EVENT/OK): a new event is acknowledged with OK true and
// stored; the same event again is a duplicate, also OK true, stored once.
func TestPublishAndDuplicate(t *testing.T) {
	s, c, a := startWithClient(t)
	ev := a.Event(t, 1, time.Now().Unix(), "hello")

	mustPublish(t, c, ev)
	mustPublish(t, c, ev) // duplicate: OK true

	got := fetch(t, c, nostr.Filter{IDs: []string{ev.ID}})
	if len(got) != 1 || got[0].ID != ev.ID || got[0].Content != "hello" {
		t.Fatalf("REQ by id: got %v", ids(got))
	}
	if ok, _ := got[0].CheckSignature(); !ok {
		t.Fatal("stored event comes back with a bad signature")
	}
	stored, err := s.store.Query(context.Background(), nostr.Filter{Authors: []string{a.PK}}, buzz.Anonymous)
	if err != nil || len(stored) != 1 {
		t.Fatalf("store has %d events of the author (err %v), want 1", len(stored), err)
	}
}

// RL-22 (NIP-01 REQ/EOSE): a REQ returns the stored matches, newest first,
// honours limit, and ends with EOSE.
func TestReqStoredThenEOSE(t *testing.T) {
	_, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	now := time.Now().Unix()
	var want []string
	for i := range 3 {
		ev := a.Event(t, 1, now-int64(10*(3-i)), "note")
		mustPublish(t, c, ev)
		want = append([]string{ev.ID}, want...) // newest first
	}
	mustPublish(t, c, b.Event(t, 1, now, "someone else"))

	got := fetch(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}})
	if !slices.Equal(ids(got), want) {
		t.Fatalf("REQ: got %v, want %v (newest first)", ids(got), want)
	}
	got = fetch(t, c, nostr.Filter{Authors: []string{a.PK}, Limit: 2})
	if !slices.Equal(ids(got), want[:2]) {
		t.Fatalf("REQ limit 2: got %v, want %v", ids(got), want[:2])
	}
	if got := fetch(t, c, nostr.Filter{Authors: []string{testutil.NewSigner(t).PK}}); len(got) != 0 {
		t.Fatalf("REQ for an unknown author: got %v", ids(got))
	}
}

// RL-22 (NIP-01 live REQ, CLOSE): an open subscription receives new
// matching events after EOSE; after CLOSE it receives nothing more.
func TestLiveDeliveryAndClose(t *testing.T) {
	s := startServer(t)
	sub := s.raw(t)
	pub := s.client(t)
	a := testutil.NewSigner(t)
	filter := `{"kinds":[1],"authors":["` + a.PK + `"]}`

	if evs, closed := sub.req("live", filter); len(evs) != 0 || closed != "" {
		t.Fatalf("empty REQ: %d events, closed %q", len(evs), closed)
	}
	ev1 := a.Event(t, 1, time.Now().Unix(), "live one")
	mustPublish(t, pub, ev1)
	msg := sub.await("live EVENT", func(m []json.RawMessage) bool { return label(m) == "EVENT" })
	var got nostr.Event
	if str(msg, 1) != "live" || json.Unmarshal(msg[2], &got) != nil || got.ID != ev1.ID {
		t.Fatalf("live delivery: got %s", joinRaw(msg))
	}

	// Nothing but the wanted event may match, so live delivery of a
	// non-matching event would show up as a wrong EVENT below.
	mustPublish(t, pub, testutil.NewSigner(t).Event(t, 1, time.Now().Unix(), "other author"))

	sub.send("CLOSE", "live")
	// khatru handles each message in its own goroutine, so the CLOSE is
	// only known to be handled once an event published later reaches a
	// probe subscription without reaching "live" (listeners are notified
	// in subscription order, "live" first). Retry a few times for the
	// scheduling race; a live subscription that survives CLOSE fails.
	if evs, closed := sub.req("probe", filter); len(evs) != 1 || closed != "" {
		t.Fatalf("probe REQ: %d events, closed %q", len(evs), closed)
	}
	for attempt := 0; ; attempt++ {
		ev := a.Event(t, 1, time.Now().Unix()+int64(attempt)+1, "after close")
		mustPublish(t, pub, ev)
		var leaked bool
		sub.await("probe EVENT", func(m []json.RawMessage) bool {
			if label(m) != "EVENT" {
				return false
			}
			switch str(m, 1) {
			case "live":
				leaked = true
				return false
			case "probe":
				return true
			}
			t.Fatalf("EVENT for unknown subscription: %s", joinRaw(m))
			return false
		})
		if !leaked {
			break
		}
		if attempt == 2 {
			t.Fatal("subscription still receives events after CLOSE")
		}
	}
}

// RL-22 (NIP-45 COUNT): COUNT answers the exact number of stored matches.
func TestCount(t *testing.T) {
	_, c, a := startWithClient(t)
	now := time.Now().Unix()
	for i := range 4 {
		mustPublish(t, c, a.Event(t, 1, now-int64(i), "n"))
	}
	mustPublish(t, c, a.Event(t, 30023, now, "article", nostr.Tag{"d", "x"}))

	if n := countFilter(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}}); n != 4 {
		t.Fatalf("COUNT kind 1: %d, want 4", n)
	}
	if n := countFilter(t, c, nostr.Filter{Authors: []string{a.PK}}); n != 5 {
		t.Fatalf("COUNT author: %d, want 5", n)
	}
	if n := countFilter(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}, Since: ptr(nostr.Timestamp(now - 1))}); n != 2 {
		t.Fatalf("COUNT since: %d, want 2", n)
	}
	if n := countFilter(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}, Limit: 1}); n != 4 {
		t.Fatalf("COUNT ignores limit: %d, want 4", n)
	}
}

func ptr[T any](v T) *T { return &v }

// RL-5: a reply to a stored channel event is accepted and found by its
// parent's id; a reply to a parent that is not stored is refused with the
// contract's message.
func TestThreadReply(t *testing.T) {
	_, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	now := time.Now().Unix()
	h := nostr.Tag{"h", testChannel}

	root := a.Event(t, 9, now-10, "root", h)
	mustPublish(t, c, root)
	reply := b.Event(t, 9, now-5, "reply", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", root.ID, "", "reply"})
	mustPublish(t, c, reply)
	deeper := a.Event(t, 9, now, "deeper", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", reply.ID, "", "reply"})
	mustPublish(t, c, deeper)

	// Kind 9 only: the thread summary the relay pushes live for the new
	// replies (CW-21) also names the root, and may reach this REQ before
	// its EOSE.
	got := fetch(t, c, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"e": {root.ID}}})
	if !slices.Equal(ids(got), []string{deeper.ID, reply.ID}) {
		t.Fatalf("REQ #e root: got %v", ids(got))
	}

	missing := nostr.GeneratePrivateKey() // any 64-hex id that names no event
	orphan := b.Event(t, 9, now, "orphan", h, nostr.Tag{"e", missing, "", "reply"})
	mustReject(t, c, orphan, "invalid: reply parent not found")
	mustNotServe(t, c, orphan.ID, "a rejected reply was stored")
}

// RL-11, CW-22: clients may not submit relay-only kinds.
func TestRelayOnlyKinds(t *testing.T) {
	_, c, a := startWithClient(t)
	now := time.Now().Unix()
	for _, kind := range []int{39000, 39001, 39002, 39003, 39005, 39006} {
		ev := a.Event(t, kind, now, "", nostr.Tag{"d", testChannel}, nostr.Tag{"h", testChannel})
		mustReject(t, c, ev, "restricted: relay-only kind")
	}
	if got := fetch(t, c, nostr.Filter{Authors: []string{a.PK}}); len(got) != 0 {
		t.Fatalf("relay-only kinds stored: %v", ids(got))
	}
}

// RL-9: an event dated more than 15 minutes ahead is refused; 14 minutes
// ahead, and old events, are accepted.
func TestCreatedAtBounds(t *testing.T) {
	_, c, a := startWithClient(t)
	now := time.Now()

	mustReject(t, c, a.Event(t, 1, now.Add(16*time.Minute).Unix(), "too far"),
		"invalid: event creation date is too far off from the current time")
	mustPublish(t, c, a.Event(t, 1, now.Add(14*time.Minute).Unix(), "soon"))
	mustPublish(t, c, a.Event(t, 1, now.Add(-5*365*24*time.Hour).Unix(), "history"))
}

// RL-9: an ephemeral event is delivered to open subscriptions and never
// stored.
func TestEphemeralNotStored(t *testing.T) {
	s := startServer(t)
	listener := s.client(t)
	pub := s.client(t)
	a := testutil.NewSigner(t)

	if evs, closed := listener.req("eph", `{"kinds":[20001],"authors":["`+a.PK+`"]}`); len(evs) != 0 || closed != "" {
		t.Fatalf("REQ: %d events, closed %q", len(evs), closed)
	}

	ev := a.Event(t, 20001, time.Now().Unix(), "typing")
	mustPublish(t, pub, ev)
	msg := listener.await("ephemeral EVENT", func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m, 1) == "eph" })
	var got nostr.Event
	if json.Unmarshal(msg[2], &got); got.ID != ev.ID {
		t.Fatalf("live: got %s, want %s", got.ID, ev.ID)
	}

	mustNotServe(t, pub, ev.ID, "ephemeral event returned by REQ")
	if stored, err := s.store.Query(context.Background(), nostr.Filter{Authors: []string{a.PK}}, buzz.Anonymous); err != nil || len(stored) != 0 {
		t.Fatalf("ephemeral event stored: %d (err %v)", len(stored), err)
	}
}

// RL-6 (NIP-09): a kind 5 deletion by the author hides its target from
// REQ and COUNT, and the deletion event is stored; a deletion naming an
// event of another author is refused and deletes nothing.
func TestDeletion(t *testing.T) {
	_, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	now := time.Now().Unix()

	mine := a.Event(t, 1, now-10, "mine")
	mine2 := a.Event(t, 1, now-9, "mine too")
	theirs := b.Event(t, 1, now-10, "theirs")
	for _, ev := range []*nostr.Event{mine, mine2, theirs} {
		mustPublish(t, c, ev)
	}

	del := a.Event(t, 5, now-5, "", nostr.Tag{"e", mine.ID})
	mustPublish(t, c, del)
	mustNotServe(t, c, mine.ID, "deleted event still returned by REQ")
	if got := fetch(t, c, nostr.Filter{Kinds: []int{5}, Authors: []string{a.PK}}); len(got) != 1 || got[0].ID != del.ID {
		t.Fatalf("deletion event not stored: %v", ids(got))
	}
	if n := countFilter(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}}); n != 1 {
		t.Fatalf("COUNT after deletion: %d, want 1", n)
	}
	// Republishing the deleted event does not bring it back.
	publishMayRefuse(t, c, mine, "republishing a deleted event")
	mustNotServe(t, c, mine.ID, "republished deleted event is back")

	// Another author's event: refused, and nothing is deleted, not even
	// the author's own event named alongside.
	mustReject(t, c, a.Event(t, 5, now-4, "", nostr.Tag{"e", theirs.ID}), "invalid: must be event author")
	mustReject(t, c, a.Event(t, 5, now-3, "", nostr.Tag{"e", mine2.ID}, nostr.Tag{"e", theirs.ID}), "invalid: must be event author")
	got := fetch(t, c, nostr.Filter{IDs: []string{theirs.ID, mine2.ID}})
	if len(got) != 2 {
		t.Fatalf("a refused deletion deleted something: left %v", ids(got))
	}
}

// RL-6 (NIP-09): a kind 5 deletion naming an address with an `a` tag
// deletes the versions up to its date; an older version sent again stays
// deleted, a newer one is accepted. A deletion naming an id that is not
// stored is accepted, and the event, when it arrives later, stays hidden.
func TestDeletionByAddress(t *testing.T) {
	_, c, a := startWithClient(t)
	now := time.Now().Unix()

	v1 := a.Event(t, 30023, now-30, "v1", nostr.Tag{"d", "post"})
	mustPublish(t, c, v1)
	keep := a.Event(t, 30023, now-30, "other", nostr.Tag{"d", "other"})
	mustPublish(t, c, keep)
	mustPublish(t, c, a.Event(t, 5, now-20, "", nostr.Tag{"a", "30023:" + a.PK + ":post"}))
	got := fetch(t, c, nostr.Filter{Kinds: []int{30023}, Authors: []string{a.PK}})
	if !slices.Equal(ids(got), []string{keep.ID}) {
		t.Fatalf("after deleting the address: %v, want only the other address", ids(got))
	}

	old := a.Event(t, 30023, now-25, "older than the deletion", nostr.Tag{"d", "post"})
	publishMayRefuse(t, c, old, "older version after deletion")
	mustNotServe(t, c, old.ID, "a version older than the address deletion came back")
	newer := a.Event(t, 30023, now-10, "newer than the deletion", nostr.Tag{"d", "post"})
	mustPublish(t, c, newer)
	if got := fetch(t, c, nostr.Filter{IDs: []string{newer.ID}}); len(got) != 1 {
		t.Fatal("a version newer than the address deletion is not served")
	}

	// A deletion that arrives before its target.
	late := a.Event(t, 1, now-5, "deleted before it arrived")
	mustPublish(t, c, a.Event(t, 5, now-4, "", nostr.Tag{"e", late.ID}))
	publishMayRefuse(t, c, late, "target after its deletion")
	mustNotServe(t, c, late.ID, "an event deleted before it arrived is served")
}

// RL-9: replaceable (kind 0) and addressable (kind 30023) events replace
// older versions over WebSocket; an older version sent later does not.
func TestReplaceable(t *testing.T) {
	_, c, a := startWithClient(t)
	now := time.Now().Unix()

	v1 := a.Event(t, 0, now-20, `{"name":"one"}`)
	v2 := a.Event(t, 0, now-10, `{"name":"two"}`)
	old := a.Event(t, 0, now-30, `{"name":"zero"}`)
	mustPublish(t, c, v1)
	mustPublish(t, c, v2)
	if got := fetch(t, c, nostr.Filter{Kinds: []int{0}, Authors: []string{a.PK}}); !slices.Equal(ids(got), []string{v2.ID}) {
		t.Fatalf("kind 0 after replacement: got %v, want only v2", ids(got))
	}
	publishMayRefuse(t, c, old, "older kind 0")
	if got := fetch(t, c, nostr.Filter{Kinds: []int{0}, Authors: []string{a.PK}}); !slices.Equal(ids(got), []string{v2.ID}) {
		t.Fatalf("kind 0 after an older version: got %v, want only v2", ids(got))
	}

	d1 := a.Event(t, 30023, now-20, "first", nostr.Tag{"d", "post"})
	d2 := a.Event(t, 30023, now-10, "second", nostr.Tag{"d", "post"})
	other := a.Event(t, 30023, now-15, "other", nostr.Tag{"d", "other"})
	for _, ev := range []*nostr.Event{d1, d2, other} {
		mustPublish(t, c, ev)
	}
	got := fetch(t, c, nostr.Filter{Kinds: []int{30023}, Authors: []string{a.PK}})
	if !slices.Equal(ids(got), []string{d2.ID, other.ID}) {
		t.Fatalf("kind 30023 after replacement: got %v, want [d2 other]", ids(got))
	}
}

// RL-22 (NIP-01): a REQ with the id of an open subscription replaces it;
// live events then arrive once, not once per REQ sent.
func TestREQReplacesSubscriptionWithSameID(t *testing.T) {
	s, pub, a := startWithClient(t)
	b := testutil.NewSigner(t)
	sub := s.client(t)
	for range 2 {
		if evs, closed := sub.req("x", `{"kinds":[1],"authors":["`+a.PK+`"],"limit":0}`); len(evs) != 0 || closed != "" {
			t.Fatalf("REQ x: %d events, closed %q", len(evs), closed)
		}
	}
	if _, closed := sub.req("probe", `{"kinds":[1],"authors":["`+b.PK+`"],"limit":0}`); closed != "" {
		t.Fatalf("REQ probe closed: %q", closed)
	}
	ev := a.Event(t, 1, time.Now().Unix(), "once")
	mustPublish(t, pub, ev)
	mustPublish(t, pub, b.Event(t, 1, time.Now().Unix(), "barrier"))
	got := 0
	sub.await("probe EVENT", func(m []json.RawMessage) bool {
		if label(m) == "EVENT" && str(m, 1) == "x" {
			got++
		}
		return label(m) == "EVENT" && str(m, 1) == "probe"
	})
	if got != 1 {
		t.Fatalf("the event arrived %d times on the re-sent subscription, want once", got)
	}
}
