package verify

import (
	"runtime"
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// maxGroup bounds the events verified together: past 64 a batch saves
// little more (BenchmarkVerifyBatch), and the events of a batch wait for
// all of it.
const maxGroup = 64

// Group verifies events that many goroutines check one at a time (the
// relay's connections, each with its EVENT), in groups: while as many
// goroutines as there are cores verify, the events that arrive wait and
// are verified together next (Verifier.Events), as a database commits the
// writes that queued behind the one it was writing, and while events come
// close together a group waits a little for more (gather). An event that
// comes alone is verified at once, at Event's cost, so a quiet relay
// answers as fast as before. A goroutine that verifies leaves once
// its own event is done, handing what waits to one of the waiting
// goroutines, so that no connection serves the others for long. Its zero
// value is not ready: use NewGroup. It is safe for concurrent use.
type Group struct {
	verifier *Verifier
	// cores is how many goroutines verify at once; 0: as many as Go runs
	// at once, read for each event (the runtime may change it).
	cores int

	mu      sync.Mutex
	waiting []*groupCall
	working int
	// lastArrival is when the last event came, and busy whether it came
	// within busyGap of the one before it (gather).
	lastArrival time.Time
	busy        bool
	// gathered, while a goroutine gathers a group, is closed once
	// gatherGroup events wait.
	gathered chan struct{}
}

// What gather waits for: a group of gatherGroup events, for at most
// gatherFor, while events come less than busyGap apart.
const (
	gatherGroup = 16
	gatherFor   = 2 * time.Millisecond
	busyGap     = time.Millisecond
)

// groupCall is one event's verification: its verdict, once done, and
// how its goroutine is woken, to take its verdict or, led, to verify in
// another's place; lead is also set for a goroutine that verifies from
// the start. done and lead are written under Group.mu.
type groupCall struct {
	ev   *nostr.Event
	err  error
	done bool
	lead bool
	// taken is set once a goroutine took the call into its group.
	taken bool
	wake  chan struct{}
}

// NewGroup is a Group over verifier, verifying with as many goroutines at
// once as Go runs at once.
func NewGroup(verifier *Verifier) *Group {
	return &Group{verifier: verifier}
}

// Alone reports what Verifier.Event reports of ev, verified on its own:
// for the events of a sender whose signatures failed before, which would
// make a group fail and cost every event in it a verification of its own
// besides the group's.
func (g *Group) Alone(ev *nostr.Event) error { return g.verifier.Event(ev) }

// Event reports what Verifier.Event reports of ev, verified with the
// events of other goroutines that wait at the same time.
func (g *Group) Event(ev *nostr.Event) error {
	call := &groupCall{ev: ev, wake: make(chan struct{}, 1)}
	now := time.Now()
	g.mu.Lock()
	g.waiting = append(g.waiting, call)
	g.busy = now.Sub(g.lastArrival) < busyGap
	g.lastArrival = now
	if g.gathered != nil && len(g.waiting) >= gatherGroup {
		close(g.gathered)
		g.gathered = nil
	}
	cores := g.cores
	if cores == 0 {
		cores = runtime.GOMAXPROCS(0)
	}
	if g.working < cores {
		g.working++
		call.lead = true // it verifies: none is to hand it the work
	} else {
		g.mu.Unlock()
		<-call.wake
		g.mu.Lock()
		if !call.lead {
			g.mu.Unlock()
			return call.err
		}
		// Led: this goroutine verifies in the place of one that left.
	}
	if !call.taken {
		g.gather()
	}
	for !call.done {
		if call.taken {
			// Another goroutine took this event into its group: wait
			// for its verdict, leaving the work to that one.
			g.working--
			for !call.done {
				g.mu.Unlock()
				<-call.wake
				g.mu.Lock()
			}
			g.mu.Unlock()
			return call.err
		}
		n := min(len(g.waiting), maxGroup)
		calls := make([]*groupCall, n)
		copy(calls, g.waiting)
		for _, c := range calls {
			c.taken = true
		}
		left := copy(g.waiting, g.waiting[n:])
		clear(g.waiting[left:])
		g.waiting = g.waiting[:left]
		g.mu.Unlock()
		verdicts := g.verify(calls)
		g.mu.Lock()
		for i, c := range calls {
			c.err, c.done = verdicts[i], true
			wake(c)
		}
	}
	if next := g.nextToLead(); next != nil {
		next.lead = true
		wake(next)
	} else {
		g.working--
	}
	g.mu.Unlock()
	return call.err
}

// nextToLead is the longest waiting call not already led, nil if none;
// called with mu held.
func (g *Group) nextToLead() *groupCall {
	for _, c := range g.waiting {
		if !c.lead {
			return c
		}
	}
	return nil
}

// wake wakes c's goroutine unless a wake is already pending: it reads
// what woke it under Group.mu.
func wake(c *groupCall) {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// gather lets events join the group about to be verified, while events
// arrive close together and the group is small: an event that waits
// for a core is verified in a group anyway, but at a few thousand EVENTs
// a second two cores are rarely both busy, and events verified one at a
// time cost a verification each. So, while busy, one goroutine at a time
// waits up to gatherFor for gatherGroup events to wait with its own,
// which then cost about 0.6 of a verification each: a few milliseconds
// more before an EVENT's OK, which waits for its commit in any case.
// Called with mu held, which it releases while it waits.
func (g *Group) gather() {
	if !g.busy || g.gathered != nil || len(g.waiting) >= gatherGroup {
		return
	}
	gathered := make(chan struct{})
	g.gathered = gathered
	g.mu.Unlock()
	timer := time.NewTimer(gatherFor)
	select {
	case <-gathered:
	case <-timer.C:
	}
	timer.Stop()
	g.mu.Lock()
	if g.gathered == gathered {
		g.gathered = nil
	}
}

// verify is the verdicts of calls' events, verified together.
func (g *Group) verify(calls []*groupCall) []error {
	evs := make([]*nostr.Event, len(calls))
	for i, c := range calls {
		evs[i] = c.ev
	}
	errs := make([]error, len(calls))
	g.verifier.Events(evs, errs)
	return errs
}
