package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Issue 32 (RL-4, RL-5, RL-6, RL-9): an import batch whose events
// duplicate, delete, replace, react to and reply to one another, on top
// of events stored before, has the outcomes and the counters of the same
// events imported one a batch: what a batch reads ahead (writeCache)
// answers as the database would at each event.
func TestImportBatchReadAheadExact(t *testing.T) {
	ctx := context.Background()
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := nostr.Tag{"h", procChan}
	reply := func(root, parent *nostr.Event) []nostr.Tag {
		return []nostr.Tag{ch, {"e", root.ID, "", "root"}, {"e", parent.ID, "", "reply"}}
	}
	at := procT
	next := func() int64 { at++; return at }
	stored := a.Event(t, 9, next(), "stored before", ch)
	storedDel := a.Event(t, buzz.KindDeletion, next(), "", nostr.Tag{"e", "1111111111111111111111111111111111111111111111111111111111111111"})
	before := []*nostr.Event{stored, storedDel}

	m := a.Event(t, 9, next(), "root", ch)
	r1 := b.Event(t, 9, next(), "reply", reply(m, m)...)
	r2 := a.Event(t, 9, next(), "reply below", reply(m, r1)...)
	onStored := b.Event(t, 9, next(), "reply to a stored root", reply(stored, stored)...)
	later := a.Event(t, 9, next(), "deleted before it arrives", ch)
	delLater := a.Event(t, buzz.KindDeletion, next(), "", nostr.Tag{"e", later.ID})
	reacted := a.Event(t, 9, next(), "reacted to before it arrives", ch)
	reaction := b.Event(t, buzz.KindReaction, next(), "+", nostr.Tag{"e", reacted.ID})
	v1 := a.Event(t, 30023, next(), "v1", nostr.Tag{"d", "doc"})
	v2 := a.Event(t, 30023, next(), "v2", nostr.Tag{"d", "doc"})
	z := a.Event(t, 9, next(), "its deletion is deleted", ch)
	delZ := a.Event(t, buzz.KindDeletion, next(), "", nostr.Tag{"e", z.ID})
	delDelZ := a.Event(t, buzz.KindDeletion, next(), "", nostr.Tag{"e", delZ.ID})
	delR1 := b.Event(t, buzz.KindDeletion, next(), "", nostr.Tag{"e", r1.ID})
	r3 := a.Event(t, 9, next(), "reply to a deleted reply", reply(m, r1)...)
	r4 := b.Event(t, 9, next(), "deepest", reply(m, r2)...)
	batch := []*nostr.Event{m, r1, r2, m, onStored, r1, delLater, later, reaction, reacted, v1, v2, v1,
		delZ, delDelZ, z, delR1, r3, r4, stored}

	type result struct {
		outcomes []string
		sums     []buzz.Summary
	}
	run := func(oneByOne bool) result {
		s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{})
		if _, err := s.ImportBatch(ctx, before); err != nil {
			t.Fatal(err)
		}
		var out []error
		chunk := len(batch)
		if oneByOne {
			chunk = 1
		}
		for evs := range slices.Chunk(batch, chunk) {
			o, err := s.ImportBatch(ctx, evs)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o...)
		}
		if err := storetest.Verify(ctx, s); err != nil {
			t.Fatalf("one by one %v: %v", oneByOne, err)
		}
		sums, err := s.Summaries(ctx, []string{m.ID, r1.ID, r2.ID, stored.ID})
		if err != nil {
			t.Fatal(err)
		}
		var res result
		for _, err := range out {
			res.outcomes = append(res.outcomes, fmt.Sprint(err))
		}
		for i := range sums {
			sums[i].UpdatedAt = 0 // the store's clock, not what the events did
		}
		res.sums = sums
		return res
	}
	together, alone := run(false), run(true)
	if !slices.Equal(together.outcomes, alone.outcomes) {
		t.Errorf("outcomes in one batch\n%q\none a batch\n%q", together.outcomes, alone.outcomes)
	}
	if !reflect.DeepEqual(together.sums, alone.sums) {
		t.Errorf("summaries in one batch\n%+v\none a batch\n%+v", together.sums, alone.sums)
	}
	// The cases the batch must reach, so that the comparison means
	// something: a duplicate, a deletion before its target, a version
	// sent again after a newer one replaced it.
	for i, want := range map[int]error{3: buzz.ErrDuplicate, 7: buzz.ErrDeletedBeforeArriving, 12: buzz.ErrNewerVersionStored} {
		if together.outcomes[i] != fmt.Sprint(want) {
			t.Errorf("outcome %d: %s, want %v", i, together.outcomes[i], want)
		}
	}
}

// Issue 32: the events of a transaction of several are written by COPY
// with their feed stream (RL-35) computed from the access state
// (buzz.Community.FeedStream), and each is the stream the schema's
// feed_stream gives its channel at the end: in a batch that creates a
// channel, writes to it, makes it private and writes again, and writes to
// an open one beside it, a group commit too.
func TestCopiedFeedStreams(t *testing.T) {
	ctx := context.Background()
	admin, a := testutil.NewSigner(t), testutil.NewSigner(t)
	s := suiteOpen(t, pgtest.FreshDatabase(t), storetest.Config{Admins: []string{admin.PK}})
	const private, open = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	at := procT
	next := func() int64 { at++; return at }
	batch := []*nostr.Event{
		admin.Event(t, buzz.KindCreateChannel, next(), "", nostr.Tag{"h", private}),
		admin.Event(t, 9, next(), "while open", nostr.Tag{"h", private}),
		a.Event(t, 9, next(), "open channel", nostr.Tag{"h", open}),
		admin.Event(t, buzz.KindEditMetadata, next(), "", nostr.Tag{"h", private}, nostr.Tag{"private"}),
		admin.Event(t, 9, next(), "while private", nostr.Tag{"h", private}),
		admin.Event(t, 11, next(), "a thread", nostr.Tag{"h", private}),
		a.Event(t, 7, next(), "+", nostr.Tag{"h", open}),
		a.Event(t, 1, next(), "no channel"),
	}
	outcomes, err := s.ImportBatch(ctx, batch)
	if err := errors.Join(append(outcomes, err)...); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		ev := a.Event(t, 9, next(), fmt.Sprint("live ", i), nostr.Tag{"h", open})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Admit(ctx, ev); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var streams, wrong int
	if err := s.pool.QueryRow(ctx, `SELECT count(feed), count(*) FILTER (WHERE feed IS DISTINCT FROM
		CASE WHEN kind IN (9, 11) AND channel IS NOT NULL THEN feed_stream(channel) END) FROM events`).Scan(&streams, &wrong); err != nil {
		t.Fatal(err)
	}
	if streams != 12 || wrong != 0 {
		t.Fatalf("%d events in a feed stream, %d of them in the wrong one; want 12 and none", streams, wrong)
	}
}
