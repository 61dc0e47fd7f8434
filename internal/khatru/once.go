package khatru

import "sync"

// buzz-lite patch 29: a subscription never receives an event twice.
//
// A REQ's stored events and its live ones overlap: its listeners are
// added while its stored events are read, and an event committed before
// a read's snapshot may be broadcast after the listener was added (this
// process's EVENT between its store's commit and its broadcast, another
// process's event whose notification is still on its way). And a REQ's
// filters each answer and listen on their own: an event two of them match
// came twice. So a subscription remembers the ids it sent while it may
// still meet one again, and forgets them once every live delivery of an
// event stored before its last read has been made (settle): this
// process's EVENTs in flight then (writes), and what LiveCaughtUp says of
// the deliveries made beside khatru's EVENT path. One broadcast reaches a
// subscription once however many of its filters match.

// firstTime reports whether sub may send the event id: false when it sent
// it already while its stored and live events may overlap.
func (sub *subscription) firstTime(id string) bool {
	sub.seenMu.Lock()
	defer sub.seenMu.Unlock()
	if sub.seen == nil {
		return true
	}
	if _, ok := sub.seen[id]; ok {
		return false
	}
	sub.seen[id] = struct{}{}
	return true
}

// settle forgets the ids sub sent once every live delivery of an event
// stored before now has been made, or once sub ends. Called when its
// stored events are all read.
func (rl *Relay) settle(sub *subscription) {
	waits := []<-chan struct{}{rl.writes.barrier()}
	if rl.LiveCaughtUp != nil {
		waits = append(waits, rl.LiveCaughtUp())
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-sub.ctx.Done():
		}
	}
	sub.seenMu.Lock()
	sub.seen = nil
	sub.seenMu.Unlock()
}

// writes counts the EVENTs being stored and broadcast, by generation, so
// that a barrier knows when every one begun before it has been broadcast.
type writes struct {
	mu      sync.Mutex
	gen     uint64         // the generation writes begun now join
	open    map[uint64]int // writes not yet broadcast, by generation
	waiting []writesWaiter
}

type writesWaiter struct {
	gen  uint64
	done chan struct{}
}

// begin counts a write about to be stored; end(its generation) ends it
// once it is broadcast (or refused).
func (w *writes) begin() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open == nil {
		w.open = make(map[uint64]int)
	}
	w.open[w.gen]++
	return w.gen
}

func (w *writes) end(gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open[gen]--; w.open[gen] == 0 {
		delete(w.open, gen)
	}
	kept := w.waiting[:0]
	for _, wt := range w.waiting {
		if w.openUpTo(wt.gen) {
			kept = append(kept, wt)
		} else {
			close(wt.done)
		}
	}
	clear(w.waiting[len(kept):])
	w.waiting = kept
}

// barrier is closed once every write begun before the call has ended.
func (w *writes) barrier() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	done := make(chan struct{})
	gen := w.gen
	w.gen++
	if w.openUpTo(gen) {
		w.waiting = append(w.waiting, writesWaiter{gen, done})
	} else {
		close(done)
	}
	return done
}

// openUpTo reports whether a write of generation gen or older is open.
// Called with mu held; the open generations are as many as the writes
// running at once, at most.
func (w *writes) openUpTo(gen uint64) bool {
	for g := range w.open {
		if g <= gen {
			return true
		}
	}
	return false
}
