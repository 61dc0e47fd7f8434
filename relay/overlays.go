package relay

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// overlaySigner signs the thread summary and window bounds overlays with the
// relay identity key (RL-21, CW-21). A signature costs about as much as the
// database work of a whole page, and busy pages are asked for many times a
// second: signatures are cached by event id. A summary is dated when its
// thread last changed, so it keeps its id, and its signature, until then;
// a page's bounds are dated when served and signed at most once a second.
// The cache holds two generations of maxCachedSignatures: when the newer
// fills up it becomes the older, and the older is dropped.
type overlaySigner struct {
	secret, pubkey string

	mu        sync.Mutex
	cur, prev map[string]string // event id -> signature
}

// maxCachedSignatures bounds one generation of the cache (some 10 MB).
const maxCachedSignatures = 1 << 16

func newOverlaySigner(secret, pubkey string) *overlaySigner {
	return &overlaySigner{secret: secret, pubkey: pubkey, cur: map[string]string{}, prev: map[string]string{}}
}

func (o *overlaySigner) sign(ev *nostr.Event) error {
	ev.PubKey = o.pubkey
	ev.ID = ev.GetID()
	o.mu.Lock()
	sig, ok := o.cur[ev.ID]
	if !ok {
		sig, ok = o.prev[ev.ID]
	}
	o.mu.Unlock()
	if ok {
		ev.Sig = sig
		return nil
	}
	if err := ev.Sign(o.secret); err != nil {
		return fmt.Errorf("sign overlay: %w", err)
	}
	o.mu.Lock()
	if len(o.cur) >= maxCachedSignatures {
		o.prev, o.cur = o.cur, make(map[string]string, maxCachedSignatures)
	}
	o.cur[ev.ID] = ev.Sig
	o.mu.Unlock()
	return nil
}

// summaryEvent is the thread summary overlay of a row (CW-19): tags
// exactly e, d and h, content the counters, dated when the thread last
// changed (now when that is unknown).
func summaryEvent(channel string, sm buzz.Summary, now int64) (*nostr.Event, error) {
	at := now
	if sm.UpdatedAt > 0 {
		at = sm.UpdatedAt
	}
	content := sm.Summary
	if content.Participants == nil {
		content.Participants = []string{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("thread summary: %w", err)
	}
	return &nostr.Event{
		Kind:      nipcw.KindThreadSummary,
		CreatedAt: nostr.Timestamp(at),
		Tags:      summaryTags(sm.ID, channel),
		Content:   string(b),
	}, nil
}

// summaryTags are the tags of the summary of row id in channel: exactly
// e, d and h (CW-19).
func summaryTags(id, channel string) nostr.Tags {
	return nostr.Tags{{"e", id}, {"d", id}, {"h", channel}}
}

// boundsEvent is the window bounds overlay of a page (CW-20): tags exactly
// d and h, the d suffix naming the request cursor the page answers.
func boundsEvent(channel string, request *nipcw.Cursor, b nipcw.Bounds, at int64) (*nostr.Event, error) {
	content, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("window bounds: %w", err)
	}
	return &nostr.Event{
		Kind:      nipcw.KindWindowBounds,
		CreatedAt: nostr.Timestamp(at),
		Tags:      nostr.Tags{{"d", nipcw.BoundsD(channel, request)}, {"h", channel}},
		Content:   string(content),
	}, nil
}
