package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// imThreads signs a channel's threads: roots and replies down to depth 4,
// some broadcast, by several authors, in an order where every parent comes
// before its replies.
func imThreads(t *testing.T, n int) []*nostr.Event {
	t.Helper()
	ch := "44444444-4444-4444-8444-444444444444"
	signers := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	rng := rand.New(rand.NewPCG(7, 7))
	var evs []*nostr.Event
	depth := map[string]int{}
	for i := range n {
		sg := signers[rng.IntN(len(signers))]
		tags := []nostr.Tag{{"h", ch}}
		d := 0
		if i > 0 && rng.IntN(4) > 0 {
			p := evs[rng.IntN(len(evs))]
			if depth[p.ID] < 4 {
				tags = append(tags, nostr.Tag{"e", p.ID, "", "reply"})
				d = depth[p.ID] + 1
				if d == 1 && rng.IntN(5) == 0 {
					tags = append(tags, nostr.Tag{"broadcast", "1"})
				}
			}
		}
		ev := sg.Event(t, 9, 1_000_000+int64(i), fmt.Sprint("message ", i), tags...)
		depth[ev.ID] = d
		evs = append(evs, ev)
	}
	return evs
}

// imState is every event's classification and counters, by event id: what
// two stores holding the same events must agree on.
func imState(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.readers.Query(`SELECT hex(e.id), coalesce(e.depth, -1), coalesce(hex(p.id), ''), coalesce(hex(r.id), ''),
		e.broadcast, e.row_class, coalesce(m.reply_count, 0), coalesce(m.descendant_count, 0),
		coalesce(m.last_reply_at, 0), coalesce(hex(m.participants), '')
		FROM events e LEFT JOIN events p ON p.seq = e.parent LEFT JOIN events r ON r.seq = e.root
		LEFT JOIN thread_metadata m ON m.seq = e.seq ORDER BY e.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, root, parts string
		var depth, bc, rc, replies, desc, last int64
		if err := rows.Scan(&id, &depth, &parent, &root, &bc, &rc, &replies, &desc, &last, &parts); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(id, depth, parent, root, bc, rc, replies, desc, last, parts))
	}
	return out
}

func imImport(t *testing.T, s *Store, evs []*nostr.Event) []error {
	t.Helper()
	out, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CW-12, issue 8: an import that meets replies before their parents keeps
// them unclassified instead of refusing them, and Backfill then classifies
// every one exactly as live ingest would have, counters included. A second
// Backfill does nothing; a second import is all duplicates.
func TestImportOutOfOrderThenBackfill(t *testing.T) {
	evs := imThreads(t, 120)

	live := openTest(t)
	for _, ev := range evs {
		if err := live.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}

	imported := openTest(t)
	reversed := slices.Clone(evs)
	slices.Reverse(reversed)
	for _, err := range imImport(t, imported, reversed) {
		if err != nil {
			t.Fatalf("import refused an event: %v", err)
		}
	}
	if n := qtSQLCount(t, imported, `SELECT count(*) FROM events WHERE depth IS NULL`); n == 0 {
		t.Fatal("reversed import classified replies whose parents it had not seen")
	}
	res, err := imported.Backfill(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Waiting != 0 || res.Classified == 0 {
		t.Fatalf("backfill: %+v", res)
	}
	if got, want := imState(t, imported), imState(t, live); !slices.Equal(got, want) {
		t.Fatalf("after backfill the import differs from live ingest:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res, err := imported.Backfill(context.Background()); err != nil || res.Classified != 0 {
		t.Fatalf("second backfill: %+v %v", res, err)
	}
	for _, err := range imImport(t, imported, evs) {
		if !errors.Is(err, buzz.ErrDuplicate) {
			t.Fatalf("second import: %v, want duplicate", err)
		}
	}
	if got, want := imState(t, imported), imState(t, live); !slices.Equal(got, want) {
		t.Fatal("a second import changed the store")
	}
}

// CW-12: a reply whose parent never arrives stays unclassified, a row of
// its channel, and Backfill says it is waiting; the thread rules still
// refuse what live ingest refuses.
func TestImportMissingParent(t *testing.T) {
	s := openTest(t)
	a := testutil.NewSigner(t)
	ch, other := "44444444-4444-4444-8444-444444444444", "55555555-5555-4555-8555-555555555555"
	elsewhere := a.Event(t, 9, 1000, "elsewhere", nostr.Tag{"h", other})
	orphan := a.Event(t, 9, 1001, "orphan", nostr.Tag{"h", ch}, nostr.Tag{"e", strings.Repeat("ab", 32), "", "reply"})
	cross := a.Event(t, 9, 1002, "cross", nostr.Tag{"h", ch}, nostr.Tag{"e", elsewhere.ID, "", "reply"})
	out := imImport(t, s, []*nostr.Event{elsewhere, orphan, cross})
	if out[0] != nil || out[1] != nil || !errors.Is(out[2], buzz.ErrParentOtherChannel) {
		t.Fatalf("outcomes %v", out)
	}
	res, err := s.Backfill(context.Background())
	if err != nil || res.Classified != 0 || res.Waiting != 1 {
		t.Fatalf("backfill: %+v %v", res, err)
	}
	got, err := s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous)
	if err != nil || len(got) != 1 || got[0].ID != orphan.ID {
		t.Fatalf("the orphan is not served: %v %v", got, err)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE depth IS NULL AND row_class = 2`); n != 1 {
		t.Fatalf("%d unclassified rows, want the orphan", n)
	}
}
