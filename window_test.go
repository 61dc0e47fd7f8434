package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// wnServe runs a relay on loopback until the test ends and returns its
// ws:// URL and store.
func wnServe(t *testing.T) (string, *sqlite.Store) {
	t.Helper()
	key := nostr.GeneratePrivateKey()
	store, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), dbFile), Schema: schema, RelayKey: key})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Key: key, Info: relay.Info{Name: "test", Version: "test"}}, store)
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
	if text := out.String(); !strings.Contains(text, "first, edited  [1 replies, 1 reactions, edited]") || !strings.Contains(text, "second") {
		t.Fatalf("text output:\n%s", text)
	}
	for _, args := range [][]string{
		{"--channel", "general"},
		{"--channel", ch, "--limit", "0"},
		{"--channel", ch, "--key", "nsec1notakey"},
	} {
		if err := app.Run(append([]string{"buzz-lite", "window", "--relay", url}, args...)); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
