package client

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Channel is a channel as its relay-signed group state describes it
// (NIP-29 kind 39000, RL-11).
type Channel struct {
	ID, Name, About string
	Private         bool
}

// Channels lists the channels the client can read, from the group state
// the relay serves it: with a key, the client authenticates first (NIP-42)
// so that the private channels it is a member of are among them (RL-12).
// Only group state signed by the relay's key is read when that key is
// known (CL-3). Sorted by id.
func (c *Client) Channels(ctx context.Context) ([]Channel, error) {
	w, err := c.dialAuthenticated(ctx)
	if err != nil {
		return nil, err
	}
	defer w.close()
	f := nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}}
	if c.relayKey != "" {
		f.Authors = []string{c.relayKey}
	}
	got := map[string]*nostr.Event{}
	if err := w.fetchAll(ctx, f, c.batch, got); err != nil {
		return nil, err
	}
	// Replaceable: the newest state of each group id.
	newest := map[string]*nostr.Event{}
	for _, ev := range got {
		d := ev.Tags.GetD()
		if _, ok := nipcw.ParseChannelID(d); !ok {
			continue
		}
		if old := newest[d]; old == nil || ev.CreatedAt > old.CreatedAt {
			newest[d] = ev
		}
	}
	chs := make([]Channel, 0, len(newest))
	for d, ev := range newest {
		meta := buzz.MetadataOf(ev.Tags)
		ch := Channel{ID: d, Name: meta.Name, About: meta.About, Private: meta.Private}
		chs = append(chs, ch)
	}
	slices.SortFunc(chs, func(a, b Channel) int { return strings.Compare(a.ID, b.ID) })
	return chs, nil
}

// dialAuthenticated dials the relay and, when the client has a key,
// authenticates before anything is asked: a read that names no channel
// (ids, group state) is scoped to the reader without a word of
// auth-required (RL-13), so waiting to be told would read as a stranger.
func (c *Client) dialAuthenticated(ctx context.Context) (*wsConn, error) {
	w, err := c.dial(ctx)
	if err != nil || c.key == "" {
		return w, err
	}
	if err := w.awaitChallenge(ctx); err != nil {
		w.close()
		return nil, err
	}
	if err := w.authenticate(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// awaitChallenge reads until the relay's NIP-42 challenge, which buzz-lite
// sends as a connection opens.
func (w *wsConn) awaitChallenge(ctx context.Context) error {
	for w.challenge == "" {
		label, challenge, _, err := w.next(ctx)
		if err != nil {
			return err
		}
		if label == "AUTH" {
			if challenge == "" {
				return fmt.Errorf("client: websocket: empty NIP-42 challenge")
			}
			w.challenge = challenge
		}
	}
	return nil
}
