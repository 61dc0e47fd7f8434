package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// CW-10: buzz-lite's reading of thread tags (buzz.ParseThreadTags, which
// ingest, backfill and the fallback client classify by) agrees with
// nostr-tools' nip10.parse on the tag sets clients write: root-only,
// reply-only, both, quotes. They differ on purpose where CW-10 says so:
// unmarked (positional) e tags, deprecated by NIP-10, make no reply here.
// Opt-in, as the other client tests (BUZZ_LITE_JS_CLIENTS=1).
func TestJSClientsNIP10Parse(t *testing.T) {
	jsClientsRequire(t)
	root, parent, pk := strings.Repeat("a1", 32), strings.Repeat("b2", 32), strings.Repeat("c3", 32)
	cases := []struct {
		name string
		tags nostr.Tags
		// reply is the parent both read; ntReply, when set, is what
		// nostr-tools reads where CW-10 reads reply.
		reply, ntReply string
	}{
		{name: "root only (NIP-10 direct reply)", tags: nostr.Tags{{"e", root, "", "root"}}, reply: root},
		{name: "root only with relay and author", tags: nostr.Tags{{"e", root, "wss://r.example", "root", pk}}, reply: root},
		{name: "reply only (rust-nostr's direct reply)", tags: nostr.Tags{{"e", parent, "", "reply"}}, reply: parent},
		{name: "root and reply", tags: nostr.Tags{{"e", root, "", "root"}, {"e", parent, "", "reply"}}, reply: parent},
		{name: "reply and root", tags: nostr.Tags{{"e", parent, "wss://r.example", "reply", pk}, {"e", root, "", "root"}}, reply: parent},
		{name: "q tag only (NIP-C7 quote)", tags: nostr.Tags{{"q", root, "wss://r.example", pk}}},
		{name: "q tag beside a root marker", tags: nostr.Tags{{"e", root, "", "root"}, {"q", parent, ""}}, reply: root},
		{name: "mention marker", tags: nostr.Tags{{"e", root, "", "mention"}}},
		{name: "malformed root marker", tags: nostr.Tags{{"e", root[:63], "", "root"}}},
		{name: "positional, one e tag", tags: nostr.Tags{{"e", root}}, ntReply: root},
		{name: "positional, two e tags", tags: nostr.Tags{{"e", root}, {"e", parent, "wss://r.example"}}, ntReply: parent},
	}
	in := make([]nostr.Tags, len(cases))
	for i, c := range cases {
		in[i] = c.tags
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), jsClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "nip10.mjs")
	cmd.Dir = jsClientsDir
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node nip10.mjs: %v\n%s", err, stderr.String())
	}
	var got []struct{ Reply, Root string }
	if err := json.Unmarshal(stdout, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node nip10.mjs printed %s (%v)", stdout, err)
	}
	for i, c := range cases {
		tt := buzz.ParseThreadTags(c.tags)
		if tt.Parent != c.reply {
			t.Errorf("%s: buzz-lite reads parent %q, want %q", c.name, tt.Parent, c.reply)
		}
		ntWant := c.reply
		if c.ntReply != "" {
			ntWant = c.ntReply
		}
		if got[i].Reply != ntWant {
			t.Errorf("%s: nip10.parse reads reply %q, want %q", c.name, got[i].Reply, ntWant)
		}
		// A root marker names the same root for both.
		if tt.Root != "" && got[i].Root != tt.Root {
			t.Errorf("%s: nip10.parse reads root %q, buzz-lite %q", c.name, got[i].Root, tt.Root)
		}
	}
}
