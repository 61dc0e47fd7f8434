package sqlite

// Helpers of thread_test.go and deletion_test.go: opening a store with
// options, ingesting with exact error checks, reading stored classification
// and counters back with plain SQL, an independent Go model of a thread tree
// that computes the counters the contract asks for (RL-5, CW-19), and full
// table snapshots for atomicity checks (RL-4). Every name starts with "tt".

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Two channels, as NIP-29 group ids (UUIDs).
const (
	ttChan  = "0b5d2f0e-8a4b-4f43-9a4e-6a1c4b3e2d11"
	ttChan2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// ttBase is the created_at of the first event of a test; the store does not
// check dates (that is buzz.CheckSubmission), so a fixed past date keeps the
// tests deterministic.
const ttBase int64 = 1_700_000_000

// ttOpen opens a fresh store in t.TempDir() with the given relay admins.
func ttOpen(t testing.TB, admins ...string) *Store {
	t.Helper()
	return qtOpenWith(t, Options{Admins: admins})
}

func ttH(ch string) nostr.Tag        { return nostr.Tag{"h", ch} }
func ttReplyTag(id string) nostr.Tag { return nostr.Tag{"e", id, "", "reply"} }
func ttRootTag(id string) nostr.Tag  { return nostr.Tag{"e", id, "", "root"} }
func ttE(id string) nostr.Tag        { return nostr.Tag{"e", id} }

// ttIngest stores ev and fails the test on any error.
func ttIngest(t testing.TB, s *Store, ev *nostr.Event) *nostr.Event {
	t.Helper()
	if err := s.Ingest(context.Background(), ev); err != nil {
		t.Fatalf("ingest kind %d %s (tags %v): %v", ev.Kind, ev.ID, ev.Tags, err)
	}
	return ev
}

// ttReject ingests ev and requires the exact rejection want: same wire text
// (err.Error()) and errors.Is the buzz sentinel.
func ttReject(t testing.TB, s *Store, ev *nostr.Event, want error) {
	t.Helper()
	err := s.Ingest(context.Background(), ev)
	if err == nil {
		t.Fatalf("ingest kind %d (tags %v) accepted, want %q", ev.Kind, ev.Tags, want.Error())
	}
	if err.Error() != want.Error() {
		t.Fatalf("ingest kind %d (tags %v): error %q, want %q", ev.Kind, ev.Tags, err.Error(), want.Error())
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q is not the sentinel %q", err, want)
	}
	if _, ok := buzz.AsRejection(err); !ok {
		t.Fatalf("error %q is not a *buzz.Rejection", err)
	}
}

// ttCounters are the subtree counters of one event (RL-5, CW-19), as stored
// or as the model computes them. A missing thread_metadata row reads as all
// zero (schema.sql).
type ttCounters struct {
	ReplyCount      int64
	DescendantCount int64
	LastReplyAt     sql.NullInt64
	Participants    []string // hex pubkeys, in stored order
	ParticipantAts  []int64  // each participant's newest created_at below
}

func (c ttCounters) String() string {
	last := "NULL"
	if c.LastReplyAt.Valid {
		last = fmt.Sprint(c.LastReplyAt.Int64)
	}
	ps := make([]string, len(c.Participants))
	for i, p := range c.Participants {
		ps[i] = fmt.Sprintf("%s@%d", p[:8], c.ParticipantAts[i])
	}
	return fmt.Sprintf("{replies:%d desc:%d last:%s parts:[%s]}", c.ReplyCount, c.DescendantCount, last, strings.Join(ps, " "))
}

func (c ttCounters) equal(o ttCounters) bool {
	return c.ReplyCount == o.ReplyCount && c.DescendantCount == o.DescendantCount &&
		c.LastReplyAt == o.LastReplyAt && slices.Equal(c.Participants, o.Participants) &&
		slices.Equal(c.ParticipantAts, o.ParticipantAts)
}

// ttInfo is what the events and thread_metadata tables say about one event.
type ttInfo struct {
	ID        string // hex
	Seq       int64
	Depth     sql.NullInt64
	Parent    string // hex id of the parent event, "" when NULL
	Root      string // hex id of the root event, "" when NULL
	Broadcast bool
	RowClass  int
	Channel   sql.NullString // h of the event's channel
	Deleted   bool
	HasMeta   bool // a thread_metadata row exists
	ttCounters
}

// ttRead reads, through the read pool, the stored classification and
// counters of the event with hex id. ok is false when no such row exists.
func ttRead(t testing.TB, s *Store, id string) (ttInfo, bool) {
	t.Helper()
	key, err := hex.DecodeString(strings.ToLower(id))
	if err != nil {
		t.Fatalf("bad id %q", id)
	}
	ins := ttReadWhere(t, s, `e.id = ?`, key)
	if len(ins) == 0 {
		return ttInfo{}, false
	}
	return ins[0], true
}

// ttReadAll reads every stored event, by hex id, in one query.
func ttReadAll(t testing.TB, s *Store) map[string]ttInfo {
	t.Helper()
	out := map[string]ttInfo{}
	for _, in := range ttReadWhere(t, s, `1`) {
		out[in.ID] = in
	}
	return out
}

func ttReadWhere(t testing.TB, s *Store, where string, args ...any) []ttInfo {
	t.Helper()
	rows, err := s.readers.QueryContext(context.Background(), `
		SELECT e.id, e.seq, e.depth, p.id, r.id, e.broadcast, e.row_class, c.h, e.deleted_at,
		       m.seq, coalesce(m.reply_count, 0), coalesce(m.descendant_count, 0),
		       m.last_reply_at, m.participants
		FROM events e
		LEFT JOIN events p ON p.seq = e.parent
		LEFT JOIN events r ON r.seq = e.root
		LEFT JOIN channels c ON c.seq = e.channel
		LEFT JOIN thread_metadata m ON m.seq = e.seq
		WHERE `+where+` ORDER BY e.seq`, args...)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var out []ttInfo
	for rows.Next() {
		var (
			in          ttInfo
			id          []byte
			parent      []byte
			root        []byte
			broadcast   int64
			deletedAt   sql.NullInt64
			metaSeq     sql.NullInt64
			parts       []byte
			replies     int64
			descendants int64
		)
		if err := rows.Scan(&id, &in.Seq, &in.Depth, &parent, &root, &broadcast, &in.RowClass,
			&in.Channel, &deletedAt, &metaSeq, &replies, &descendants, &in.LastReplyAt, &parts); err != nil {
			t.Fatalf("read events: %v", err)
		}
		in.ID = hex.EncodeToString(id)
		if parent != nil {
			in.Parent = hex.EncodeToString(parent)
		}
		if root != nil {
			in.Root = hex.EncodeToString(root)
		}
		in.Broadcast = broadcast != 0
		in.Deleted = deletedAt.Valid
		in.HasMeta = metaSeq.Valid
		in.ReplyCount, in.DescendantCount = replies, descendants
		if len(parts)%40 != 0 {
			t.Fatalf("event %s: participants blob of %d bytes is not n x 40", in.ID, len(parts))
		}
		for b := parts; len(b) > 0; b = b[40:] {
			in.Participants = append(in.Participants, hex.EncodeToString(b[:32]))
			in.ParticipantAts = append(in.ParticipantAts, int64(binary.BigEndian.Uint64(b[32:40])))
		}
		out = append(out, in)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatalf("read events: %v", err)
	}
	return out
}

// ttMustRead is ttRead for an event that must be stored.
func ttMustRead(t testing.TB, s *Store, id string) ttInfo {
	t.Helper()
	in, ok := ttRead(t, s, id)
	if !ok {
		t.Fatalf("event %s is not stored", id)
	}
	return in
}

// ttClass is the expected classification of an event.
type ttClass struct {
	Depth     int64 // -1: NULL (unclassified)
	Parent    string
	Root      string
	Broadcast bool
	RowClass  int
}

func ttCheckClass(t testing.TB, s *Store, id string, want ttClass) {
	t.Helper()
	in := ttMustRead(t, s, id)
	depth := int64(-1)
	if in.Depth.Valid {
		depth = in.Depth.Int64
	}
	got := ttClass{Depth: depth, Parent: in.Parent, Root: in.Root, Broadcast: in.Broadcast, RowClass: in.RowClass}
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

// ttModel is an independent, in-Go computation of what thread_metadata
// must hold (RL-5, CW-19): it knows nothing of the store's SQL.
type ttModel struct {
	nodes map[string]*ttNode
	order []string
}

func newTTModel() *ttModel { return &ttModel{nodes: map[string]*ttNode{}} }

// add records ev as a child of parent ("" for top-level).
func (m *ttModel) add(ev *nostr.Event, parent string) {
	m.nodes[ev.ID] = &ttNode{id: ev.ID, pubkey: ev.PubKey, at: int64(ev.CreatedAt), parent: parent}
	m.order = append(m.order, ev.ID)
}

func (m *ttModel) del(id string) { m.nodes[id].deleted = true }

func (m *ttModel) children() map[string][]string {
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
func (m *ttModel) expectWith(children map[string][]string, id string) ttCounters {
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
	for _, pk := range authors {
		c.Participants = append(c.Participants, pk)
		c.ParticipantAts = append(c.ParticipantAts, newest[pk])
	}
	return c
}

// ttCheckModel compares the stored counters of every model event with the
// model's, and checks that subtreeCounters (the from-scratch computation)
// agrees with the incrementally maintained rows.
func ttCheckModel(t testing.TB, s *Store, m *ttModel) {
	t.Helper()
	all := ttReadAll(t, s)
	children := m.children()
	for _, id := range m.order {
		in, ok := all[id]
		if !ok {
			t.Fatalf("event %s is not stored", id[:8])
		}
		if in.Deleted != m.nodes[id].deleted {
			t.Errorf("event %s: deleted=%v, model says %v", id[:8], in.Deleted, m.nodes[id].deleted)
		}
		want := m.expectWith(children, id)
		if !in.ttCounters.equal(want) {
			t.Errorf("counters of %s (depth %v):\n got  %v\n want %v", id[:8], in.Depth, in.ttCounters, want)
		}
	}
	ttCheckRecount(t, s)
}

// ttCheckRecount requires, for every classified event, that the stored
// thread_metadata equals tx.subtreeCounters.
func ttCheckRecount(t testing.TB, s *Store) {
	t.Helper()
	stored := ttReadWhere(t, s, `e.depth IS NOT NULL`)
	computed := make([]Counters, len(stored))
	err := s.writer.do(context.Background(), func(tx *writeTx) error {
		for i, in := range stored {
			c, err := tx.subtreeCounters(in.Seq)
			if err != nil {
				return err
			}
			computed[i] = c
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range computed {
		got := ttCounters{ReplyCount: c.ReplyCount, DescendantCount: c.DescendantCount, LastReplyAt: c.lastReplyAt()}
		for _, p := range c.Participants {
			got.Participants = append(got.Participants, hex.EncodeToString(p.PubKey))
			got.ParticipantAts = append(got.ParticipantAts, p.At)
		}
		if !got.equal(stored[i].ttCounters) {
			t.Errorf("event %s: subtreeCounters %v, stored %v", stored[i].ID[:8], got, stored[i].ttCounters)
		}
	}
}

// ttNewThread opens a fresh store with an empty model and n signers
// (ttSigners): the start of every counter test.
func ttNewThread(t testing.TB, n int) (*Store, []testutil.Signer, *ttModel) {
	t.Helper()
	s := ttOpen(t)
	return s, testutil.SortedSigners(t, n), newTTModel()
}

// ttIngestAdd stores ev (ttIngest) and records it in m as a child of parent
// ("" for top-level).
func ttIngestAdd(t testing.TB, s *Store, m *ttModel, ev *nostr.Event, parent string) *nostr.Event {
	t.Helper()
	ttIngest(t, s, ev)
	m.add(ev, parent)
	return ev
}

// ttRootMid stores, by sg, a top-level "root" in ttChan at ttBase and a
// "mid" reply to it at ttBase+1, both recorded in m.
func ttRootMid(t testing.TB, s *Store, m *ttModel, sg testutil.Signer) (root, mid *nostr.Event) {
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
func ttBuildTree(t testing.TB, s *Store, signers []testutil.Signer, nodes []ttTreeNode, m *ttModel) map[string]*nostr.Event {
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

// snapshotQueries select every row of the tables ingest writes, in a
// stable order, so that a rejected event can be shown to have left
// nothing (RL-4).
var snapshotQueries = []string{
	`SELECT seq, h FROM channels ORDER BY seq`,
	`SELECT seq, id, pubkey, created_at, kind, tags, content, sig, channel, dtag, expires_at,
		deleted_at, parent, root, depth, broadcast, row_class FROM events ORDER BY seq`,
	`SELECT name, value, created_at, seq, kind FROM tags ORDER BY seq, name, value`,
	`SELECT seq, reply_count, descendant_count, last_reply_at, participants FROM thread_metadata ORDER BY seq`,
}

// ttSnapshot dumps every row of the tables ingest writes.
func ttSnapshot(t testing.TB, s *Store) string {
	t.Helper()
	return ttDump(t, s, snapshotQueries...)
}

// ttDump runs queries and writes every row of each (dumpRows).
func ttDump(t testing.TB, s *Store, queries ...string) string {
	t.Helper()
	d, err := dumpRows(context.Background(), s, queries...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dumpRows runs queries on the read pool and writes every row of each,
// blobs in hex, the results separated by "--" lines.
func dumpRows(ctx context.Context, s *Store, queries ...string) (string, error) {
	var b strings.Builder
	for _, q := range queries {
		rows, err := s.readers.QueryContext(ctx, q)
		if err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			return "", errors.Join(err, rows.Close())
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return "", errors.Join(err, rows.Close())
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					fmt.Fprintf(&b, "x'%x' ", bs)
				} else {
					fmt.Fprintf(&b, "%v ", v)
				}
			}
			b.WriteByte('\n')
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		b.WriteString("--\n")
	}
	return b.String(), nil
}

// ttSameSnapshot fails the test with the first differing line.
func ttSameSnapshot(t testing.TB, before, after string) {
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
			t.Fatalf("database changed by a rejected event; first difference at line %d:\n before %q\n after  %q", i, x, y)
		}
	}
	t.Fatal("database changed by a rejected event")
}

// ttRejectLeavesNothing requires that ev is rejected with exactly want
// (ttReject) and that the database is unchanged (RL-4).
func ttRejectLeavesNothing(t testing.TB, s *Store, ev *nostr.Event, want error) {
	t.Helper()
	before := ttSnapshot(t, s)
	ttReject(t, s, ev, want)
	ttSameSnapshot(t, before, ttSnapshot(t, s))
}

// ttVisible reports whether Query by id finds the event.
func ttVisible(t testing.TB, s *Store, id string) bool {
	t.Helper()
	return len(qtQuery(t, s, nostr.Filter{IDs: []string{id}})) == 1
}
