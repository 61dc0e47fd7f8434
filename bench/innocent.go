package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// The innocent client of the abuse run: from its own address, at a
// steady pace whatever the relay does, it publishes a message to a
// channel and asks for the channel's 50 newest messages, and times each
// answer.

// innocentGrace is how long the innocent client waits for its last
// answers once the attack is over; what is still unanswered then counts
// as the time it waited.
const innocentGrace = 5 * time.Second

// innocentConns are the innocent client's connections, opened before an
// attack starts: it is a user who was there before the attacker came.
type innocentConns struct{ publish, req *websocket.Conn }

func (e *env) connectInnocent(ctx context.Context) (innocentConns, error) {
	var ic innocentConns
	for _, c := range []**websocket.Conn{&ic.publish, &ic.req} {
		conn, _, err := e.innocentWS.dial(ctx, e.t)
		if err != nil {
			if ic.publish != nil {
				ic.publish.Close()
			}
			return ic, fmt.Errorf("the innocent client: %w", err)
		}
		*c = conn
	}
	return ic, nil
}

// innocent measures publish->OK and REQ->EOSE over ic until ctx ends.
func (e *env) innocent(ctx context.Context, ic innocentConns) (publish, req Latency) {
	var wg sync.WaitGroup
	wg.Go(func() {
		publish = e.paced(ctx, ic.publish, func(n int) (string, []byte, error) {
			ev, err := e.message(e.innocentKey, nil, nil, fmt.Sprintf("innocent %d", n))
			if err != nil {
				return "", nil, err
			}
			msg, err := json.Marshal([]any{"EVENT", ev})
			return ev.ID, msg, err
		}, false)
	})
	wg.Go(func() {
		req = e.paced(ctx, ic.req, func(n int) (string, []byte, error) {
			sub := fmt.Sprintf("i%d", n)
			f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {e.channel}}, Limit: 50}
			msg, err := json.Marshal([]any{"REQ", sub, f})
			return sub, msg, err
		}, true)
	})
	wg.Wait()
	return publish, req
}

// message is a kind-9 message of the run's channel signed by sk, a reply
// to parent in root's thread when parent is not nil.
func (e *env) message(sk string, root, parent *nostr.Event, content string) (*nostr.Event, error) {
	ev := &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", e.channel}}, Content: content}
	if parent != nil {
		ev.Tags = append(ev.Tags, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", parent.ID, "", "reply"})
	}
	if err := ev.Sign(sk); err != nil {
		return nil, err
	}
	return ev, nil
}

// pacedConn is one connection of the innocent client.
type pacedConn struct {
	c   *websocket.Conn
	wmu sync.Mutex
	// dead is set once it failed; closing once the client closes it.
	dead, closing atomic.Bool
	read          chan struct{}
}

func (c *pacedConn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(writeWait))
	return c.c.WriteMessage(websocket.TextMessage, msg)
}

// pacedRun is what one paced kind of operation waits for and got.
type pacedRun struct {
	mu      sync.Mutex
	waiting map[string]pending
	lat     []time.Duration
	failed  map[string]int
	// settled wakes the end of the run when an operation settles.
	settled chan struct{}
}

type pending struct {
	at   time.Time
	conn *pacedConn
}

// settle ends the operation key if it is waited for: answered when how
// is "", else failed that way.
func (p *pacedRun) settle(key, how string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.waiting[key]
	if !ok {
		return
	}
	delete(p.waiting, key)
	if how == "" {
		p.lat = append(p.lat, time.Since(w.at))
	} else {
		p.failed[how]++
	}
	select {
	case p.settled <- struct{}{}:
	default:
	}
}

// fail counts a failure that settles no operation (a refused connection,
// a NOTICE).
func (p *pacedRun) fail(how string) {
	p.mu.Lock()
	p.failed[how]++
	p.mu.Unlock()
}

// paced sends the message next makes, one every 1/Pace seconds, until ctx
// ends, over c and then over a connection dialled again whenever the
// relay drops it, and times each from its send to its answer. closeSubs
// closes a subscription at its EOSE.
func (e *env) paced(ctx context.Context, c *websocket.Conn, next func(n int) (key string, msg []byte, err error), closeSubs bool) Latency {
	p := &pacedRun{waiting: map[string]pending{}, failed: map[string]int{}, settled: make(chan struct{}, 1)}
	deadline, _ := ctx.Deadline()
	readUntil := deadline.Add(innocentGrace)
	// A dial of the innocent client is bounded as its reads are, not by
	// the attack's end: one that does not connect in time failed.
	dialCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), readUntil)
	defer cancel()
	conn := &pacedConn{c: c, read: make(chan struct{})}
	conns := []*pacedConn{conn}
	go p.read(conn, readUntil, closeSubs)
	tick := time.NewTicker(time.Duration(float64(time.Second) / e.o.Pace))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if conn.dead.Load() {
			c, how, err := e.innocentWS.dial(dialCtx, e.t)
			if err != nil {
				p.fail(how)
				continue
			}
			conn = &pacedConn{c: c, read: make(chan struct{})}
			conns = append(conns, conn)
			go p.read(conn, readUntil, closeSubs)
		}
		key, msg, err := next(n)
		if err != nil {
			p.fail("not made: " + err.Error())
			continue
		}
		p.mu.Lock()
		p.waiting[key] = pending{at: time.Now(), conn: conn}
		p.mu.Unlock()
		if err := conn.write(msg); err != nil {
			conn.dead.Store(true)
			conn.c.Close()
			p.settle(key, "send failed")
		}
	}
	for {
		p.mu.Lock()
		left := len(p.waiting)
		p.mu.Unlock()
		if left == 0 || !time.Now().Before(readUntil) {
			break
		}
		t := time.NewTimer(time.Until(readUntil))
		select {
		case <-p.settled:
		case <-t.C:
		}
		t.Stop()
	}
	for _, c := range conns {
		c.closing.Store(true)
		c.c.Close()
		<-c.read
	}
	for _, w := range p.waiting {
		p.failed["unanswered"]++
		p.lat = append(p.lat, time.Since(w.at))
	}
	l := Latency{Ops: len(p.lat) - len(p.waiting), Failed: p.failed}
	l.P50, l.P95, l.P99 = percentiles(p.lat)
	if len(l.Failed) == 0 {
		l.Failed = nil
	}
	return l
}

// read settles the operations of c by their answers until c fails or is
// closed, and reading ends at until.
func (p *pacedRun) read(c *pacedConn, until time.Time, closeSubs bool) {
	defer close(c.read)
	c.c.SetReadDeadline(until)
	for {
		_, msg, err := c.c.ReadMessage()
		if err != nil {
			c.dead.Store(true)
			// Past its deadline what waits is unanswered, not dropped.
			if !c.closing.Load() && !errors.Is(err, os.ErrDeadlineExceeded) {
				p.dropped(c)
			}
			return
		}
		a := parseAnswer(msg)
		switch {
		case a.label == "NOTICE":
			p.fail(a.refusal())
		case !a.terminal():
		case a.ok:
			p.settle(a.key, "")
			if a.label == "EOSE" && closeSubs {
				if err := c.write([]byte(`["CLOSE",` + strQuote(a.key) + `]`)); err != nil {
					c.dead.Store(true)
					p.dropped(c)
					return
				}
			}
		default:
			p.settle(a.key, a.refusal())
		}
	}
}

// dropped fails every operation waiting on c, whose connection failed.
func (p *pacedRun) dropped(c *pacedConn) {
	p.mu.Lock()
	var keys []string
	for key, w := range p.waiting {
		if w.conn == c {
			keys = append(keys, key)
		}
	}
	p.mu.Unlock()
	for _, key := range keys {
		p.settle(key, "connection dropped by the relay")
	}
}
