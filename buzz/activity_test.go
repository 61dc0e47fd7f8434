package buzz

import (
	"errors"
	"math"
	"testing"
)

// memRows are Rows over listed channels.
type memRows struct {
	rows []ChannelActivity
	at   int
	err  error
}

func (m *memRows) Next() bool { m.at++; return m.at <= len(m.rows) }
func (m *memRows) Err() error { return m.err }
func (m *memRows) Scan(dest ...any) error {
	r := m.rows[m.at-1]
	*dest[0].(*int64), *dest[1].(*string), *dest[2].(*int64) = r.Seq, r.H, r.LastMessageAt
	return nil
}

// CW-25: the listing by activity starts before every channel, or before
// the position of the channel shown last; it reads the rows as they come.
func TestChannelActivityListing(t *testing.T) {
	if got := ActivityFrom(nil); got.LastMessageAt != math.MaxInt64 || got.Seq != math.MaxInt64 {
		t.Errorf("from the first: %+v", got)
	}
	shown := ChannelActivity{Seq: 4, H: "x", LastMessageAt: 99}
	pos := shown.Position()
	if got := ActivityFrom(&pos); got != (ChannelPosition{LastMessageAt: 99, Seq: 4}) {
		t.Errorf("after %+v: %+v", shown, got)
	}
	want := []ChannelActivity{{Seq: 9, H: "b", LastMessageAt: 50}, {Seq: 2, H: "a", LastMessageAt: 50}, {Seq: 3, H: "c"}}
	for _, tc := range []struct {
		rows []ChannelActivity
		err  error
	}{{nil, nil}, {want, nil}, {want, errors.New("read failed")}} {
		got, err := ScanChannelActivity(&memRows{rows: tc.rows, err: tc.err}, 10)
		if !errors.Is(err, tc.err) {
			t.Fatalf("error %v, want %v", err, tc.err)
		}
		if tc.err != nil {
			continue
		}
		if len(got) != len(tc.rows) || got == nil {
			t.Fatalf("read %+v", got)
		}
		for i := range got {
			if got[i] != tc.rows[i] {
				t.Errorf("row %d: %+v, want %+v", i, got[i], tc.rows[i])
			}
		}
	}
}
