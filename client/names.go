package client

import (
	"context"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Names reads the names the kind 0 profiles of pubkeys give (display_name,
// else name, as the web view shows them), by author; an author without a
// profile or a name is absent. Names are the authors' own untrusted text:
// the caller makes them fit what it prints them on.
func (c *Client) Names(ctx context.Context, pubkeys []string) (map[string]string, error) {
	names := make(map[string]string, len(pubkeys))
	if len(pubkeys) == 0 {
		return names, nil
	}
	w, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()
	newest := map[string]*nostr.Event{}
	for len(pubkeys) > 0 {
		n := min(len(pubkeys), idChunk)
		evs, err := w.req(ctx, nostr.Filter{Kinds: []int{0}, Authors: pubkeys[:n], Limit: n})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			// A relay may keep more than one profile of an author.
			if old := newest[ev.PubKey]; old == nil || ev.CreatedAt > old.CreatedAt {
				newest[ev.PubKey] = ev
			}
		}
		pubkeys = pubkeys[n:]
	}
	for pk, ev := range newest {
		if name := buzz.ProfileName(ev.Content, strings.TrimSpace); name != "" {
			names[pk] = name
		}
	}
	return names, nil
}
