package buzz

import (
	"context"
	"encoding/hex"
	"math"
	"strings"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// PageBound is what a window or thread page may still read of its
// query's MaxBytes: the page is refused as soon as it would pass the
// bound, not after it has been read whole (RL-27a). A nil bound is none.
type PageBound struct{ left int }

// NewPageBound is the bound of a page of maxBytes; nil (none) for 0.
func NewPageBound(maxBytes int) *PageBound {
	if maxBytes <= 0 {
		return nil
	}
	return &PageBound{left: maxBytes}
}

// Take counts n bytes read; ErrTooLarge once they pass the bound.
func (b *PageBound) Take(n int) error {
	if b == nil {
		return nil
	}
	if b.left -= n; b.left < 0 {
		return ErrTooLarge
	}
	return nil
}

// PageReader is one read snapshot of a store as window and thread pages
// read it (ReadWindow, ReadThread); each method is storage and nothing
// else, and the events it serves are the live ones: neither deleted nor
// expired.
type PageReader interface {
	// WindowRows reads the rows of channel that q asks for (its row mode,
	// kinds and cursor) in window order (CW-9, CW-13, CW-15), with their
	// summaries when q asks for them (CW-19), counting each with
	// rows.Row, until it says stop, and serving it with rows.Add.
	WindowRows(channel int64, q WindowQuery, rows *WindowRows) error
	// ThreadRoot finds the stored event of id (32 bytes); found is false
	// when none is stored.
	ThreadRoot(id []byte) (root ThreadRoot, found bool, err error)
	// ThreadReplies reads the replies below root, down to q.DepthLimit
	// levels, in `created_at ASC, id ASC` order after q.After, at most
	// q.Limit, serving each with add and stopping at its error.
	ThreadReplies(root ThreadRoot, q ThreadQuery, add func(RawEvent) error) error
	AuxReader
}

// ThreadRoot is the event a thread page reads below: the store's number
// of it, its depth in its thread (HasDepth false: it is in none) and the
// channel whose readers may read it (Scoped false: none).
type ThreadRoot struct {
	Ref, Depth, Scope int64
	HasDepth, Scoped  bool
}

// WindowRows takes the rows of a window page as a store reads them, in
// window order: at most the query's limit, and one more that only says
// that more follow (CW-16). Every row counted is where the next page
// starts, decoded or not: a stored event that cannot be rebuilt is skipped
// without stalling the paging (CW-17).
type WindowRows struct {
	page    *WindowPage
	limit   int
	bound   *PageBound
	taken   int
	lastAt  int64
	lastID  []byte // the last row counted, which the next cursor names
	expires int64
}

// Row counts the row the store has read at (createdAt, id), expiring at
// expires when expiring. It is false when the page is full: that row only
// says that more follow, and the store stops reading.
func (w *WindowRows) Row(createdAt int64, id []byte, expires int64, expiring bool) bool {
	if w.taken == w.limit {
		w.page.HasMore = true
		if w.taken > 0 {
			w.page.Next = &Position{CreatedAt: w.lastAt, ID: hex.EncodeToString(w.lastID)}
		}
		return false
	}
	if expiring {
		w.expires = min(w.expires, expires)
	}
	w.taken++
	w.lastAt, w.lastID = createdAt, append(w.lastID[:0], id...)
	return true
}

// Add serves the event of the row last counted; ErrTooLarge past the
// page's bound.
func (w *WindowRows) Add(ev RawEvent) error {
	if err := w.bound.Take(len(ev.JSON)); err != nil {
		return err
	}
	w.page.Rows = append(w.page.Rows, ev)
	return nil
}

// Summary serves the summary of the row last added (CW-19).
func (w *WindowRows) Summary(sm Summary) { w.page.Summaries = append(w.page.Summaries, sm) }

// WindowScope is the scope a window page of q reads with in c, the access
// state of the store's snapshot, and the channel it reads; ok is false
// when that scope does not read the channel: a removal or a 9002 private
// committed since the caller asked must not let the page through (CW-3).
func (c *Community) WindowScope(q WindowQuery) (scope Scope, ch *Channel, ok bool) {
	scope = ScopeIn(q.Scope, q.Viewer, c)
	ch = c.Channel(q.Channel)
	return scope, ch, scope.Reads(ch)
}

// ReadWindow reads the window page q asks for of ch, which scope reads
// (WindowScope), through r, a snapshot whose access state is c: its rows,
// their summaries and, when q asks for it, their aux closure (CW-18),
// within q.MaxBytes. expires is the first expiration of an event the page
// read (math.MaxInt64: none); judged, unless nil, hears of the scope of
// every aux event judged by the channels of c.
func (c *Community) ReadWindow(ctx context.Context, r PageReader, q WindowQuery, scope Scope, ch *Channel, judged func(scope int64)) (page *WindowPage, expires int64, err error) {
	page = &WindowPage{}
	rows := &WindowRows{page: page, limit: q.Limit, bound: NewPageBound(q.MaxBytes), expires: math.MaxInt64}
	if err := r.WindowRows(ch.Seq, q, rows); err != nil {
		return nil, 0, err
	}
	if q.Aux && len(page.Rows) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		targets := make([]string, len(page.Rows))
		for i, ev := range page.Rows {
			targets[i] = ev.ID
		}
		aux := auxClosure{r: r, c: c, reads: scope, rows: ch, bound: rows.bound, expires: rows.expires, judged: judged}
		if page.Aux, err = aux.read(ctx, targets); err != nil {
			return nil, 0, err
		}
		rows.expires = aux.expires
	}
	return page, rows.expires, nil
}

// ReadThread reads the thread page q asks for through r, a snapshot whose
// access state is c: the replies below q.Root, and their aux closure with
// the root's when q asks for it, within q.MaxBytes. The root itself is
// never among them, and may be deleted: its replies are still served
// (RL-20). A root that the query's scope does not read, or that is not
// stored, has nothing below it.
func (c *Community) ReadThread(ctx context.Context, r PageReader, q ThreadQuery) (*ThreadPage, error) {
	page := &ThreadPage{}
	id, ok := nipcw.ID32(q.Root)
	if !ok {
		return page, nil
	}
	root, found, err := r.ThreadRoot(id)
	if err != nil {
		return nil, err
	}
	if !found {
		return page, nil
	}
	reads := ScopeIn(q.Scope, q.Viewer, c)
	var rows *Channel
	if root.Scoped {
		if rows = c.ChannelBySeq(root.Scope); !reads.Reads(rows) {
			return page, nil
		}
	}
	bound := NewPageBound(q.MaxBytes)
	// A channel-less event has no replies (CW-10), but aux it may have.
	if root.Scoped && root.HasDepth && q.Limit > 0 && q.DepthLimit > 0 {
		err := r.ThreadReplies(root, q, func(ev RawEvent) error {
			if err := bound.Take(len(ev.JSON)); err != nil {
				return err
			}
			page.Replies = append(page.Replies, ev)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if q.Aux {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		targets := make([]string, 0, 1+len(page.Replies))
		targets = append(targets, hex.EncodeToString(id))
		for _, ev := range page.Replies {
			targets = append(targets, ev.ID)
		}
		aux := auxClosure{r: r, c: c, reads: reads, rows: rows, bound: bound}
		if page.Aux, err = aux.read(ctx, targets); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// Aux closure bounds (CW-18): a hop is read in keyset pages of
// AuxPageSize, never "the newest N", at most AuxMaxPages pages of it.
const (
	AuxPageSize = 1000
	AuxMaxPages = 64
)

// The hops of the aux closure (CW-18).
const (
	// AuxHopTargets are the deletions, reactions, group deletions and
	// edits naming a target.
	AuxHopTargets = 1
	// AuxHopDeletions are the deletions and group deletions naming an
	// event of the first hop.
	AuxHopDeletions = 2
)

// AuxReader reads the aux hops of one snapshot for the aux closure.
type AuxReader interface {
	// AuxPage calls fn with each event of one keyset page of hop whose `e`
	// tag names one of names (lowercase hex ids), in the order of the aux
	// tag index (target, created_at, event): page 0 is the hop's first,
	// each further page continues after the last event of the one before.
	// It returns how many events the page held; fewer than AuxPageSize
	// says the hop is drained. An error of fn stops it and is returned.
	AuxPage(hop int, names []string, page int, fn func(AuxRow) error) (int, error)
	// AuxCapped hears that hop reached AuxMaxPages pages: what it drained
	// is served as if it were all.
	AuxCapped(hop, pages int)
}

// AuxRow is an event an aux hop found.
type AuxRow struct {
	// Ref is the store's number of the event.
	Ref int64
	// ID is its id, 32 bytes the store may reuse once the call returns.
	ID []byte
	// Live is true when it is neither deleted nor expired and Event holds
	// its JSON, as it could be rebuilt from storage.
	Live  bool
	Event RawEvent
	// Named is true when a deletion names it.
	Named bool
	// Scope is the channel whose readers may read it, when Scoped.
	Scope  int64
	Scoped bool
	// Expires is its expiration, when Expiring.
	Expires  int64
	Expiring bool
}

// auxClosure collects the aux events of a page's targets (CW-18) through
// r: the first hop's events naming a target, then the second's naming a
// first-hop event a deletion names. Each event is served once, only if it
// is live, fits rows, the channel of the targets (AuxFits; nil: none), and
// reads, the request's scope, reads its channel in c, the access state of
// r's snapshot. A deleted first-hop event is not served, but the deletion
// naming it is: that is what tells a client to drop a reaction or edit it
// shows. The events served count against bound; expires is lowered to the
// first expiration of those judged; judged, unless nil, hears of the scope
// of every event judged by the channels of c.
type auxClosure struct {
	r       AuxReader
	c       *Community
	reads   Scope
	rows    *Channel
	bound   *PageBound
	expires int64
	judged  func(scope int64)
}

// read serves the closure of targets (lowercase hex ids).
func (a *auxClosure) read(ctx context.Context, targets []string) ([]RawEvent, error) {
	served := map[int64]bool{}
	var out []RawEvent
	var named []string
	for _, hop := range []int{AuxHopTargets, AuxHopDeletions} {
		names := targets
		if hop == AuxHopDeletions {
			if names = named; len(names) == 0 {
				break
			}
		}
		err := a.drain(ctx, hop, names, func(row AuxRow) error {
			if !AuxFits(a.rows, row.Scope, row.Scoped) {
				return nil
			}
			if row.Scoped {
				if a.judged != nil {
					a.judged(row.Scope)
				}
				if !a.reads.Reads(a.c.ChannelBySeq(row.Scope)) {
					return nil
				}
			}
			if hop == AuxHopTargets && row.Named {
				named = append(named, hex.EncodeToString(row.ID))
			}
			if row.Live && !served[row.Ref] {
				if err := a.bound.Take(len(row.Event.JSON)); err != nil {
					return err
				}
				served[row.Ref] = true
				out = append(out, row.Event)
			}
			if row.Expiring {
				a.expires = min(a.expires, row.Expires)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// drain calls fn with every event hop finds for names, page by page,
// until a page says the hop is drained or the hop reaches its cap.
func (a *auxClosure) drain(ctx context.Context, hop int, names []string, fn func(AuxRow) error) error {
	for page := 0; ; page++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if page == AuxMaxPages {
			a.r.AuxCapped(hop, page)
			return nil
		}
		n, err := a.r.AuxPage(hop, names, page, fn)
		if err != nil {
			return err
		}
		if n < AuxPageSize {
			return nil
		}
	}
}

// SummaryOf is the thread summary of the event id (lowercase hex) from
// its counters as a store holds them (CW-19): lastReplyAt when hasReply,
// participants as threadcount packs them, updatedAt 0 if unknown.
func SummaryOf(id string, replies, descendants int64, lastReplyAt int64, hasReply bool, participants []byte, updatedAt int64) Summary {
	sm := Summary{ID: id, UpdatedAt: updatedAt, Summary: nipcw.Summary{
		ReplyCount: replies, DescendantCount: descendants, Participants: threadcount.HexKeys(participants)}}
	if hasReply {
		at := lastReplyAt
		sm.LastReplyAt = &at
	}
	return sm
}

// SummariesIn are the summaries of byID (by lowercase hex id) in the
// order of ids (hex, either case), as Store.Summaries serves them: ids
// not stored are left out (CW-21).
func SummariesIn(ids []string, byID map[string]Summary) []Summary {
	out := make([]Summary, 0, len(byID))
	for _, id := range ids {
		if sm, ok := byID[strings.ToLower(id)]; ok {
			out = append(out, sm)
		}
	}
	return out
}
