package sqlite

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// walSize is the size of the store's WAL file (0 when there is none).
func walSize(t *testing.T, s *Store) int64 {
	t.Helper()
	st, err := os.Stat(s.path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// RL-1, RL-27a, issue 13 finding 6: the WAL stays within its limit while
// readers run without pause. Six goroutines loop COUNTs and queries, each
// its own read transaction, while the test writes eight times the limit in
// batches; after every batch the WAL file is within the limit but for one
// batch, and every write and read succeeds.
// Before boundWAL, the readers always held a snapshot that needed the WAL,
// no checkpoint could start it over, and it grew with every batch.
func TestWALBoundedUnderReaders(t *testing.T) {
	const limit = 1 << 20
	s := qtOpenWith(t, Options{WALLimit: limit, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	ctx := context.Background()
	sg := testutil.NewSigner(t)
	content := strings.Repeat("a chat line of some length, ", 600)
	var batches [][]*nostr.Event
	for b := range 8 * limit / (10 * len(content)) {
		evs := make([]*nostr.Event, 10)
		for i := range evs {
			evs[i] = sg.Event(t, 9, int64(1_700_000_000+10*b+i), content, nostr.Tag{"h", ttChan})
		}
		batches = append(batches, evs)
	}

	var (
		reads atomic.Int64
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	started := make(chan struct{})
	var once sync.Once
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if i%2 == 0 {
					_, err = s.Count(ctx, nostr.Filter{Kinds: []int{9}}, buzz.Anonymous)
				} else {
					_, err = s.Query(ctx, nostr.Filter{Kinds: []int{9}, Limit: 20}, buzz.Anonymous)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if reads.Add(1) >= 12 {
					once.Do(func() { close(started) })
				}
			}
		}()
	}
	<-started

	largest, resets, grown := int64(0), 0, int64(0)
	start := time.Now()
	prev := walSize(t, s)
	for _, evs := range batches {
		outcomes, err := s.ImportBatch(ctx, evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outcomes {
			if o != nil {
				t.Fatal(o)
			}
		}
		size := walSize(t, s)
		largest = max(largest, size)
		if size < prev {
			resets++
		}
		grown = max(grown, size-prev)
		if size > limit+grown {
			t.Errorf("WAL of %d bytes after a batch: the limit is %d, and a batch wrote at most %d", size, limit, grown)
		}
		prev = size
	}
	close(stop)
	wg.Wait()
	if resets == 0 {
		t.Errorf("the WAL was never started over (largest %d bytes)", largest)
	}
	t.Logf("largest WAL %d bytes (limit %d, batches up to %d), %d resets, %d reads, writes %v",
		largest, limit, grown, resets, reads.Load(), time.Since(start))
}
