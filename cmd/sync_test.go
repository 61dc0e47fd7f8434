package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/datadir"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// syncFixture is a relay with an open and a private channel, an owner and
// a member of both, and messages in each (one a reply).
type syncFixture struct {
	url                 string
	store               *sqlite.Store
	owner, member       testutil.Signer
	open, private       string
	openMsgs, privMsgs  []*nostr.Event
	allOpen, allPrivate []string // every id stored with the channel's h
}

func newSyncFixture(t *testing.T) *syncFixture {
	t.Helper()
	f := &syncFixture{owner: testutil.NewSigner(t), member: testutil.NewSigner(t),
		open: "0d8e7f6a-5b4c-4d3e-8f2a-1b0c9d8e7f6a", private: "1e9f8a7b-6c5d-4e4f-9a3b-2c1d0e9f8a7b"}
	f.url, f.store = wnServe(t)
	base := time.Now().Unix() - 100
	for i, h := range []string{f.open, f.private} {
		tags := []nostr.Tag{{"h", h}, {"name", "channel " + h[:4]}}
		if h == f.private {
			tags = append(tags, nostr.Tag{"private"})
		}
		create := f.owner.Event(t, buzz.KindCreateChannel, base, "", tags...)
		put := f.owner.Event(t, buzz.KindPutUser, base+1, "", nostr.Tag{"h", h}, nostr.Tag{"p", f.member.PK})
		top := f.member.Event(t, 9, base+2, "hello "+h[:4], nostr.Tag{"h", h})
		reply := f.owner.Event(t, 9, base+3, "hi", nostr.Tag{"h", h}, nostr.Tag{"e", top.ID, "", "root"}, nostr.Tag{"p", f.member.PK})
		testutil.Publish(t, f.url, create, put, top, reply)
		ids := []string{create.ID, put.ID, top.ID, reply.ID}
		if i == 0 {
			f.openMsgs, f.allOpen = []*nostr.Event{top, reply}, ids
		} else {
			f.privMsgs, f.allPrivate = []*nostr.Event{top, reply}, ids
		}
	}
	return f
}

// storedIDs are the ids of the events store serves v for filter f.
func storedIDs(t *testing.T, store *sqlite.Store, f nostr.Filter, v buzz.Viewer) []string {
	t.Helper()
	evs, err := store.Query(context.Background(), f, v)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}

// openData opens the database `sync --data dir` wrote.
func openData(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(dir, DBFile), Schema: Schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func containsAll(have, want []string) bool {
	for _, id := range want {
		if !slices.Contains(have, id) {
			return false
		}
	}
	return true
}

// RL-34: `buzz-lite sync --data` copies into a data directory what the
// relay lets the requester read and the directory lacks: without a key
// the open channel and never the private one (naming it is refused with
// auth-required, and a hint), with a member's key the private channel
// too, threads classified as on the relay; a second run finds nothing
// missing. A directory a relay serves is refused.
func TestSyncToDataDir(t *testing.T) {
	f := newSyncFixture(t)
	dir := t.TempDir()

	out, err := runApp("sync", "--from", f.url, "--data", dir)
	if err != nil {
		t.Fatalf("anonymous sync: %v\n%s", err, out)
	}
	if !strings.Contains(out, "0 refused") {
		t.Fatalf("anonymous sync printed %q", out)
	}
	_, err = runApp("sync", "--from", f.url, "--data", dir, "--channel", f.private)
	if err == nil || !strings.Contains(err.Error(), "auth-required: ") || !strings.Contains(err.Error(), "--key") {
		t.Fatalf("anonymous sync of the private channel: %v, want auth-required and a hint of --key", err)
	}

	out, err = runApp("sync", "--from", f.url, "--data", dir, "--key", f.member.SK)
	if err != nil {
		t.Fatalf("member sync: %v\n%s", err, out)
	}
	if !strings.Contains(out, "lacks: 4 copied, 0 duplicate, 0 refused") {
		t.Fatalf("member sync printed %q, want the private channel's 4 events copied", out)
	}
	out, err = runApp("sync", "--from", f.url, "--data", dir, "--key", f.member.SK)
	if err != nil || !strings.Contains(out, "lacks: 0 copied") {
		t.Fatalf("second sync: %v, printed %q, want nothing copied", err, out)
	}

	// RL-33: with the community in PostgreSQL, a file in the data
	// directory would be a copy nobody serves.
	t.Setenv("BUZZ_LITE_STORAGE_POSTGRES", "postgres://buzz@db.invalid/buzz")
	if _, err := runApp("sync", "--from", f.url, "--data", t.TempDir()); err == nil || !strings.Contains(err.Error(), "through one of its relays, with --to") {
		t.Fatalf("sync --data with storage.postgres set: %v", err)
	}
	os.Unsetenv("BUZZ_LITE_STORAGE_POSTGRES")

	store := openData(t, dir)
	got := storedIDs(t, store, nostr.Filter{}, buzz.Viewer(f.member.PK))
	if !containsAll(got, append(slices.Clone(f.allOpen), f.allPrivate...)) {
		t.Fatalf("data directory serves the member %d events, want both channels'", len(got))
	}
	sums, err := store.Summaries(context.Background(), []string{f.openMsgs[0].ID, f.privMsgs[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.DescendantCount != 1 {
			t.Fatalf("thread %s has %d replies in the copy, want 1", s.ID, s.DescendantCount)
		}
	}
	store.Close()

	// RL-31: a served directory is written through its relay.
	_, lock, err := datadir.Claim(dir, DBFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = runApp("sync", "--from", f.url, "--data", dir)
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "--to") {
		t.Fatalf("sync into a served directory: %v", err)
	}
}

// RL-34: `buzz-lite sync --to` copies from one relay to another what the
// second lacks and the key may read, the private channel included, oldest
// first, so that the second relay takes the channels, memberships and
// threads; the second relay signs its own group state.
func TestSyncRelayToRelay(t *testing.T) {
	f := newSyncFixture(t)
	toURL, to := wnServe(t)
	// The mirror has an event of its own.
	own := f.owner.Event(t, 1, time.Now().Unix(), "only on the mirror")
	testutil.Publish(t, toURL, own)

	out, err := runApp("sync", "--from", f.url, "--to", toURL)
	if err != nil {
		t.Fatalf("anonymous relay sync: %v\n%s", err, out)
	}
	if !strings.Contains(out, "lacks: 4 copied, 0 duplicate, 0 refused") {
		t.Fatalf("anonymous relay sync printed %q, want the open channel's 4 events copied", out)
	}
	if got := storedIDs(t, to, nostr.Filter{Tags: nostr.TagMap{"h": {f.private}}}, buzz.Viewer(f.member.PK)); len(got) != 0 {
		t.Fatalf("an anonymous sync copied %d events of the private channel", len(got))
	}
	out, err = runApp("sync", "--from", f.url, "--to", toURL, "--key", f.member.SK)
	if err != nil {
		t.Fatalf("member relay sync: %v\n%s", err, out)
	}
	if !strings.Contains(out, "lacks: 4 copied, 0 duplicate, 0 refused") {
		t.Fatalf("member relay sync printed %q, want the private channel's 4 events copied", out)
	}
	got := storedIDs(t, to, nostr.Filter{}, buzz.Viewer(f.member.PK))
	if !containsAll(got, append(append(slices.Clone(f.allOpen), f.allPrivate...), own.ID)) {
		t.Fatalf("the mirror serves the member %d events, want both channels' and its own", len(got))
	}
	if meta := storedIDs(t, to, nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}, Tags: nostr.TagMap{"d": {f.private}}}, buzz.Viewer(f.member.PK)); len(meta) != 1 {
		t.Fatalf("the mirror has %d group metadata events of the private channel, want its own one", len(meta))
	}
	if got := storedIDs(t, f.store, nostr.Filter{IDs: []string{own.ID}}, buzz.Anonymous); len(got) != 0 {
		t.Fatal("sync pushed the mirror's event back to --from")
	}
	// Issue 29 item 14: the source's own group state, which a sync always
	// leaves out, is not reported as missing: a mirror in step lacks
	// nothing.
	out, err = runApp("sync", "--from", f.url, "--to", toURL, "--key", f.member.SK)
	if err != nil || !strings.Contains(out, "has 0 events that "+toURL+" lacks: 0 copied") || strings.Contains(out, "group state") {
		t.Fatalf("sync of a mirror in step: %v, printed %q, want nothing missing", err, out)
	}
}

// RL-34: events the destination refuses are counted by reason, and fail
// the command: here the mirror has a channel of the same id created by
// someone else, so it refuses the source's creation and what the source's
// owner does there as its owner.
func TestSyncReportsRefusals(t *testing.T) {
	f := newSyncFixture(t)
	toURL, _ := wnServe(t)
	other := testutil.NewSigner(t)
	testutil.Publish(t, toURL, other.Event(t, buzz.KindCreateChannel, time.Now().Unix()-200, "",
		nostr.Tag{"h", f.open}, nostr.Tag{"name", "taken"}))
	out, err := runApp("sync", "--from", f.url, "--to", toURL, "--channel", f.open)
	if err == nil || !strings.Contains(err.Error(), "refused by "+toURL) {
		t.Fatalf("sync with refusals: %v, want it to fail naming the destination", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], "has 4 events that") || !strings.HasPrefix(lines[1], "  ") {
		t.Fatalf("sync printed %q, want the counts and a line per refusal reason", out)
	}
}

// RL-34: a set larger than one sync session may hold (sync_items) is
// synced in parts, the time range halved until each part fits, on both
// relays of a relay-to-relay sync and into a data directory.
func TestSyncSplitsLargeSets(t *testing.T) {
	small := relay.Limits{MaxSyncItems: 3}
	fromURL, _ := wnServeLimited(t, small)
	author := testutil.NewSigner(t)
	var want []string
	for i := range 8 {
		ev := author.Event(t, 1, time.Now().Unix()-int64(1000*i), "note")
		testutil.Publish(t, fromURL, ev)
		want = append(want, ev.ID)
	}
	toURL, to := wnServeLimited(t, small)
	for _, dest := range [][]string{{"--to", toURL}, {"--data", t.TempDir()}} {
		out, err := runApp(append([]string{"sync", "--from", fromURL}, dest...)...)
		if err != nil || !strings.Contains(out, "has 8 events that") || !strings.Contains(out, "8 copied") {
			t.Fatalf("sync %v: %v, printed %q, want all 8 copied", dest, err, out)
		}
	}
	if got := storedIDs(t, to, nostr.Filter{Kinds: []int{1}}, buzz.Anonymous); !containsAll(got, want) || len(got) != 8 {
		t.Fatalf("the mirror has %d of the 8 notes", len(got))
	}
	out, err := runApp("sync", "--from", fromURL, "--to", toURL)
	if err != nil || !strings.Contains(out, "has 0 events that") {
		t.Fatalf("second sync: %v, printed %q, want nothing missing", err, out)
	}
}

// RL-34, RL-9: `sync --data` checks what --from sends as an import checks
// a file: a hostile relay's future-dated event and bare ["d"] tag are
// refused, each counted by its reason, and not stored; the honest event
// beside them is. An event with a forged id or signature fails the sync
// before anything is stored.
func TestSyncToDataChecksEvents(t *testing.T) {
	url, src := wnServe(t)
	author := testutil.NewSigner(t)
	at := time.Now().Unix() - 50
	honest := author.Event(t, 1, at, "honest")
	future := author.Event(t, 1, time.Now().Add(buzz.MaxFuture+time.Hour).Unix(), "from the future")
	bareD := author.Event(t, 30023, at+1, "bare d", nostr.Tag{"d"})
	plant(t, src, honest, future, bareD)
	dir := t.TempDir()
	out, err := runApp("sync", "--from", url, "--data", dir)
	if err == nil || !strings.Contains(err.Error(), "2 events refused") {
		t.Fatalf("sync of 2 hostile events: %v, want it to fail counting them\n%s", err, out)
	}
	for _, reason := range []string{buzz.ErrTooFarInFuture.Error(), buzz.ErrMalformedDTag.Error()} {
		if !strings.Contains(out, "     1  "+reason) {
			t.Errorf("the summary lacks the refusal %q:\n%s", reason, out)
		}
	}
	stored := storedIDs(t, openData(t, dir), nostr.Filter{Limit: 100}, buzz.Anonymous)
	if !slices.Equal(stored, []string{honest.ID}) {
		t.Fatalf("the data directory holds %v, want only the honest %s", stored, honest.ID)
	}

	forged := author.Event(t, 1, at+2, "forged signature")
	forged.Sig = strings.Repeat("1", 128)
	plant(t, src, forged, author.Event(t, 1, at+3, "honest too"))
	if out, err := runApp("sync", "--from", url, "--data", dir); err == nil || !strings.Contains(err.Error(), "signature is invalid") {
		t.Fatalf("sync with a forged signature: %v, want it refused\n%s", err, out)
	}
	if stored := storedIDs(t, openData(t, dir), nostr.Filter{Limit: 100}, buzz.Anonymous); !slices.Equal(stored, []string{honest.ID}) {
		t.Fatalf("after the forged sync the data directory holds %v", stored)
	}
}

// plant stores evs through the import path, which takes them unchecked:
// what a hostile relay may serve.
func plant(t *testing.T, store *sqlite.Store, evs ...*nostr.Event) {
	t.Helper()
	outcomes, err := store.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range outcomes {
		if err != nil {
			t.Fatalf("planting event %d: %v", i, err)
		}
	}
}

// RL-34, RL-27: a sync split in parts on a relay whose request rate is
// tight meets rate-limited refusals, waits and tries again, and copies
// everything.
func TestSyncWaitsOutTheRequestRate(t *testing.T) {
	defer func(w time.Duration) { syncFirstWait = w }(syncFirstWait)
	syncFirstWait = 50 * time.Millisecond
	tight := relay.Limits{MaxSyncItems: 3, Rates: &relay.Rates{ReqsPerConnection: relay.Rate{PerSecond: 40, Burst: 2}}}
	fromURL, _ := wnServeLimited(t, tight)
	author := testutil.NewSigner(t)
	for i := range 8 {
		testutil.Publish(t, fromURL, author.Event(t, 1, time.Now().Unix()-int64(1000*i), "note"))
	}
	out, err := runApp("sync", "--from", fromURL, "--data", t.TempDir())
	if err != nil || !strings.Contains(out, "8 copied") {
		t.Fatalf("sync: %v, printed %q, want all 8 copied", err, out)
	}
}

// RL-34, RL-25 (2026-12-04), issue 29 item 9: threads made within one
// second, a deep one among them, whose ids sort against their depth, with
// the channel's creation, a membership, a reaction and an edit of that
// second, are copied parents first: `sync --to` into a live relay and
// `sync --data` refuse none and copy all in one run, and the export of the
// copy publishes into a third live relay with none refused.
func TestSyncSameSecondThreads(t *testing.T) {
	fromURL, _ := wnServe(t)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := "2f0a9b8c-7d6e-4f5a-8b4c-3d2e1f0a9b8c"
	// A relay serves no deleted event, so that a sync of a deletion's
	// target, or of replies below a deleted one, is another matter: the
	// fixture's deletions stay out.
	evs := slices.DeleteFunc(testutil.SameSecondThreads(t, owner, member, ch, time.Now().Unix()-100, 3, 4, 12),
		func(ev *nostr.Event) bool { return ev.Kind == buzz.KindDeletion || ev.Kind == buzz.KindGroupDelete })
	testutil.Publish(t, fromURL, evs...)
	deepRoot := evs[2+3*5]
	if deepRoot.Content[:9] != "thread 3 " {
		t.Fatalf("the fixture's deep thread starts with %q", deepRoot.Content)
	}

	toURL, to := wnServe(t)
	dir := t.TempDir()
	for _, dest := range [][]string{{"--to", toURL}, {"--data", dir}} {
		out, err := runApp(append([]string{"sync", "--from", fromURL}, dest...)...)
		want := fmt.Sprintf("has %d events that %s lacks: %d copied, 0 duplicate, 0 refused", len(evs), dest[1], len(evs))
		if dest[0] == "--data" {
			want = fmt.Sprintf("lacks: %d copied, 0 duplicate, 0 refused", len(evs))
		}
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("sync %v: %v, printed %q, want %q", dest, err, out, want)
		}
	}
	copied := openData(t, dir)
	for name, store := range map[string]*sqlite.Store{"the mirror": to, "the data directory": copied} {
		sums, err := store.Summaries(context.Background(), []string{deepRoot.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(sums) != 1 || sums[0].DescendantCount != 12 {
			t.Fatalf("%s: the deep thread's summary %+v, want 12 replies below its root", name, sums)
		}
	}
	copied.Close()

	file := filepath.Join(t.TempDir(), "copy.jsonl")
	if out, err := runApp("export", "--data", dir, "-o", file); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	lines := readLines(t, file)
	if len(lines) != len(evs) {
		t.Fatalf("exported %d events, want %d", len(lines), len(evs))
	}
	testutil.ReplayedInOrder(t, lines)
	thirdURL, _ := wnServe(t)
	testutil.Publish(t, thirdURL, lines...)
}

// readLines reads the events of a JSON Lines file.
func readLines(t *testing.T, path string) []*nostr.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*nostr.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev nostr.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		evs = append(evs, &ev)
	}
	return evs
}
