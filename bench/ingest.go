package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// readWait bounds the wait for any one message from the relay: a relay
// that stops answering fails the measurement instead of hanging it.
const readWait = time.Minute

// read reads the next message from c, waiting at most readWait.
func read(c *websocket.Conn) ([]byte, error) {
	return readInto(c, new(bytes.Buffer))
}

// readInto is read into buf, which a measurement's connection reuses: the
// message is valid until the next read into buf. A fresh slice for each
// of tens of thousands of messages a second took the load generator CPU
// the measured relay shares.
func readInto(c *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	if err := c.SetReadDeadline(time.Now().Add(readWait)); err != nil {
		return nil, err
	}
	_, r, err := c.NextReader()
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dial opens a WebSocket to the relay.
func dial(ctx context.Context, t Target) (*websocket.Conn, error) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, t.WS, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", t.WS, err)
	}
	return conn, nil
}

// okAnswer is the part of an ["OK", id, accepted, message] answer that
// ingest needs.
type okAnswer struct {
	id       string
	accepted bool
	message  string
}

// nextOK reads c, into buf, up to the next OK answer and returns the id
// it accepts; a refusal is an error.
func nextOK(c *websocket.Conn, buf *bytes.Buffer) (id string, n int, err error) {
	for {
		msg, err := readInto(c, buf)
		if err != nil {
			return "", 0, fmt.Errorf("read: %w", err)
		}
		a, ok, err := parseOK(msg)
		if err != nil {
			return "", 0, err
		}
		if !ok {
			continue
		}
		if !a.accepted {
			return "", 0, fmt.Errorf("event %s refused: %s", a.id, a.message)
		}
		return a.id, len(msg), nil
	}
}

// parseOK reads an OK answer; ok is false for any other message.
func parseOK(msg []byte) (a okAnswer, ok bool, err error) {
	if !bytes.HasPrefix(msg, []byte(`["OK"`)) {
		return a, false, nil
	}
	var env []json.RawMessage
	if err := json.Unmarshal(msg, &env); err != nil || len(env) != 4 {
		return a, false, fmt.Errorf("malformed OK %s", msg)
	}
	if json.Unmarshal(env[1], &a.id) != nil || json.Unmarshal(env[2], &a.accepted) != nil ||
		json.Unmarshal(env[3], &a.message) != nil {
		return a, false, fmt.Errorf("malformed OK %s", msg)
	}
	return a, true, nil
}

// Ingest publishes evs over conns WebSocket connections at once, at most
// window unacknowledged events on each, and measures events accepted a
// second and the time from an event's first byte sent to its OK. Every
// event must be accepted. evs must be in an order a relay accepts (parents
// before replies, targets before reactions and deletions): an event is
// sent only once the events it names are acknowledged, since a relay may
// handle the messages of one connection concurrently. Events that name
// each other (a thread, its reactions and deletions) go over one
// connection; each connection interleaves them with others so that an
// event seldom waits for its parent.
func Ingest(ctx context.Context, t Target, name string, evs []*nostr.Event, conns, window int) (Result, error) {
	if conns < 1 || window < 1 {
		return Result{}, fmt.Errorf("%s: need at least one connection and a window of one", name)
	}
	index, deps, units := dependencies(evs)
	msgs := make([][]byte, len(evs))
	for i, ev := range evs {
		msg, err := json.Marshal([]any{"EVENT", ev})
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		msgs[i] = msg
	}
	streams := interleave(units, conns, 64)

	sockets := make([]*websocket.Conn, 0, len(streams))
	defer func() {
		for _, c := range sockets {
			c.Close()
		}
	}()
	// A stream is one connection to one process: the events that name
	// each other go through one process, each waiting for the OK of what
	// it names.
	for s := range streams {
		c, err := dial(ctx, t.process(s))
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		sockets = append(sockets, c)
	}

	p := &pipeline{acked: make([]bool, len(evs)), sent: make([]time.Time, len(evs)),
		latency: make([]time.Duration, 0, len(evs)), index: index,
		streamOf: make([]int, len(evs)), outstanding: make([]int, len(streams)),
		acks: make([]*sync.Cond, len(streams))}
	for s, stream := range streams {
		p.acks[s] = sync.NewCond(&p.mu)
		for _, i := range stream {
			p.streamOf[i] = s
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.failed = true
		for _, ack := range p.acks {
			ack.Broadcast()
		}
		p.mu.Unlock()
		for _, c := range sockets {
			c.Close()
		}
	})
	defer stop()
	var wg sync.WaitGroup
	start := time.Now()
	for i, stream := range streams {
		c := sockets[i]
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := p.send(c, i, stream, deps, msgs, window); err != nil {
				cancel(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := p.receive(c, len(stream)); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return result(name, "events", len(streams), p.latency, elapsed, p.bytes), nil
}

// dependencies indexes evs by id and finds, for each event, the earlier
// events it names (deps) and the units of evs: an event and every earlier
// event it names are in one unit (union-find over the e tags), each unit
// in the order of evs, so that what an event waits for goes before it on
// the same connection.
func dependencies(evs []*nostr.Event) (index map[string]int, deps, units [][]int) {
	index = make(map[string]int, len(evs))
	deps = make([][]int, len(evs))
	parent := make([]int, len(evs))
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i, ev := range evs {
		index[ev.ID] = i
		parent[i] = i
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "e" {
				if j, ok := index[tag[1]]; ok {
					deps[i] = append(deps[i], j)
					parent[find(i)] = find(j)
				}
			}
		}
	}
	unitOf := map[int]int{}
	for i := range evs {
		root := find(i)
		u, ok := unitOf[root]
		if !ok {
			u = len(units)
			unitOf[root] = u
			units = append(units, nil)
		}
		units[u] = append(units[u], i)
	}
	return index, deps, units
}

// interleave deals units round robin to conns streams; each stream takes
// its units lanes at a time and sends their events in turn, one of each.
func interleave(units [][]int, conns, lanes int) [][]int {
	per := make([][][]int, conns)
	for i, u := range units {
		per[i%conns] = append(per[i%conns], u)
	}
	var streams [][]int
	for _, us := range per {
		var s []int
		for g := 0; g < len(us); g += lanes {
			group := us[g:min(g+lanes, len(us))]
			for r := 0; ; r++ {
				more := false
				for _, u := range group {
					if r < len(u) {
						s = append(s, u[r])
						more = true
					}
				}
				if !more {
					break
				}
			}
		}
		if len(s) > 0 {
			streams = append(streams, s)
		}
	}
	return streams
}

// pipeline is the shared state of an ingest run's connections.
type pipeline struct {
	mu sync.Mutex
	// acks wakes each stream's sender when one of its events is
	// acknowledged or the run fails. An event waits only for events of
	// its own stream (dependencies puts them in one unit), so an OK wakes
	// one sender, not every connection's.
	acks    []*sync.Cond
	index   map[string]int
	acked   []bool
	sent    []time.Time
	latency []time.Duration
	bytes   int64
	failed  bool
	// streamOf is the stream of each event, outstanding the events of
	// each stream sent and not yet acknowledged.
	streamOf    []int
	outstanding []int
}

// send writes stream's events, each once the events it names are
// acknowledged and fewer than window of this connection's are not.
func (p *pipeline) send(c *websocket.Conn, s int, stream []int, deps [][]int, msgs [][]byte, window int) error {
	for _, i := range stream {
		p.mu.Lock()
		for !p.failed && !p.ready(s, deps[i], window) {
			p.acks[s].Wait()
		}
		if p.failed {
			p.mu.Unlock()
			return nil
		}
		p.sent[i] = time.Now()
		p.outstanding[s]++
		p.mu.Unlock()
		if err := c.WriteMessage(websocket.TextMessage, msgs[i]); err != nil {
			return fmt.Errorf("send: %w", err)
		}
	}
	return nil
}

// ready says whether stream s may send an event that names deps: they are
// acknowledged, and fewer than window of the stream's events are not.
func (p *pipeline) ready(s int, deps []int, window int) bool {
	for _, j := range deps {
		if !p.acked[j] {
			return false
		}
	}
	return p.outstanding[s] < window
}

// receive reads the OK of each of n events.
func (p *pipeline) receive(c *websocket.Conn, n int) error {
	var buf bytes.Buffer
	for n > 0 {
		id, size, err := nextOK(c, &buf)
		if err != nil {
			p.mu.Lock()
			failed := p.failed
			p.mu.Unlock()
			if failed {
				return nil
			}
			return err
		}
		p.mu.Lock()
		i, known := p.index[id]
		if !known || p.acked[i] || p.sent[i].IsZero() {
			p.mu.Unlock()
			return errors.New("OK for an event not sent: " + id)
		}
		p.acked[i] = true
		p.outstanding[p.streamOf[i]]--
		p.latency = append(p.latency, time.Since(p.sent[i]))
		p.bytes += int64(size)
		p.acks[p.streamOf[i]].Broadcast()
		p.mu.Unlock()
		n--
	}
	return nil
}
