package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Follow is the live tail (CL-4): a subscription of its own to the
// channel's messages from since on, each verified and handed to fn as it
// arrives. They are never spliced into fetched pages: the caller merges
// them when it renders. A private channel is authenticated with the
// client's key when the relay asks (NIP-42). Follow returns nil when ctx
// ends, or the error that ended the subscription.
func (c *Client) Follow(ctx context.Context, channel string, since int64, fn func(*nostr.Event) error) error {
	w, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer w.close()
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
			if !f.Matches(&ev) {
				continue
			}
			if err := fn(&ev); err != nil {
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
