package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// exPages is more events than one page of Export in either store (1000
// events a read transaction): the order must hold across the pages.
const exPages = 1300

// exportLines exports f from s and reads the output back, requiring one
// JSON object a line, each a signed event, as many as Export said.
func exportLines(t *testing.T, s Store, f buzz.ExportFilter) []*nostr.Event {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Export(context.Background(), f, &buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []*nostr.Event
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			t.Fatalf("line is not one JSON object: %q", line)
		}
		var ev nostr.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("exported event %s does not verify", ev.ID)
		}
		out = append(out, &ev)
	}
	if int64(len(out)) != n {
		t.Fatalf("Export said %d events, wrote %d lines", n, len(out))
	}
	return out
}

// RL-25, RL-33, issue 8: one signed event per line, oldest first
// (created_at ASC, then, for the messages of one second here, id ASC)
// across page boundaries, parents before replies; deleted events only on request, deletions always; the relay's
// group state never; the channel, date and kind filters.
func testExport(t *testing.T, open Opener) {
	s := open(t, Config{RelayKey: nostr.GeneratePrivateKey()})
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch1, ch2, ch3 := "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222",
		"66666666-6666-4666-8666-666666666666"
	var all []*nostr.Event
	add := func(ev *nostr.Event) *nostr.Event {
		t.Helper()
		qtIngest(t, s, ev)
		all = append(all, ev)
		return ev
	}
	// More than one export page, many in the same second.
	var many []*nostr.Event
	for i := range exPages {
		many = append(many, a.Event(t, 9, 1000+int64(i/7), fmt.Sprint("m", i), nostr.Tag{"h", ch1}))
	}
	for i, err := range imImport(t, s, many) {
		if err != nil {
			t.Fatalf("import of message %d: %v", i, err)
		}
	}
	all = append(all, many...)
	// Content and tags as signed, whatever JSON has to escape in them:
	// every line must verify.
	add(a.Event(t, 1, 4500, "quote \" backslash \\ lines\n\r\t nul \x00 \x01 <&> é 😀 \u2028",
		nostr.Tag{"t", "\x7f \" \\ \u2029"}))
	root := add(b.Event(t, 9, 5000, "root", nostr.Tag{"h", ch2}))
	// A reply dated after its parent comes after it (within one second
	// too: testExportReplayOrder).
	reply := add(a.Event(t, 9, 5001, "reply", nostr.Tag{"h", ch2}, nostr.Tag{"e", root.ID, "", "reply"}))
	gone := add(b.Event(t, 9, 5001, "gone", nostr.Tag{"h", ch2}))
	del := b.Event(t, 5, 5002, "", nostr.Tag{"e", gone.ID})
	qtIngest(t, s, del)
	// A channel created by a 9007 has the relay's group state, which no
	// export writes: an import signs it afresh (RL-11).
	add(b.Event(t, 9007, 4000, "", nostr.Tag{"h", ch3}))
	if n := held(t, s, nostr.Filter{Kinds: []int{39000}, Tags: nostr.TagMap{"d": {ch3}}}); n != 1 {
		t.Fatalf("the store holds %d group state events of kind 39000 for the new channel, want 1", n)
	}

	// RL-25: every deletion goes out, the deleted message does not.
	got := exportLines(t, s, buzz.ExportFilter{})
	if len(got) != len(all) {
		t.Fatalf("exported %d events, want %d (all but the deleted one, with its deletion)", len(got), len(all))
	}
	seen := map[string]int{}
	for i, ev := range got {
		if i > 0 {
			p := got[i-1]
			if p.CreatedAt > ev.CreatedAt || (p.CreatedAt == ev.CreatedAt && p.ID >= ev.ID) {
				t.Fatalf("events %d and %d out of order", i-1, i)
			}
		}
		if ev.ID == gone.ID || ev.Kind >= 39000 && ev.Kind <= 39003 {
			t.Fatalf("exported %d event %s", ev.Kind, ev.ID)
		}
		seen[ev.ID] = i
	}
	if _, ok := seen[del.ID]; !ok {
		t.Fatal("the deletion was not exported")
	}
	if seen[root.ID] >= seen[reply.ID] {
		t.Fatal("reply exported before its parent")
	}

	withDeleted := exportLines(t, s, buzz.ExportFilter{WithDeleted: true})
	if len(withDeleted) != len(all)+1 {
		t.Fatalf("--with-deleted exported %d events, want %d", len(withDeleted), len(all)+1)
	}

	byChannel := exportLines(t, s, buzz.ExportFilter{Channel: ch2})
	if len(byChannel) != 2 || byChannel[0].ID != root.ID || byChannel[1].ID != reply.ID {
		t.Fatalf("channel export: %v", testutil.IDs(byChannel...))
	}
	if got := exportLines(t, s, buzz.ExportFilter{Channel: "33333333-3333-4333-8333-333333333333"}); len(got) != 0 {
		t.Fatalf("unknown channel exported %d events", len(got))
	}
	since, until := int64(1001), int64(1002)
	window := exportLines(t, s, buzz.ExportFilter{Since: &since, Until: &until, Kinds: []int{9}})
	if len(window) != 14 {
		t.Fatalf("since/until export: %d events, want 14", len(window))
	}
	if got := exportLines(t, s, buzz.ExportFilter{Kinds: []int{5}, WithDeleted: true}); len(got) != 1 || got[0].ID != del.ID {
		t.Fatalf("kinds export: %v", testutil.IDs(got...))
	}
}

// RL-25, RL-6, issue 8: a deleted reply that replies still hang below is
// exported with its deletion, so that an import rebuilds the same thread:
// the reply below is classified and every counter is the source's.
func testExportKeepsDeletedAnchors(t *testing.T, open Opener) {
	ctx := context.Background()
	src := ttOpen(t, open)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := "44444444-4444-4444-8444-444444444444"
	root := a.Event(t, 9, 1000, "root", nostr.Tag{"h", ch})
	x := b.Event(t, 9, 1001, "x", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	y := a.Event(t, 9, 1002, "y", nostr.Tag{"h", ch}, nostr.Tag{"e", x.ID, "", "reply"})
	gone := a.Event(t, 9, 1003, "gone", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	delX, delGone := b.Event(t, 5, 1004, "", nostr.Tag{"e", x.ID}), a.Event(t, 5, 1005, "", nostr.Tag{"e", gone.ID})
	qtIngest(t, src, root, x, y, gone, delX, delGone)
	lines := exportLines(t, src, buzz.ExportFilter{})
	dst := ttOpen(t, open)
	for i, err := range imImport(t, dst, lines) {
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	if res, err := dst.Backfill(ctx); err != nil || res.Waiting != 0 {
		t.Fatalf("backfill: %+v %v", res, err)
	}
	if got, want := testutil.IDs(lines...), []string{root.ID, x.ID, y.ID, delX.ID, delGone.ID}; !slices.Equal(got, want) {
		t.Fatalf("exported %v, want %v: the deleted x below which y hangs, not the deleted gone", got, want)
	}
	// gone is not in the import (its deletion is, RL-25), so compare the
	// thread without it: root, x (deleted), y and both deletions.
	if got, want := imState(t, dst, lines), imState(t, src, lines); !slices.Equal(got, want) {
		t.Fatalf("imported state differs from the source's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// RL-25, RL-6: a default export writes a 9005 with the message it deleted,
// which an import stores only once that target is stored; a filter that
// leaves the 9005 out (by kind or by date) leaves its target out too, so
// that the import does not bring the message back.
func testExportGroupDeleteTargets(t *testing.T, open Opener) {
	ctx := context.Background()
	src := ttOpen(t, open)
	a := testutil.NewSigner(t)
	ch := "55555555-5555-4555-8555-555555555555"
	msg := a.Event(t, 9, 1000, "gone", nostr.Tag{"h", ch})
	del := a.Event(t, 9005, 1001, "", nostr.Tag{"h", ch}, nostr.Tag{"e", msg.ID})
	qtIngest(t, src, msg, del)
	if got := testutil.IDs(exportLines(t, src, buzz.ExportFilter{})...); !slices.Equal(got, []string{msg.ID, del.ID}) {
		t.Fatalf("export: %v, want the message and its 9005", got)
	}
	until := int64(1000)
	for _, f := range []buzz.ExportFilter{{Kinds: []int{9}}, {Until: &until}} {
		if got := exportLines(t, src, f); len(got) != 0 {
			t.Fatalf("export %+v: %v, want nothing", f, testutil.IDs(got...))
		}
	}
	dst := ttOpen(t, open)
	for i, err := range imImport(t, dst, exportLines(t, src, buzz.ExportFilter{})) {
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
	}
	if got, err := dst.Query(ctx, nostr.Filter{IDs: []string{msg.ID, del.ID}}, buzz.Anonymous); err != nil || len(got) != 1 || got[0].ID != del.ID {
		t.Fatalf("imported: %v %v, want only the 9005", testutil.IDs(got...), err)
	}
}

// RL-25 (2026-12-04), issue 29 item 9: within one second an export puts
// the channel's creation and membership grants before its messages,
// parents before their replies however deep, and aux events after their
// targets, then orders by id, across page boundaries and in a channel's
// export too: replayed through live ingest, as a relay takes it, nothing
// is refused. Every id in the second sorts against that order.
func testExportReplayOrder(t *testing.T, open Opener) {
	src := ttOpen(t, open)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := "77777777-7777-4777-8777-777777777777"
	at := int64(1_700_000_000)
	// More than one export page (1000 events) in the one second.
	second := testutil.SameSecondThreads(t, owner, member, ch, at, 260, 4, 14)
	evs := append(append([]*nostr.Event{member.Event(t, 1, at-1, "the second before")}, second...),
		member.Event(t, 9, at+1, "the second after", nostr.Tag{"h", ch}))
	for i, err := range imImport(t, src, evs) {
		if err != nil {
			t.Fatalf("import of event %d: %v", i, err)
		}
	}
	for _, f := range []buzz.ExportFilter{{}, {WithDeleted: true}, {Channel: ch}} {
		lines := exportLines(t, src, f)
		want := len(evs)
		if f.Channel != "" {
			want -= 2 // the note of no channel, and the kind 5, which has no h tag
		}
		if len(lines) != want {
			t.Fatalf("export %+v: %d events, want %d", f, len(lines), want)
		}
		testutil.ReplayedInOrder(t, lines)
		// The order is buzz.SortForReplay's, which a sync uses.
		sorted := slices.Clone(lines)
		buzz.SortForReplay(sorted)
		if got, want := testutil.IDs(lines...), testutil.IDs(sorted...); !slices.Equal(got, want) {
			t.Fatalf("export %+v is not in the replay order", f)
		}
	}
	dst := ttOpen(t, open)
	qtIngest(t, dst, exportLines(t, src, buzz.ExportFilter{})...)
}
