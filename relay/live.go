package relay

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// pushTimeout bounds the work of one live summary push.
const pushTimeout = 10 * time.Second

// pushSummaries is the one live overlay (CW-21): when a reply was stored or
// deleted, a fresh thread summary of the thread's root and of every other
// changed ancestor that is a row in the current row mode goes to the open
// subscriptions whose filter matches it and who may read the channel, also
// when its count fell to 0. A summary nobody would receive is not read
// (its date is not known before, so that check leaves dates out) and not
// signed: with no one listening, a reply costs no summary work.
func (r *Relay) pushSummaries(changed []buzz.ThreadChange) {
	projection := r.store.Community().ThreadRepliesInChannel
	ids := make([]string, 0, len(changed))
	channels := make(map[string]string, len(changed))
	for _, c := range changed {
		if !c.Root && !c.TopLevel && !projection {
			continue
		}
		shell := &nostr.Event{Kind: nipcw.KindThreadSummary, PubKey: r.pubkey, Tags: summaryTags(c.ID, c.Channel)}
		if r.kh.Listening(shell, true) {
			ids = append(ids, c.ID)
			channels[c.ID] = c.Channel
		}
	}
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	sums, err := r.store.Summaries(ctx, ids)
	if err != nil {
		r.log.Error("reading thread summaries to push", "err", err)
		return
	}
	now := r.now().Unix()
	shell := &nostr.Event{Kind: nipcw.KindThreadSummary}
	for _, sm := range sums {
		channel := channels[sm.ID]
		// Who listens is known from what a filter can name, before the
		// summary is signed.
		shell.CreatedAt = nostr.Timestamp(summaryDate(sm, now))
		shell.PubKey, shell.Tags = r.pubkey, summaryTags(sm.ID, channel)
		if !r.kh.Listening(shell, false) {
			continue
		}
		ev := &nostr.Event{}
		if err := ev.UnmarshalJSON(r.overlays.summaryJSON(channel, sm, now)); err != nil {
			r.log.Error("decoding a thread summary", "err", err)
			continue
		}
		r.kh.BroadcastOverlay(ev)
	}
}
