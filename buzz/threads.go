package buzz

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file holds the rules of the thread counters (RL-5, RL-6, CW-19):
// what a new reply adds to its ancestors, what a deletion takes away and
// how the counters it touches become exact again, and the counters of a
// subtree computed from scratch. They read and write over ThreadRows, one
// plain statement a method, so that every store keeps the same counters
// at the same cost.

// ThreadRow is an event's parent and the counters of its subtree as a
// store keeps them.
type ThreadRow struct {
	// Up is the store's number of the event's parent; 0 for none.
	Up int64
	// Replies counts the live direct replies, Descendants the live events
	// below.
	Replies, Descendants int64
	// LastReplyAt is the created_at of the newest live event below, when
	// HasLastReply (a store keeps NULL otherwise).
	LastReplyAt  int64
	HasLastReply bool
	// Participants are packed as threadcount.Encode packs them.
	Participants []byte
}

// SubtreeReader reads what the counters of a subtree are computed from.
// Every method is one index-driven statement.
type SubtreeReader interface {
	// LiveReplies counts the non-deleted direct replies of seq.
	LiveReplies(seq int64) (int64, error)
	// SubtreeAuthors calls each with every author of the non-deleted
	// events below seq, the created_at of their newest there and how many
	// they wrote. With known a reply of seq (0 for none), known is counted
	// but not descended into: the caller holds that part already.
	SubtreeAuthors(seq, known int64, each func(p threadcount.Participant, n int64)) error
}

// ThreadRows is what the counter rules read and write of a store, inside
// the transaction that writes. Every method is one index-driven statement
// and decides nothing.
type ThreadRows interface {
	SubtreeReader
	// ReadThreadRow reads seq's parent and counters, zero counters when
	// it has none yet.
	ReadThreadRow(seq int64) (ThreadRow, error)
	// WriteThreadRow stores the counters of seq, and remembers seq as a
	// thread whose summary changed.
	WriteThreadRow(seq int64, row ThreadRow) error
	// NewestInThread calls each with the newest live replies of thread
	// root, newest first, at most limit, until each returns false.
	NewestInThread(root int64, limit int, each func(threadcount.Participant) bool) error
	// ThreadAuthors calls each with every author of root's live replies
	// and the created_at of their newest, one index step an author.
	ThreadAuthors(root int64, each func(threadcount.Participant)) error
	// MarkDeleted sets deleted_at of seq to now unless it is deleted
	// already; it reports whether it did.
	MarkDeleted(seq, now int64) (bool, error)
	// RereadLastMessage reads channel's last message again if it was at
	// at, the time of an event that is gone.
	RereadLastMessage(channel, at int64) error
	// HasReplies reports whether any event, deleted or not, names seq as
	// its parent.
	HasReplies(seq int64) (bool, error)
	// KeepAnchor keeps removed event seq as the anchor of its replies:
	// its expiration goes, the row stays.
	KeepAnchor(seq int64) error
	// Drop deletes event seq and its tag rows.
	Drop(seq int64) error
}

// CountedEvent is what the counter rules know of an event they take away.
type CountedEvent struct {
	Seq int64
	// Parent and Channel are the store's numbers; 0 for none.
	Parent, Channel int64
	PubKey          []byte
	CreatedAt       int64
}

// ThreadRecentRows is how many of a thread's newest replies a root's
// recount reads before it turns to the thread's authors.
const ThreadRecentRows = 256

// AddToAncestors counts a new reply by pubkey at time at on its parent
// (reply_count) and on every ancestor up to the root (descendant_count,
// last_reply_at, participants): RL-5. Ancestors are taken parent first,
// the order every writer takes them in.
func AddToAncestors(rows ThreadRows, parent int64, pubkey []byte, at int64) error {
	return CountUp(rows, parent, true, pubkey, at)
}

// CountUp counts an event by pubkey at time at on seq and every ancestor
// of seq: as a direct reply of seq when direct, else as an event further
// down (a whole subtree moved below seq, Reclassify).
func CountUp(rows ThreadRows, seq int64, direct bool, pubkey []byte, at int64) error {
	return eachAncestor(rows, seq, func(_ int64, r *ThreadRow) error {
		if direct {
			r.Replies++
		}
		r.Descendants++
		if !r.HasLastReply || at > r.LastReplyAt {
			r.LastReplyAt, r.HasLastReply = at, true
		}
		r.Participants = threadcount.Merge(r.Participants, pubkey, at)
		direct = false
		return nil
	})
}

// eachAncestor reads the row of seq and of every ancestor of seq, in that
// order, has change update it and writes it back. An ancestry longer than
// a thread can be is an error, not a loop.
func eachAncestor(rows ThreadRows, seq int64, change func(seq int64, r *ThreadRow) error) error {
	start := seq
	for hops := 0; seq != 0; hops++ {
		if hops > MaxDepth+1 {
			return fmt.Errorf("thread ancestry of #%d does not end", start)
		}
		r, err := rows.ReadThreadRow(seq)
		if err != nil {
			return err
		}
		if err := change(seq, &r); err != nil {
			return err
		}
		if err := rows.WriteThreadRow(seq, r); err != nil {
			return err
		}
		seq = r.Up
	}
	return nil
}

// SoftDelete marks t deleted and makes the counters of every ancestor
// exact again for the remaining subtree (RL-6). Deleting a deleted event
// is a no-op.
//
// The counts drop by one (the deleted event's own replies stay below and
// stay counted). last_reply_at and participants change only when t was
// the newest event below an ancestor, or its author's newest there; only
// then are they recomputed: for a root by reading its thread newest first
// until ten authors are known, for an inner ancestor from the authors of
// its subtree. Those are gathered on the way up, each event once: an
// ancestor's subtree is the one of the ancestor below it, already known,
// plus its other replies and their subtrees. So a deletion costs index
// reads in number of its depth plus the events of the subtree it changes,
// whatever the size of the database (issue 13).
func SoftDelete(rows ThreadRows, t CountedEvent, now int64) error {
	if done, err := rows.MarkDeleted(t.Seq, now); err != nil || !done {
		return err
	}
	if t.Channel != 0 {
		// Only when t was the channel's last message does this read.
		if err := rows.RereadLastMessage(t.Channel, t.CreatedAt); err != nil {
			return err
		}
	}
	// below holds the authors below child while they are known.
	var below *subtreeAuthors
	child := t.Seq
	return eachAncestor(rows, t.Parent, func(seq int64, r *ThreadRow) error {
		if child == t.Seq {
			r.Replies = max(0, r.Replies-1)
		}
		r.Descendants = max(0, r.Descendants-1)
		switch {
		case !(r.HasLastReply && t.CreatedAt >= r.LastReplyAt) && !wasNewestOf(r.Participants, t.PubKey, t.CreatedAt):
			below = nil
		case r.Up == 0:
			if err := threadRecent(rows, seq, r); err != nil {
				return err
			}
		default:
			var known int64
			if below != nil {
				known = child
			} else {
				below = newSubtreeAuthors()
			}
			if err := below.add(rows, seq, known); err != nil {
				return err
			}
			r.LastReplyAt, r.HasLastReply = below.lastReplyAt()
			r.Participants = threadcount.Encode(below.top)
		}
		child = seq
		return nil
	})
}

// Remove takes a superseded or expired event out of every read:
// soft-deleted with its ancestors' counters fixed, then dropped with its
// tag rows unless replies still hang below it (they keep it as their
// thread anchor).
func Remove(rows ThreadRows, t CountedEvent, now int64) error {
	if err := SoftDelete(rows, t, now); err != nil {
		return err
	}
	anchor, err := rows.HasReplies(t.Seq)
	switch {
	case err != nil:
		return err
	case anchor:
		return rows.KeepAnchor(t.Seq)
	}
	return rows.Drop(t.Seq)
}

// wasNewestOf reports whether an event of pubkey at time at is what puts
// its author in the participants list.
func wasNewestOf(parts, pubkey []byte, at int64) bool {
	for _, p := range threadcount.Decode(parts) {
		if bytes.Equal(p.PubKey, pubkey) {
			return p.At == at
		}
	}
	return false
}

// threadRecent sets last_reply_at and participants of thread root seq
// from its non-deleted replies: from the newest ThreadRecentRows, when
// the ten newest authors (and every author tied with the tenth) are among
// them, else from every author's newest reply. So a root's recount costs
// at most ThreadRecentRows rows plus an index step per author of the
// thread, never the whole of a long thread written by a few (issue 13).
func threadRecent(rows ThreadRows, seq int64, r *ThreadRow) error {
	ps, complete, err := newestAuthors(rows, seq, r)
	if err != nil {
		return err
	}
	if !complete {
		ps = ps[:0]
		if err := rows.ThreadAuthors(seq, func(p threadcount.Participant) { ps = append(ps, p) }); err != nil {
			return err
		}
	}
	threadcount.Sort(ps)
	r.Participants = threadcount.Encode(ps[:min(len(ps), threadcount.Max)])
	return nil
}

// newestAuthors reads the newest ThreadRecentRows live replies of root
// seq, setting r's last_reply_at, until the ten newest authors (and every
// author tied with the tenth) are known; complete is false when the rows
// ran out first with more unread.
func newestAuthors(rows ThreadRows, seq int64, r *ThreadRow) (ps []threadcount.Participant, complete bool, err error) {
	r.LastReplyAt, r.HasLastReply = 0, false
	seen := map[string]bool{}
	n := 0
	stopped := false
	err = rows.NewestInThread(seq, ThreadRecentRows, func(p threadcount.Participant) bool {
		n++
		if !r.HasLastReply {
			r.LastReplyAt, r.HasLastReply = p.At, true
		}
		if len(ps) >= threadcount.Max && p.At < ps[len(ps)-1].At {
			stopped = true
			return false
		}
		if !seen[string(p.PubKey)] {
			seen[string(p.PubKey)] = true
			ps = append(ps, p)
		}
		return true
	})
	// All of the thread was read unless the limit stopped the rows.
	return ps, stopped || n < ThreadRecentRows, err
}

// Counters are the subtree counters of one event (RL-5), computed from
// scratch.
type Counters struct {
	Replies, Descendants int64
	// LastReplyAt is 0 when there is no non-deleted descendant.
	LastReplyAt  int64
	Participants []threadcount.Participant
}

// SubtreeCounters computes the counters of seq from what is stored below
// it: what a check compares with the kept ones and a repair writes.
func SubtreeCounters(rows SubtreeReader, seq int64) (Counters, error) {
	var c Counters
	var err error
	if c.Replies, err = rows.LiveReplies(seq); err != nil {
		return c, err
	}
	below := newSubtreeAuthors()
	if err := below.add(rows, seq, 0); err != nil {
		return c, err
	}
	c.Descendants = below.n
	c.LastReplyAt, _ = below.lastReplyAt()
	c.Participants = below.top
	return c, nil
}

// subtreeAuthors are the non-deleted events of a subtree: how many, each
// author's newest created_at, and the participants of CW-19.
type subtreeAuthors struct {
	n      int64
	newest map[string]int64
	// top are the threadcount.Max authors with the newest events, in
	// CW-19 order. An author outside it whom add does not raise stays
	// outside, as the authors inside only rise: so add sorts only top and
	// the authors it raised, never the whole subtree again.
	top []threadcount.Participant
}

func newSubtreeAuthors() *subtreeAuthors {
	return &subtreeAuthors{newest: map[string]int64{}}
}

// add adds the subtree of seq; when known is not 0, it names a reply of
// seq whose subtree a holds already: of it, only the reply itself is
// added.
func (a *subtreeAuthors) add(rows SubtreeReader, seq, known int64) error {
	ps := make([]threadcount.Participant, 0, len(a.top))
	inTop := make(map[string]bool, len(a.top))
	for _, p := range a.top {
		inTop[string(p.PubKey)] = true
	}
	err := rows.SubtreeAuthors(seq, known, func(p threadcount.Participant, n int64) {
		a.n += n
		if cur, ok := a.newest[string(p.PubKey)]; ok && p.At <= cur {
			return
		}
		a.newest[string(p.PubKey)] = p.At
		if !inTop[string(p.PubKey)] {
			ps = append(ps, p)
		}
	})
	if err != nil {
		return err
	}
	for _, p := range a.top {
		ps = append(ps, threadcount.Participant{PubKey: p.PubKey, At: a.newest[string(p.PubKey)]})
	}
	threadcount.Sort(ps)
	a.top = ps[:min(len(ps), threadcount.Max)]
	return nil
}

// lastReplyAt is the created_at of the newest event; ok is false when
// there is none.
func (a *subtreeAuthors) lastReplyAt() (at int64, ok bool) {
	if len(a.top) == 0 {
		return 0, false
	}
	return a.top[0].At, true
}

// Placing is a stored channel event that a backfill or a reclassify
// places in its thread again, as those rules read it.
type Placing struct {
	Ref       int64
	Kind      int
	Tags      nostr.Tags
	PubKey    []byte
	CreatedAt int64
	Deleted   bool
	// Classified and Depth are its place as stored.
	Classified bool
	Depth      int64
	// Channel is the state of the channel it names; nil when it names
	// none.
	Channel *Channel
}

// classify is Classify of p as ingest would see it now: its kind, tags
// and author (lowercase hex), in the channel it names.
func (p *Placing) classify(l Lookup, thread ThreadTags, now int64, importing bool) (Classification, error) {
	h := ""
	if p.Channel != nil {
		h = p.Channel.H
	}
	ev := &nostr.Event{Kind: p.Kind, Tags: p.Tags, PubKey: hex.EncodeToString(p.PubKey)}
	return Classify(l, ev, thread, h, p.Channel, now, importing)
}

// MovedReply is a reply below a top-level event that a reclassify moves
// along with it.
type MovedReply struct {
	Depth     int64
	PubKey    []byte
	CreatedAt int64
	Deleted   bool
	Tags      nostr.Tags
}

// PlacingRows is what a backfill reads and writes of a store, inside the
// transaction that writes. Every method is plain SQL.
type PlacingRows interface {
	Lookup
	ThreadRows
	// Placing reads stored event ref; nil when none is stored.
	Placing(ref int64) (*Placing, error)
	// SetThread stores ref's place in its thread.
	SetThread(ref int64, c Classification) error
}

// ReclassifyRows is what a reclassify reads and writes of a store, inside
// the transaction that writes.
type ReclassifyRows interface {
	PlacingRows
	// Below lists the replies of thread root ref, deleted ones too.
	Below(root int64) ([]MovedReply, error)
	// MoveBelow makes the replies of thread root ref replies of thread
	// root, shift levels deeper.
	MoveBelow(ref, root, shift int64) error
}

// BackfillOne classifies stored unclassified event ref if its parent is
// served now, exactly as ingest would have (CW-12): its place, and the
// counters of every ancestor. It reports whether it did; an event whose
// thread rules fail, or whose parent is still missing, waits as a row of
// its channel.
func BackfillOne(rows PlacingRows, ref, now int64) (bool, error) {
	p, err := rows.Placing(ref)
	if err != nil || p == nil || p.Classified {
		return false, err
	}
	// Its author's view: a reply in a private channel finds its parent
	// as its author, a member, does.
	c, err := p.classify(rows, ParseThreadTags(p.Tags), now, true)
	if _, rejected := AsRejection(err); err != nil && !rejected {
		return false, fmt.Errorf("backfill #%d: %w", ref, err)
	}
	if err != nil || !c.Classified {
		return false, nil
	}
	if err := rows.SetThread(ref, c); err != nil {
		return false, err
	}
	if c.Depth > 0 && !p.Deleted {
		if err := AddToAncestors(rows, c.ParentRef, p.PubKey, p.CreatedAt); err != nil {
			return false, err
		}
	}
	return true, nil
}

// ReclassifyOne makes top-level channel event ref a reply if its tags say
// it is one (CW-10 since 2026-12-03: a `root` marker without a `reply`
// one) and ingest would accept it as one now: with the replies already
// below it moved along (their depth grows, their root is the new one),
// and the counters of every new ancestor counting the whole moved subtree.
// candidate reports whether its tags make it a reply, moved whether it
// became one. It stays top-level when live ingest would refuse it today,
// when its parent is unclassified (a top-level event is a row as an
// unclassified reply is), or when a reply below it would pass the depth
// bound or has a root marker naming another root.
func ReclassifyOne(rows ReclassifyRows, ref, now int64) (candidate, moved bool, err error) {
	p, err := rows.Placing(ref)
	if err != nil || p == nil || p.Channel == nil || !p.Classified || p.Depth != 0 || !nipcw.IsClassifiedKind(p.Kind) {
		return false, false, err
	}
	thread := ParseThreadTags(p.Tags)
	if thread.Parent == "" {
		return false, false, nil
	}
	c, err := p.classify(rows, thread, now, false)
	if _, refused := AsRejection(err); refused {
		return true, false, nil
	}
	if err != nil {
		return true, false, err
	}
	if !c.Classified {
		return true, false, nil
	}
	root, err := rows.EventByRef(c.RootRef)
	if err != nil {
		return true, false, err
	}
	if root == nil {
		return true, false, fmt.Errorf("thread root #%d of #%d is missing", c.RootRef, ref)
	}
	below, err := rows.Below(ref)
	if err != nil {
		return true, false, err
	}
	for _, b := range below {
		if tt := ParseThreadTags(b.Tags); b.Depth+c.Depth > MaxDepth || tt.Root != "" && tt.Root != root.ID {
			return true, false, nil
		}
	}
	if err := rows.MoveBelow(ref, c.RootRef, c.Depth); err != nil {
		return true, false, err
	}
	if err := rows.SetThread(ref, c); err != nil {
		return true, false, err
	}
	if !p.Deleted {
		if err := AddToAncestors(rows, c.ParentRef, p.PubKey, p.CreatedAt); err != nil {
			return true, false, err
		}
	}
	for _, b := range below {
		if b.Deleted {
			continue
		}
		if err := CountUp(rows, c.ParentRef, false, b.PubKey, b.CreatedAt); err != nil {
			return true, false, err
		}
	}
	return true, true, nil
}

// BackfillPageSize is how many candidates one write transaction of a
// backfill or a reclassify looks at: short jobs, so that the relay keeps
// serving.
const BackfillPageSize = 200

// BackfillCursor is where a backfill pass stands: the created_at and id
// of the last candidate it looked at, the order it takes them in.
type BackfillCursor struct {
	At int64
	ID []byte
}

// BackfillTx is one write transaction of a backfill: one page of
// candidates.
type BackfillTx interface {
	// Unclassified lists the unclassified channel messages after cursor
	// after in (created_at, id) order, at most limit, and the cursor of
	// the last one.
	Unclassified(after BackfillCursor, limit int) (seqs []int64, last BackfillCursor, err error)
	// PlacingRows are rows over the transaction, asked for afresh for
	// every candidate (an earlier one may have placed its parent).
	PlacingRows() PlacingRows
}

// ReclassifyTx is one write transaction of a reclassify: one page of
// candidates.
type ReclassifyTx interface {
	// TopLevelAfter lists the channel events stored top-level after
	// store number after, in store order, at most limit.
	TopLevelAfter(after int64, limit int) ([]int64, error)
	// ReclassifyRows are rows over the transaction, asked for afresh for
	// every candidate.
	ReclassifyRows() ReclassifyRows
}

// Backfill classifies the channel messages stored unclassified (CW-12:
// imported before their parent, or before classification existed) whose
// parent is served now, each with BackfillOne: exactly as ingest would
// have. Parents go before their replies: each pass takes the candidates
// oldest first, and passes repeat while one classifies anything, so a
// reply whose parent was classified in a pass is taken in the next. It is
// idempotent, and safe while the relay serves: write runs job as one
// short write transaction of the store at its time now, and may run it
// twice.
func Backfill(ctx context.Context, write func(ctx context.Context, job func(tx BackfillTx, now int64) error) error) (BackfillResult, error) {
	return BackfillPasses(ctx, func(ctx context.Context) (classified, waiting int, err error) {
		return backfillPass(ctx, write)
	})
}

// backfillPass looks at every unclassified channel message once, a page
// a transaction, and returns how many it classified and how many still
// wait. The cursor moves only when a page's transaction commits.
func backfillPass(ctx context.Context, write func(context.Context, func(BackfillTx, int64) error) error) (classified, waiting int, err error) {
	after := BackfillCursor{At: -1 << 62}
	for {
		var (
			seen, n int
			last    BackfillCursor
		)
		err := write(ctx, func(tx BackfillTx, now int64) error {
			seqs, end, err := tx.Unclassified(after, BackfillPageSize)
			if err != nil {
				return fmt.Errorf("backfill: %w", err)
			}
			seen, last = len(seqs), end
			n, err = backfillEach(tx.PlacingRows, seqs, now)
			return err
		})
		if err != nil {
			return classified, waiting, err
		}
		classified += n
		waiting += seen - n
		if seen < BackfillPageSize {
			return classified, waiting, nil
		}
		after = last
	}
}

// backfillEach classifies candidates seqs with BackfillOne, each over rows
// fresh from the transaction, and reports how many it classified.
func backfillEach(rows func() PlacingRows, seqs []int64, now int64) (int, error) {
	n := 0
	for _, seq := range seqs {
		ok, err := BackfillOne(rows(), seq, now)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// ReclassifyResult says what a Reclassify did.
type ReclassifyResult struct {
	// Reclassified is how many top-level events became replies, each with
	// the replies below it.
	Reclassified int
	// Kept is how many stay top-level although their tags now make them
	// replies: live ingest would refuse them today (the root missing,
	// deleted, in another channel, itself a reply, or the thread too
	// deep), or a reply below them has a root marker that the move would
	// contradict.
	Kept int
}

// Reclassify recomputes the classification of channel events stored
// top-level whose tags make them replies since CW-10 changed on 2026-12-03:
// a `root` marker without a `reply` one (a NIP-10 direct reply). Each goes
// through ReclassifyOne, so that Check finds the counters exact, in store
// order, the order ingest saw them. It walks every event stored after its
// cursor (a range of store numbers: an operator's command may be linear)
// once; write runs job as one short write transaction of the store at its
// time now, so the relay keeps serving, and may run it twice. A second run
// changes nothing.
func Reclassify(ctx context.Context, write func(ctx context.Context, job func(tx ReclassifyTx, now int64) error) error) (ReclassifyResult, error) {
	var (
		res  ReclassifyResult
		last int64
	)
	for {
		var (
			seen, moved, kept int
			after             int64
		)
		err := write(ctx, func(tx ReclassifyTx, now int64) error {
			// Every run of the job starts from the same cursor and counts
			// afresh.
			seen, after, moved, kept = 0, last, 0, 0
			seqs, err := tx.TopLevelAfter(last, BackfillPageSize)
			if err != nil {
				return fmt.Errorf("reclassify: %w", err)
			}
			seen = len(seqs)
			for _, seq := range seqs {
				after = seq
				candidate, ok, err := ReclassifyOne(tx.ReclassifyRows(), seq, now)
				switch {
				case err != nil:
					return err
				case ok:
					moved++
				case candidate:
					kept++
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Reclassified += moved
		res.Kept += kept
		last = after
		if seen < BackfillPageSize {
			return res, nil
		}
	}
}
