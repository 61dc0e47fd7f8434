package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// fanoutWait bounds how long a round may take to reach every subscriber.
const fanoutWait = time.Minute

// Fanout measures live delivery. subscribers connections each subscribe
// to channel's new messages (a REQ with limit 0); one publisher sends evs,
// messages of that channel, in rounds of round events, each round waiting
// until every subscriber has read all of it, so that no subscriber's
// queue overflows. Ops are deliveries (events times subscribers); the
// latency of one is from the event's first byte sent by the publisher to
// its arrival at the subscriber.
//
// The subscribers take t's processes round robin and the publisher the
// first, so that on several processes the others' subscribers are told
// of each event through the database. Then a second result, name +
// " other processes", has the deliveries to those subscribers alone.
func Fanout(ctx context.Context, t Target, name, channel string, evs []*nostr.Event, subscribers, round int) ([]Result, error) {
	index := make(map[string]int, len(evs))
	msgs := make([][]byte, len(evs))
	for i, ev := range evs {
		index[ev.ID] = i
		msgs[i], _ = json.Marshal([]any{"EVENT", ev})
	}
	pub, err := dial(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("%s: publisher: %w", name, err)
	}
	defer pub.Close()

	f := &fanout{index: index, sent: make([]time.Time, len(evs)), wake: make(chan struct{}, 1)}
	subs := make([]*websocket.Conn, 0, subscribers)
	defer func() {
		for _, c := range subs {
			c.Close()
		}
	}()
	filter := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 0, LimitZero: true}
	req, _ := json.Marshal([]any{"REQ", "live", filter})
	for s := range subscribers {
		c, err := dial(ctx, t.process(s))
		if err != nil {
			return nil, fmt.Errorf("%s: subscriber: %w", name, err)
		}
		subs = append(subs, c)
		if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
			return nil, fmt.Errorf("%s: subscribe: %w", name, err)
		}
		if err := waitEOSE(c, "live"); err != nil {
			return nil, fmt.Errorf("%s: subscribe: %w", name, err)
		}
	}
	received := make([][]time.Time, subscribers)
	errs := make(chan error, subscribers)
	var wg sync.WaitGroup
	for s, c := range subs {
		received[s] = make([]time.Time, len(evs))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.read(c, received[s]); err != nil {
				errs <- err
				f.stop()
			}
		}()
	}

	start := time.Now()
	publishErr := f.publish(ctx, pub, msgs, subscribers, round)
	elapsed := time.Since(start)
	f.closing.Store(true)
	for _, c := range subs {
		c.Close()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("%s: subscriber: %w", name, err)
	}
	if publishErr != nil {
		return nil, fmt.Errorf("%s: %w", name, publishErr)
	}
	var lat, remote []time.Duration
	var remoteSubscribers int
	for s, got := range received {
		elsewhere := s%t.Processes() != 0
		if elsewhere {
			remoteSubscribers++
		}
		for i, at := range got {
			if at.IsZero() {
				return nil, fmt.Errorf("%s: event %d not delivered to every subscriber", name, i)
			}
			lat = append(lat, at.Sub(f.sent[i]))
			if elsewhere {
				remote = append(remote, at.Sub(f.sent[i]))
			}
		}
	}
	// Bytes are counted per delivery of one event: alike for every
	// subscriber, so the others' share is theirs in proportion.
	bytes := f.bytes.Load()
	out := []Result{result(name, "deliveries", subscribers, lat, elapsed, bytes)}
	if remoteSubscribers > 0 {
		out = append(out, result(name+" other processes", "deliveries", remoteSubscribers, remote, elapsed,
			bytes*int64(remoteSubscribers)/int64(subscribers)))
	}
	return out, nil
}

// fanout is the shared state of a fan-out run.
type fanout struct {
	index     map[string]int
	sent      []time.Time
	delivered atomic.Int64
	// target is the delivery count that completes the round; the
	// subscriber that reaches it wakes the publisher.
	target atomic.Int64
	wake   chan struct{}
	bytes  atomic.Int64
	// closing is set once the run is over; failed when a subscriber
	// failed before.
	closing, failed atomic.Bool
}

// stop ends the run after a subscriber's failure.
func (f *fanout) stop() {
	f.failed.Store(true)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// read records when each event reaches one subscriber, until the
// connection closes.
func (f *fanout) read(c *websocket.Conn, at []time.Time) error {
	var buf bytes.Buffer
	for {
		msg, err := readInto(c, &buf)
		if err != nil {
			if f.closing.Load() {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
		now := time.Now()
		id, live := liveID(msg)
		if !live {
			continue
		}
		i, ok := f.index[id]
		if !ok || !at[i].IsZero() {
			continue
		}
		at[i] = now
		f.bytes.Add(int64(len(msg)))
		if f.delivered.Add(1) == f.target.Load() {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
	}
}

// publish sends msgs in rounds and waits for each round's deliveries.
func (f *fanout) publish(ctx context.Context, pub *websocket.Conn, msgs [][]byte, subscribers, round int) error {
	var buf bytes.Buffer
	for first := 0; first < len(msgs); first += round {
		last := min(first+round, len(msgs))
		f.target.Store(int64(last * subscribers))
		for i := first; i < last; i++ {
			f.sent[i] = time.Now()
			if err := pub.WriteMessage(websocket.TextMessage, msgs[i]); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
		for range last - first {
			if _, _, err := nextOK(pub, &buf); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
		timeout := time.NewTimer(fanoutWait)
		for f.delivered.Load() < f.target.Load() && !f.failed.Load() {
			select {
			case <-f.wake:
			case <-timeout.C:
				return fmt.Errorf("a round of %d events reached %d of %d deliveries in %v",
					last-first, f.delivered.Load()-int64(first*subscribers), (last-first)*subscribers, fanoutWait)
			case <-ctx.Done():
				timeout.Stop()
				return ctx.Err()
			}
		}
		timeout.Stop()
		if f.failed.Load() {
			return nil // the subscriber's error says why
		}
	}
	return nil
}

// liveID is the id of the event msg carries if msg is an EVENT of the
// subscription "live": read in place from compact JSON, as relays send
// it, else decoded.
func liveID(msg []byte) (string, bool) {
	const head, key = `["EVENT","live",`, `"id":"`
	if bytes.HasPrefix(msg, []byte(head)) {
		if k := bytes.Index(msg, []byte(key)); k >= 0 && len(msg) >= k+len(key)+64 {
			return string(msg[k+len(key) : k+len(key)+64]), true
		}
	}
	var env []json.RawMessage
	var label, sub string
	var ev struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(msg, &env) != nil || len(env) < 3 || json.Unmarshal(env[0], &label) != nil ||
		json.Unmarshal(env[1], &sub) != nil || label != "EVENT" || sub != "live" || json.Unmarshal(env[2], &ev) != nil {
		return "", false
	}
	return ev.ID, true
}

// waitEOSE reads until the EOSE of subscription sub.
func waitEOSE(c *websocket.Conn, sub string) error {
	eose, _ := json.Marshal([]any{"EOSE", sub})
	for {
		msg, err := read(c)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if bytes.Equal(msg, eose) {
			return nil
		}
		if bytes.HasPrefix(msg, []byte(`["CLOSED"`)) {
			return fmt.Errorf("REQ closed: %s", msg)
		}
	}
}
