package buzz

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// RL-22 (NIP-40), RL-17: a purge runs batches until one removes fewer than a
// batch, or fails, and counts what all of them removed.
func TestInBatches(t *testing.T) {
	broken := errors.New("write failed")
	for _, tc := range []struct {
		name    string
		batches []int
		fail    int // the batch that fails, 1-based; 0 for none
		calls   int
		total   int
	}{
		{"nothing", []int{0}, 0, 1, 0},
		{"one short", []int{7}, 0, 1, 7},
		{"full then short", []int{10, 10, 3}, 0, 3, 23},
		{"full then empty", []int{10, 0}, 0, 2, 10},
		{"fails", []int{10, 4, 10}, 2, 2, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			total, err := InBatches(10, func() (int, error) {
				calls++
				if calls == tc.fail {
					return tc.batches[calls-1], broken
				}
				return tc.batches[calls-1], nil
			})
			if (err != nil) != (tc.fail != 0) || calls != tc.calls || total != tc.total {
				t.Errorf("%d calls, %d removed, %v; want %d, %d", calls, total, err, tc.calls, tc.total)
			}
		})
	}
}

// memExpired is ExpiredRows over a list of expirations.
type memExpired struct {
	expires map[int64]int64
	removed []int64
}

func (m *memExpired) Expired(now int64, limit int) ([]int64, error) {
	var seqs []int64
	for seq, at := range m.expires {
		if at <= now && len(seqs) < limit {
			seqs = append(seqs, seq)
		}
	}
	return seqs, nil
}

func (m *memExpired) RemoveExpired(seq, _ int64) error {
	delete(m.expires, seq)
	m.removed = append(m.removed, seq)
	return nil
}

// RL-22 (NIP-40): a purge batch removes the events expired at now, expires_at
// equal to now included, at most ExpiredBatch of them, and none still
// to expire.
func TestPurgeExpiredBatch(t *testing.T) {
	m := &memExpired{expires: map[int64]int64{1: 99, 2: 100, 3: 101}}
	for seq := int64(10); seq < 10+ExpiredBatch+5; seq++ {
		m.expires[seq] = 50
	}
	total, err := InBatches(ExpiredBatch, func() (int, error) { return PurgeExpiredBatch(m, 100) })
	if err != nil || total != ExpiredBatch+7 {
		t.Fatalf("removed %d, %v", total, err)
	}
	if _, ok := m.expires[3]; !ok || len(m.expires) != 1 || !slices.Contains(m.removed, 2) {
		t.Errorf("left %v", m.expires)
	}
}

// failingPurger fails both purges with err.
type failingPurger struct{ err error }

func (p failingPurger) PurgeExpired(context.Context) (int, error) { return 0, p.err }
func (p failingPurger) PurgeTokens(context.Context) (int, error)  { return 0, p.err }

// RL-30: a failed purge is logged, both kinds of it, except for the
// store's quiet error (a closed store's), which is not.
func TestPurgeLogs(t *testing.T) {
	closed := errors.New("closed")
	for _, tc := range []struct {
		err  error
		logs int
	}{
		{nil, 0},
		{errors.New("disk"), 2},
		{closed, 0},
	} {
		var out bytes.Buffer
		Purge(context.Background(), failingPurger{tc.err}, slog.New(slog.NewTextHandler(&out, nil)), closed)
		if n := strings.Count(out.String(), "level=ERROR"); n != tc.logs {
			t.Errorf("%v: %d errors logged, want %d:\n%s", tc.err, n, tc.logs, out.String())
		}
	}
}
