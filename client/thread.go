package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// maxThreadEvents bounds what Thread holds of one thread, replies and aux
// events together: a relay that keeps answering cannot grow it for ever.
const maxThreadEvents = 100_000

// ErrNoThread is a root the relay does not serve: unknown, or in a channel
// the reader may not read (RL-13 answers both alike).
var ErrNoThread = errors.New("client: no such thread, or it is in a channel you cannot read")

// Thread is a thread as a relay serves it to the reader: the root, every
// reply below it, and the events that act on them (reactions, edits,
// deletions).
type Thread struct {
	Root *nostr.Event
	// Replies are in reading order: depth first, each reply's own replies
	// right after it, siblings oldest first.
	Replies []ThreadReply
	// Aux are the reactions, edits and deletions naming the root or a
	// reply (the relay's closure of CW-18 on the window path).
	Aux []*nostr.Event
	// Path says how the thread was read.
	Path Path
}

// ThreadReply is a reply and where it sits in its thread.
type ThreadReply struct {
	Event *nostr.Event
	// Parent is the event it replies to (the root for a direct reply).
	Parent string
	// Depth is 1 for a direct reply to the root.
	Depth int
}

// Thread reads the thread under root: through the thread path of `/query`
// (RL-20, `include_aux`) when the relay offers the window, else over
// WebSocket by the `e` tags that name the thread's events (CW-24's
// fallback, for threads). Every event is verified (CL-3). A root the relay
// does not serve to the reader is ErrNoThread.
func (c *Client) Thread(ctx context.Context, root string) (*Thread, error) {
	root = strings.ToLower(root)
	if !nostr.IsValid32ByteHex(root) {
		return nil, fmt.Errorf("client: thread %q: want a 64-hex event id", root)
	}
	var (
		evs  map[string]*nostr.Event
		path Path
		err  error
	)
	if c.window {
		path = Path{Kind: PathWindow}
		evs, err = c.threadByQuery(ctx, root)
	} else {
		path = Path{Kind: PathFallback, Reason: "the relay does not advertise nip-cw"}
		evs, err = c.threadByREQ(ctx, root)
	}
	if err != nil {
		return nil, err
	}
	t := assembleThread(root, evs)
	if t == nil {
		return nil, ErrNoThread
	}
	t.Path = path
	return t, nil
}

// threadByQuery reads the root by id and its replies by thread pages,
// each continuing strictly after the last reply of the one before.
func (c *Client) threadByQuery(ctx context.Context, root string) (map[string]*nostr.Event, error) {
	got := map[string]*nostr.Event{}
	rootBody, err := json.Marshal([]any{map[string]any{"ids": []string{root}, "limit": 1}})
	if err != nil {
		return nil, err
	}
	if err := c.queryInto(ctx, rootBody, got); err != nil {
		return nil, err
	}
	if got[root] == nil {
		return nil, ErrNoThread
	}
	filter := map[string]any{"#e": []string{root}, "depth_limit": buzz.MaxDepth, "limit": c.threadLimit, "include_aux": true}
	for {
		body, err := json.Marshal([]any{filter})
		if err != nil {
			return nil, err
		}
		page := map[string]*nostr.Event{}
		if err := c.queryInto(ctx, body, page); err != nil {
			return nil, err
		}
		var last *nostr.Event
		replies := 0
		for id, ev := range page {
			got[id] = ev
			if !nipcw.IsClassifiedKind(ev.Kind) || id == root {
				continue
			}
			replies++
			if last == nil || ev.CreatedAt > last.CreatedAt || (ev.CreatedAt == last.CreatedAt && ev.ID > last.ID) {
				last = ev
			}
		}
		if len(got) > maxThreadEvents {
			return nil, fmt.Errorf("client: thread %s: more than %d events", root, maxThreadEvents)
		}
		if replies < c.threadLimit || last == nil {
			return got, nil
		}
		// The next page starts strictly after this one's last reply: a
		// relay that answers a page not past the cursor sent would be
		// asked the same page for ever.
		if prev, ok := filter["thread_cursor"].(nostr.Timestamp); ok &&
			(last.CreatedAt < prev || (last.CreatedAt == prev && last.ID <= filter["thread_cursor_id"].(string))) {
			return nil, fmt.Errorf("client: thread %s: the relay's page does not go past thread_cursor %d", root, prev)
		}
		filter["thread_cursor"], filter["thread_cursor_id"] = last.CreatedAt, last.ID
	}
}

// queryInto posts body to `/query` and adds the verified events it
// answers to into.
func (c *Client) queryInto(ctx context.Context, body []byte, into map[string]*nostr.Event) error {
	evs, err := c.query(ctx, body)
	if err != nil {
		return err
	}
	if err := nipcw.VerifyEvents(evs); err != nil {
		return fmt.Errorf("client: /query: %w", err)
	}
	for _, ev := range evs {
		into[ev.ID] = ev
	}
	return nil
}

// threadByREQ reads the root by id, then, level by level, every event
// whose `e` tags name an event of the thread found so far: replies that
// omit the root tag are found through their parent, and the reactions,
// edits and deletions of each come with them.
func (c *Client) threadByREQ(ctx context.Context, root string) (map[string]*nostr.Event, error) {
	w, err := c.dialAuthenticated(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()
	got := map[string]*nostr.Event{}
	if err := w.fetchIDs(ctx, []string{root}, got); err != nil {
		return nil, err
	}
	if got[root] == nil {
		return nil, ErrNoThread
	}
	frontier := []string{root}
	for depth := 0; depth < buzz.MaxDepth && len(frontier) > 0; depth++ {
		found := map[string]*nostr.Event{}
		for chunk := range slices.Chunk(frontier, idChunk) {
			if err := w.fetchAll(ctx, nostr.Filter{Tags: nostr.TagMap{"e": chunk}}, c.batch, found); err != nil {
				return nil, err
			}
		}
		frontier = frontier[:0]
		for id, ev := range found {
			if got[id] != nil {
				continue
			}
			got[id] = ev
			if nipcw.IsClassifiedKind(ev.Kind) {
				frontier = append(frontier, id)
			}
		}
		if len(got) > maxThreadEvents {
			return nil, fmt.Errorf("client: thread %s: more than %d events", root, maxThreadEvents)
		}
	}
	return got, nil
}

// assembleThread arranges evs (the root among them) into a Thread: each
// event of a classified kind whose NIP-10 parent (CW-10) is in the thread is
// a reply, in reading order; the other events stay as aux. nil when root
// is not among evs.
func assembleThread(root string, evs map[string]*nostr.Event) *Thread {
	r := evs[root]
	if r == nil {
		return nil
	}
	t := &Thread{Root: r}
	children := map[string][]*nostr.Event{}
	var candidates []*nostr.Event
	for id, ev := range evs {
		if id == root {
			continue
		}
		if !nipcw.IsClassifiedKind(ev.Kind) {
			t.Aux = append(t.Aux, ev)
			continue
		}
		candidates = append(candidates, ev)
	}
	for _, ev := range candidates {
		if p := strings.ToLower(buzz.ParseThreadTags(ev.Tags).Parent); p != "" && evs[p] != nil {
			children[p] = append(children[p], ev)
		}
	}
	for _, kids := range children {
		slices.SortFunc(kids, func(a, b *nostr.Event) int {
			return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), strings.Compare(a.ID, b.ID))
		})
	}
	// Depth first from the root; an event is placed once, so a cycle of
	// forged parents (unreachable from the root) is left out.
	type item struct {
		ev     *nostr.Event
		parent string
		depth  int
	}
	stack := []item{}
	push := func(parent string, depth int) {
		kids := children[parent]
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, item{kids[i], parent, depth})
		}
	}
	push(root, 1)
	placed := map[string]bool{root: true}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if placed[it.ev.ID] || it.depth > buzz.MaxDepth {
			continue
		}
		placed[it.ev.ID] = true
		t.Replies = append(t.Replies, ThreadReply{Event: it.ev, Parent: it.parent, Depth: it.depth})
		push(it.ev.ID, it.depth+1)
	}
	slices.SortFunc(t.Aux, func(a, b *nostr.Event) int { return strings.Compare(a.ID, b.ID) })
	return t
}
