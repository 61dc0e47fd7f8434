package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// Issue 8 (RL-25, CW-12): a generated community (private and open channels,
// threads to depth 4, broadcast replies, reactions, edits, deletions of
// messages and of reactions, same-second bursts), stored by live ingest,
// exported, and imported into an empty data directory: both answer every
// window page (both row modes), every thread page and the channel REQ
// with the same rows, aux events and summaries, and check passes on both.
func TestRoundTripWindowsThreadsAndREQ(t *testing.T) {
	ctx := context.Background()
	c, err := gen.Generate(gen.Options{Seed: 7, Channels: 2, TopLevel: 40})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	// The data directory keeps the key that signs its group state, as
	// serve's does: check holds the state to it.
	key := nostr.GeneratePrivateKey()
	if err := os.WriteFile(filepath.Join(src, "relay.key"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(src, DBFile), Schema: Schema, RelayKey: key})
	if err != nil {
		t.Fatal(err)
	}
	// RL-25, RL-6: in every channel a plain message deleted by its author
	// with a kind 5 that carries the channel's h tag, and one deleted by a
	// kind 9005: their deletions are served by the channel's REQ.
	events := slices.Clone(c.Events)
	last := int64(c.Events[len(c.Events)-1].CreatedAt)
	for _, ch := range c.Channels {
		for _, kind := range []int{buzz.KindDeletion, buzz.KindGroupDelete} {
			last += 2
			msg := rtSign(t, c.Authors[1], 9, last, "deleted", nostr.Tag{"h", ch})
			events = append(events, msg, rtSign(t, c.Authors[1], kind, last+1, "", nostr.Tag{"h", ch}, nostr.Tag{"e", msg.ID}))
		}
	}
	for i, ev := range events {
		if err := s.Ingest(ctx, ev); err != nil {
			t.Fatalf("event %d (kind %d): %v", i, ev.Kind, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	dst := t.TempDir()
	for _, args := range [][]string{
		{"export", "--data", src, "-o", dump},
		{"import", "--data", dst, dump},
		{"check", "--data", src},
		{"check", "--data", dst},
	} {
		if err := newApp().Run(append([]string{"buzz-lite"}, args...)); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	a, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(src, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dst, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	member, err := nostr.GetPublicKey(c.Authors[1]) // a member of the private channels
	if err != nil {
		t.Fatal(err)
	}
	v := buzz.Viewer(member)
	pages, threads := 0, 0
	for _, ch := range c.Channels {
		if !a.Community().CanReadChannel(v, ch) || !b.Community().CanReadChannel(v, ch) {
			t.Fatalf("channel %s not readable by its member on both sides", ch)
		}
		for _, projection := range []bool{false, true} {
			q := buzz.WindowQuery{Channel: ch, Limit: 7, Projection: projection, Summaries: true, Aux: true, Viewer: v}
			for {
				pa, err := a.Window(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				pb, err := b.Window(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				rtSame(t, "window rows", rtRaw(pa.Rows), rtRaw(pb.Rows))
				rtSame(t, "window aux", rtSorted(pa.Aux), rtSorted(pb.Aux))
				rtSame(t, "summaries", rtJSON(t, rtCounters(pa.Summaries)), rtJSON(t, rtCounters(pb.Summaries)))
				if pa.HasMore != pb.HasMore || (pa.Next == nil) != (pb.Next == nil) || (pa.Next != nil && *pa.Next != *pb.Next) {
					t.Fatalf("bounds differ: %v %+v / %v %+v", pa.HasMore, pa.Next, pb.HasMore, pb.Next)
				}
				for _, row := range pa.Rows {
					var ev nostr.Event
					if err := json.Unmarshal(row.JSON, &ev); err != nil || ev.ID != row.ID {
						t.Fatalf("row %s serves %s: %v", row.ID, row.JSON, err)
					}
					if ok, err := ev.CheckSignature(); !ok || err != nil {
						t.Fatalf("row %s served with a signature that fails: %v", row.ID, err)
					}
					tq := buzz.ThreadQuery{Root: row.ID, DepthLimit: 4, Limit: 500, Aux: true, Viewer: v}
					ta, err := a.Thread(ctx, tq)
					if err != nil {
						t.Fatal(err)
					}
					tb, err := b.Thread(ctx, tq)
					if err != nil {
						t.Fatal(err)
					}
					threads++
					rtSame(t, "thread replies", rtRaw(ta.Replies), rtRaw(tb.Replies))
					rtSame(t, "thread aux", rtSorted(ta.Aux), rtSorted(tb.Aux))
				}
				if !pa.HasMore {
					break
				}
				q.Before = pa.Next
			}
		}
		f := nostr.Filter{Tags: nostr.TagMap{"h": {ch}}, Limit: 1000}
		ra, err := a.Query(ctx, f, v)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.Query(ctx, f, v)
		if err != nil {
			t.Fatal(err)
		}
		rtSame(t, "REQ", rtIDs(ra), rtIDs(rb))
		if len(ra) < 100 {
			t.Fatalf("channel %s holds only %d events", ch, len(ra))
		}
	}
	// RL-25: the deletions, whatever their channel, are the same too.
	f := nostr.Filter{Kinds: []int{buzz.KindDeletion, buzz.KindGroupDelete}, Limit: 1000}
	da, err := a.Query(ctx, f, v)
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Query(ctx, f, v)
	if err != nil {
		t.Fatal(err)
	}
	rtSame(t, "deletions REQ", rtIDs(da), rtIDs(db))
	// RL-25, RL-6: a rebroadcast of a deleted event is refused by the
	// imported relay as by the source (deleted before it arrived, or
	// stored already as deleted) and stays deleted.
	deleted := 0
	for _, ev := range events {
		if got, err := a.Query(ctx, nostr.Filter{IDs: []string{ev.ID}}, v); err != nil || len(got) > 0 {
			continue // live on the source
		}
		deleted++
		err := b.Ingest(ctx, ev)
		if !errors.Is(err, buzz.ErrDeletedBeforeArriving) && !errors.Is(err, buzz.ErrDuplicate) {
			t.Fatalf("deleted kind %d event %s re-sent to the imported relay: %v", ev.Kind, ev.ID, err)
		}
		if got, err := b.Query(ctx, nostr.Filter{IDs: []string{ev.ID}}, v); err != nil || len(got) > 0 {
			t.Fatalf("deleted event %s served by the imported relay after a rebroadcast: %v", ev.ID, err)
		}
	}
	if deleted < 2*len(c.Channels) {
		t.Fatalf("only %d deleted events", deleted)
	}
	t.Logf("%d window pages and %d thread pages compared, %d deleted events re-sent", pages, threads, deleted)
}

func rtSign(t *testing.T, sk string, kind int, at int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Content: content, Tags: tags}
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	return ev
}

func rtIDs(evs []*nostr.Event) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// rtRaw is the served JSON of events: the same bytes on both sides.
func rtRaw(evs []buzz.RawEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.JSON)
	}
	return out
}

// rtSorted is the served JSON of an aux closure, whose order among events
// naming the same target in the same second follows the store's own
// numbering.
func rtSorted(evs []buzz.RawEvent) []string {
	out := rtRaw(evs)
	slices.Sort(out)
	return out
}

// rtCounters is a page's summaries without the date each store gave
// them (when it last changed the thread: at ingest on one side, at import
// on the other).
func rtCounters(sums []buzz.Summary) []buzz.Summary {
	out := slices.Clone(sums)
	for i := range out {
		out[i].UpdatedAt = 0
	}
	return out
}

func rtJSON(t *testing.T, v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return []string{string(b)}
}

func rtSame(t *testing.T, what string, a, b []string) {
	t.Helper()
	if !slices.Equal(a, b) {
		t.Fatalf("%s differ:\n source   %v\n imported %v", what, a, b)
	}
}

// RL-25, RL-12: a channel's state survives export and import even when
// its lifecycle events were deleted afterwards (a deletion does not undo
// what a lifecycle event did): a channel made private stays private.
func TestRoundTripDeletedLifecycleEvents(t *testing.T) {
	ctx := context.Background()
	const ch = "5d4c3b2a-1111-4222-8333-444455556666"
	owner, err := gen.Generate(gen.Options{Channels: 1, TopLevel: 1, Authors: 1})
	if err != nil {
		t.Fatal(err)
	}
	sk := owner.Authors[0]
	sign := func(kind int, at int64, tags ...nostr.Tag) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	src := t.TempDir()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(src, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	mkPrivate := sign(9002, 1700000001, nostr.Tag{"h", ch}, nostr.Tag{"private"})
	for _, ev := range []*nostr.Event{
		sign(9007, 1700000000, nostr.Tag{"h", ch}),
		mkPrivate,
		sign(9, 1700000002, nostr.Tag{"h", ch}),
		sign(5, 1700000003, nostr.Tag{"h", ch}, nostr.Tag{"e", mkPrivate.ID}),
	} {
		if err := s.Ingest(ctx, ev); err != nil {
			t.Fatalf("kind %d: %v", ev.Kind, err)
		}
	}
	s.Close()
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	dst := t.TempDir()
	for _, args := range [][]string{{"export", "--data", src, "-o", dump}, {"import", "--data", dst, dump}} {
		if err := newApp().Run(append([]string{"buzz-lite"}, args...)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dst, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c := b.Community().Channel(ch); c == nil || !c.Private {
		t.Fatalf("imported channel: %+v, want private", c)
	}
	if b.Community().CanReadChannel(buzz.Anonymous, ch) {
		t.Fatal("anonymous viewers read the imported private channel")
	}
}
