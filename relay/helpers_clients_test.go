package relay

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// helpersResult is what testdata/clients/helpers.mjs prints.
type helpersResult struct {
	Rust struct {
		Direct, Nested, Reaction builtEvent
	} `json:"rust"`
	NostrTools struct {
		Reaction builtEvent `json:"reaction"`
		Metadata groupRead  `json:"metadata"`
		Members  groupRead  `json:"members"`
		Admins   groupRead  `json:"admins"`
	} `json:"nostrTools"`
}

type builtEvent struct {
	ID   string     `json:"id"`
	Kind int        `json:"kind"`
	Tags nostr.Tags `json:"tags"`
}

type groupRead struct {
	Event  string          `json:"event"`
	PubKey string          `json:"pubkey"`
	Parsed json.RawMessage `json:"parsed"`
	Error  string          `json:"error"`
}

// CW-10, CW-2, NIP-29: events built by the libraries' own helpers, in a
// group named by a NIP-29 id. rust-nostr's textNoteReply (a `reply` marker
// alone for a direct reply, `root` and `reply` below it) is classified as
// the thread it means: the direct reply under the root, the nested one
// under the direct reply, so the root's summary counts 1 reply and 2
// descendants and the window shows the root alone. Reactions built by
// rust-nostr and nostr-tools (nip25) are the rows' reactions in the aux
// closure. nostr-tools' nip29 fetch and parse functions read the group's
// state (39000 metadata, 39002 members, 39001 admins) as the relay signs
// it, with `d` the group id verbatim: a mixed-case id with punctuation,
// as NIP-29 clients make them (CW-2, RL-36).
func TestJSClientsBuiltRepliesAndGroupState(t *testing.T) {
	jsClientsRequire(t)
	s := startServer(t)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	const group = "Helpers.Test~1_x"
	h := nostr.Tag{"h", group}
	at := time.Now().Unix() - 60
	c := s.client(t)
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, at-10, "", h, nostr.Tag{"name", "Helpers"}, nostr.Tag{"about", "built by the libraries"}))
	mustPublish(t, c, owner.Event(t, buzz.KindPutUser, at-9, "", h, nostr.Tag{"p", member.PK}))
	root := member.Event(t, 9, at, "the root", h)
	mustPublish(t, c, root)
	rootJSON, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}

	p := &jsPrivateChannel{s: s, owner: owner, member: member, channel: group}
	var got helpersResult
	p.runJSClient(t, "helpers.mjs", &got, "BUZZ_ROOT_EVENT="+string(rootJSON))

	// The helpers' tags are what this test is about: pin the shape it saw.
	r := got.Rust
	if th := buzz.ParseThreadTags(r.Direct.Tags); th.Parent != root.ID {
		t.Errorf("rust-nostr direct reply tags %v: parent %q, want the root", r.Direct.Tags, th.Parent)
	}
	if th := buzz.ParseThreadTags(r.Nested.Tags); th.Parent != r.Direct.ID || th.Root != root.ID {
		t.Errorf("rust-nostr nested reply tags %v: parent %q root %q", r.Nested.Tags, th.Parent, th.Root)
	}

	ctx := context.Background()
	page, err := s.store.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 10, Limit: 100, Aux: true, Viewer: buzz.Anonymous})
	if err != nil {
		t.Fatal(err)
	}
	var replies, aux []string
	for _, e := range page.Replies {
		replies = append(replies, e.ID)
	}
	for _, e := range page.Aux {
		aux = append(aux, e.ID)
	}
	if !sameIDs(replies, []string{r.Direct.ID, r.Nested.ID}) {
		t.Errorf("thread of the root: replies %v, want rust-nostr's direct and nested replies", replies)
	}
	for _, id := range []string{r.Reaction.ID, got.NostrTools.Reaction.ID} {
		if !slices.Contains(aux, id) {
			t.Errorf("thread of the root: aux %v lacks reaction %s", aux, id)
		}
	}
	sums, err := s.store.Summaries(ctx, []string{root.ID, r.Direct.ID})
	if err != nil || len(sums) != 2 {
		t.Fatalf("summaries: %v, %v", sums, err)
	}
	for _, sm := range sums {
		want := map[string][2]int64{root.ID: {1, 2}, r.Direct.ID: {1, 1}}[sm.ID]
		if sm.ReplyCount != want[0] || sm.DescendantCount != want[1] {
			t.Errorf("summary of %s: %d replies, %d descendants; want %v", sm.ID[:8], sm.ReplyCount, sm.DescendantCount, want)
		}
	}
	win, err := s.store.Window(ctx, buzz.WindowQuery{Channel: group, Limit: 50, Viewer: buzz.Anonymous})
	if err != nil {
		t.Fatal(err)
	}
	if len(win.Rows) != 1 || win.Rows[0].ID != root.ID {
		t.Errorf("window rows %v, want the root alone", win.Rows)
	}

	// nostr-tools' NIP-29 reads, on the group id as it is.
	nt := got.NostrTools
	for name, read := range map[string]groupRead{"metadata": nt.Metadata, "members": nt.Members, "admins": nt.Admins} {
		if read.Error != "" {
			t.Errorf("nip29 %s: %s", name, read.Error)
			continue
		}
		if read.PubKey != s.relay.PubKey() {
			t.Errorf("nip29 %s: signed by %s, want the relay key", name, read.PubKey)
		}
	}
	var meta struct {
		ID, Name, About string
		IsPrivate       bool
	}
	if err := json.Unmarshal(nt.Metadata.Parsed, &meta); err != nil || meta.ID != group || meta.Name != "Helpers" ||
		meta.About != "built by the libraries" || meta.IsPrivate {
		t.Errorf("nip29 metadata %s (%v)", nt.Metadata.Parsed, err)
	}
	var members []struct{ PubKey string }
	if err := json.Unmarshal(nt.Members.Parsed, &members); err != nil || !slices.ContainsFunc(members, func(m struct{ PubKey string }) bool { return m.PubKey == member.PK }) {
		t.Errorf("nip29 members %s (%v): want the member", nt.Members.Parsed, err)
	}
	var admins []struct{ PubKey string }
	if err := json.Unmarshal(nt.Admins.Parsed, &admins); err != nil || !slices.ContainsFunc(admins, func(a struct{ PubKey string }) bool { return a.PubKey == owner.PK }) {
		t.Errorf("nip29 admins %s (%v): want the owner", nt.Admins.Parsed, err)
	}
}
