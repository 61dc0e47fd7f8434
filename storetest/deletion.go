package storetest

// Deletions (RL-6: NIP-09 kind 5 and NIP-29 kind 9005) with their counter
// repair, edits (RL-7) and reactions (RL-8). Helpers are in
// helpers_thread.go.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// ttDelete has sg delete ids with one kind 5 at created_at at.
func ttDelete(t *testing.T, s Store, sg testutil.Signer, at int64, ids ...string) *nostr.Event {
	t.Helper()
	tags := make([]nostr.Tag, len(ids))
	for i, id := range ids {
		tags[i] = ttE(id)
	}
	return ttIngest(t, s, sg.Event(t, 5, at, "", tags...))
}

// RL-6, CW-14, CW-19: a kind 5 by the author soft-deletes the reply, and in
// the same transaction every ancestor's counters become those of the
// remaining subtree; the deleted event's replies stay stored, visible and
// counted; a new reply to it is refused; deleting twice changes nothing.
func testDeleteKind5Counters(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 6)
	evs := ttBuildTree(t, s, sg, []ttTreeNode{
		{"R", 0, 0, "", false},
		{"A", 1, 10, "R", false},
		{"A1", 2, 20, "A", false},
		{"A1a", 3, 80, "A1", false},
		{"A2", 4, 30, "A", false},
		{"B", 5, 90, "R", true}, // newest event below R; a5's only reply
		{"C", 1, 40, "R", false},
		{"X", 0, 5, "", false},
		{"X1", 2, 6, "X", false},
		{"XB", 3, 7, "X", true}, // broadcast depth 1: a row in default mode
	}, m)
	CheckThreadModel(t, s, m)
	id := func(n string) string { return evs[n].ID }
	chFilter := nostr.Filter{Tags: nostr.TagMap{"h": {ttChan}}}
	if n := Count(t, s, chFilter, buzz.Anonymous); n != 10 {
		t.Fatalf("Count = %d before deleting", n)
	}

	// Deleting the newest reply, its author's only one.
	del := ttDelete(t, s, sg[5], ttBase+100, id("B"))
	m.Delete(id("B"))
	CheckThreadModel(t, s, m)
	r := ttMustRead(t, s, id("R"))
	if r.ReplyCount != 2 || r.DescendantCount != 5 || r.LastReplyAt.Int64 != ttBase+80 {
		t.Errorf("R after deleting B: %v, want replies 2, desc 5, last %d", r.ttCounters, ttBase+80)
	}
	if slices.Contains(r.Participants, sg[5].PK) {
		t.Errorf("author of the deleted only reply is still a participant: %v", r.ttCounters)
	}
	if ttVisible(t, s, id("B")) {
		t.Error("deleted event still returned by Query")
	}
	if ids := QueryIDs(t, s, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ttChan}}}, buzz.Anonymous); slices.Contains(ids, id("B")) || len(ids) != 9 {
		t.Errorf("channel query after deletion: %d events (B included: %v)", len(ids), slices.Contains(ids, id("B")))
	}
	if n := Count(t, s, chFilter, buzz.Anonymous); n != 9 {
		t.Errorf("Count = %d after deleting one event, want 9", n)
	}
	if ids := QueryIDs(t, s, nostr.Filter{Kinds: []int{5}}, buzz.Anonymous); !slices.Equal(ids, []string{del.ID}) {
		t.Errorf("kind 5 query = %v, want the deletion event", ids)
	}
	if ids := QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{"e": {id("B")}}}, buzz.Anonymous); !slices.Equal(ids, []string{del.ID}) {
		t.Errorf("#e query for the deleted event = %v, want only the deletion", ids)
	}
	if ttMustRead(t, s, id("B")).RowClass != rowTopLevel {
		t.Error("deleting changed the row class of the deleted event")
	}

	// Deleting a reply that has a reply of its own: A1a stays stored, keeps
	// its classification and is still counted above A1.
	ttDelete(t, s, sg[2], ttBase+101, id("A1"))
	m.Delete(id("A1"))
	CheckThreadModel(t, s, m)
	a := ttMustRead(t, s, id("A"))
	if a.ReplyCount != 1 || a.DescendantCount != 2 || a.LastReplyAt.Int64 != ttBase+80 {
		t.Errorf("A after deleting A1: %v, want replies 1 (A2), desc 2 (A1a, A2)", a.ttCounters)
	}
	if slices.Contains(a.Participants, sg[2].PK) {
		t.Errorf("A1's author still a participant of A: %v", a.ttCounters)
	}
	if x := ttMustRead(t, s, id("X")); !slices.Equal(x.Participants, []string{sg[3].PK, sg[2].PK}) {
		t.Errorf("another thread's participants changed: %v", x.ttCounters)
	}
	if !ttVisible(t, s, id("A1a")) {
		t.Error("reply of a deleted event is no longer returned")
	}
	CheckClass(t, s, id("A1a"), Class{Depth: 3, Parent: id("A1"), Root: id("R"), RowClass: rowReply})
	if ids := QueryIDs(t, s, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"e": {id("A1")}}}, buzz.Anonymous); !slices.Equal(ids, []string{id("A1a")}) {
		t.Errorf("replies of the deleted event by #e = %v, want A1a", ids)
	}

	// A new reply to the deleted event is refused; one to its surviving
	// child is accepted and counted on every ancestor, deleted ones too.
	before := ttSnapshot(t, s)
	Reject(t, s, sg[3].Event(t, 9, ttBase+102, "late", ttH(ttChan), ttReplyTag(id("A1"))), buzz.ErrParentNotFound)
	Reject(t, s, sg[3].Event(t, 9, ttBase+102, "late", ttH(ttChan), ttRootTag(id("R")), ttReplyTag(id("B"))), buzz.ErrParentNotFound)
	SameSnapshot(t, "a rejected event", before, ttSnapshot(t, s))
	late := ttIngestAdd(t, s, m, sg[4].Event(t, 9, ttBase+103, "late", ttH(ttChan), ttRootTag(id("R")), ttReplyTag(id("A1a"))), id("A1a"))
	CheckThreadModel(t, s, m)

	// Deleting again, with a second deletion or a repeated tag, changes no
	// counter (never below zero).
	counters := func() string {
		var b strings.Builder
		for _, oid := range m.order {
			fmt.Fprintln(&b, oid[:8], ttMustRead(t, s, oid).ttCounters)
		}
		return b.String()
	}
	beforeCounters := counters()
	ttDelete(t, s, sg[2], ttBase+104, id("A1"), id("A1"))
	ttDelete(t, s, sg[5], ttBase+105, id("B"))
	if got := counters(); got != beforeCounters {
		t.Errorf("deleting deleted events changed counters:\n%s\n%s", beforeCounters, got)
	}
	CheckThreadModel(t, s, m)

	// Deleting everything below R brings its counters to zero, not below.
	ttDelete(t, s, sg[1], ttBase+106, id("A"), id("C"))
	ttDelete(t, s, sg[3], ttBase+107, id("A1a"))
	ttDelete(t, s, sg[4], ttBase+108, id("A2"), late.ID)
	for _, n := range []string{"A", "C", "A1a", "A2"} {
		m.Delete(id(n))
	}
	m.Delete(late.ID)
	CheckThreadModel(t, s, m)
	r = ttMustRead(t, s, id("R"))
	if r.ReplyCount != 0 || r.DescendantCount != 0 || r.LastReplyAt.Valid || len(r.Participants) != 0 {
		t.Errorf("R with nothing left below: %v", r.ttCounters)
	}
	ttVerify(t, s)

	// CW-14: deleting a root leaves its replies stored, visible and with
	// their own classification (the broadcast one is still a row); a reply
	// below them naming the deleted root is consistent and accepted.
	ttDelete(t, s, sg[0], ttBase+109, id("X"))
	m.Delete(id("X"))
	CheckThreadModel(t, s, m)
	if !ttVisible(t, s, id("X1")) || !ttVisible(t, s, id("XB")) {
		t.Error("reply of a deleted root vanished")
	}
	CheckClass(t, s, id("X1"), Class{Depth: 1, Parent: id("X"), Root: id("X"), RowClass: rowReply})
	CheckClass(t, s, id("XB"), Class{Depth: 1, Parent: id("X"), Root: id("X"), Broadcast: true, RowClass: rowTopLevel})
	Reject(t, s, sg[1].Event(t, 9, ttBase+110, "to deleted root", ttH(ttChan), ttRootTag(id("X")), ttReplyTag(id("X"))), buzz.ErrParentNotFound)
	x1a := ttIngestAdd(t, s, m, sg[1].Event(t, 9, ttBase+110, "below deleted root", ttH(ttChan), ttRootTag(id("X")), ttReplyTag(id("XB"))), id("XB"))
	CheckClass(t, s, x1a.ID, Class{Depth: 2, Parent: id("XB"), Root: id("X"), RowClass: rowReply})
	CheckThreadModel(t, s, m)
}

// RL-6, CW-19: when a listed participant's only reply is deleted, the next
// author by newest event takes the freed place (participants are recomputed
// from the whole remaining subtree, not just trimmed).
func testDeleteParticipantsRefill(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 12)
	root, mid := ttRootMid(t, s, m, sg[0])
	replies := make([]*nostr.Event, 12)
	for i := range sg {
		// Author i at 100+i: the 10 newest are 2..11; 0 and 1 are out.
		replies[i] = ttIngestAdd(t, s, m, sg[i].Event(t, 9, ttBase+100+int64(i), "r", ttH(ttChan), ttReplyTag(mid.ID)), mid.ID)
	}
	CheckThreadModel(t, s, m)
	if got := ttMustRead(t, s, mid.ID); slices.Contains(got.Participants, sg[1].PK) {
		t.Fatalf("author 1 listed before the deletion: %v", got.ttCounters)
	}
	ttDelete(t, s, sg[7], ttBase+200, replies[7].ID)
	m.Delete(replies[7].ID)
	CheckThreadModel(t, s, m)
	for _, ev := range []*nostr.Event{mid, root} {
		got := ttMustRead(t, s, ev.ID)
		if len(got.Participants) != 10 || got.Participants[9] != sg[1].PK || slices.Contains(got.Participants, sg[7].PK) {
			t.Errorf("participants of %s after deleting author 7's reply: %v", ev.Content, got.ttCounters)
		}
	}
	// Root's own author (0, via mid at +1 and its reply at +100) refills
	// too once another listed author goes.
	ttDelete(t, s, sg[9], ttBase+201, replies[9].ID)
	m.Delete(replies[9].ID)
	CheckThreadModel(t, s, m)
}

// RL-6, RL-4: random deletions in a random forest keep every counter
// exact; replies to deleted events are refused and leave nothing, replies
// below them are accepted.
func testDeleteRandom(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 11)
	rng := rand.New(rand.NewPCG(3, 5))
	author := map[string]int{}
	var ids []string
	add := func(i int) {
		a := rng.IntN(len(sg))
		tags := nostr.Tags{ttH(ttChan)}
		parent := ""
		var live []string
		for _, id := range ids {
			if !m.nodes[id].deleted {
				live = append(live, id)
			}
		}
		if len(live) > 0 && rng.IntN(6) != 0 {
			parent = live[rng.IntN(len(live))]
			tags = append(tags, ttReplyTag(parent))
		}
		ev := ttIngestAdd(t, s, m, sg[a].Event(t, 9, ttBase+rng.Int64N(40), fmt.Sprint(i), tags...), parent)
		author[ev.ID] = a
		ids = append(ids, ev.ID)
	}
	for i := 0; i < 70; i++ {
		add(i)
	}
	for step := 0; step < 24; step++ {
		// One author deletes one to three of their live events at once.
		a := rng.IntN(len(sg))
		var mine []string
		for _, id := range ids {
			if author[id] == a && !m.nodes[id].deleted {
				mine = append(mine, id)
			}
		}
		if len(mine) == 0 {
			continue
		}
		rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
		mine = mine[:min(len(mine), 1+rng.IntN(3))]
		ttDelete(t, s, sg[a], ttBase+1000+int64(step), mine...)
		for _, id := range mine {
			m.Delete(id)
		}
		refused := sg[a].Event(t, 9, ttBase+50, fmt.Sprint("to deleted ", step), ttH(ttChan), ttReplyTag(mine[0]))
		if step%4 == 0 {
			ttRejectLeavesNothing(t, s, refused, buzz.ErrParentNotFound)
		} else {
			Reject(t, s, refused, buzz.ErrParentNotFound)
		}
		add(100 + step)
		if step%8 == 7 {
			CheckThreadModel(t, s, m)
		}
	}
	CheckThreadModel(t, s, m)
	ttVerify(t, s)
}

// RL-6 (kind 5, NIP-09): author-only, all-or-nothing, unknown targets
// ignored, stored itself, deleting no deletion, `a` tags by address.
func testDeleteKind5Rules(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	at := ttBase
	ing := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return ttIngest(t, s, sg.Event(t, kind, at, fmt.Sprint("ev ", at), tags...))
	}
	root := ing(a, 9, ttH(ttChan))
	missing := strings.Repeat("7e", 32)

	type tc struct {
		name    string
		deleter testutil.Signer
		at      int64 // 0: after everything
		tags    func() nostr.Tags
		err     error
		deleted func() []string // targets that must end deleted
		alive   func() []string // events that must stay
	}
	var (
		ownA, ownB, foreign, ownReply *nostr.Event
		postV1, foreignPost           *nostr.Event
		replaceable, oldDel           *nostr.Event
	)
	setup := func() {
		ownA = ing(a, 9, ttH(ttChan))
		ownB = ing(a, 1)
		foreign = ing(b, 9, ttH(ttChan))
		ownReply = ing(a, 9, ttH(ttChan), ttReplyTag(root.ID))
		postV1 = ing(a, 30023, ttH(ttChan), nostr.Tag{"d", "post"})
		foreignPost = ing(b, 30023, ttH(ttChan), nostr.Tag{"d", "post"})
		replaceable = ing(a, 10002)
		oldDel = ing(a, 5, ttE(missing))
	}
	aAddr := func(kind int, pk, d string) nostr.Tag { return nostr.Tag{"a", fmt.Sprintf("%d:%s:%s", kind, pk, d)} }
	ids := func(evs ...**nostr.Event) func() []string {
		return func() []string {
			out := make([]string, len(evs))
			for i, e := range evs {
				out[i] = (*e).ID
			}
			return out
		}
	}
	none := func() []string { return nil }
	cases := []tc{
		{name: "foreign target", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(foreign.ID)} },
			err: buzz.ErrNotAuthor, deleted: none, alive: ids(&foreign)},
		{name: "own then foreign target", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(ownA.ID), ttE(foreign.ID)} },
			err: buzz.ErrNotAuthor, deleted: none, alive: ids(&ownA, &foreign)},
		{name: "foreign then own target", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(foreign.ID), ttE(ownReply.ID)} },
			err: buzz.ErrNotAuthor, deleted: none, alive: ids(&ownReply, &foreign)},
		{name: "foreign address", deleter: a, tags: func() nostr.Tags { return nostr.Tags{aAddr(30023, b.PK, "post")} },
			err: buzz.ErrNotAuthor, deleted: none, alive: ids(&foreignPost)},
		{name: "own event and foreign address", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttE(ownA.ID), aAddr(30023, b.PK, "post")}
		}, err: buzz.ErrNotAuthor, deleted: none, alive: ids(&ownA, &foreignPost)},
		{name: "foreign deletion event", deleter: b, tags: func() nostr.Tags { return nostr.Tags{ttE(oldDel.ID)} },
			err: buzz.ErrNotAuthor, deleted: none, alive: ids(&oldDel)},

		{name: "several own targets", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttE(ownA.ID), ttE(ownB.ID), ttE(ownReply.ID)}
		}, deleted: ids(&ownA, &ownB, &ownReply), alive: ids(&foreign, &root)},
		{name: "targets not stored are ignored", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttE(missing), ttE(ownA.ID), ttE(strings.Repeat("00", 32))}
		}, deleted: ids(&ownA), alive: ids(&ownB)},
		{name: "only targets not stored", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(missing)} },
			deleted: none, alive: ids(&ownA, &ownB)},
		{name: "malformed e tags are ignored", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{{"e"}, ttE("xyz"), ttE(foreign.ID[:63]), ttE(ownB.ID)}
		}, deleted: ids(&ownB), alive: ids(&foreign)},
		{name: "a deletion deletes no deletion", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(oldDel.ID)} },
			deleted: none, alive: ids(&oldDel)},
		{name: "a tag deletes every version up to its date", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{aAddr(30023, a.PK, "post")}
		}, deleted: ids(&postV1), alive: ids(&foreignPost)},
		{name: "a tag of a replaceable event", deleter: a, tags: func() nostr.Tags { return nostr.Tags{aAddr(10002, a.PK, "")} },
			deleted: ids(&replaceable), alive: ids(&ownA)},
		{name: "a tag dated before the version deletes nothing", deleter: a, at: ttBase, tags: func() nostr.Tags {
			return nostr.Tags{aAddr(30023, a.PK, "post")}
		}, deleted: none, alive: ids(&postV1)},
		{name: "a tag of an address not stored", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{aAddr(30023, a.PK, "other"), {"a", "garbage"}, {"a", "1:" + a.PK + ":"}}
		}, deleted: none, alive: ids(&postV1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setup()
			when := c.at
			if when == 0 {
				at++
				when = at
			}
			del := c.deleter.Event(t, 5, when, c.name, c.tags()...)
			if c.err != nil {
				ttRejectLeavesNothing(t, s, del, c.err)
			} else {
				ttIngest(t, s, del)
				if !ttVisible(t, s, del.ID) || !slices.Contains(QueryIDs(t, s, nostr.Filter{Kinds: []int{5}}, buzz.Anonymous), del.ID) {
					t.Error("deletion event not stored")
				}
			}
			for _, id := range c.deleted() {
				if ttVisible(t, s, id) || !ttMustRead(t, s, id).Deleted {
					t.Errorf("target %s not deleted", id[:8])
				}
			}
			for _, id := range c.alive() {
				if !ttVisible(t, s, id) {
					t.Errorf("event %s deleted", id[:8])
				}
			}
		})
	}

	// The root's counters followed every own reply deleted above.
	rr := ttMustRead(t, s, root.ID)
	live := int64(len(QueryIDs(t, s, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"e": {root.ID}}}, buzz.Anonymous)))
	if rr.ReplyCount != live || rr.DescendantCount != live {
		t.Errorf("root counters %v, %d live replies", rr.ttCounters, live)
	}
	ttVerify(t, s)
}

// RL-6: deleting a reply that is an addressable event through its `a` tag
// repairs its ancestors' counters like an `e` deletion.
func testDeleteByAddressCounters(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	m := NewThreadModel()
	root := ttIngestAdd(t, s, m, a.Event(t, 9, ttBase, "root", ttH(ttChan)), "")
	art := ttIngestAdd(t, s, m, b.Event(t, 30023, ttBase+5, "article", ttH(ttChan), nostr.Tag{"d", "art"}, ttReplyTag(root.ID)), root.ID)
	ttIngestAdd(t, s, m, a.Event(t, 9, ttBase+3, "other", ttH(ttChan), ttReplyTag(root.ID)), root.ID)
	CheckThreadModel(t, s, m)
	ttIngest(t, s, b.Event(t, 5, ttBase+10, "", nostr.Tag{"a", "30023:" + b.PK + ":art"}))
	m.Delete(art.ID)
	CheckThreadModel(t, s, m)
	if r := ttMustRead(t, s, root.ID); r.ReplyCount != 1 || r.LastReplyAt.Int64 != ttBase+3 || !slices.Equal(r.Participants, []string{a.PK}) {
		t.Errorf("root after the address deletion: %v", r.ttCounters)
	}
}

// RL-6 (kind 9005, NIP-29): exactly one target, an h tag, a stored target
// in that channel, by its author or a relay admin; checked in that order,
// with the exact messages; refusals leave nothing.
func testDeleteKind9005(t *testing.T, open Opener) {
	admin := testutil.NewSigner(t)
	s := ttOpen(t, open, admin.PK)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	m := NewThreadModel()
	at := ttBase
	ing := func(sg testutil.Signer, kind int, parent string, tags ...nostr.Tag) *nostr.Event {
		at++
		if parent != "" {
			tags = append(tags, ttReplyTag(parent))
		}
		ev := ttIngest(t, s, sg.Event(t, kind, at, fmt.Sprint("ev ", at), tags...))
		if kind == 9 && slices.ContainsFunc(tags, func(tg nostr.Tag) bool { return tg[0] == "h" && tg[1] == ttChan }) {
			m.Add(ev, parent)
		}
		return ev
	}
	root := ing(a, 9, "", ttH(ttChan))
	missing := strings.Repeat("3c", 32)
	var ownReply, foreignReply, other, noCh, post, foreignPost *nostr.Event
	setup := func() {
		ownReply = ing(a, 9, root.ID, ttH(ttChan))
		foreignReply = ing(b, 9, root.ID, ttH(ttChan))
		other = ing(a, 9, "", ttH(ttChan2))
		noCh = ing(a, 9, "")
		post = ing(a, 30023, "", ttH(ttChan), nostr.Tag{"d", "p"})
		foreignPost = ing(b, 30023, "", ttH(ttChan), nostr.Tag{"d", "p"})
	}
	addr := func(sg testutil.Signer) nostr.Tag { return nostr.Tag{"a", "30023:" + sg.PK + ":p"} }
	type tc struct {
		name    string
		deleter testutil.Signer
		tags    func() nostr.Tags
		err     error
		target  func() *nostr.Event // deleted when accepted
	}
	cases := []tc{
		{name: "no target", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan)} }, err: buzz.ErrDeletionTargets},
		{name: "no target, only a 1-element e tag", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), {"e"}} }, err: buzz.ErrDeletionTargets},
		{name: "two e targets", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttH(ttChan), ttE(ownReply.ID), ttE(post.ID)}
		}, err: buzz.ErrDeletionTargets},
		{name: "an e and an a target", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttH(ttChan), ttE(ownReply.ID), addr(a)}
		}, err: buzz.ErrDeletionTargets},
		{name: "two targets and no h tag", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttE(ownReply.ID), ttE(missing)}
		}, err: buzz.ErrDeletionTargets},
		{name: "no target and no h tag", deleter: a, tags: func() nostr.Tags { return nil }, err: buzz.ErrDeletionTargets},
		{name: "no h tag", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(ownReply.ID)} }, err: buzz.ErrMissingH},
		{name: "no h tag and a missing target", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttE(missing)} }, err: buzz.ErrMissingH},
		{name: "target not stored", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(missing)} }, err: buzz.ErrTargetNotFound},
		{name: "malformed target id", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(ownReply.ID[:63])} }, err: buzz.ErrTargetNotFound},
		{name: "address not stored", deleter: a, tags: func() nostr.Tags {
			return nostr.Tags{ttH(ttChan), {"a", "30023:" + a.PK + ":nope"}}
		}, err: buzz.ErrTargetNotFound},
		{name: "target in another channel", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(other.ID)} }, err: buzz.ErrTargetOtherChannel},
		{name: "target without channel", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(noCh.ID)} }, err: buzz.ErrTargetOtherChannel},
		{name: "foreign target in another channel", deleter: b, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(other.ID)} }, err: buzz.ErrTargetOtherChannel},
		{name: "admin, target in another channel", deleter: admin, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan2), ttE(ownReply.ID)} }, err: buzz.ErrTargetOtherChannel},
		{name: "another author's event", deleter: b, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(ownReply.ID)} }, err: buzz.ErrNotAuthorOrAdmin},
		{name: "another author's address", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), addr(b)} }, err: buzz.ErrNotAuthorOrAdmin},

		{name: "own reply", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), ttE(ownReply.ID)} }, target: func() *nostr.Event { return ownReply }},
		{name: "own reply, target tag before h", deleter: b, tags: func() nostr.Tags { return nostr.Tags{ttE(foreignReply.ID), ttH(ttChan)} }, target: func() *nostr.Event { return foreignReply }},
		{name: "own address", deleter: a, tags: func() nostr.Tags { return nostr.Tags{ttH(ttChan), addr(a)} }, target: func() *nostr.Event { return post }},
		{name: "relay admin deletes another author's reply", deleter: admin, tags: func() nostr.Tags {
			return nostr.Tags{ttH(ttChan), ttE(foreignReply.ID)}
		}, target: func() *nostr.Event { return foreignReply }},
		{name: "relay admin deletes another author's address", deleter: admin, tags: func() nostr.Tags {
			return nostr.Tags{ttH(ttChan), addr(b)}
		}, target: func() *nostr.Event { return foreignPost }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			setup()
			at++
			del := c.deleter.Event(t, 9005, at, c.name, c.tags()...)
			if c.err != nil {
				ttRejectLeavesNothing(t, s, del, c.err)
				return
			}
			ttIngest(t, s, del)
			target := c.target()
			if ttVisible(t, s, target.ID) || !ttMustRead(t, s, target.ID).Deleted {
				t.Fatalf("target not deleted")
			}
			if _, ok := m.nodes[target.ID]; ok {
				m.Delete(target.ID)
			}
			if !slices.Contains(QueryIDs(t, s, nostr.Filter{Kinds: []int{9005}}, buzz.Anonymous), del.ID) {
				t.Error("9005 not stored")
			}
			CheckClass(t, s, del.ID, Class{Depth: -1, RowClass: rowNever})
			CheckThreadModel(t, s, m)
		})
	}
}

// RL-7: an edit (kind 40003) needs an h tag, names its target by its first
// e tag, and the target must be stored, not deleted, in the same channel
// and by the same author; it is stored as its own event and the target is
// unchanged.
func testEdit(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	root := ttIngest(t, s, a.Event(t, 9, ttBase, "root", ttH(ttChan)))
	target := ttIngest(t, s, a.Event(t, 9, ttBase+1, "original", ttH(ttChan), ttReplyTag(root.ID), nostr.Tag{"t", "x"}))
	foreign := ttIngest(t, s, b.Event(t, 9, ttBase+2, "foreign", ttH(ttChan), ttReplyTag(root.ID)))
	other := ttIngest(t, s, a.Event(t, 9, ttBase+3, "other channel", ttH(ttChan2)))
	noCh := ttIngest(t, s, a.Event(t, 9, ttBase+4, "no channel"))
	gone := ttIngest(t, s, a.Event(t, 9, ttBase+5, "gone", ttH(ttChan)))
	ttDelete(t, s, a, ttBase+6, gone.ID)
	missing := strings.Repeat("e1", 32)

	cases := []struct {
		name   string
		editor testutil.Signer
		tags   nostr.Tags
		err    error
	}{
		{"no h tag", a, nostr.Tags{ttE(target.ID)}, buzz.ErrMissingH},
		{"no h tag and no e tag", a, nil, buzz.ErrMissingH},
		{"no e tag", a, nostr.Tags{ttH(ttChan)}, buzz.ErrEditTarget},
		{"only a 1-element e tag", a, nostr.Tags{ttH(ttChan), {"e"}}, buzz.ErrEditTarget},
		{"only p and q tags", a, nostr.Tags{ttH(ttChan), {"p", a.PK}, {"q", target.ID}}, buzz.ErrEditTarget},
		{"target not stored", a, nostr.Tags{ttH(ttChan), ttE(missing)}, buzz.ErrTargetNotFound},
		{"target deleted", a, nostr.Tags{ttH(ttChan), ttE(gone.ID)}, buzz.ErrTargetNotFound},
		{"target in another channel", a, nostr.Tags{ttH(ttChan), ttE(other.ID)}, buzz.ErrTargetOtherChannel},
		{"target without channel", a, nostr.Tags{ttH(ttChan), ttE(noCh.ID)}, buzz.ErrTargetOtherChannel},
		{"another author's event", a, nostr.Tags{ttH(ttChan), ttE(foreign.ID)}, buzz.ErrNotAuthor},
		{"first e tag is another author's", a, nostr.Tags{ttH(ttChan), ttE(foreign.ID), ttE(target.ID)}, buzz.ErrNotAuthor},
		{"first e tag is missing", a, nostr.Tags{ttH(ttChan), ttE(missing), ttE(target.ID)}, buzz.ErrTargetNotFound},
		{"own event", a, nostr.Tags{ttH(ttChan), ttE(target.ID)}, nil},
		{"own event, later e tags not checked", a, nostr.Tags{ttE(target.ID), ttH(ttChan), ttE(foreign.ID), ttE(missing)}, nil},
		{"own event, uppercase id", a, nostr.Tags{ttH(ttChan), ttE(strings.ToUpper(target.ID))}, nil},
		{"foreign author editing their own", b, nostr.Tags{ttH(ttChan), ttE(foreign.ID)}, nil},
	}
	origTarget := ttMustRead(t, s, target.ID)
	origRoot := ttMustRead(t, s, root.ID)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := c.editor.Event(t, 40003, ttBase+10+int64(i), "edited: "+c.name, c.tags...)
			if c.err != nil {
				ttRejectLeavesNothing(t, s, ev, c.err)
				return
			}
			ttIngest(t, s, ev)
			got := QueryIDs(t, s, nostr.Filter{Kinds: []int{40003}, IDs: []string{ev.ID}}, buzz.Anonymous)
			if len(got) != 1 {
				t.Fatal("edit not stored")
			}
			CheckClass(t, s, ev.ID, Class{Depth: -1, RowClass: rowNever})
		})
	}
	// The target is unchanged: same content and tags, same classification
	// and counters; the thread's counters ignore edits.
	evs, err := s.Query(t.Context(), nostr.Filter{IDs: []string{target.ID}}, buzz.Anonymous)
	if err != nil || len(evs) != 1 {
		t.Fatalf("target: %v %v", evs, err)
	}
	if evs[0].Content != "original" || fmt.Sprint(evs[0].Tags) != fmt.Sprint(target.Tags) || evs[0].Sig != target.Sig {
		t.Errorf("target changed: %+v", evs[0])
	}
	if got := ttMustRead(t, s, target.ID); fmt.Sprint(got) != fmt.Sprint(origTarget) {
		t.Errorf("target row changed:\n %+v\n %+v", got, origTarget)
	}
	if got := ttMustRead(t, s, root.ID); fmt.Sprint(got) != fmt.Sprint(origRoot) {
		t.Errorf("root counters changed by edits:\n %+v\n %+v", got, origRoot)
	}
	if n := Count(t, s, nostr.Filter{Kinds: []int{40003}}, buzz.Anonymous); n != 4 {
		t.Errorf("%d edits stored, want 4", n)
	}
}

// RL-8: reactions (kind 7) are stored without any check of their target
// (missing, deleted, other channel, no channel), never classified, and
// change no counter.
func testReactions(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	root := ttIngest(t, s, a.Event(t, 9, ttBase, "root", ttH(ttChan)))
	reply := ttIngest(t, s, a.Event(t, 9, ttBase+1, "reply", ttH(ttChan), ttReplyTag(root.ID)))
	other := ttIngest(t, s, a.Event(t, 9, ttBase+2, "other", ttH(ttChan2)))
	gone := ttIngest(t, s, a.Event(t, 9, ttBase+3, "gone", ttH(ttChan)))
	ttDelete(t, s, a, ttBase+4, gone.ID)
	origRoot := ttMustRead(t, s, root.ID)
	origReply := ttMustRead(t, s, reply.ID)
	missing := strings.Repeat("ab", 32)
	for i, tags := range []nostr.Tags{
		{ttH(ttChan), ttE(reply.ID), {"p", a.PK}},
		{ttH(ttChan), ttE(missing)},
		{ttH(ttChan), ttE(gone.ID)},
		{ttH(ttChan), ttE(other.ID)},
		{ttE(reply.ID)},
		{ttH(ttChan), ttE(root.ID), ttReplyTag(reply.ID)},
		{ttH(ttChan)},
	} {
		ev := ttIngest(t, s, b.Event(t, 7, ttBase+10+int64(i), "+", tags...))
		CheckClass(t, s, ev.ID, Class{Depth: -1, RowClass: rowNever})
	}
	if n := Count(t, s, nostr.Filter{Kinds: []int{7}}, buzz.Anonymous); n != 7 {
		t.Errorf("%d reactions stored, want 7", n)
	}
	if got := ttMustRead(t, s, root.ID); fmt.Sprint(got) != fmt.Sprint(origRoot) {
		t.Errorf("root changed by reactions:\n %+v\n %+v", got, origRoot)
	}
	if got := ttMustRead(t, s, reply.ID); fmt.Sprint(got) != fmt.Sprint(origReply) {
		t.Errorf("reply changed by reactions:\n %+v\n %+v", got, origReply)
	}
}
