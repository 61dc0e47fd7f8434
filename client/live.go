package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// LiveEvent is a message of the live tail, placed as the window would
// place it (CL-4).
type LiveEvent struct {
	Event *nostr.Event
	// Row: the message is a row of the window in the row mode followed
	// (CW-9 and CW-11 by default, CW-13 in projection mode, CW-12 when its
	// place cannot be known).
	Row bool
	// Thread is the root of a quiet reply's thread: the reply is no row,
	// it changes that thread's count.
	Thread string
}

// Follow is the live tail (CL-4): a subscription of its own to the
// channel's messages from since on, each verified, placed by the row rule
// of the mode given (the mode the pages were served in), and handed to fn
// as it arrives. They are never spliced into fetched pages: the caller
// merges them when it renders. A private channel is authenticated with the
// client's key when the relay asks (NIP-42). Follow returns nil when ctx
// ends, or the error that ended the subscription.
func (c *Client) Follow(ctx context.Context, channel string, since int64, projection bool, fn func(LiveEvent) error) error {
	w, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	pl := &placer{c: c, projection: projection, known: map[string]*nostr.Event{}, missing: map[string]bool{}}
	defer pl.close()
	ts := nostr.Timestamp(since)
	f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Since: &ts}
	const id = "live"
	if err := w.conn.WriteJSON([]any{"REQ", id, f}); err != nil {
		return w.fail(ctx, err)
	}
	for {
		_, data, err := w.conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return w.fail(ctx, err)
		}
		var msg []json.RawMessage
		if json.Unmarshal(data, &msg) != nil || len(msg) < 2 {
			continue
		}
		var label, sub string
		_ = json.Unmarshal(msg[0], &label)
		_ = json.Unmarshal(msg[1], &sub)
		switch {
		case label == "AUTH":
			w.challenge = sub
		case sub != id:
		case label == "EVENT" && len(msg) > 2:
			var ev nostr.Event
			if err := json.Unmarshal(msg[2], &ev); err != nil {
				return fmt.Errorf("client: live: malformed event: %w", err)
			}
			if err := nipcw.VerifyEvents([]*nostr.Event{&ev}); err != nil {
				return fmt.Errorf("client: live: event %s: %w", ev.ID, err)
			}
			if !nipcw.MatchesFilter(f, &ev) {
				continue
			}
			live, err := pl.place(ctx, channel, &ev)
			if err != nil {
				return err
			}
			if err := fn(live); err != nil {
				return err
			}
		case label == "CLOSED":
			reason := ""
			if len(msg) > 2 {
				_ = json.Unmarshal(msg[2], &reason)
			}
			if !strings.HasPrefix(reason, "auth-required: ") || w.key == "" || w.authed {
				return &ClosedError{Where: "live", Reason: reason}
			}
			if err := w.authenticate(ctx); err != nil {
				return err
			}
			if err := w.conn.WriteJSON([]any{"REQ", id, f}); err != nil {
				return w.fail(ctx, err)
			}
		}
	}
}

// knownCap bounds the messages a placer remembers: past it, it forgets
// them all and asks the relay again. Each is remembered as its skeleton,
// so a long tail holds a few megabytes at most, whatever the messages'
// sizes.
const knownCap = 10000

// placer places live messages by the row rule of the fallback (assemble),
// so that the tail and the standard filter path agree: a reply's place
// needs its ancestors, taken from the messages seen so far or fetched by
// id over a connection of its own (the tail's reads only its
// subscription).
type placer struct {
	c          *Client
	projection bool
	known      map[string]*nostr.Event
	// missing are parents the relay did not return: asked once, not again
	// for every reply that names them.
	missing map[string]bool
	lookup  *wsConn
}

func (p *placer) place(ctx context.Context, ch string, ev *nostr.Event) (LiveEvent, error) {
	p.remember(ev)
	// Up to the thread's root, as far as the ancestors can be had: one
	// that cannot leaves the message unclassified, a row (CW-12).
	root := ev
	for range buzz.MaxDepth + 1 {
		id := buzz.ParseThreadTags(root.Tags).Parent
		if id == "" || p.missing[id] {
			break
		}
		if p.known[id] == nil {
			if p.lookup == nil {
				w, err := p.c.dial(ctx)
				if err != nil {
					return LiveEvent{}, err
				}
				p.lookup = w
			}
			got := map[string]*nostr.Event{}
			if err := p.lookup.fetchIDs(ctx, []string{id}, got); err != nil {
				return LiveEvent{}, fmt.Errorf("client: live: parent of %s: %w", ev.ID, err)
			}
			if got[id] == nil {
				p.missing[id] = true
				break
			}
			p.remember(got[id])
		}
		root = p.known[id]
	}
	if len(assemble(ch, map[string]*nostr.Event{ev.ID: ev}, p.known, nil, p.projection)) == 1 {
		return LiveEvent{Event: ev, Row: true}, nil
	}
	return LiveEvent{Event: ev, Thread: root.ID}, nil
}

// remember keeps ev's skeleton, starting over when knownCap are kept.
func (p *placer) remember(ev *nostr.Event) {
	if len(p.known)+len(p.missing) >= knownCap {
		clear(p.known)
		clear(p.missing)
	}
	p.known[ev.ID] = skeleton(ev)
	delete(p.missing, ev.ID)
}

// skeleton is what placing a message needs of ev, and all assemble reads:
// its id, kind and time, its channel, the thread tags that decide its
// parent and root, and its broadcast flag. Its content and other tags are
// dropped: the placer's memory is bounded per message.
func skeleton(ev *nostr.Event) *nostr.Event {
	s := &nostr.Event{ID: ev.ID, Kind: ev.Kind, CreatedAt: ev.CreatedAt}
	switch h, err := buzz.ChannelOf(ev.Tags); {
	case err != nil:
		s.Tags = append(s.Tags, nostr.Tag{"h", ""}) // no channel, as the error is
	case h != "":
		s.Tags = append(s.Tags, nostr.Tag{"h", h})
	}
	tt := buzz.ParseThreadTags(ev.Tags)
	if tt.Root != "" {
		s.Tags = append(s.Tags, nostr.Tag{"e", tt.Root, "", "root"})
	}
	if tt.Parent != "" && tt.Parent != tt.Root {
		s.Tags = append(s.Tags, nostr.Tag{"e", tt.Parent, "", "reply"})
	}
	if tt.Broadcast {
		s.Tags = append(s.Tags, nostr.Tag{"broadcast", "1"})
	}
	return s
}

func (p *placer) close() {
	if p.lookup != nil {
		p.lookup.close()
	}
}
