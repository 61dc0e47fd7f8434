package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// holdWriteLock takes the write lock from a connection of its own, as
// another process's transaction holds it, until the returned func.
func holdWriteLock(t *testing.T, url string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(writeLock)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(writeLock)); err != nil {
				t.Error(err)
			}
			conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// waitQueued waits until n write jobs wait in s's queue.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.queueMu.Lock()
		queued := len(s.queue)
		s.queueMu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d write jobs queued, want %d", queued, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// transactions are the write transactions s counted, and their jobs.
func transactions(s *Store) (txs, jobs uint64) {
	st := buzz.WriterStats(0, &s.batches, s.pages)
	for _, n := range st.BatchSizes {
		txs += n
	}
	return txs, st.BatchJobs
}

// Issue 32 (RL-4, RL-5, RL-33): the events a process admits while another
// holds the write lock are written in one transaction, and the counters
// stay exact with both processes writing replies to one thread at once:
// the reply counts, the participants, the channel's last message.
func TestGroupCommitAcrossProcesses(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	a, b := suiteOpen(t, url, storetest.Config{}), suiteOpen(t, url, storetest.Config{})
	authors := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	root := authors[0].Event(t, 9, procT, "root", nostr.Tag{"h", procChan})
	admit(t, a.Store, root)

	const perProcess = 60
	release := holdWriteLock(t, url)
	var wg sync.WaitGroup
	stores := []*Store{a.Store, b.Store}
	before := make([][2]uint64, len(stores))
	for p, s := range stores {
		before[p][0], before[p][1] = transactions(s)
		for i := range perProcess {
			ev := authors[(p+i)%len(authors)].Event(t, 9, procT+1+int64(p*perProcess+i), "reply",
				nostr.Tag{"h", procChan}, nostr.Tag{"e", root.ID, "", "reply"})
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Admit(context.Background(), ev); err != nil {
					t.Errorf("admit: %v", err)
				}
			}()
		}
	}
	for _, s := range stores {
		waitQueued(t, s, perProcess)
	}
	release()
	wg.Wait()

	for p, s := range stores {
		txs, jobs := transactions(s)
		if txs-before[p][0] != 1 || jobs-before[p][1] != perProcess {
			t.Errorf("process %d: %d transactions of %d jobs, want 1 of %d", p, txs-before[p][0], jobs-before[p][1], perProcess)
		}
	}
	checkCountersExact(t, a, b, root.ID, 2*perProcess, len(authors))
	channels, err := a.ChannelsByActivity(context.Background(), nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := procT + 2*perProcess; len(channels) != 1 || channels[0].LastMessageAt != want {
		t.Fatalf("channels by activity %+v, want %s last at %d", channels, procChan, want)
	}
}

// Issue 32 (RL-4): an event refused by a rule in a transaction shared
// with others gets its own exact refusal and the others are stored; a job
// that fails otherwise fails alone, its transaction's other events
// written again without it; a job whose caller went away while it waited
// is never written.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	s := suiteOpen(t, url, storetest.Config{})
	author := testutil.NewSigner(t)
	root := author.Event(t, 9, procT, "root", nostr.Tag{"h", procChan})
	admit(t, s.Store, root)
	const otherChan = "5c9a8d7e-1f2b-4c3d-8e4f-a5b6c7d8e9f0"

	release := holdWriteLock(t, url)
	var wg sync.WaitGroup
	const good = 20
	stored := make([]*nostr.Event, good)
	for i := range stored {
		stored[i] = author.Event(t, 9, procT+1+int64(i), "reply", nostr.Tag{"h", procChan}, nostr.Tag{"e", root.ID, "", "reply"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Admit(context.Background(), stored[i]); err != nil {
				t.Errorf("admit reply %d: %v", i, err)
			}
		}()
	}
	// A reply whose parent is in another channel: refused by the rules.
	refused := author.Event(t, 9, procT+100, "elsewhere", nostr.Tag{"h", otherChan}, nostr.Tag{"e", root.ID, "", "reply"})
	var refusal error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, refusal = s.Admit(context.Background(), refused)
	}()
	// A job that fails after it wrote: its transaction is undone and the
	// others run again each alone.
	broken := author.Event(t, 9, procT+101, "broken", nostr.Tag{"h", procChan})
	errBroken := errors.New("broken after writing")
	var brokenErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := newRecord(broken)
		if err != nil {
			brokenErr = err
			return
		}
		brokenErr = s.writeShared(context.Background(), r, func(tx *writeTx) error {
			if _, err := s.ingest(tx, r, tx.now, false); err != nil {
				return err
			}
			return errBroken
		})
	}()
	// A job whose caller leaves while it waits, queued after the others:
	// the goroutine that writes for them all is one of theirs.
	waitQueued(t, s.Store, good+2)
	gone := author.Event(t, 9, procT+102, "gone", nostr.Tag{"h", procChan})
	ctx, cancel := context.WithCancel(context.Background())
	var goneErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, goneErr = s.Admit(ctx, gone)
	}()
	waitQueued(t, s.Store, good+3)
	cancel()
	waitQueued(t, s.Store, good+2)
	release()
	wg.Wait()

	if !errors.Is(refusal, buzz.ErrParentOtherChannel) || refusal.Error() != "invalid: parent event belongs to a different channel" {
		t.Errorf("refused reply: %v, want the parent's other channel", refusal)
	}
	if !errors.Is(brokenErr, errBroken) {
		t.Errorf("broken job: %v, want its own error", brokenErr)
	}
	if !errors.Is(goneErr, context.Canceled) {
		t.Errorf("job whose caller left: %v, want context.Canceled", goneErr)
	}
	held := func(ev *nostr.Event) int {
		n, err := s.Held(context.Background(), nostr.Filter{IDs: []string{ev.ID}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, ev := range stored {
		if held(ev) != 1 {
			t.Errorf("reply %s not stored", ev.Content)
		}
	}
	for _, ev := range []*nostr.Event{refused, broken, gone} {
		if held(ev) != 0 {
			t.Errorf("event %q stored", ev.Content)
		}
	}
	if err := storetest.Verify(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	sums, err := s.Summaries(context.Background(), []string{root.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].ReplyCount != good {
		t.Fatalf("root summary %+v, want %d replies", sums, good)
	}
}
