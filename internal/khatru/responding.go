package khatru

import (
	"context"
	"errors"
	"sync"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
)

func (rl *Relay) handleRequest(ctx context.Context, sub *subscription, eose *sync.WaitGroup, ws *WebSocket, filter nostr.Filter) error {
	defer eose.Done()
	id := sub.id

	// overwrite the filter (for example, to eliminate some kinds or
	// that we know we don't support)
	for _, ovw := range rl.OverwriteFilter {
		ovw(ctx, &filter)
	}

	// then check if we'll reject this filter (we apply this after overwriting
	// because we may, for example, remove some things from the incoming filters
	// that we know we don't support, and then if the end result is an empty
	// filter we can just reject it)
	//
	// buzz-lite patch: a limit:0 filter is checked too; it skipped every
	// RejectFilter hook, so a subscription that only listens could not be
	// told "auth-required:".
	for _, reject := range rl.RejectFilter {
		if reject, msg := reject(ctx, filter); reject {
			return errors.New(nostr.NormalizeOKMessage(msg, "blocked"))
		}
	}

	if filter.LimitZero {
		// don't do any queries, just subscribe to future events
		return nil
	}

	// run the functions to query events (generally just one,
	// but we might be fetching stuff from multiple places)
	eose.Add(len(rl.QueryEvents))
	for _, query := range rl.QueryEvents {
		ch, err := query(ctx, filter)
		if err != nil {
			ws.WriteJSON(nostr.NoticeEnvelope(err.Error()))
			eose.Done()
			continue
		} else if ch == nil {
			eose.Done()
			continue
		}

		go func(ch chan *nostr.Event) {
			for event := range ch {
				if !sub.firstTime(event.ID) { // buzz-lite patch 29
					continue
				}
				for _, ovw := range rl.OverwriteResponseEvent {
					ovw(ctx, event)
				}
				ws.WriteJSON(nostr.EventEnvelope{SubscriptionID: &id, Event: *event})
			}
			eose.Done()
		}(ch)
	}

	// buzz-lite patch: StreamEvents hooks send their events one at a time,
	// each queued before the next is read (RL-27a), as the JSON the store
	// keeps (patch 27: decoding a stored event only to encode it again was
	// a third of a REQ's cost). The envelope's head, with the quoted
	// subscription id, is made once per filter.
	eose.Add(len(rl.StreamEvents))
	for _, stream := range rl.StreamEvents {
		go func() {
			defer eose.Done()
			head := eventEnvelopeHead(id)
			err := stream(ctx, filter, func(eventID string, event []byte) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if !sub.firstTime(eventID) { // buzz-lite patch 29
					return nil
				}
				return ws.queueAnswer(ctx, appendEventEnvelope(head, event))
			})
			if err != nil && ctx.Err() == nil && ws.Context.Err() == nil {
				sub.cancel(closedError{nostr.NormalizeOKMessage(err.Error(), "error")})
			}
		}()
	}

	return nil
}

// buzz-lite patch: a refusal of a RejectCountFilter hook and an error of a
// CountEvents hook are returned, and the COUNT refused with them; each was
// a NOTICE and a count of 0.
func (rl *Relay) handleCountRequest(ctx context.Context, ws *WebSocket, filter nostr.Filter) (int64, error) {
	if err := rl.rejectCountFilter(ctx, filter); err != nil {
		return 0, err
	}

	// run the functions to count (generally it will be just one)
	var subtotal int64 = 0
	for _, count := range rl.CountEvents {
		res, err := count(ctx, filter)
		if err != nil {
			return 0, err
		}
		subtotal += res
	}

	return subtotal, nil
}

func (rl *Relay) handleCountRequestWithHLL(
	ctx context.Context,
	ws *WebSocket,
	filter nostr.Filter,
	offset int,
) (int64, *hyperloglog.HyperLogLog, error) {
	if err := rl.rejectCountFilter(ctx, filter); err != nil {
		return 0, nil, err // buzz-lite patch, as in handleCountRequest
	}

	// run the functions to count (generally it will be just one)
	var subtotal int64 = 0
	var hll *hyperloglog.HyperLogLog
	for _, countHLL := range rl.CountEventsHLL {
		res, fhll, err := countHLL(ctx, filter, offset)
		if err != nil {
			return 0, nil, err // buzz-lite patch, as in handleCountRequest
		}
		subtotal += res
		if fhll != nil {
			if hll == nil {
				hll = fhll
			} else {
				hll.Merge(fhll)
			}
		}
	}

	return subtotal, hll, nil
}

// rejectCountFilter is the refusal of the first RejectCountFilter hook that
// refuses filter, or nil.
//
// buzz-lite patch.
func (rl *Relay) rejectCountFilter(ctx context.Context, filter nostr.Filter) error {
	for _, reject := range rl.RejectCountFilter {
		if rejecting, msg := reject(ctx, filter); rejecting {
			return errors.New(nostr.NormalizeOKMessage(msg, "blocked"))
		}
	}
	return nil
}
