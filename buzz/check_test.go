package buzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// memCheck is a CheckStore over a memThread: a check and its repair
// without SQL. It records the repair's steps in order.
type memCheck struct {
	m       *memThread
	pubkey  string
	canSign bool
	// foreign are the group state events the relay key did not sign.
	foreign []string
	// storageFinding is what StorageChecks finds: missing tag rows.
	storageFinding int
	steps          []string
}

// store is c as Check reads and repairs it.
func (c *memCheck) store() CheckStore {
	return CheckStore{
		RelayPubKey:  c.pubkey,
		CanSign:      c.canSign,
		ReadSnapshot: func(read func(CheckSnapshot) error) error { return read(c) },
		Repair:       func(fix func(CheckRepairTx) error) error { return fix(c) },
	}
}

// depth is how many parents seq has.
func (c *memCheck) depth(seq int64) int {
	d := 0
	for e := c.m.events[seq]; e.parent != 0; e = c.m.events[e.parent] {
		d++
	}
	return d
}

func (c *memCheck) ThreadReplies(each func(root int64, r threadcount.Reply) error) error {
	var replies []*memEvent
	for _, e := range c.m.events {
		if e.root != 0 {
			replies = append(replies, e)
		}
	}
	slices.SortFunc(replies, func(a, b *memEvent) int {
		if a.root != b.root {
			return int(a.root - b.root)
		}
		return c.depth(b.seq) - c.depth(a.seq)
	})
	for _, e := range replies {
		r := threadcount.Reply{Seq: e.seq, Parent: e.parent, PubKey: e.pubkey, At: e.at, Deleted: e.deleted}
		if err := each(e.root, r); err != nil {
			return err
		}
	}
	return nil
}

// memID is the id of event seq in a memCheck.
func memID(seq int64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 24), uint64(seq)) }

func (c *memCheck) CounterRows(each func(seq int64, id []byte, row ThreadRow) error) error {
	var seqs []int64
	for seq, e := range c.m.events {
		if e.row.Replies != 0 || e.row.Descendants != 0 || e.row.HasLastReply || len(e.row.Participants) > 0 {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if err := each(seq, memID(seq), c.m.events[seq].row); err != nil {
			return err
		}
	}
	return nil
}

func (c *memCheck) EventID(seq int64) ([]byte, error) { return memID(seq), nil }

func (c *memCheck) ForeignGroupState(pubkey string, each func(kind int, channel string, signer []byte) error) error {
	for _, ch := range c.foreign {
		if err := each(39000, ch, []byte{0xab}); err != nil {
			return err
		}
	}
	return nil
}

func (c *memCheck) StorageChecks(rep *CheckReport, repair bool) (func(CheckRepairTx) error, error) {
	rep.MissingTags = c.storageFinding
	if !repair || c.storageFinding == 0 {
		return nil, nil
	}
	return func(CheckRepairTx) error {
		c.steps = append(c.steps, "tags")
		c.storageFinding = 0
		return nil
	}, nil
}

func (c *memCheck) EventStored(seq int64) (bool, error) {
	_, ok := c.m.events[seq]
	return ok, nil
}

func (c *memCheck) ThreadRows() ThreadRows {
	c.steps = append(c.steps, "counters")
	return c.m
}

func (c *memCheck) DropForeignGroupState() error {
	c.steps = append(c.steps, "group state")
	c.foreign = nil
	return nil
}

// memForest is two threads built by the counter rules: replies, a
// deletion, a removal.
func memForest(t *testing.T) *memThread {
	t.Helper()
	m := &memThread{events: map[int64]*memEvent{}}
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	add := func(seq, parent, root int64, pk []byte, at int64) {
		m.events[seq] = &memEvent{seq: seq, parent: parent, root: root, pubkey: pk, at: at}
		if parent != 0 {
			if err := AddToAncestors(m, parent, pk, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(1, 0, 0, a, 10)
	add(2, 1, 1, b, 11)
	add(3, 2, 1, a, 12)
	add(4, 2, 1, b, 13)
	add(5, 1, 1, a, 14)
	add(6, 0, 0, b, 20)
	add(7, 6, 6, a, 21)
	add(8, 7, 6, b, 22)
	if err := SoftDelete(m, CountedEvent{Seq: 4, Parent: 2, PubKey: b, CreatedAt: 13}, 30); err != nil {
		t.Fatal(err)
	}
	if err := Remove(m, CountedEvent{Seq: 5, Parent: 1, PubKey: a, CreatedAt: 14}, 30); err != nil {
		t.Fatal(err)
	}
	return m
}

// RL-5: the counters ExpectedCounters computes from every thread's
// replies, read once, are those SubtreeCounters walks for each event.
func TestExpectedCountersFromScratch(t *testing.T) {
	m := memForest(t)
	want, err := ExpectedCounters(&memCheck{m: m})
	if err != nil {
		t.Fatal(err)
	}
	for seq := range m.events {
		walked, err := SubtreeCounters(m, seq)
		if err != nil {
			t.Fatal(err)
		}
		got := want[seq]
		if got.Replies != walked.Replies || got.Descendants != walked.Descendants || got.LastReplyAt != walked.LastReplyAt ||
			!bytes.Equal(threadcount.Encode(got.Participants), threadcount.Encode(walked.Participants)) {
			t.Errorf("#%d: from the threads %+v, walked %+v", seq, got, walked)
		}
	}
}

// RL-5: a counter finding names the event and both sides, in the words
// check prints; a row of zeros is no finding for an event with nothing
// live below.
func TestCounterFinding(t *testing.T) {
	id := memID(7)
	p := threadcount.Participant{PubKey: bytes.Repeat([]byte{3}, 32), At: 5}
	for _, tc := range []struct {
		name string
		have ThreadRow
		want Counters
		text string
	}{
		{"none stored, none wanted", ThreadRow{}, Counters{}, ""},
		{"zeros stored, none wanted", ThreadRow{LastReplyAt: 0, HasLastReply: true}, Counters{}, ""},
		{"the same", ThreadRow{Replies: 1, Descendants: 2, LastReplyAt: 5, HasLastReply: true, Participants: threadcount.Encode([]threadcount.Participant{p})},
			Counters{Replies: 1, Descendants: 2, LastReplyAt: 5, Participants: []threadcount.Participant{p}}, ""},
		{"reply count", ThreadRow{Replies: 9, Descendants: 2, LastReplyAt: 5, HasLastReply: true, Participants: threadcount.Encode([]threadcount.Participant{p})},
			Counters{Replies: 1, Descendants: 2, LastReplyAt: 5, Participants: []threadcount.Participant{p}},
			"reply_count 9, descendant_count 2, last_reply_at 5, 1 participants; want 1, 2, 5, 1"},
		{"no row", ThreadRow{}, Counters{Replies: 1, Descendants: 1, LastReplyAt: 5, Participants: []threadcount.Participant{p}},
			"reply_count 0, descendant_count 0, last_reply_at null, 0 participants; want 1, 1, 5, 1"},
		{"a row where nothing is live", ThreadRow{Replies: 1, Descendants: 1, LastReplyAt: 5, HasLastReply: true}, Counters{},
			"reply_count 1, descendant_count 1, last_reply_at 5, 0 participants; want 0, 0, null, 0"},
		{"participants", ThreadRow{Replies: 1, Descendants: 1, LastReplyAt: 5, HasLastReply: true},
			Counters{Replies: 1, Descendants: 1, LastReplyAt: 5, Participants: []threadcount.Participant{p}},
			"reply_count 1, descendant_count 1, last_reply_at 5, 0 participants; want 1, 1, 5, 1"},
	} {
		got := CounterFinding(id, tc.have, tc.want)
		want := tc.text
		if want != "" {
			want = "event 000000000000000000000000000000000000000000000000" + "0000000000000007: " + want
		}
		if got != want {
			t.Errorf("%s: %q, want %q", tc.name, got, want)
		}
	}
}

// RL-5, RL-33: check finds a damaged counter and a missing counters row,
// and repair makes every counter that of its subtree again; a check of
// the repaired threads finds nothing.
func TestCheckRepairsCounters(t *testing.T) {
	m := memForest(t)
	c := &memCheck{m: m, pubkey: "k", canSign: true}
	if rep, err := Check(c.store(), false); err != nil || !rep.OK() {
		t.Fatalf("check of counters kept by the rules: %+v %v", rep, err)
	}
	m.events[2].row.Replies += 3
	m.events[6].row = ThreadRow{}
	rep, err := Check(c.store(), false)
	if err != nil || len(rep.Counters) != 2 || rep.Repaired {
		t.Fatalf("check of damaged counters: %+v %v", rep, err)
	}
	if !strings.Contains(rep.Counters[0], "reply_count 4") || !strings.Contains(rep.Counters[1], "last_reply_at null") {
		t.Errorf("findings: %q", rep.Counters)
	}
	if rep, err = Check(c.store(), true); err != nil || !rep.Repaired {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if rep, err = Check(c.store(), false); err != nil || !rep.OK() {
		t.Fatalf("check after repair: %+v %v", rep, err)
	}
}

// RL-11, RL-21, RL-33: group state another key signed is a finding worded
// with the relay key (or its absence); repair drops it first, then fixes
// the counters, then what the store checks of itself; without a key to
// sign with, the other repairs are made and Check says ErrNoKeyToSign.
func TestCheckGroupStateAndRepairOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pubkey  string
		canSign bool
		repair  bool
		steps   []string
		err     error
		finding string
	}{
		{"report only", "k1", true, false, nil, nil, "kind 39000 of channel c is signed by ab, not by the relay key k1"},
		{"repair", "k1", true, true, []string{"group state", "counters", "tags"}, nil, "kind 39000 of channel c is signed by ab, not by the relay key k1"},
		{"no key", "", false, true, []string{"counters", "tags"}, ErrNoKeyToSign, "kind 39000 of channel c is signed by ab, not by a relay key (there is none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := memForest(t)
			m.events[1].row.Descendants++
			c := &memCheck{m: m, pubkey: tc.pubkey, canSign: tc.canSign, foreign: []string{"c"}, storageFinding: 1}
			rep, err := Check(c.store(), tc.repair)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if len(rep.GroupState) != 1 || rep.GroupState[0] != tc.finding || len(rep.Counters) != 1 || rep.MissingTags != 1 {
				t.Errorf("report %+v", rep)
			}
			if rep.Repaired != tc.repair || !slices.Equal(c.steps, tc.steps) {
				t.Errorf("repaired %v, steps %q; want %v, %q", rep.Repaired, c.steps, tc.repair, tc.steps)
			}
		})
	}
}
