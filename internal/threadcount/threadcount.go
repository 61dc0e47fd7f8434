// Package threadcount is a thread summary's counters as both stores keep
// them (RL-5, RL-6, CW-19): the participants of a subtree packed as
// stored, their order, a reply merged in, and the counters of a whole
// thread recomputed from its replies, which check compares with the
// stored ones.
package threadcount

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// Max is how many distinct reply authors a subtree keeps (CW-19).
const Max = 10

// Size is one packed participant: 32-byte pubkey, 8-byte big-endian
// created_at of the author's newest event in the subtree.
const Size = 40

// Participant is a distinct author below an event and the created_at of
// their newest event there.
type Participant struct {
	PubKey []byte
	At     int64
}

// Decode reads packed participants.
func Decode(b []byte) []Participant {
	out := make([]Participant, 0, len(b)/Size+1)
	for len(b) >= Size {
		out = append(out, Participant{PubKey: b[:32], At: int64(binary.BigEndian.Uint64(b[32:40]))})
		b = b[Size:]
	}
	return out
}

// HexKeys is the pubkeys of packed participants in hex, in their order:
// a summary's participants as served. They are slices of one string: a
// deep window page decodes the participants of every row, and a string
// for each key was a third of the objects a page allocated.
func HexKeys(b []byte) []string {
	n := len(b) / Size
	keys := make([]string, n)
	if n == 0 {
		return keys
	}
	var all strings.Builder // its String is the bytes written, not a copy
	all.Grow(n * 2 * 32)
	var key [2 * 32]byte
	for i := range n {
		hex.Encode(key[:], b[i*Size:i*Size+32])
		all.Write(key[:])
	}
	keysHex := all.String()
	for i := range keys {
		keys[i] = keysHex[i*64 : (i+1)*64]
	}
	return keys
}

// Encode packs participants as stored.
func Encode(ps []Participant) []byte {
	b := make([]byte, 0, len(ps)*Size)
	for _, p := range ps {
		b = append(b, p.PubKey...)
		b = binary.BigEndian.AppendUint64(b, uint64(p.At))
	}
	return b
}

// Sort orders by newest event first, then pubkey (CW-19).
func Sort(ps []Participant) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].At != ps[j].At {
			return ps[i].At > ps[j].At
		}
		return bytes.Compare(ps[i].PubKey, ps[j].PubKey) < 0
	})
}

// Merge adds an event by pubkey at time at to packed participants that
// hold the top authors by their newest event. An event only ever raises
// its author's newest time, so the list stays exact without looking at
// the rest of the subtree.
func Merge(blob, pubkey []byte, at int64) []byte {
	ps := Decode(blob)
	found := false
	for i := range ps {
		if bytes.Equal(ps[i].PubKey, pubkey) {
			found = true
			if at <= ps[i].At {
				return blob
			}
			ps[i].At = at
		}
	}
	if !found {
		ps = append(ps, Participant{PubKey: pubkey, At: at})
	}
	Sort(ps)
	if len(ps) > Max {
		ps = ps[:Max]
	}
	return Encode(ps)
}

// Reply is a classified event of a thread, as Tally reads it.
type Reply struct {
	Seq, Parent int64
	PubKey      []byte
	At          int64
	Deleted     bool
}

// Counts are the counters an event with something below it has.
type Counts struct {
	Replies, Descendants int64
	// LastReplyAt is the newest created_at of a non-deleted event below.
	LastReplyAt  int64
	Participants []Participant
}

// Tally computes the counters of every event of thread root that has a
// non-deleted event below it, from the thread's replies listed children
// before their parents (deepest first), each subtree summed from its
// children's rather than walked again.
func Tally(root int64, replies []Reply) (map[int64]Counts, error) {
	type node struct {
		c      Counts
		newest map[string]int64 // authors below -> their newest event there
	}
	nodes := make(map[int64]*node, len(replies)+1)
	nodes[root] = &node{newest: map[string]int64{}}
	for _, r := range replies {
		nodes[r.Seq] = &node{newest: map[string]int64{}}
	}
	for _, r := range replies {
		n := nodes[r.Seq]
		p, ok := nodes[r.Parent]
		if !ok {
			return nil, fmt.Errorf("#%d names parent #%d outside its thread #%d", r.Seq, r.Parent, root)
		}
		if !r.Deleted {
			p.c.Replies++
			p.c.Descendants++
			if at, ok := p.newest[string(r.PubKey)]; !ok || r.At > at {
				p.newest[string(r.PubKey)] = r.At
			}
		}
		p.c.Descendants += n.c.Descendants
		for pk, at := range n.newest {
			if cur, ok := p.newest[pk]; !ok || at > cur {
				p.newest[pk] = at
			}
		}
	}
	out := map[int64]Counts{}
	for seq, n := range nodes {
		if n.c.Descendants == 0 {
			continue
		}
		ps := make([]Participant, 0, len(n.newest))
		for pk, at := range n.newest {
			ps = append(ps, Participant{PubKey: []byte(pk), At: at})
		}
		Sort(ps)
		n.c.LastReplyAt = ps[0].At
		n.c.Participants = ps[:min(len(ps), Max)]
		out[seq] = n.c
	}
	return out, nil
}
