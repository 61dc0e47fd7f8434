package importer

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/internal/verify"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "buzz.db"), Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func jsonLine(t *testing.T, ev *nostr.Event) string {
	t.Helper()
	b, err := easyjson.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 8, CW-22, RL-9: malformed lines, bad ids and signatures, relay-only
// kinds and events dated too far ahead are each reported with their line
// number and reason; everything else is stored, in file order (a reply
// after its parent is classified at once), and a second import of the same
// file reports every event as a duplicate.
func TestRunReportsBadLinesAndStoresTheRest(t *testing.T) {
	s := openStore(t)
	a := testutil.NewSigner(t)
	ch := "66666666-6666-4666-8666-666666666666"
	root := a.Event(t, 9, 1000, "root", nostr.Tag{"h", ch})
	reply := a.Event(t, 9, 1001, "reply", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	badSig := *a.Event(t, 9, 1002, "forged", nostr.Tag{"h", ch})
	badSig.Sig = strings.Repeat("0", 128)
	badID := *a.Event(t, 9, 1003, "tampered", nostr.Tag{"h", ch})
	badID.Content = "changed"
	summary := a.Event(t, 39005, 1004, "{}", nostr.Tag{"d", root.ID})
	bounds := a.Event(t, 39006, 1005, "{}", nostr.Tag{"d", ch + ":head"})
	future := a.Event(t, 9, 4_000_000_000, "later", nostr.Tag{"h", ch})
	old0 := a.Event(t, 0, 900, `{"name":"old"}`)
	new0 := a.Event(t, 0, 901, `{"name":"new"}`)
	file := strings.Join([]string{
		jsonLine(t, root),    // 1
		"not json",           // 2
		jsonLine(t, reply),   // 3
		jsonLine(t, &badSig), // 4
		"",                   // 5: blank, skipped
		jsonLine(t, &badID),  // 6
		jsonLine(t, summary), // 7
		jsonLine(t, bounds),  // 8
		jsonLine(t, future),  // 9
		jsonLine(t, new0),    // 10
		jsonLine(t, old0),    // 11: older version, replaced
		`{"kind":1}`,         // 12
	}, "\n")
	var bad []BadLine
	sum, err := Run(context.Background(), strings.NewReader(file), s, Options{Problem: func(b BadLine) { bad = append(bad, b) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []BadLine{
		{2, "invalid: not a JSON event"},
		{4, "invalid: signature is invalid"},
		{6, "invalid: id is computed incorrectly"},
		{7, "restricted: relay-only kind"},
		{8, "restricted: relay-only kind"},
		{9, "invalid: event creation date is too far off from the current time"},
		{12, "invalid: not a JSON event"},
	}
	if len(bad) != len(want) {
		t.Fatalf("bad lines %v, want %v", bad, want)
	}
	for i := range want {
		if bad[i] != want[i] {
			t.Errorf("bad line %d: %+v, want %+v", i, bad[i], want[i])
		}
	}
	if sum.Lines != 11 || sum.Accepted != 3 || sum.Replaced != 1 || sum.Bad() != 7 || sum.Rejected["restricted: relay-only kind"] != 2 {
		t.Fatalf("summary %+v", sum)
	}
	got, err := s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous)
	if err != nil || len(got) != 2 {
		t.Fatalf("stored %v %v", got, err)
	}
	if res, err := s.Backfill(context.Background()); err != nil || res.Waiting != 0 || res.Classified != 0 {
		t.Fatalf("the reply after its parent was not classified at once: %+v %v", res, err)
	}

	again, err := Run(context.Background(), strings.NewReader(file), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Accepted != 0 || again.Duplicate != 3 || again.Replaced != 1 {
		t.Fatalf("second import: %+v", again)
	}
}

// Issue 8: --strict stops at the first bad line; --no-verify stores what
// it is given.
func TestRunStrictAndNoVerify(t *testing.T) {
	s := openStore(t)
	a := testutil.NewSigner(t)
	good := a.Event(t, 1, 1000, "good")
	forged := *a.Event(t, 1, 1001, "forged")
	forged.Sig = strings.Repeat("0", 128)
	file := jsonLine(t, good) + "\n" + jsonLine(t, &forged) + "\n"
	if _, err := Run(context.Background(), strings.NewReader(file), s, Options{Strict: true}); !errors.Is(err, ErrStrict) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("strict: %v", err)
	}
	sum, err := Run(context.Background(), strings.NewReader(file), s, Options{NoVerify: true})
	if err != nil || sum.Accepted != 1 || sum.Duplicate != 1 {
		t.Fatalf("no-verify: %+v %v", sum, err)
	}
}

// Issue 8: order is the file's even with many workers and many batches.
func TestRunKeepsFileOrder(t *testing.T) {
	s := openStore(t)
	a := testutil.NewSigner(t)
	var buf bytes.Buffer
	// Versions of one replaceable event, oldest first: only file order
	// leaves the last one stored and every other one "replaced".
	const n = 1200
	for i := range n {
		buf.WriteString(jsonLine(t, a.Event(t, 10002, int64(1000+i), "v")) + "\n")
	}
	sum, err := Run(context.Background(), &buf, s, Options{})
	if err != nil || sum.Accepted != n || sum.Replaced != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
	got, err := s.Query(context.Background(), nostr.Filter{Kinds: []int{10002}}, buzz.Anonymous)
	if err != nil || len(got) != 1 || got[0].CreatedAt != nostr.Timestamp(1000+n-1) {
		t.Fatalf("stored %v %v", got, err)
	}
}

// Issue 8: --strict stops at an event the store refuses, and nothing after
// it is stored; ephemeral events are never stored (RL-9).
func TestRunStrictStopsAtRefusal(t *testing.T) {
	s := openStore(t)
	a := testutil.NewSigner(t)
	ch := "66666666-6666-4666-8666-666666666666"
	first := a.Event(t, 9, 1000, "first", nostr.Tag{"h", ch})
	orphanElsewhere := a.Event(t, 9, 1001, "x", nostr.Tag{"h", "77777777-7777-4777-8777-777777777777"},
		nostr.Tag{"e", first.ID, "", "reply"})
	after := a.Event(t, 9, 1002, "after", nostr.Tag{"h", ch})
	file := jsonLine(t, first) + "\n" + jsonLine(t, orphanElsewhere) + "\n" + jsonLine(t, after) + "\n"
	sum, err := Run(context.Background(), strings.NewReader(file), s, Options{Strict: true})
	if !errors.Is(err, ErrStrict) || !strings.Contains(err.Error(), "line 2") || sum.Accepted != 1 {
		t.Fatalf("strict: %+v %v", sum, err)
	}
	if got, _ := s.Query(context.Background(), nostr.Filter{IDs: []string{after.ID}}, buzz.Anonymous); len(got) != 0 {
		t.Fatal("an event after the refused one was stored")
	}

	eph := a.Event(t, 20001, 1003, "ephemeral")
	sum, err = Run(context.Background(), strings.NewReader(jsonLine(t, eph)), s, Options{})
	if err != nil || sum.Rejected["invalid: ephemeral events are not stored"] != 1 {
		t.Fatalf("ephemeral: %+v %v", sum, err)
	}
}

// Issue 8: a line longer than any event is reported as such, and the
// lines after it are read.
func TestRunOverlongLine(t *testing.T) {
	s := openStore(t)
	a := testutil.NewSigner(t)
	ev := a.Event(t, 1, 1000, "after the long line")
	file := strings.Repeat("x", maxLine+10) + "\n" + jsonLine(t, ev) + "\n"
	var bad []BadLine
	sum, err := Run(context.Background(), strings.NewReader(file), s, Options{Problem: func(b BadLine) { bad = append(bad, b) }})
	if err != nil || sum.Accepted != 1 || len(bad) != 1 || bad[0].Line != 1 || !strings.Contains(bad[0].Reason, "longer than") {
		t.Fatalf("%+v %v %v", sum, bad, err)
	}
}

// Issue 32, RL-9: lines verified together (parseBatch) are judged line by
// line: a forged signature, a signature of another event or a tampered id
// among valid lines refuses that line alone, with its reason, whatever
// its place in the batch.
func TestParseBatchJudgesEachLine(t *testing.T) {
	signers := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	ch := "66666666-6666-4666-8666-666666666666"
	var lines []line
	var evs []*nostr.Event
	for i := range verifyBatch {
		ev := signers[i%3].Event(t, 9, int64(1000+i), "message", nostr.Tag{"h", ch})
		evs = append(evs, ev)
	}
	want := map[int]string{}
	for _, broken := range []struct {
		at     int
		reason string
		spoil  func(ev *nostr.Event)
	}{
		{0, "invalid: signature is invalid", func(ev *nostr.Event) { ev.Sig = evs[1].Sig }},
		{17, "invalid: signature is invalid", func(ev *nostr.Event) {
			ev.Sig = ev.Sig[:127] + map[bool]string{true: "1", false: "0"}[ev.Sig[127] == '0']
		}},
		{40, "invalid: id is computed incorrectly", func(ev *nostr.Event) { ev.Content = "changed" }},
		{verifyBatch - 1, "invalid: signature is invalid", func(ev *nostr.Event) { ev.PubKey = evs[1].PubKey; ev.ID = ev.GetID() }},
	} {
		broken.spoil(evs[broken.at])
		want[broken.at] = broken.reason
	}
	for i, ev := range evs {
		lines = append(lines, line{n: i + 1, text: []byte(jsonLine(t, ev))})
	}
	for i, p := range parseBatch(lines, &verify.Verifier{}, false, time.Unix(2000, 0)) {
		if p.n != i+1 {
			t.Fatalf("result %d is line %d", i, p.n)
		}
		if p.err != want[i] || (p.ev == nil) != (want[i] != "") {
			t.Errorf("line %d: refused %q (event %v), want %q", p.n, p.err, p.ev != nil, want[i])
		}
	}
}
