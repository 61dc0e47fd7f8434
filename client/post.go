package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// RefusedError is an event the relay answered with OK false.
type RefusedError struct {
	ID string
	// Message is the relay's message, as it sent it ("restricted: ...").
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// Post signs with the client's key a kind 9 message in channel (its h
// tag, CW-2) and publishes it, answering the relay's NIP-42 challenge when
// it asks. A reply (replyTo, a message id) carries NIP-10 marked tags: the
// parent is fetched to learn its channel, its thread's root and its
// author, and a direct reply to the root names the root alone, as NIP-10
// says (CW-10). A reply may leave channel "": it goes to its parent's.
// A refusal is a *RefusedError; the signed event is returned either way.
func (c *Client) Post(ctx context.Context, channel, content, replyTo string) (*nostr.Event, error) {
	if c.key == "" {
		return nil, errors.New("client: post: a key is needed to sign")
	}
	ch := ""
	if channel != "" || replyTo == "" {
		var ok bool
		if ch, ok = nipcw.ParseChannelID(channel); !ok {
			return nil, fmt.Errorf("client: channel %q is not a channel id (a UUID or a NIP-29 group id)", channel)
		}
	}
	w, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()
	var tags nostr.Tags
	if replyTo != "" {
		if ch, tags, err = c.replyTags(ctx, w, ch, replyTo); err != nil {
			return nil, err
		}
	}
	ev := &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Content: content, Tags: append(nostr.Tags{{"h", ch}}, tags...)}
	if err := ev.Sign(c.key); err != nil {
		return nil, fmt.Errorf("client: post: sign: %w", err)
	}
	return ev, w.publish(ctx, ev)
}

// replyTags are the channel and NIP-10 tags of a reply to the message id:
// the parent's channel, which must be ch unless ch is "".
func (c *Client) replyTags(ctx context.Context, w *wsConn, ch, id string) (string, nostr.Tags, error) {
	id = strings.ToLower(id)
	if !nostr.IsValid32ByteHex(id) {
		return "", nil, fmt.Errorf("client: post: reply to %q: want a 64 hex message id", id)
	}
	got := map[string]*nostr.Event{}
	if err := w.fetchIDs(ctx, []string{id}, got); err != nil {
		return "", nil, fmt.Errorf("client: post: fetch %s: %w", id, err)
	}
	parent := got[id]
	if parent == nil {
		return "", nil, fmt.Errorf("client: post: message %s not found on the relay", id)
	}
	if ch == "" {
		h, err := buzz.ChannelOf(parent.Tags)
		if err != nil || h == "" {
			return "", nil, fmt.Errorf("client: post: message %s is in no channel", id)
		}
		ch = h
	} else if !inChannel(parent, ch) {
		return "", nil, fmt.Errorf("client: post: message %s is not in channel %s", id, ch)
	}
	thread := buzz.ParseThreadTags(parent.Tags)
	root := thread.Root
	if root == "" {
		// The parent opens the thread, or is a reply without a root
		// marker: its parent, if any, is the nearest root we know.
		root = thread.Parent
	}
	tags := nostr.Tags{}
	if root == "" {
		tags = append(tags, nostr.Tag{"e", parent.ID, c.wsURL, "root"})
	} else {
		tags = append(tags, nostr.Tag{"e", root, c.wsURL, "root"}, nostr.Tag{"e", parent.ID, c.wsURL, "reply"})
	}
	return ch, append(tags, nostr.Tag{"p", parent.PubKey}), nil
}

// publish sends ev and waits for the relay's OK; an auth-required refusal
// is answered with the key and ev sent again, once.
func (w *wsConn) publish(ctx context.Context, ev *nostr.Event) error {
	if err := w.conn.WriteJSON([]any{"EVENT", ev}); err != nil {
		return w.fail(ctx, err)
	}
	for {
		label, id, msg, err := w.next(ctx)
		if err != nil {
			return err
		}
		if label == "AUTH" {
			w.challenge = id
			continue
		}
		if label != "OK" || id != ev.ID || len(msg) < 3 {
			continue
		}
		var ok bool
		var message string
		if json.Unmarshal(msg[2], &ok) != nil {
			return fmt.Errorf("client: post: malformed OK: %s", msg)
		}
		if len(msg) > 3 {
			_ = json.Unmarshal(msg[3], &message)
		}
		if ok {
			return nil
		}
		if strings.HasPrefix(message, "auth-required: ") && !w.authed {
			if err := w.authenticate(ctx); err != nil {
				return err
			}
			if err := w.conn.WriteJSON([]any{"EVENT", ev}); err != nil {
				return w.fail(ctx, err)
			}
			continue
		}
		return &RefusedError{ID: ev.ID, Message: message}
	}
}
