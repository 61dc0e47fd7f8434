package buzz

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ErrTooLarge says that a page would hold more than its query's MaxBytes:
// the store stopped reading there (RL-27a).
var ErrTooLarge = errors.New("page exceeds its byte bound")

// Position is a place in an event order: (created_at, id), id in lowercase
// hex; the wire's cursor (CW-15), one type wherever it goes.
type Position = nipcw.Cursor

// WindowQuery asks for one page of a channel window (CW-9..CW-19). The
// caller has checked that its scope reads the channel (CW-3); the store
// judges it again, by the same scope, in the snapshot it reads from.
type WindowQuery struct {
	Channel string
	// Kinds restricts the kinds of rows; empty: no restriction (CW-6).
	Kinds []int
	// Limit is the row budget (CW-4).
	Limit int
	// Before is the request cursor; nil for a head request (CW-15).
	Before *Position
	// Projection selects the row mode of thread_replies_in_channel (CW-13).
	Projection bool
	Summaries  bool
	Aux        bool
	// Viewer is who reads: whose access decides which aux events are
	// served (CW-18).
	Viewer Viewer
	// Scope is Viewer's access as the request decided it at its top; nil:
	// the store decides it from the access state of its snapshot.
	Scope *Scope
	// MaxBytes bounds the JSON of the rows and aux events read, ErrTooLarge
	// past it; 0: no bound. A page from the cache, read before, is served
	// whatever its size.
	MaxBytes int
}

// Summary is the thread summary of a row (CW-19): the counters as the
// overlay carries them (Participants up to 10 hex pubkeys, newest author
// first; LastReplyAt nil without a reply), and what the overlay is dated
// and tagged by.
type Summary struct {
	ID string
	nipcw.Summary
	// UpdatedAt is when the counters last changed, 0 if unknown: the date
	// of the summary, so that it keeps its id while nothing changes.
	UpdatedAt int64
}

// WindowPage is one page of a window: rows in window order, whether more
// follow and where they start, the aux closure and the summaries.
type WindowPage struct {
	Rows      []RawEvent
	HasMore   bool
	Next      *Position
	Aux       []RawEvent
	Summaries []Summary
	// Unreadable is set when the viewer may not read the channel in the
	// snapshot the page was read from: no rows, no overlays (CW-3).
	Unreadable bool
	// served is what a server made of the page for its answers (Keep).
	served atomic.Value
}

// Keep keeps v with the page, for whoever serves it next: a page a store
// serves from its cache is the same *WindowPage to every reader until it
// is dropped, and what a server derives from it alone (the relay's signed
// summary overlays) need not be made again for each. It is the one change
// a reader may make to a shared page; v is always of the same type.
func (p *WindowPage) Keep(v any) { p.served.Store(v) }

// Kept is what Keep kept with the page, nil if nothing.
func (p *WindowPage) Kept() any { return p.served.Load() }

// ThreadQuery asks for the replies below an event (RL-20).
type ThreadQuery struct {
	// Root is the hex id of the event whose subtree is asked for.
	Root string
	// DepthLimit is how many levels below Root are served.
	DepthLimit uint32
	Limit      int
	// After continues strictly after a position in `created_at ASC, id
	// ASC` order; an empty ID means after the whole second.
	After  *Position
	Aux    bool
	Viewer Viewer
	// Scope is Viewer's access as the request decided it; nil: the store
	// decides it from the access state of its snapshot.
	Scope *Scope
	// MaxBytes bounds the JSON of the replies and aux events read,
	// ErrTooLarge past it; 0: no bound.
	MaxBytes int
}

// ThreadPage is what the thread path serves: replies oldest first, then
// the aux closure of the replies and the root.
type ThreadPage struct {
	Replies []RawEvent
	Aux     []RawEvent
}

// RawEventFixedBytes is the most a stored event's JSON holds besides its
// tags and content: the keys and punctuation (73 bytes), 256 hex digits
// and a date and kind of at most 20 and 11 digits (a kind past an int32's
// range would only make the buffer grow). A store sizes the buffer it
// writes an event's JSON in by it, so that writing does not grow it.
const RawEventFixedBytes = 360

// RawEvent is a stored event as it goes on the wire: its signed JSON, and
// what a caller needs to know of it without decoding that.
type RawEvent struct {
	ID        string
	CreatedAt int64
	Kind      int
	JSON      []byte
}

// Decode decodes raws into events, in their order.
func Decode(raws []RawEvent) ([]*nostr.Event, error) {
	evs := make([]*nostr.Event, len(raws))
	for i, raw := range raws {
		ev := &nostr.Event{}
		if err := ev.UnmarshalJSON(raw.JSON); err != nil {
			return nil, fmt.Errorf("decode stored event %s: %w", raw.ID, err)
		}
		evs[i] = ev
	}
	return evs, nil
}

// ScopeIn is the scope a window or thread query of viewer v reads with in
// c, the access state of the store's snapshot: the one the request
// decided, else v's in c.
func ScopeIn(decided *Scope, v Viewer, c *Community) Scope {
	if decided != nil {
		return *decided
	}
	return c.ScopeOf(v)
}
