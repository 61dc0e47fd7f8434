package relay

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// feed serves one feed filter (RL-35): its types in order, newest first
// within each, read whole within a byte bound that the answer reserves
// first (RL-27a). A filter that names no known type, or asks for no
// event, serves nothing.
func (r *Relay) feed(ctx context.Context, p *queryPlan, f *nipcw.FeedRequest, out *response) error {
	if len(f.Types) == 0 || f.Limit == 0 {
		return nil
	}
	q := buzz.FeedQuery{Viewer: p.scope.Viewer, Since: f.Since, Before: f.Before, Limit: f.Limit, Types: make([]buzz.FeedType, len(f.Types))}
	for i, t := range f.Types {
		q.Types[i] = buzz.FeedType(t)
	}
	evs, err := readBounded(ctx, out, func(maxBytes int) ([]*nostr.Event, error) {
		q.MaxBytes = maxBytes
		return r.store.Feed(ctx, q)
	})
	if err != nil {
		return err
	}
	return out.events(evs)
}
