package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// wnServe runs a relay on loopback until the test ends and returns its
// ws:// URL and store.
func wnServe(t *testing.T, admins ...string) (string, *sqlite.Store) {
	t.Helper()
	return wnServeLimited(t, relay.Limits{}, admins...)
}

// wnServeLimited is wnServe with limits (zero fields take the defaults).
func wnServeLimited(t *testing.T, limits relay.Limits, admins ...string) (string, *sqlite.Store) {
	t.Helper()
	key := nostr.GeneratePrivateKey()
	store, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), DBFile), Schema: Schema, RelayKey: key, Admins: admins})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Key: key, Info: relay.Info{Name: "test", Version: "test"}, Limits: limits}, store)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
		store.Close()
	})
	return "ws://" + ln.Addr().String(), store
}

// Issue 5: `buzz-lite window` prints a channel's rows newest first, with
// reply counts, reactions and edits applied from the aux closure, and says
// which path it read through; with a key it reads a private channel.
func TestWindowCommand(t *testing.T) {
	url, store := wnServe(t)
	ctx := context.Background()
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4"
	base := time.Now().Unix() - 1000
	first := a.Event(t, 9, base, "first", nostr.Tag{"h", ch})
	second := a.Event(t, 9, base+1, "second", nostr.Tag{"h", ch})
	for _, ev := range []*nostr.Event{
		first, second,
		b.Event(t, 9, base+2, "a reply", nostr.Tag{"h", ch}, nostr.Tag{"e", first.ID, "", "reply"}),
		b.Event(t, 7, base+3, "+", nostr.Tag{"h", ch}, nostr.Tag{"e", first.ID}),
		a.Event(t, 40003, base+4, "first, edited", nostr.Tag{"h", ch}, nostr.Tag{"e", first.ID}),
	} {
		if err := store.Ingest(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	if err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--channel", strings.ToUpper(ch), "--limit", "1", "--all", "--json"}); err != nil {
		t.Fatal(err)
	}
	var rows []windowRow
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r windowRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 2 || rows[0].ID != second.ID || rows[1].ID != first.ID {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[1]; r.Content != "first, edited" || !r.Edited || r.Replies != 1 || r.Reactions != 1 {
		t.Fatalf("first row %+v, want edited, 1 reply, 1 reaction", r)
	}
	if !strings.Contains(errOut.String(), "read through the channel window (2 pages)") {
		t.Fatalf("stderr %q does not say which path was read", errOut.String())
	}

	// The text form, and the refusals of bad arguments.
	out.Reset()
	if err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--channel", ch}); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "first, edited  [1 reply, 1 reaction, edited]") || !strings.Contains(text, "second") {
		t.Fatalf("text output:\n%s", text)
	}
	for _, args := range [][]string{
		{"--channel", "Gen eral"}, // CW-2: neither a UUID nor a NIP-29 group id
		{"--channel", ch, "--limit", "0"},
		{"--channel", ch, "--key", "nsec1notakey"},
	} {
		if err := app.Run(append([]string{"buzz-lite", "window", "--relay", url}, args...)); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// CW-2, RL-36: `window --channel` takes a NIP-29 group id as it is,
// letter case included: the rows of an open group named as NDK names
// groups, and of a private one with every allowed punctuation read with a
// member's key.
func TestWindowGroupID(t *testing.T) {
	url, store := wnServe(t)
	owner := testutil.NewSigner(t)
	const open, private = "p0ZPf6Xc6Ngx7TZFdJHcWRxY", "Team.ops~1_-"
	base := time.Now().Unix() - 100
	first := owner.Event(t, 9, base+1, "first", nostr.Tag{"h", open})
	second := owner.Event(t, 9, base+2, "second", nostr.Tag{"h", open})
	for _, ev := range []*nostr.Event{owner.Event(t, 9007, base, "", nostr.Tag{"h", open}), first, second} {
		if err := store.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	wnPrivateChannel(t, store, owner, private)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--channel", open}, []string{"second", "first"}},
		{[]string{"--channel", private, "--key", owner.SK}, []string{"before"}},
	} {
		app := newApp()
		var out, errOut bytes.Buffer
		app.Writer, app.ErrWriter = &out, &errOut
		if err := app.Run(append([]string{"buzz-lite", "window", "--relay", url, "--json"}, c.args...)); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r windowRow
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%v: line %q: %v", c.args, line, err)
			}
			got = append(got, r.Content)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: rows %q, want %q", c.args, got, c.want)
		}
		if !strings.Contains(errOut.String(), "read through the channel window") {
			t.Errorf("%v: stderr %q, want the window path", c.args, errOut.String())
		}
	}
}

// wnSyncBuffer is a bytes.Buffer safe for the command's goroutine and the
// test's.
type wnSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *wnSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *wnSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wnWait waits until buf holds want.
func wnWait(t *testing.T, buf *wnSyncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wnPrivateChannel makes owner create the private channel ch and post
// "before" in it.
func wnPrivateChannel(t *testing.T, store *sqlite.Store, owner testutil.Signer, ch string) {
	t.Helper()
	for _, ev := range []*nostr.Event{
		owner.Event(t, 9007, time.Now().Unix()-10, "", nostr.Tag{"h", ch}, nostr.Tag{"private"}),
		owner.Event(t, 9, time.Now().Unix()-5, "before", nostr.Tag{"h", ch}),
	} {
		if err := store.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 5, CL-4: `window --follow` prints the timeline, then the channel's
// new messages as they arrive, from their own subscription, authenticating
// for a private channel, until interrupted.
func TestWindowFollow(t *testing.T) {
	url, store := wnServe(t)
	owner := testutil.NewSigner(t)
	const ch = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
	wnPrivateChannel(t, store, owner, ch)
	out, errOut, stop := wnFollow(url, ch, "--key", owner.SK)
	wnWait(t, errOut, "following new messages")
	if !strings.Contains(out.String(), "before") {
		t.Fatalf("timeline: %q", out.String())
	}

	// A message published over WebSocket after the timeline reaches the
	// tail (the relay delivers it to the authenticated member).
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	live := owner.Event(t, 9, time.Now().Unix(), "live one", nostr.Tag{"h", ch})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "live one") {
		// The tail may not have subscribed yet: publish again until it shows
		// (the relay answers a repeat as a duplicate, and delivers the first).
		if err := conn.WriteJSON([]any{"EVENT", live}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live message never showed: %q / %q", out.String(), errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
		if strings.Contains(out.String(), "live one") {
			break
		}
		live = owner.Event(t, 9, time.Now().Unix(), "live one", nostr.Tag{"h", ch}, nostr.Tag{"n", time.Now().String()})
	}
	if err := stop(); err != nil {
		t.Fatalf("window --follow ended with %v", err)
	}
}

// wnFollow runs `window --follow` on channel ch of the relay at url, with
// args, until stop, which returns how it ended.
func wnFollow(url, ch string, args ...string) (out, errOut *wnSyncBuffer, stop func() error) {
	app := newApp()
	out, errOut = &wnSyncBuffer{}, &wnSyncBuffer{}
	app.Writer, app.ErrWriter = out, errOut
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, append([]string{"buzz-lite", "window", "--relay", url, "--channel", ch, "--follow"}, args...))
	}()
	return out, errOut, func() error {
		cancel()
		return <-done
	}
}

// CL-4: `window --follow` prints a live top-level message and a
// broadcast reply as rows; a quiet reply, at depth 1 or 2, is no row but a
// count of its thread's new replies, in text and in --json; in projection
// mode, the mode the pages were served in, a reply is a row.
func TestWindowFollowQuietReplies(t *testing.T) {
	admin, a := testutil.NewSigner(t), testutil.NewSigner(t)
	url, store := wnServe(t, admin.PK)
	// Each run reads a channel of its own, holding one older message: a
	// tail follows from its second on and would see the runs before.
	var ch string
	var h nostr.Tag
	var old *nostr.Event
	channel := func(id string) {
		ch, h = id, nostr.Tag{"h", id}
		old = a.Event(t, 9, time.Now().Unix()-100, "old", h)
		if err := store.Ingest(context.Background(), old); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(content string, parent, root *nostr.Event, tags ...nostr.Tag) *nostr.Event {
		return a.Event(t, 9, time.Now().Unix(), content, append([]nostr.Tag{h, {"e", root.ID, "", "root"}, {"e", parent.ID, "", "reply"}}, tags...)...)
	}
	// follow runs window --follow with args, publishes what send makes
	// once it follows, and returns its output once it holds every want.
	follow := func(args []string, send func() []*nostr.Event, want func() []string) string {
		t.Helper()
		out, errOut, stop := wnFollow(url, ch, args...)
		wnWait(t, errOut, "following new messages")
		testutil.Publish(t, url, send()...)
		for _, w := range want() {
			wnWait(t, out, w)
		}
		if err := stop(); err != nil {
			t.Fatalf("window --follow ended with %v", err)
		}
		return out.String()
	}

	channel("7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d")
	var top *nostr.Event
	text := follow(nil, func() []*nostr.Event {
		top = a.Event(t, 9, time.Now().Unix(), "live top", h)
		broadcast := reply("live broadcast", top, top, nostr.Tag{"broadcast", "1"})
		return []*nostr.Event{top, broadcast, reply("quiet one", top, top), reply("quiet two", broadcast, top), reply("quiet old", old, old)}
	}, func() []string {
		return []string{"live top", "live broadcast  [reply to " + top.ID[:8] + "]",
			"  [thread " + top.ID[:8] + ": 2 new replies]", "  [thread " + old.ID[:8] + ": 1 new reply]"}
	})
	if strings.Contains(text, "quiet") {
		t.Fatalf("a quiet reply printed as a row:\n%s", text)
	}

	channel("8b7c6d5e-4f3a-4b2c-9d0e-1f2a3b4c5d6e")
	var quiet *nostr.Event
	js := follow([]string{"--json"}, func() []*nostr.Event {
		quiet = reply("quiet json", old, old)
		return []*nostr.Event{quiet}
	}, func() []string {
		return []string{`{"thread":"` + old.ID + `","reply":"` + quiet.ID + `","new_replies":1}`}
	})
	if strings.Contains(js, "quiet json") {
		t.Fatalf("a quiet reply printed as a row:\n%s", js)
	}

	channel("9c8d7e6f-5a4b-4c3d-8e1f-2a3b4c5d6e7f")
	testutil.Publish(t, url, admin.Event(t, 9033, time.Now().Unix(), "", nostr.Tag{"thread_replies_in_channel", "true"}))
	follow(nil, func() []*nostr.Event {
		return []*nostr.Event{reply("projected reply", old, old)}
	}, func() []string {
		return []string{"projected reply  [reply to " + old.ID[:8] + "]"}
	})
}

// Issue 14: a private channel, and one that does not exist, read without
// a key get one plain sentence, not the client's error chain nor the path
// it fell back to; window's help lists no --config or --data, which it
// takes as every command does (RL-25), a configuration naming the relay;
// counts take their singular.
func TestWindowPrivateChannel(t *testing.T) {
	url, store := wnServe(t)
	owner := testutil.NewSigner(t)
	const private = "5d4c3b2a-1f0e-4d9c-8b7a-695847362514"
	wnPrivateChannel(t, store, owner, private)
	for _, ch := range []string{private, "0a0b0c0d-0000-4000-8000-00000000abcd"} {
		app := newApp()
		var out, errOut bytes.Buffer
		app.Writer, app.ErrWriter = &out, &errOut
		err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--channel", ch})
		if want := "channel " + ch + " is private or does not exist: give --key to read it as a member"; err == nil || err.Error() != want {
			t.Errorf("window of %s without a key: %v, want %q", ch, err, want)
		}
		if out.Len() > 0 || errOut.Len() > 0 {
			t.Errorf("window of %s without a key printed %q and %q", ch, out.String(), errOut.String())
		}
	}

	app := newApp()
	var help bytes.Buffer
	app.Writer = &help
	if err := app.Run([]string{"buzz-lite", "window", "--help"}); err != nil {
		t.Fatal(err)
	}
	if text := help.String(); !strings.Contains(text, "--relay") || strings.Contains(text, "--data") || strings.Contains(text, "--config") {
		t.Errorf("window --help:\n%s", text)
	}
	// RL-25: it still takes them; a configuration names the relay.
	dir := t.TempDir()
	cfgFile := testutil.WriteFile(t, "buzz-lite.toml", "[relay]\nurl = \""+url+"\"\n")
	for _, args := range [][]string{
		{"--relay", url, "--data", dir},
		{"--config", cfgFile, "--data", dir},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(append([]string{"buzz-lite", "window", "--channel", private}, args...))
		if want := "channel " + private + " is private or does not exist: give --key to read it as a member"; err == nil || err.Error() != want {
			t.Errorf("window %v: %v, want %q", args, err, want)
		}
	}

	var line bytes.Buffer
	if err := printRow(&line, windowRow{PubKey: owner.PK, Content: "x", Replies: 2, Reactions: 1}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(line.String(), "  x  [2 replies, 1 reaction]\n") {
		t.Errorf("row %q", line.String())
	}
}

// Issue 16, CL-1: when pages remain unread, window says so on stderr and
// names --all; not when it read them all, nor when there were no more.
func TestWindowMoreHint(t *testing.T) {
	url, store := wnServe(t)
	a := testutil.NewSigner(t)
	const ch, hint = "abc123", "more messages: add --all to read them all"
	base := time.Now().Unix() - 100
	for i, text := range []string{"one", "two"} {
		if err := store.Ingest(context.Background(), a.Event(t, 9, base+int64(i), text, nostr.Tag{"h", ch})); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		hint bool
	}{
		{[]string{"--limit", "1"}, true},
		{[]string{"--limit", "1", "--all"}, false},
		{[]string{"--limit", "2"}, false},
	} {
		app := newApp()
		var out, errOut bytes.Buffer
		app.Writer, app.ErrWriter = &out, &errOut
		if err := app.Run(append([]string{"buzz-lite", "window", "--relay", url, "--channel", ch}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(errOut.String(), hint); got != tc.hint {
			t.Errorf("%v: stderr %q, want the hint: %v", tc.args, errOut.String(), tc.hint)
		}
	}
}

// Issue 16, RL-20: `window --thread ID` prints the root, then its replies
// indented by depth in reading order, each with its own reply count,
// reactions and edit; a thread the reader cannot read is refused as one
// that does not exist; --thread takes no channel options.
func TestWindowThread(t *testing.T) {
	url, store := wnServe(t)
	ctx := context.Background()
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "4b3a2918-0706-4f5e-8d4c-3b2a19080706"
	h := nostr.Tag{"h", ch}
	base := time.Now().Unix() - 1000
	root := a.Event(t, 9, base, "the root", h)
	direct := b.Event(t, 9, base+1, "direct", h, nostr.Tag{"e", root.ID, "", "root"}) // CW-10
	deep := a.Event(t, 9, base+2, "deep", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", direct.ID, "", "reply"})
	later := b.Event(t, 9, base+3, "later", h, nostr.Tag{"e", root.ID, "", "root"})
	for _, ev := range []*nostr.Event{
		root, direct, deep, later,
		b.Event(t, 7, base+4, "+", h, nostr.Tag{"e", deep.ID}),
		b.Event(t, 40003, base+5, "direct, edited", h, nostr.Tag{"e", direct.ID}),
	} {
		if err := store.Ingest(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	if err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--thread", root.ID, "--json"}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		id, content string
		depth       int
		replies     int64
		reactions   int
		edited      bool
		replyTo     string
	}
	wants := []want{
		{root.ID, "the root", 0, 2, 0, false, ""},
		{direct.ID, "direct, edited", 1, 1, 0, true, root.ID},
		{deep.ID, "deep", 2, 0, 1, false, direct.ID},
		{later.ID, "later", 1, 0, 0, false, root.ID},
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(wants) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wants), out.String())
	}
	for i, line := range lines {
		var r windowRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		w := wants[i]
		if r.ID != w.id || r.Content != w.content || r.Depth != w.depth || r.Replies != w.replies ||
			r.Reactions != w.reactions || r.Edited != w.edited || r.ReplyTo != w.replyTo {
			t.Errorf("line %d = %+v, want %+v", i, r, w)
		}
	}
	if !strings.Contains(errOut.String(), "thread path") {
		t.Errorf("stderr %q does not say which path was read", errOut.String())
	}

	out.Reset()
	if err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--thread", root.ID}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, line := range []string{"  the root  [2 replies]", "\n  20", "\n    20"} {
		if !strings.Contains(text, line) {
			t.Errorf("text output lacks %q:\n%s", line, text)
		}
	}

	for _, args := range [][]string{
		{"--thread", "abc"},
		{"--thread", root.ID, "--channel", ch},
		{"--thread", root.ID, "--follow"},
		{"--thread", root.ID, "--all"},
	} {
		if err := app.Run(append([]string{"buzz-lite", "window", "--relay", url}, args...)); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	err := app.Run([]string{"buzz-lite", "window", "--relay", url, "--thread", strings.Repeat("ab", 32)})
	if err == nil || !strings.Contains(err.Error(), "is not on the relay, or is in a private channel") {
		t.Errorf("unknown thread: %v", err)
	}
}

// Untrusted text printed on a terminal (window, window --thread, feed,
// channels) cannot drive it: escape sequences, carriage returns, C1
// controls and bidi overrides are replaced, line breaks become spaces.
func TestTerminalText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcødé 🐝":        "plain text, ünïcødé 🐝",
		"two\nlines\tand a tab":        "two lines and a tab",
		"\x1b[2J\x1b[Hcleared":         "\uFFFD[2J\uFFFD[Hcleared",
		"over\rwrite":                  "over\uFFFDwrite",
		"c1 \u009b31m csi":             "c1 \uFFFD31m csi",
		"bidi \u202egnp.exe\u202c":     "bidi \uFFFDgnp.exe\uFFFD",
		"isolate \u2066x\u2069 \u200f": "isolate \uFFFDx\uFFFD \uFFFD",
		"bad utf-8 \xff":               "bad utf-8 \uFFFD",
	} {
		if got := terminalText(in); got != want {
			t.Errorf("terminalText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Issue 29 item 13: window names authors by their kind 0 profiles as the
// web view does (display_name, else name; the short npub without one),
// in a channel's timeline, --json and --thread alike, a name's escape
// sequences made harmless for the terminal.
func TestWindowAuthorNames(t *testing.T) {
	url, store := wnServe(t)
	ada, bo, eve := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "names"
	now := time.Now().Unix()
	root := ada.Event(t, 9, now-10, "hello", nostr.Tag{"h", ch})
	reply := bo.Event(t, 9, now-9, "hi", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "root"})
	for _, ev := range []*nostr.Event{
		ada.Event(t, 0, now-100, `{"name":"ada","display_name":"Ada Lovelace"}`),
		eve.Event(t, 0, now-100, `{"name":"Eve\u001b[2J"}`),
		root, reply,
		eve.Event(t, 9, now-8, "psst", nostr.Tag{"h", ch}),
	} {
		if err := store.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	boNpub, _ := nip19.EncodePublicKey(bo.PK)
	out, err := runApp("window", "--relay", url, "--channel", ch)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  Ada Lovelace  hello", "  Eve\uFFFD[2J  psst"} {
		if !strings.Contains(out, want) {
			t.Errorf("window printed %q, want a line with %q", out, want)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("window printed an escape: %q", out)
	}
	out, err = runApp("window", "--relay", url, "--thread", root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "  Ada Lovelace  hello") || !strings.Contains(out, "  "+boNpub[:12]+"…  hi") {
		t.Errorf("window --thread printed %q, want Ada's name and bo's short npub", out)
	}
	out, err = runApp("window", "--relay", url, "--channel", ch, "--json")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row windowRow
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		names[row.Content] = row.Name
	}
	if names["hello"] != "Ada Lovelace" || names["psst"] != "Eve\x1b[2J" {
		t.Errorf("--json names %q, want each author's own", names)
	}
}
