package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// threadData is a thread of testChannel: a root; a direct reply with a
// `root` marker alone (CW-10); replies at depths 2 and 3 with both
// markers; a depth-2 reply with a `reply` marker alone (no root tag); a
// later sibling of the first direct reply; a reaction to a reply and the
// root's edit; and another thread's reply, which must not show.
// want is the replies in reading order with their depths.
type threadData struct {
	evs  []*nostr.Event
	root *nostr.Event
	want []ThreadReply
	aux  []string
}

func newThreadData(t *testing.T) threadData {
	alice, bob := testutil.NewSigner(t), testutil.NewSigner(t)
	base := time.Now().Unix() - 600
	h := nostr.Tag{"h", testChannel}
	root := alice.Event(t, 9, base, "root", h)
	other := alice.Event(t, 9, base+1, "another thread", h)
	direct := bob.Event(t, 9, base+10, "direct", h, nostr.Tag{"e", root.ID, "", "root"})                                       // CW-10
	deep := alice.Event(t, 9, base+20, "deep", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", direct.ID, "", "reply"}) // depth 2
	deeper := bob.Event(t, 9, base+30, "deeper", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", deep.ID, "", "reply"})
	noRoot := bob.Event(t, 9, base+25, "no root tag", h, nostr.Tag{"e", direct.ID, "", "reply"}) // depth 2, found by its parent
	sibling := alice.Event(t, 9, base+40, "sibling", h, nostr.Tag{"e", root.ID, "", "root"})
	elsewhere := bob.Event(t, 9, base+41, "elsewhere", h, nostr.Tag{"e", other.ID, "", "root"})
	reaction := alice.Event(t, buzz.KindReaction, base+50, "+", h, nostr.Tag{"e", deep.ID}, nostr.Tag{"p", alice.PK})
	edit := alice.Event(t, buzz.KindEdit, base+60, "root, edited", h, nostr.Tag{"e", root.ID})
	return threadData{
		evs:  []*nostr.Event{root, other, direct, deep, deeper, noRoot, sibling, elsewhere, reaction, edit},
		root: root,
		want: []ThreadReply{
			{Event: direct, Parent: root.ID, Depth: 1},
			{Event: deep, Parent: direct.ID, Depth: 2},
			{Event: deeper, Parent: deep.ID, Depth: 3},
			{Event: noRoot, Parent: direct.ID, Depth: 2},
			{Event: sibling, Parent: root.ID, Depth: 1},
		},
		aux: []string{reaction.ID, edit.ID},
	}
}

func readThread(t *testing.T, c *Client, root string) (*Thread, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return c.Thread(ctx, root)
}

func checkThread(t *testing.T, what string, got *Thread, d threadData) {
	t.Helper()
	if got.Root.ID != d.root.ID {
		t.Errorf("%s: root %s, want %s", what, got.Root.ID, d.root.ID)
	}
	if len(got.Replies) != len(d.want) {
		t.Fatalf("%s: %d replies, want %d: %v", what, len(got.Replies), len(d.want), replyIDs(got.Replies))
	}
	for i, w := range d.want {
		g := got.Replies[i]
		if g.Event.ID != w.Event.ID || g.Parent != w.Parent || g.Depth != w.Depth {
			t.Errorf("%s: reply %d = %s (parent %s, depth %d), want %s (%s, %d)", what, i,
				g.Event.Content, g.Parent[:8], g.Depth, w.Event.Content, w.Parent[:8], w.Depth)
		}
	}
	var aux []string
	for _, a := range got.Aux {
		aux = append(aux, a.ID)
	}
	for _, id := range d.aux {
		if !slices.Contains(aux, id) {
			t.Errorf("%s: aux lacks %s (has %v)", what, id, short(aux))
		}
	}
}

func replyIDs(rs []ThreadReply) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s@%d", r.Event.Content, r.Depth))
	}
	return out
}

// RL-20, CW-10, CW-24: a thread read through the thread path of /query
// (paged by thread_cursor, two replies a page), through standard filters
// on buzz-lite, and on a relay without the window: the same replies in the
// same order and depths, with their reactions and edits.
func TestThreadPathsAgree(t *testing.T) {
	d := newThreadData(t)
	buzzURL, plainURL := startBuzz(t), startPlain(t, nil)
	testutil.Publish(t, buzzURL, d.evs...)
	testutil.Publish(t, plainURL, d.evs...)

	win := newClient(t, Options{Relay: buzzURL})
	win.threadLimit = 2
	forced := newClient(t, Options{Relay: buzzURL})
	forced.window = false
	forced.batch = 2
	plain := newClient(t, Options{Relay: plainURL})

	for _, c := range []struct {
		name   string
		client *Client
		path   PathKind
	}{{"thread path", win, PathWindow}, {"fallback on buzz-lite", forced, PathFallback}, {"plain relay", plain, PathFallback}} {
		got, err := readThread(t, c.client, d.root.ID)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Path.Kind != c.path {
			t.Errorf("%s: path %+v", c.name, got.Path)
		}
		checkThread(t, c.name, got, d)
	}
}

// RL-13: a thread in a private channel is no thread to a reader who may
// not read it, as one that does not exist; a member reads it.
func TestThreadPrivate(t *testing.T) {
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	buzzURL := startBuzz(t)
	ch := "0d4f9a36-8f0e-4b8e-9a0c-2f6d7e8c9b10"
	h := nostr.Tag{"h", ch}
	at := time.Now().Unix() - 60
	root := member.Event(t, 9, at, "secret", h)
	reply := owner.Event(t, 9, at+1, "secret reply", h, nostr.Tag{"e", root.ID, "", "root"})
	testutil.Publish(t, buzzURL,
		owner.Event(t, buzz.KindCreateChannel, at-10, "", h, nostr.Tag{"private"}),
		owner.Event(t, buzz.KindPutUser, at-9, "", h, nostr.Tag{"p", member.PK}),
		root, reply)

	for _, c := range []struct {
		name   string
		client *Client
		window bool
	}{
		{"anonymous, thread path", newClient(t, Options{Relay: buzzURL}), true},
		{"a stranger, thread path", newClient(t, Options{Relay: buzzURL, Key: testutil.NewSigner(t).SK}), true},
		{"anonymous, fallback", newClient(t, Options{Relay: buzzURL}), false},
		{"a stranger, fallback", newClient(t, Options{Relay: buzzURL, Key: testutil.NewSigner(t).SK}), false},
		{"no such event", newClient(t, Options{Relay: buzzURL, Key: member.SK}), true},
	} {
		c.client.window = c.window
		id := root.ID
		if c.name == "no such event" {
			id = reply.Sig[:64]
		}
		if _, err := readThread(t, c.client, id); !errors.Is(err, ErrNoThread) {
			t.Errorf("%s: %v, want ErrNoThread", c.name, err)
		}
	}
	m := newClient(t, Options{Relay: buzzURL, Key: member.SK})
	mf := newClient(t, Options{Relay: buzzURL, Key: member.SK})
	mf.window = false
	for name, c := range map[string]*Client{"member, thread path": m, "member, fallback": mf} {
		got, err := readThread(t, c, root.ID)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got.Replies) != 1 || got.Replies[0].Event.ID != reply.ID {
			t.Errorf("%s: replies %v", name, replyIDs(got.Replies))
		}
	}
}

// CW-10: assembleThread places only what hangs from the root: a reply
// whose parent is not in the thread is left out with what hangs from it,
// aux kinds are aux even with marked e tags, and a positional e tag makes
// no reply.
func TestAssembleThreadLeavesOutWhatDoesNotHang(t *testing.T) {
	s := testutil.NewSigner(t)
	h := nostr.Tag{"h", testChannel}
	root := s.Event(t, 9, 100, "root", h)
	// y replies to an event the thread lacks; x replies to y.
	y := s.Event(t, 9, 101, "y", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", strings.Repeat("0", 64), "", "reply"})
	x := s.Event(t, 9, 102, "x", h, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", y.ID, "", "reply"})
	positional := s.Event(t, 9, 103, "positional", h, nostr.Tag{"e", root.ID})
	reaction := s.Event(t, buzz.KindReaction, 104, "+", h, nostr.Tag{"e", root.ID, "", "reply"})
	ok := s.Event(t, 9, 105, "ok", h, nostr.Tag{"e", root.ID, "", "root"})
	evs := map[string]*nostr.Event{}
	for _, ev := range []*nostr.Event{root, y, x, positional, reaction, ok} {
		evs[ev.ID] = ev
	}
	th := assembleThread(root.ID, evs)
	if got := replyIDs(th.Replies); !slices.Equal(got, []string{"ok@1"}) {
		t.Errorf("replies %v, want [ok@1]", got)
	}
	if len(th.Aux) != 1 || th.Aux[0].ID != reaction.ID {
		t.Errorf("aux %v, want the reaction", th.Aux)
	}
	if assembleThread(x.ID, map[string]*nostr.Event{}) != nil {
		t.Error("a thread without its root")
	}
}

// RL-20: a relay whose thread pages do not move past the thread_cursor
// sent is an error, not a loop: the client would ask it the same page for
// ever.
func TestThreadCursorMustAdvance(t *testing.T) {
	d := newThreadData(t)
	page := []*nostr.Event{d.want[0].Event, d.want[1].Event} // two replies, whatever the cursor
	url := startPlain(t, func(w http.ResponseWriter, r *http.Request) {
		var filters []map[string]any
		if err := json.NewDecoder(r.Body).Decode(&filters); err != nil || len(filters) != 1 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		out := page
		if _, byID := filters[0]["ids"]; byID {
			out = []*nostr.Event{d.root}
		}
		json.NewEncoder(w).Encode(out)
	})
	c := newClient(t, Options{Relay: url})
	c.threadLimit = 2
	if _, err := readThread(t, c, d.root.ID); err == nil || !strings.Contains(err.Error(), "does not go past thread_cursor") {
		t.Errorf("a relay ignoring thread_cursor: %v", err)
	}
}
