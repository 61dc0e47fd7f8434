package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ErrNoFeed is the answer of Feed for a relay that does not advertise the
// home feed (NIP-11 supported_extensions without nipcw.FeedExtension).
var ErrNoFeed = errors.New("client: the relay does not offer the home feed (no " + nipcw.FeedExtension + " in NIP-11 supported_extensions)")

// Feed reads the home feed of the client's key (RL-35): the events of
// types (nipcw.FeedMentions, nipcw.FeedNeedsAction, nipcw.FeedActivity),
// served in that order, newest first within each, at most limit (the
// relay caps it at 100) across them, every event's id and signature
// checked. Without a key the relay serves activity of open channels only.
func (c *Client) Feed(ctx context.Context, types []string, limit int) ([]*nostr.Event, error) {
	if !c.feed {
		return nil, ErrNoFeed
	}
	body, err := json.Marshal([]map[string]any{{"feed_types": types, "limit": limit}})
	if err != nil {
		return nil, fmt.Errorf("client: feed: %w", err)
	}
	evs, err := c.query(ctx, body)
	if err != nil {
		return nil, err
	}
	if len(evs) > limit {
		return nil, fmt.Errorf("client: feed: the relay answered %d events, more than the %d asked for", len(evs), limit)
	}
	if err := nipcw.VerifyEvents(evs); err != nil {
		return nil, fmt.Errorf("client: feed: %w", err)
	}
	return evs, nil
}
