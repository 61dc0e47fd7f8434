package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// postID runs post and returns the id of the message it printed OK for.
func postID(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runApp(append([]string{"post"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(strings.TrimSpace(out), "ok ")
	if !ok || !nostr.IsValid32ByteHex(id) {
		t.Fatalf("post printed %q, want ok ID", out)
	}
	return id
}

// Issue 16, CW-10, CW-2: post publishes a kind 9 in the channel; a reply
// carries NIP-10 marked tags (a direct reply the root alone, a deeper one
// root and reply) and the parent's author, and the relay classifies both
// as replies of the thread: the window shows one row, its thread two
// descendants. The channel is named as NDK names groups, mixed-case
// (CW-2, RL-36).
func TestPostAndReply(t *testing.T) {
	url, store := wnServe(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "p0ZPf6Xc6Ngx7TZFdJHcWRxY"
	top := postID(t, "--relay", url, "--key", a.SK, "--channel", ch, "hello")
	direct := postID(t, "--relay", url, "--key", b.SK, "--channel", ch, "--reply-to", top, "a reply")
	// Flags after the text, as every command takes them.
	deeper := postID(t, "a reply to the reply", "--relay", url, "--key", a.SK, "--channel", ch, "--reply-to", direct)

	evs, err := store.Query(context.Background(), nostr.Filter{IDs: []string{top, direct, deeper}}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*nostr.Event{}
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	if len(byID) != 3 || byID[top].Content != "hello" || byID[top].Tags.FindLast("h")[1] != ch {
		t.Fatalf("stored %v", evs)
	}
	want := map[string]nostr.Tags{
		direct: {{"h", ch}, {"e", top, url, "root"}, {"p", a.PK}},
		deeper: {{"h", ch}, {"e", top, url, "root"}, {"e", direct, url, "reply"}, {"p", b.PK}},
	}
	for id, tags := range want {
		if got := byID[id].Tags; !equalTags(got, tags) {
			t.Fatalf("tags of %s: %v, want %v", byID[id].Content, got, tags)
		}
	}

	out, err := runApp("window", "--relay", url, "--channel", ch, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var row windowRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &row); err != nil {
		t.Fatalf("window printed %q, want one row: %v", out, err)
	}
	if row.ID != top || row.Replies != 1 {
		t.Fatalf("row %+v, want %s with 1 direct reply", row, top)
	}
	sums, err := store.Summaries(context.Background(), []string{top, direct})
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range sums {
		if want := map[string]int64{top: 2, direct: 1}[sm.ID]; sm.DescendantCount != want {
			t.Fatalf("summary %+v: want %d descendants", sm, want)
		}
	}
	if len(sums) != 2 {
		t.Fatalf("summaries %+v, want the root's and the direct reply's", sums)
	}
}

func equalTags(a, b nostr.Tags) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") {
			return false
		}
	}
	return true
}

// Issue 16, RL-13: a relay's refusal is printed and fails post; a member
// of a private channel posts after answering the relay's NIP-42 challenge.
func TestPostRefusedAndAuth(t *testing.T) {
	url, store := wnServe(t)
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
	wnPrivateChannel(t, store, owner, ch)

	out, err := runApp("post", "--relay", url, "--key", stranger.SK, "--channel", ch, "let me in")
	if err == nil || !strings.Contains(err.Error(), "refused: restricted: not a channel member") || out != "" {
		t.Fatalf("post by a non-member: out %q, err %v, want a refusal", out, err)
	}
	postID(t, "--relay", url, "--key", owner.SK, "--channel", ch, "members only")
	out, err = runApp("window", "--relay", url, "--channel", ch, "--key", owner.SK)
	if err != nil || !strings.Contains(out, "members only") {
		t.Fatalf("window: %q, %v", out, err)
	}
}

// Issue 29 item 11: a reply needs no --channel: it goes to its parent's
// channel; the parent may be named by its nevent or note; a short id, as a
// timeline prints one, is answered with what is needed instead; a
// --channel that is not the parent's is refused.
func TestPostReplyToForms(t *testing.T) {
	url, store := wnServe(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	const ch = "abc123"
	top := postID(t, "--relay", url, "--key", a.SK, "--channel", ch, "hello")
	nevent, err := nip19.EncodeEvent(top, []string{url}, a.PK)
	if err != nil {
		t.Fatal(err)
	}
	note, err := nip19.EncodeNote(top)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, ref string }{
		{"hex without --channel", top},
		{"upper-case hex", strings.ToUpper(top)},
		{"nevent", nevent},
		{"note", note},
	} {
		id := postID(t, "--relay", url, "--key", b.SK, "--reply-to", tc.ref, "reply by "+tc.name)
		evs, err := store.Query(context.Background(), nostr.Filter{IDs: []string{id}}, buzz.Anonymous)
		if err != nil || len(evs) != 1 {
			t.Fatalf("%s: stored %v, %v", tc.name, evs, err)
		}
		if want := (nostr.Tags{{"h", ch}, {"e", top, url, "root"}, {"p", a.PK}}); !equalTags(evs[0].Tags, want) {
			t.Errorf("%s: tags %v, want %v", tc.name, evs[0].Tags, want)
		}
	}
	for _, tc := range []struct{ name, want string }{
		{top[:8], "is a short id: give the message's full id (64 hex) or its nevent"},
		{top[:63], "is a short id: give the message's full id (64 hex) or its nevent"},
		{"nevent1qqqqqq", "--reply-to: invalid nevent"},
		{"not-an-id", "want a message id (64 hex), an nevent or a note"},
	} {
		out, err := runApp("post", "--relay", url, "--key", b.SK, "--reply-to", tc.name, "x")
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("--reply-to %s: out %q, err %v, want %q", tc.name, out, err, tc.want)
		}
	}
	if _, err := runApp("post", "--relay", url, "--key", b.SK, "--channel", "elsewhere", "--reply-to", top, "x"); err == nil ||
		!strings.Contains(err.Error(), "message "+top+" is not in channel elsewhere") {
		t.Errorf("--reply-to with another --channel: %v", err)
	}
	if _, err := runApp("post", "--relay", url, "--key", b.SK, "x"); err == nil || !strings.Contains(err.Error(), "missing --channel") {
		t.Errorf("post with neither --channel nor --reply-to: %v", err)
	}
}
