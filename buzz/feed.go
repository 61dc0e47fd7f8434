package buzz

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// FeedType is one type of the home feed (RL-35).
type FeedType string

// The feed types; a client's alias names one of these.
const (
	// FeedMentions: events of MentionKinds whose `p` tags name the viewer.
	FeedMentions FeedType = "mentions"
	// FeedNeedsAction: events of NeedsActionKinds whose `p` tags name the
	// viewer.
	FeedNeedsAction FeedType = "needs_action"
	// FeedActivity: channel messages of ActivityKinds in every channel the
	// viewer may read.
	FeedActivity FeedType = "activity"
)

// The kinds each feed type serves (RL-35): notes, chat messages, threads
// and comments that mention; reminders (40007) and approval requests
// (46010); chat messages and threads.
var (
	MentionKinds     = []int{1, 9, 11, 1111}
	NeedsActionKinds = []int{40007, 46010}
	ActivityKinds    = []int{9, 11}
)

// FeedQuery asks for the home feed of Viewer (RL-35).
type FeedQuery struct {
	Viewer Viewer
	// Types are served in this order, each once.
	Types []FeedType
	// Since, when set, leaves out events older than it.
	Since *int64
	// Before, when set, continues each type strictly after (CreatedAt,
	// ID) in `created_at DESC, id ASC` order (RL-19's until + before_id);
	// an empty ID leaves out events newer than CreatedAt.
	Before *Position
	// Limit is how many events the feed serves across its types.
	Limit int
	// MaxBytes bounds the events read (EventSize), ErrTooLarge past it;
	// 0: no bound.
	MaxBytes int
}

// FeedStreams are the streams of the home feed v may read (RL-35): 0 (the
// open channels, and for mentions events of no channel) when v may read
// open channels, then each of candidates that is a private channel v may
// read in c. candidates are the channels a store found through v's
// memberships (all private ones for a relay admin), read in the snapshot
// c describes; an anonymous viewer has none.
func (c *Community) FeedStreams(v Viewer, candidates []int64) []int64 {
	var streams []int64
	if c.CanReadOpen(v) {
		streams = append(streams, 0)
	}
	for _, seq := range candidates {
		if ch := c.ChannelBySeq(seq); ch != nil && ch.Private && c.CanRead(v, ch) {
			streams = append(streams, seq)
		}
	}
	return streams
}

// FeedStream is the stream of the home feed (RL-35) that an event of
// kind in channel seq (0: none) is in, as a store writes it with the
// event; ok is false when it is in none: only ActivityKinds of a channel
// are. A channel's events are in stream 0 while it is open, and in the
// channel's own stream while it is private or deleted (a store moves them
// when that changes).
func (c *Community) FeedStream(kind int, seq int64) (stream int64, ok bool) {
	if seq == 0 || !slices.Contains(ActivityKinds, kind) {
		return 0, false
	}
	if ch := c.ChannelBySeq(seq); ch != nil && hides(ch) {
		return seq, true
	}
	return 0, true
}

// FeedArms is how many streams one store read of the feed takes at most:
// a reader of more streams has them read FeedArms at a time, and Feed
// merges the answers.
const FeedArms = 16

// FeedRange is one store read of the feed: the live (not deleted, not
// expired) events of Type in Streams (at most FeedArms) dated in
// [Since, Until] and, at Until, with an id past After (raw bytes, empty:
// before every id); for the mention types, those whose `p` tags name
// Viewer. At most Limit, in feed order: `created_at DESC, id ASC`.
type FeedRange struct {
	Type         FeedType
	Viewer       Viewer
	Streams      []int64
	Since, Until int64
	After        []byte
	Limit        int
}

// FeedHit is an event a FeedRange found: its date, the store's number of
// it, its id (raw bytes) and, when Scoped, the channel whose readers may
// read it.
type FeedHit struct {
	CreatedAt, Ref int64
	ID             []byte
	Scope          int64
	Scoped         bool
}

// FeedReader is one read snapshot of a store, bound to its context, as
// the feed reads it; each method is storage and nothing else.
type FeedReader interface {
	// MemberChannels are the channels whose members name v; PrivateChannels
	// every private channel not deleted.
	MemberChannels(v Viewer) ([]int64, error)
	PrivateChannels() ([]int64, error)
	// Range reads r.
	Range(r FeedRange) ([]FeedHit, error)
	// Events are the stored events of refs, by ref; one it cannot read it
	// leaves out.
	Events(refs []int64) (map[int64]*nostr.Event, error)
}

// Feed serves the home feed q asks for (RL-35) from r, whose access state
// c is: each type in q.Types in turn, newest first (`created_at DESC, id
// ASC`), events q.Viewer may read (RL-13) at or after q.Since and past
// q.Before, at most q.Limit across the types, each event once. Each type
// reads the streams q.Viewer may read (FeedStreams), so that nothing it
// may not read costs it anything. An anonymous viewer is mentioned by no
// one: only activity serves it. Past q.MaxBytes (EventSize) it is
// ErrTooLarge.
func (c *Community) Feed(ctx context.Context, r FeedReader, q FeedQuery) ([]*nostr.Event, error) {
	rg := FeedRange{Viewer: q.Viewer, Since: math.MinInt64, Until: math.MaxInt64, After: []byte{}}
	if q.Since != nil {
		rg.Since = *q.Since
	}
	if q.Before != nil {
		rg.Until = q.Before.CreatedAt
		if q.Before.ID != "" {
			id, ok := nipcw.ID32(q.Before.ID)
			if !ok {
				return nil, fmt.Errorf("feed: before_id %q is no event id", q.Before.ID)
			}
			rg.After = id
		}
	}
	if q.Limit <= 0 || len(q.Types) == 0 {
		return nil, nil
	}
	streams, err := c.feedStreams(r, q.Viewer)
	if err != nil {
		return nil, fmt.Errorf("feed streams: %w", err)
	}
	served := map[int64]bool{}
	var hits []int64
	for _, t := range q.Types {
		need := q.Limit - len(hits)
		if need <= 0 {
			break
		}
		if q.Viewer == Anonymous && t != FeedActivity {
			continue
		}
		if t != FeedActivity && t != FeedMentions && t != FeedNeedsAction {
			return nil, fmt.Errorf("feed: unknown type %q", t)
		}
		// What earlier types served takes no slot: ask for as many more.
		rg.Type, rg.Limit = t, need+len(served)
		found, err := feedMerged(ctx, r, rg, streams)
		if err != nil {
			return nil, fmt.Errorf("feed %s: %w", t, err)
		}
		for _, h := range found {
			if len(hits) == q.Limit {
				break
			}
			if !served[h.Ref] && (!h.Scoped || c.CanReadSeq(q.Viewer, h.Scope)) {
				served[h.Ref] = true
				hits = append(hits, h.Ref)
			}
		}
	}
	if len(hits) == 0 {
		return nil, nil
	}
	byRef, err := r.Events(hits)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	out := make([]*nostr.Event, 0, len(byRef))
	size := 0
	for _, ref := range hits {
		if ev, ok := byRef[ref]; ok {
			if size += EventSize(ev); q.MaxBytes > 0 && size > q.MaxBytes {
				return nil, ErrTooLarge
			}
			out = append(out, ev)
		}
	}
	return out, nil
}

// feedStreams are the streams v may read (FeedStreams) of the private
// channels v's memberships name, every private channel for a relay admin.
func (c *Community) feedStreams(r FeedReader, v Viewer) ([]int64, error) {
	if v == Anonymous {
		return c.FeedStreams(v, nil), nil
	}
	read := func() ([]int64, error) { return r.MemberChannels(v) }
	if c.IsRelayAdmin(string(v)) {
		read = r.PrivateChannels
	}
	candidates, err := read()
	if err != nil {
		return nil, err
	}
	return c.FeedStreams(v, candidates), nil
}

// feedMerged reads streams FeedArms at a time through r and returns the
// first rg.Limit of their events in feed order.
func feedMerged(ctx context.Context, r FeedReader, rg FeedRange, streams []int64) ([]FeedHit, error) {
	var found []FeedHit
	for len(streams) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rg.Streams = streams[:min(FeedArms, len(streams))]
		streams = streams[len(rg.Streams):]
		got, err := r.Range(rg)
		if err != nil {
			return nil, err
		}
		found = append(found, got...)
	}
	slices.SortStableFunc(found, func(a, b FeedHit) int {
		if a.CreatedAt != b.CreatedAt {
			return cmp.Compare(b.CreatedAt, a.CreatedAt)
		}
		return bytes.Compare(a.ID, b.ID)
	})
	return found[:min(rg.Limit, len(found))], nil
}
