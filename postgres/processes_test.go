package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// These tests run two stores on one database, as two relay processes
// sharing a PostgreSQL server do.

const (
	procChan = "0b5d2f0e-8a4b-4f43-9a4e-6a1c4b3e2d11"
	procT    = int64(1_700_000_000)
)

// procPair opens two stores on one fresh database.
func procPair(t *testing.T, cfg storetest.Config) (a, b suiteStore) {
	t.Helper()
	url := pgtest.FreshDatabase(t)
	return suiteOpen(t, url, cfg), suiteOpen(t, url, cfg)
}

// admit stores ev through s and fails the test on any refusal.
func admit(t testing.TB, s *Store, ev *nostr.Event) buzz.Admitted {
	t.Helper()
	a, err := s.Admit(context.Background(), ev)
	if err != nil {
		t.Fatalf("admit kind %d: %v", ev.Kind, err)
	}
	return a
}

// remote collects what OnRemote hands over.
type remote struct {
	mu  sync.Mutex
	got []remoteEvent
}

type remoteEvent struct {
	ev *nostr.Event
	a  buzz.Admitted
}

func (r *remote) add(ev *nostr.Event, a buzz.Admitted) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, remoteEvent{ev, a})
}

// wait returns what arrived once it holds n events, failing the test
// after a few seconds.
func (r *remote) wait(t testing.TB, n int) []remoteEvent {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := append([]remoteEvent(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d events arrived from the other process, want %d", len(r.got), n)
	return nil
}

// An event one process stores reaches the other through PostgreSQL, read
// as stored, with its channel and the thread summaries it changed; the
// process that stored it is not told again.
func TestRemoteDelivery(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	var fromA, fromB remote
	b.OnRemote(fromA.add)
	a.OnRemote(fromB.add)
	author := testutil.NewSigner(t)
	root := author.Event(t, 9, procT, "root", nostr.Tag{"h", procChan})
	reply := author.Event(t, 9, procT+1, "reply", nostr.Tag{"h", procChan}, nostr.Tag{"e", root.ID, "", "reply"})
	admit(t, a.Store, root)
	admit(t, a.Store, reply)
	got := fromA.wait(t, 2)
	if len(got) != 2 || got[0].ev.ID != root.ID || got[1].ev.ID != reply.ID {
		t.Fatalf("the other process got %v, want the root then the reply", got)
	}
	if got[1].ev.Sig != reply.Sig || got[1].ev.Content != "reply" {
		t.Fatalf("the reply arrived as %v", got[1].ev)
	}
	if got[1].a.Scope != procChan {
		t.Fatalf("scope %q, want %q", got[1].a.Scope, procChan)
	}
	if th := got[1].a.Threads; len(th) != 1 || th[0].ID != root.ID || !th[0].Root || th[0].Channel != procChan {
		t.Fatalf("thread changes %+v, want the root's", th)
	}
	time.Sleep(100 * time.Millisecond)
	fromB.mu.Lock()
	defer fromB.mu.Unlock()
	if len(fromB.got) != 0 {
		t.Fatalf("the storing process was told of its own events: %v", fromB.got)
	}
}

// A channel made private in one process is private in the other at once:
// its next read judges by the new state, and its published state follows
// the notification.
func TestAccessSeenByEveryProcess(t *testing.T) {
	owner, reader := testutil.NewSigner(t), testutil.NewSigner(t)
	a, b := procPair(t, storetest.Config{})
	admit(t, a.Store, owner.Event(t, 9007, procT, "", nostr.Tag{"h", procChan}))
	msg := owner.Event(t, 9, procT+1, "hello", nostr.Tag{"h", procChan})
	admit(t, a.Store, msg)
	f := nostr.Filter{IDs: []string{msg.ID}}
	if evs, err := b.Query(context.Background(), f, buzz.Viewer(reader.PK)); err != nil || len(evs) != 1 {
		t.Fatalf("open channel: the other process served %d events (%v), want 1", len(evs), err)
	}
	admit(t, a.Store, owner.Event(t, 9002, procT+2, "", nostr.Tag{"h", procChan}, nostr.Tag{"private"}))
	if evs, err := b.Query(context.Background(), f, buzz.Viewer(reader.PK)); err != nil || len(evs) != 0 {
		t.Fatalf("private channel: the other process served %d events (%v) to a non-member, want 0", len(evs), err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !b.Community().Channel(procChan).Private {
		if time.Now().After(deadline) {
			t.Fatal("the other process's access state never showed the channel private")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RL-36, RL-33: the purge of an expired 9009 in one process revokes its
// code for every process: it bumps the access version, so that the other
// reads the channel closed, with no live code, as after a deletion.
func TestInvitePurgeSeenByEveryProcess(t *testing.T) {
	owner := testutil.NewSigner(t)
	clock := testutil.NewClock(procT + 10)
	a, b := procPair(t, storetest.Config{RelayKey: nostr.GeneratePrivateKey(), Now: clock.Now})
	admit(t, a.Store, owner.Event(t, 9007, procT, "", nostr.Tag{"h", procChan}, nostr.Tag{"private"}))
	admit(t, a.Store, owner.Event(t, 9009, procT+1, "", nostr.Tag{"h", procChan}, nostr.Tag{"code", "c"},
		nostr.Tag{"expiration", strconv.FormatInt(procT+20, 10)}))
	// b hears of the channel and its code first, or the wait below could
	// pass on a state from before them.
	waitChannel := func(what string, ok func(*buzz.Channel) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for ch := b.Community().Channel(procChan); ch == nil || !ok(ch); ch = b.Community().Channel(procChan) {
			if time.Now().After(deadline) {
				t.Fatalf("the other process never read %s: %+v", what, ch)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitChannel("the live code", func(ch *buzz.Channel) bool { return ch.Invites == 1 && !ch.Closed() })
	clock.Set(procT + 60)
	if n, err := a.PurgeExpired(context.Background()); err != nil || n != 1 {
		t.Fatalf("purge: %d removed, %v; want 1", n, err)
	}
	waitChannel("the purge", func(ch *buzz.Channel) bool { return ch.Invites == 0 && ch.Closed() })
}

// Replies written at once by two processes into one thread leave every
// counter exact (RL-5): writes from every process are serial.
func TestConcurrentThreadAcrossProcesses(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	authors := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	root := authors[0].Event(t, 9, procT, "root", nostr.Tag{"h", procChan})
	admit(t, a.Store, root)
	const perProcess = 40
	var wg sync.WaitGroup
	for p, s := range []*Store{a.Store, b.Store} {
		evs := make([]*nostr.Event, perProcess)
		for i := range evs {
			evs[i] = authors[(p+i)%len(authors)].Event(t, 9, procT+1+int64(i), "reply",
				nostr.Tag{"h", procChan}, nostr.Tag{"e", root.ID, "", "reply"})
		}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < perProcess; i += 4 {
					if _, err := s.Admit(context.Background(), evs[i]); err != nil {
						t.Errorf("admit: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	checkCountersExact(t, a, b, root.ID, 2*perProcess, len(authors))
}

// checkCountersExact checks, after concurrent writers in two processes
// (stores a and b on one database), that the counters are what a recount
// gives and that root's summary, read by b, counts replies replies (all
// direct) by authors distinct authors.
func checkCountersExact(t *testing.T, a, b suiteStore, root string, replies, authors int) {
	t.Helper()
	if err := storetest.Verify(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	sums, err := b.Summaries(context.Background(), []string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].ReplyCount != int64(replies) || sums[0].DescendantCount != int64(replies) ||
		len(sums[0].Participants) != authors {
		t.Fatalf("root summary %+v, want %d replies by %d authors", sums, replies, authors)
	}
}

// The relay-signed group state is the same event whichever process signs
// it: it depends on the channel's state, the clock and the relay key only
// (RL-11).
func TestGroupStateSameWhicheverProcess(t *testing.T) {
	relay, owner := testutil.NewSigner(t), testutil.NewSigner(t)
	clock := func() time.Time { return time.Unix(procT+10, 0) }
	cfg := storetest.Config{RelayKey: relay.SK, Now: clock}
	a := suiteOpen(t, pgtest.FreshDatabase(t), cfg)
	b := suiteOpen(t, pgtest.FreshDatabase(t), cfg)
	create := owner.Event(t, 9007, procT, "", nostr.Tag{"h", procChan}, nostr.Tag{"name", "general"})
	var signed [2][]*nostr.Event
	for i, s := range []*Store{a.Store, b.Store} {
		s.OnPublish(func(evs []*nostr.Event) { signed[i] = append(signed[i], evs...) })
		admit(t, s, create)
	}
	if len(signed[0]) != len(buzz.GroupStateKinds) || len(signed[0]) != len(signed[1]) {
		t.Fatalf("signed %d and %d group state events, want %d each", len(signed[0]), len(signed[1]), len(buzz.GroupStateKinds))
	}
	for i := range signed[0] {
		if x, y := signed[0][i], signed[1][i]; x.ID != y.ID || x.Sig != y.Sig {
			t.Fatalf("kind %d: %s/%s in one process, %s/%s in the other", x.Kind, x.ID, x.Sig, y.ID, y.Sig)
		}
	}
}

// A deletion that recounts hundreds of threads is stored and announced:
// the threads its notification names are bounded, where a payload past
// NOTIFY's 8000 bytes failed the whole write (RL-33, found by review).
func TestLargeDeletionNotifies(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	var fromA remote
	b.OnRemote(fromA.add)
	if _, err := a.pool.Exec(context.Background(), `SELECT setval(pg_get_serial_sequence('events', 'seq'), 100000000000000000)`); err != nil {
		t.Fatal(err)
	}
	author := testutil.NewSigner(t)
	const threads = 500
	deletion := nostr.Tags{}
	for i := range threads {
		root := author.Event(t, 9, procT+int64(2*i), "root", nostr.Tag{"h", procChan})
		reply := author.Event(t, 9, procT+int64(2*i+1), "reply", nostr.Tag{"h", procChan}, nostr.Tag{"e", root.ID, "", "reply"})
		admit(t, a.Store, root)
		admit(t, a.Store, reply)
		deletion = append(deletion, nostr.Tag{"e", reply.ID})
	}
	del := author.Event(t, 5, procT+2*threads, "", deletion...)
	admit(t, a.Store, del)
	got := fromA.wait(t, 2*threads+1)
	last := got[len(got)-1]
	if last.ev.ID != del.ID || len(last.a.Threads) == 0 || len(last.a.Threads) > maxNotedThreads {
		t.Fatalf("the deletion arrived as %s with %d thread changes, want it with 1..%d", last.ev.ID, len(last.a.Threads), maxNotedThreads)
	}
}

// RL-33, RL-13: an event deleted (or expired) between its commit and the
// moment another process reads its notification is not delivered live
// there: the other process serves what is stored now.
func TestRemoteDeliverySkipsDeleted(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	var fromA remote
	b.OnRemote(fromA.add)
	author := testutil.NewSigner(t)
	gone := author.Event(t, 1, procT, "deleted before it is read")
	admit(t, a.Store, gone)
	fromA.wait(t, 1) // delivered while it stood
	admit(t, a.Store, author.Event(t, 5, procT+1, "", nostr.Tag{"e", gone.ID}))
	var seq int64
	if err := a.pool.QueryRow(context.Background(), `SELECT seq FROM events WHERE content = $1`, []byte(gone.Content)).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	fromA.wait(t, 2) // and its deletion
	fromA.mu.Lock()
	fromA.got = nil
	fromA.mu.Unlock()
	if err := b.deliverRemote(context.Background(), eventNote{Seq: seq}); err != nil {
		t.Fatal(err)
	}
	fromA.mu.Lock()
	defer fromA.mu.Unlock()
	if len(fromA.got) != 0 {
		t.Fatalf("a deleted event was delivered: %v", fromA.got[0].ev)
	}
}

// RL-33: an ephemeral event one process hands on reaches the other's
// OnRemote, never its own; one whose notification would pass NOTIFY's
// 8000 bytes is refused, saying so.
func TestBroadcastEphemeral(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	var fromA, fromB remote
	b.OnRemote(fromA.add)
	a.OnRemote(fromB.add)
	author := testutil.NewSigner(t)
	typing := author.Event(t, 20001, procT, "", nostr.Tag{"h", procChan})
	if err := a.Broadcast(context.Background(), typing); err != nil {
		t.Fatal(err)
	}
	if got := fromA.wait(t, 1); got[0].ev.ID != typing.ID || got[0].ev.Sig != typing.Sig || got[0].a.Scope != "" {
		t.Fatalf("the other process got %+v", got[0])
	}
	big := author.Event(t, 20001, procT, strings.Repeat("x", 8000))
	if err := a.Broadcast(context.Background(), big); !errors.Is(err, errEphemeralTooLarge) {
		t.Fatalf("a large ephemeral event: %v, want errEphemeralTooLarge", err)
	}
	fromB.mu.Lock()
	defer fromB.mu.Unlock()
	if len(fromB.got) != 0 {
		t.Fatalf("the sending process got its own event: %v", fromB.got)
	}
}

// RL-33, RL-30: while a process does not hear the others' writes (its
// listening connection lost), it is not ready; it listens again by
// itself, and is ready again.
func TestReadinessFollowsTheListener(t *testing.T) {
	a, _ := procPair(t, storetest.Config{})
	ctx := context.Background()
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	var ended int
	if err := a.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&ended); err != nil || ended == 0 {
		t.Fatalf("ending the listening connections: %d, %v", ended, err)
	}
	until := func(what string, done func(error) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if done(a.Ping(ctx)) {
				return
			}
		}
		t.Fatalf("readiness: %s did not happen", what)
	}
	until("not ready", func(err error) bool { return errors.Is(err, errNotHearing) })
	until("ready again", func(err error) bool { return err == nil })
}

// RL-33, issue 29 item 8b: CaughtUp is answered only once every event
// another process committed before the call has been handed to OnRemote:
// here B's delivery of an event stored through A is held, and B's
// CaughtUp waits for it; calls made at once are all answered.
func TestCaughtUpAfterEarlierDeliveries(t *testing.T) {
	a, b := procPair(t, storetest.Config{})
	held, release := make(chan string), make(chan struct{})
	b.OnRemote(func(ev *nostr.Event, _ buzz.Admitted) {
		held <- ev.ID
		<-release
	})
	ev := testutil.NewSigner(t).Event(t, 1, procT, "through A")
	admit(t, a.Store, ev)
	select {
	case id := <-held:
		if id != ev.ID {
			t.Fatalf("B delivers %s, want %s", id, ev.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B never delivered the event stored through A")
	}
	var calls []<-chan struct{}
	for range 3 {
		calls = append(calls, b.CaughtUp())
	}
	for i, c := range calls {
		select {
		case <-c:
			t.Fatalf("call %d answered while B still delivers an event committed before it", i)
		case <-time.After(200 * time.Millisecond):
		}
	}
	close(release)
	for i, c := range calls {
		select {
		case <-c:
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d not answered once B delivered everything", i)
		}
	}
}
