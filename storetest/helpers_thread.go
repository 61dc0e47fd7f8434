package storetest

// Helpers of thread.go and deletion.go: reading an event's classification
// and counters back through the store, an independent Go model of a
// thread tree that computes the counters the contract asks for (RL-5,
// CW-19), and the store's dump for atomicity checks (RL-4). The model and
// the checks of a classification and of counters are exported for the
// tests a store package keeps of its own (a failure half way, a repair);
// the other names start with "tt".

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// ttCounters are the subtree counters of one event (RL-5, CW-19), as the
// store serves them or as the model computes them.
type ttCounters struct {
	ReplyCount      int64
	DescendantCount int64
	LastReplyAt     sql.NullInt64
	Participants    []string // hex pubkeys, newest author first
}

func (c ttCounters) String() string {
	last := "NULL"
	if c.LastReplyAt.Valid {
		last = fmt.Sprint(c.LastReplyAt.Int64)
	}
	ps := make([]string, len(c.Participants))
	for i, p := range c.Participants {
		ps[i] = p[:8]
	}
	return fmt.Sprintf("{replies:%d desc:%d last:%s parts:[%s]}", c.ReplyCount, c.DescendantCount, last, strings.Join(ps, " "))
}

func (c ttCounters) equal(o ttCounters) bool {
	return c.ReplyCount == o.ReplyCount && c.DescendantCount == o.DescendantCount &&
		c.LastReplyAt == o.LastReplyAt && slices.Equal(c.Participants, o.Participants)
}

// ttInfo is what the store says about one event: its place and counters.
type ttInfo struct {
	ID        string // hex
	Depth     sql.NullInt64
	Parent    string // hex id of the parent event, "" for none
	Root      string // hex id of the root event, "" for none
	Broadcast bool
	RowClass  int
	Channel   sql.NullString // h of the event's channel
	Deleted   bool
	ttCounters
}

// ttRead reads the stored classification and counters of the event with
// hex id. ok is false when the store holds no such event.
func ttRead(t testing.TB, s Store, id string) (ttInfo, bool) {
	t.Helper()
	ctx := context.Background()
	id = strings.ToLower(id)
	p, found, err := s.Placement(ctx, id)
	if err != nil {
		t.Fatalf("placement of %s: %v", id, err)
	}
	if !found {
		return ttInfo{}, false
	}
	in := ttInfo{ID: id, Parent: p.Parent, Root: p.Root, Broadcast: p.Broadcast, RowClass: int(p.Row), Deleted: p.Deleted,
		Depth: sql.NullInt64{Int64: p.Depth, Valid: p.Classified}, Channel: sql.NullString{String: p.Channel, Valid: p.Channel != ""}}
	sums, err := s.Summaries(ctx, []string{id})
	if err != nil {
		t.Fatalf("summary of %s: %v", id, err)
	}
	for _, sm := range sums {
		if sm.ID != id {
			continue
		}
		in.ReplyCount, in.DescendantCount, in.Participants = sm.ReplyCount, sm.DescendantCount, sm.Participants
		if sm.LastReplyAt != nil {
			in.LastReplyAt = sql.NullInt64{Int64: *sm.LastReplyAt, Valid: true}
		}
	}
	return in, true
}

// ttMustRead is ttRead for an event that must be stored.
func ttMustRead(t testing.TB, s Store, id string) ttInfo {
	t.Helper()
	in, ok := ttRead(t, s, id)
	if !ok {
		t.Fatalf("event %s is not stored", id)
	}
	return in
}

// Class is the expected classification of an event (CW-10..CW-12).
type Class struct {
	Depth     int64 // -1: unclassified
	Parent    string
	Root      string
	Broadcast bool
	RowClass  int
}

// CheckClass requires event id (hex) to be stored with the classification
// want, failing the test otherwise.
func CheckClass(t testing.TB, s Store, id string, want Class) {
	t.Helper()
	in := ttMustRead(t, s, id)
	depth := int64(-1)
	if in.Depth.Valid {
		depth = in.Depth.Int64
	}
	got := Class{Depth: depth, Parent: in.Parent, Root: in.Root, Broadcast: in.Broadcast, RowClass: in.RowClass}
	if got != want {
		t.Errorf("classification of %s:\n got  %+v\n want %+v", id[:8], got, want)
	}
}

// ttNode is one event of the model thread forest.
type ttNode struct {
	id, pubkey string
	at         int64
	parent     string // "" for a top-level event
	deleted    bool
}

// ThreadModel is an independent, in-Go computation of the counters a store
// must serve (RL-5, CW-19): it knows nothing of any store.
type ThreadModel struct {
	nodes map[string]*ttNode
	order []string
}

// NewThreadModel is a model holding no event.
func NewThreadModel() *ThreadModel { return &ThreadModel{nodes: map[string]*ttNode{}} }

// Add records ev as a child of parent ("" for top-level).
func (m *ThreadModel) Add(ev *nostr.Event, parent string) {
	m.nodes[ev.ID] = &ttNode{id: ev.ID, pubkey: ev.PubKey, at: int64(ev.CreatedAt), parent: parent}
	m.order = append(m.order, ev.ID)
}

// Delete records that event id, added before, is deleted.
func (m *ThreadModel) Delete(id string) { m.nodes[id].deleted = true }

func (m *ThreadModel) children() map[string][]string {
	children := map[string][]string{}
	for _, oid := range m.order {
		if n := m.nodes[oid]; n.parent != "" {
			children[n.parent] = append(children[n.parent], oid)
		}
	}
	return children
}

// expectWith walks the subtree below id (through deleted events too: a
// deleted event's replies stay counted, RL-6) and returns the exact
// counters; children is m.children().
func (m *ThreadModel) expectWith(children map[string][]string, id string) ttCounters {
	var c ttCounters
	newest := map[string]int64{}
	for _, ch := range children[id] {
		if !m.nodes[ch].deleted {
			c.ReplyCount++
		}
	}
	stack := slices.Clone(children[id])
	for len(stack) > 0 {
		n := m.nodes[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		stack = append(stack, children[n.id]...)
		if n.deleted {
			continue
		}
		c.DescendantCount++
		if !c.LastReplyAt.Valid || n.at > c.LastReplyAt.Int64 {
			c.LastReplyAt = sql.NullInt64{Int64: n.at, Valid: true}
		}
		if at, ok := newest[n.pubkey]; !ok || n.at > at {
			newest[n.pubkey] = n.at
		}
	}
	authors := make([]string, 0, len(newest))
	for pk := range newest {
		authors = append(authors, pk)
	}
	sort.Slice(authors, func(i, j int) bool {
		if newest[authors[i]] != newest[authors[j]] {
			return newest[authors[i]] > newest[authors[j]]
		}
		return authors[i] < authors[j]
	})
	if len(authors) > 10 {
		authors = authors[:10]
	}
	c.Participants = authors
	return c
}

// CheckThreadModel compares the served counters of every model event with
// the model's, and has the store check that its counters agree with what
// it stores (Verify), failing the test where they differ.
func CheckThreadModel(t testing.TB, s Store, m *ThreadModel) {
	t.Helper()
	children := m.children()
	for _, id := range m.order {
		in := ttMustRead(t, s, id)
		if in.Deleted != m.nodes[id].deleted {
			t.Errorf("event %s: deleted=%v, model says %v", id[:8], in.Deleted, m.nodes[id].deleted)
		}
		want := m.expectWith(children, id)
		if !in.ttCounters.equal(want) {
			t.Errorf("counters of %s (depth %v):\n got  %v\n want %v", id[:8], in.Depth, in.ttCounters, want)
		}
	}
	ttVerify(t, s)
}

// ttVerify fails the test when the store's own consistency check does.
func ttVerify(t testing.TB, s Store) {
	t.Helper()
	if err := Verify(context.Background(), s); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// ttNewThread opens a fresh store with an empty model and n signers
// (testutil.SortedSigners): the start of every counter test.
func ttNewThread(t testing.TB, open Opener, n int) (Store, []testutil.Signer, *ThreadModel) {
	t.Helper()
	s := ttOpen(t, open)
	return s, testutil.SortedSigners(t, n), NewThreadModel()
}

// ttIngestAdd stores ev (ttIngest) and records it in m as a child of parent
// ("" for top-level).
func ttIngestAdd(t testing.TB, s Store, m *ThreadModel, ev *nostr.Event, parent string) *nostr.Event {
	t.Helper()
	ttIngest(t, s, ev)
	m.Add(ev, parent)
	return ev
}

// ttRootMid stores, by sg, a top-level "root" in ttChan at ttBase and a
// "mid" reply to it at ttBase+1, both recorded in m.
func ttRootMid(t testing.TB, s Store, m *ThreadModel, sg testutil.Signer) (root, mid *nostr.Event) {
	t.Helper()
	root = ttIngestAdd(t, s, m, sg.Event(t, 9, ttBase, "root", ttH(ttChan)), "")
	mid = ttIngestAdd(t, s, m, sg.Event(t, 9, ttBase+1, "mid", ttH(ttChan), ttReplyTag(root.ID)), root.ID)
	return root, mid
}

// ttTreeNode is one entry of a scripted tree for ttBuildTree: (name, author
// index, created_at offset, parent name or "" for a top-level event,
// broadcast).
type ttTreeNode struct {
	name   string
	author int
	at     int64
	parent string
	bc     bool
}

// ttBuildTree ingests a scripted tree in ttChan, in order, records it in m
// and returns its events by name.
func ttBuildTree(t testing.TB, s Store, signers []testutil.Signer, nodes []ttTreeNode, m *ThreadModel) map[string]*nostr.Event {
	t.Helper()
	evs := map[string]*nostr.Event{}
	for _, n := range nodes {
		tags := nostr.Tags{ttH(ttChan)}
		parent := ""
		if n.parent != "" {
			p := evs[n.parent]
			parent = p.ID
			tags = append(tags, ttReplyTag(p.ID))
		}
		if n.bc {
			tags = append(tags, nostr.Tag{"broadcast", "1"})
		}
		evs[n.name] = ttIngestAdd(t, s, m, signers[n.author].Event(t, 9, ttBase+n.at, n.name, tags...), parent)
	}
	return evs
}

// ttSnapshot is everything the store holds (Dump).
func ttSnapshot(t testing.TB, s Store) string {
	t.Helper()
	d, err := s.Dump(context.Background())
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	return d
}

// SameSnapshot fails the test with the first differing line, saying
// what changed the store.
func SameSnapshot(t testing.TB, by, before, after string) {
	t.Helper()
	if before == after {
		return
	}
	bl, al := strings.Split(before, "\n"), strings.Split(after, "\n")
	for i := 0; i < max(len(bl), len(al)); i++ {
		var x, y string
		if i < len(bl) {
			x = bl[i]
		}
		if i < len(al) {
			y = al[i]
		}
		if x != y {
			t.Fatalf("store changed by %s; first difference at line %d:\n before %q\n after  %q", by, i, x, y)
		}
	}
	t.Fatalf("store changed by %s", by)
}

// ttRejectLeavesNothing requires that ev is rejected with exactly want
// (Reject) and that the store is unchanged (RL-4).
func ttRejectLeavesNothing(t testing.TB, s Store, ev *nostr.Event, want error) {
	t.Helper()
	before := ttSnapshot(t, s)
	Reject(t, s, ev, want)
	SameSnapshot(t, "a rejected event", before, ttSnapshot(t, s))
}

// ttVisible reports whether Query by id finds the event.
func ttVisible(t testing.TB, s Store, id string) bool {
	t.Helper()
	return len(QueryIDs(t, s, nostr.Filter{IDs: []string{id}}, buzz.Anonymous)) == 1
}

// Row classes as a Placement says them, for the classification tables.
const (
	rowNever    = int(buzz.RowNever)
	rowReply    = int(buzz.RowReply)
	rowTopLevel = int(buzz.RowTopLevel)
)
