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

// memExpired is ExpiredRows over a memTx whose events expire as expires
// says (by Ref); it notes what it removed.
type memExpired struct {
	*memTx
	expires map[int64]int64
	removed []int64
}

func newMemExpired(expires map[int64]int64) *memExpired {
	m := &memExpired{memTx: newMemTx(nil), expires: expires}
	for ref, at := range expires {
		m.events = append(m.events, &StoredEvent{Ref: ref, Kind: 1, ExpiresAt: at})
	}
	return m
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

func (m *memExpired) Remove(t *StoredEvent, now int64) error {
	delete(m.expires, t.Ref)
	m.removed = append(m.removed, t.Ref)
	return m.memTx.Remove(t, now)
}

// RL-22 (NIP-40): a purge batch removes the events expired at now, expires_at
// equal to now included, at most ExpiredBatch of them, and none still
// to expire.
func TestPurgeExpiredBatch(t *testing.T) {
	expires := map[int64]int64{1: 99, 2: 100, 3: 101}
	for seq := int64(10); seq < 10+ExpiredBatch+5; seq++ {
		expires[seq] = 50
	}
	m := newMemExpired(expires)
	total, err := InBatches(ExpiredBatch, func() (int, error) { return PurgeExpiredBatch(m, 100) })
	if err != nil || total != ExpiredBatch+7 {
		t.Fatalf("removed %d, %v", total, err)
	}
	if _, ok := m.expires[3]; !ok || len(m.expires) != 1 || !slices.Contains(m.removed, 2) {
		t.Errorf("left %v", m.expires)
	}
}

// RL-36, RL-22: the purge of an expired 9009 revokes its code as its
// deletion does, before its row goes (which would take the code's row
// with it): its channel counts one live code less, and its state is the
// transaction's, renewed before the commit: a private channel left
// without codes is closed. An expired event of another kind touches no
// channel.
func TestPurgeExpiredInvite(t *testing.T) {
	m := newMemExpired(map[int64]int64{40: 100})
	m.events = append(m.events, &StoredEvent{Ref: 41, Kind: KindCreateInvite, Channel: seqPrivate, ExpiresAt: 100})
	m.expires[41] = 100
	m.invites[inviteKey(seqPrivate, "c")] = []int64{41}
	ch := m.community.ChannelBySeq(seqPrivate).clone()
	ch.Invites = 1
	m.community.Put(ch)
	if n, err := PurgeExpiredBatch(m, 100); err != nil || n != 2 {
		t.Fatalf("removed %d, %v; want 2", n, err)
	}
	if ch := m.community.ChannelBySeq(seqPrivate); ch.Invites != 0 || !ch.Closed() {
		t.Errorf("after the purge of its one 9009: %d live codes, closed %v", ch.Invites, ch.Closed())
	}
	revoked, removed := slices.Index(m.writes, "revoke 41"), slices.Index(m.writes, "remove 41")
	if revoked < 0 || removed < revoked || !slices.Contains(m.writes, "state 2") || slices.Contains(m.writes, "revoke 40") {
		t.Errorf("writes %q: want the code of 41 revoked before its removal, its channel's state put, nothing of 40 revoked", m.writes)
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
