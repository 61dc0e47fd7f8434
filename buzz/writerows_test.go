package buzz

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// testRow is a store's row of a stored event: the rules' fact and a
// column only the store reads.
type testRow struct {
	fact StoredEvent
	tags nostr.Tags
}

func (r *testRow) Tags() (nostr.Tags, error) {
	if r.tags == nil {
		return nil, errors.New("malformed tags")
	}
	return r.tags, nil
}

func (r *testRow) Fact() *StoredEvent {
	if r == nil {
		return nil
	}
	f := r.fact
	return &f
}

// RL-6, RL-9: the rules find stored events by id (either case, NIP-01),
// by number and by address through a store's rows, and the writes that
// carry out their decisions (a soft deletion, a replaced version's
// removal) take back the very row the rules saw.
func TestWriteRows(t *testing.T) {
	id := strings.Repeat("ab", 32)
	rows := map[int64]*testRow{
		1: {fact: StoredEvent{Ref: 1, ID: id, PubKey: pkOwner, Kind: 1}},
		2: {fact: StoredEvent{Ref: 2, ID: strings.Repeat("cd", 32), PubKey: pkOwner, Kind: 30023}, tags: nostr.Tags{{"d", "x"}}},
	}
	var readID, readKey []byte
	var deleted, removed []*testRow
	wr := NewWriteRows(EventRows[*testRow]{
		ByID: func(key []byte) (*testRow, error) {
			readID = key
			if bytes.Equal(key, bytes.Repeat([]byte{0xab}, 32)) {
				return rows[1], nil
			}
			return nil, nil
		},
		ByRef: func(ref int64) (*testRow, error) { return rows[ref], nil },
		Versions: func(kind int, pubkey []byte, d string) ([]*testRow, error) {
			readKey = pubkey
			return []*testRow{rows[2]}, nil
		},
		ChannelNumber: func(h string) (int64, bool, error) { return 1, h == chanID, nil },
		SoftDelete: func(r *testRow, _ int64) error {
			deleted = append(deleted, r)
			return nil
		},
		Remove: func(r *testRow, _ int64) error {
			removed = append(removed, r)
			return nil
		},
	}, NewTxCommunity(NewCommunity(Policy{}, openChannel())))

	for _, tc := range []struct {
		name    string
		id      string
		wantRef int64 // 0: none found
	}{
		{"lowercase", id, 1},
		{"uppercase", strings.ToUpper(id), 1},
		{"other", strings.Repeat("ef", 32), 0},
		{"no id", "not hex", 0},
	} {
		got, err := wr.EventByID(tc.id)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (got == nil && tc.wantRef != 0) || (got != nil && got.Ref != tc.wantRef) {
			t.Errorf("%s: EventByID = %+v, want #%d", tc.name, got, tc.wantRef)
		}
		if tc.name == "no id" && readID != nil {
			t.Errorf("no id: read key %x, want none", readID)
		}
	}
	if r := wr.Row(1); r != rows[1] {
		t.Errorf("Row(1) = %+v, want the row EventByID read", r)
	}
	if r := wr.Row(3); r != nil {
		t.Errorf("Row(3) = %+v, want none: the rules never saw it", r)
	}

	vs, err := wr.Versions(30023, strings.ToUpper(pkOwner), "x")
	if err != nil || len(vs) != 1 || vs[0].Ref != 2 {
		t.Fatalf("Versions = %v, %v; want #2", vs, err)
	}
	if !bytes.Equal(readKey, bytes.Repeat([]byte{0xaa}, 32)) {
		t.Errorf("Versions read pubkey %x", readKey)
	}
	if tags, err := wr.TagsOf(vs[0]); err != nil || tags.GetD() != "x" {
		t.Errorf("TagsOf(#2) = %v, %v; want the version's tags", tags, err)
	}
	if _, err := wr.TagsOf(&StoredEvent{Ref: 1}); err == nil || !strings.Contains(err.Error(), "#1") {
		t.Errorf("TagsOf(#1) of malformed tags: err %v", err)
	}
	if err := wr.SoftDelete(&StoredEvent{Ref: 1}, 5); err != nil || !slices.Equal(deleted, []*testRow{rows[1]}) {
		t.Errorf("SoftDelete(#1) deleted %v, %v", deleted, err)
	}
	if err := wr.Remove(vs[0], 5); err != nil || !slices.Equal(removed, []*testRow{rows[2]}) {
		t.Errorf("Remove(#2) removed %v, %v", removed, err)
	}
	if _, err := wr.Versions(30023, "zz", "x"); err == nil {
		t.Error("Versions of a malformed pubkey: no error")
	}

	if e, err := wr.EventByRef(5); e != nil || err != nil {
		t.Errorf("EventByRef(5) = %v, %v; want none", e, err)
	}
	if seq, found, _ := wr.ChannelNumber(chanID); seq != 1 || !found {
		t.Errorf("ChannelNumber = %d, %v", seq, found)
	}
	if wr.Community().Channel(chanID) == nil {
		t.Error("Community does not hold the transaction's channels")
	}
}
