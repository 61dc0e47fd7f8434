package buzz

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// memThread is ThreadRows over a map: a thread forest as a store keeps
// it, without SQL.
type memThread struct {
	events map[int64]*memEvent
}

type memEvent struct {
	seq, parent, root int64
	pubkey            []byte
	at                int64
	deleted           bool
	row               ThreadRow
}

func (m *memThread) ReadThreadRow(seq int64) (ThreadRow, error) {
	e := m.events[seq]
	r := e.row
	r.Up = e.parent
	return r, nil
}

func (m *memThread) WriteThreadRow(seq int64, row ThreadRow) error {
	m.events[seq].row = row
	return nil
}

func (m *memThread) LiveReplies(seq int64) (int64, error) {
	var n int64
	for _, e := range m.events {
		if e.parent == seq && !e.deleted {
			n++
		}
	}
	return n, nil
}

func (m *memThread) SubtreeAuthors(seq, known int64, each func(threadcount.Participant, int64)) error {
	newest, count := map[string]int64{}, map[string]int64{}
	next := []int64{seq}
	for len(next) > 0 {
		up := next[0]
		next = next[1:]
		for _, e := range m.events {
			if e.parent != up {
				continue
			}
			if e.seq != known {
				next = append(next, e.seq)
			}
			if !e.deleted {
				count[string(e.pubkey)]++
				newest[string(e.pubkey)] = max(newest[string(e.pubkey)], e.at)
			}
		}
	}
	for pk, n := range count {
		each(threadcount.Participant{PubKey: []byte(pk), At: newest[pk]}, n)
	}
	return nil
}

func (m *memThread) NewestInThread(root int64, limit int, each func(threadcount.Participant) bool) error {
	var live []*memEvent
	for _, e := range m.events {
		if e.root == root && !e.deleted {
			live = append(live, e)
		}
	}
	slices.SortFunc(live, func(a, b *memEvent) int { return int(b.at - a.at) })
	for _, e := range live[:min(len(live), limit)] {
		if !each(threadcount.Participant{PubKey: e.pubkey, At: e.at}) {
			return nil
		}
	}
	return nil
}

func (m *memThread) ThreadAuthors(root int64, each func(threadcount.Participant)) error {
	newest := map[string]int64{}
	for _, e := range m.events {
		if e.root == root && !e.deleted {
			newest[string(e.pubkey)] = max(newest[string(e.pubkey)], e.at)
		}
	}
	for pk, at := range newest {
		each(threadcount.Participant{PubKey: []byte(pk), At: at})
	}
	return nil
}

func (m *memThread) MarkDeleted(seq, _ int64) (bool, error) {
	e := m.events[seq]
	done := !e.deleted
	e.deleted = true
	return done, nil
}

func (m *memThread) RereadLastMessage(_, _ int64) error { return nil }

func (m *memThread) HasReplies(seq int64) (bool, error) {
	for _, e := range m.events {
		if e.parent == seq {
			return true, nil
		}
	}
	return false, nil
}

func (m *memThread) KeepAnchor(int64) error { return nil }

func (m *memThread) Drop(seq int64) error {
	delete(m.events, seq)
	return nil
}

// RL-5, RL-6, CW-19, issue 13: the counters AddToAncestors and SoftDelete
// keep by walking up from one event, reusing each subtree they read and
// reading a root's newest replies first, equal those computed from scratch
// after every reply, deletion and removal of a random forest, with ties in
// time, more than ten authors and threads longer than ThreadRecentRows
// written at the end by a few.
func TestThreadCountersWalkExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 13))
	m := &memThread{events: map[int64]*memEvent{}}
	authors := make([][]byte, 14)
	for i := range authors {
		authors[i] = bytes.Repeat([]byte{byte(i + 1)}, 32)
	}
	var roots, seqs []int64
	depth := map[int64]int64{}
	check := func(step int) {
		t.Helper()
		for _, e := range m.events {
			want, err := SubtreeCounters(m, e.seq)
			if err != nil {
				t.Fatal(err)
			}
			got := e.row
			if got.Replies != want.Replies || got.Descendants != want.Descendants ||
				got.HasLastReply != (want.Descendants > 0) || got.LastReplyAt != want.LastReplyAt ||
				!bytes.Equal(got.Participants, threadcount.Encode(want.Participants)) {
				t.Fatalf("step %d, #%d: kept %+v, from scratch %+v", step, e.seq, got, want)
			}
		}
	}
	for step := range 1500 {
		seq := int64(step + 1)
		at := int64(step / 3)
		// The last part of every thread is written by two authors.
		author := authors[rng.IntN(len(authors))]
		if step > 300 {
			author = authors[rng.IntN(2)]
		}
		switch k := rng.IntN(10); {
		case len(roots) < 2:
			m.events[seq] = &memEvent{seq: seq, pubkey: author, at: at}
			roots = append(roots, seq)
		case k <= 7:
			parent := seqs[rng.IntN(len(seqs))]
			p, ok := m.events[parent]
			if !ok || depth[parent] >= MaxDepth {
				continue
			}
			root := p.root
			if root == 0 {
				root = parent
			}
			m.events[seq] = &memEvent{seq: seq, parent: parent, root: root, pubkey: author, at: at}
			depth[seq] = depth[parent] + 1
			if err := AddToAncestors(m, parent, author, at); err != nil {
				t.Fatal(err)
			}
		default:
			e, ok := m.events[seqs[rng.IntN(len(seqs))]]
			if !ok {
				continue
			}
			ev := CountedEvent{Seq: e.seq, Parent: e.parent, PubKey: e.pubkey, CreatedAt: e.at}
			op := SoftDelete
			if k == 9 {
				op = Remove
			}
			if err := op(m, ev, at); err != nil {
				t.Fatal(err)
			}
		}
		seqs = append(seqs, seq)
		if step%50 == 0 || step > 1480 {
			check(step)
		}
	}
}
