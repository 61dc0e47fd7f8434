package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// The relay-neutral loads (issue 32, `--against`): what any NIP-01 relay
// answers, measured on buzz-lite and on another relay holding the same
// events. Every REQ has a subscription id of its own: a relay may handle
// a connection's messages concurrently (khatru does), and a CLOSE of one
// answer could then end the next REQ of the same id.

// subIDs numbers the subscriptions of the loads across every client.
var subIDs atomic.Int64

// nextSub is a subscription id no other request of the run uses.
func nextSub() string { return "b" + strconv.FormatInt(subIDs.Add(1), 36) }

// envelope reads the label and subscription id of a relay message.
// Relays write `["LABEL","sub",...` without spaces, which is read without
// decoding; anything else is decoded.
func envelope(msg []byte) (label, sub string, ok bool) {
	if rest, found := bytes.CutPrefix(msg, []byte(`["`)); found {
		if l, after, found := bytes.Cut(rest, []byte(`","`)); found && !bytes.ContainsAny(l, `\"`) {
			if s, _, found := bytes.Cut(after, []byte(`"`)); found && !bytes.ContainsRune(s, '\\') {
				return string(l), string(s), true
			}
		}
	}
	var env []json.RawMessage
	if json.Unmarshal(msg, &env) != nil || len(env) < 2 {
		return "", "", false
	}
	if json.Unmarshal(env[0], &label) != nil || json.Unmarshal(env[1], &sub) != nil {
		return "", "", false
	}
	return label, sub, true
}

// GenericScreens measures a generic client's first screen of channel
// (GenericScreen, each REQ with a subscription id of its own) from clients
// connections for d: first screens a second.
func GenericScreens(ctx context.Context, t Target, name, channel string, clients int, d time.Duration) (Result, error) {
	return closedLoop(ctx, t, name, "screens", clients, d, func(ctx context.Context, process Target) (op, func(), error) {
		c, err := dial(ctx, process)
		if err != nil {
			return nil, nil, err
		}
		return func(context.Context, *rand.Rand) (int, error) {
			s, err := genericScreen(c, channel, nextSub)
			return s.Bytes, err
		}, func() { c.Close() }, nil
	})
}

// Holds says whether the relay at t serves every event of ids (64-hex).
func Holds(ctx context.Context, t Target, ids []string) (bool, error) {
	c, err := dial(ctx, t)
	if err != nil {
		return false, err
	}
	defer c.Close()
	evs, _, err := subscribe(c, nextSub(), nostr.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		return false, err
	}
	found := map[string]bool{}
	for _, ev := range evs {
		found[ev.ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			return false, nil
		}
	}
	return true, nil
}

// seedStep is how many events Seed publishes before it waits for all of
// their answers: events of one step may be stored in any order, the steps
// in theirs, so that a reply or a deletion reaches the relay after what it
// names (give or take a step).
const seedStep = 2000

// Seed publishes the signed events of r (JSON Lines, oldest first, as
// export writes them) to the relay at t as they are, over conns
// connections, and counts those it accepted and those it refused (or left
// unanswered), with the first NOTICE it sent: a relay of other rules may
// refuse some (a deletion of what it never stored, a kind it does not
// take), and the loads then compare what each relay serves.
func Seed(ctx context.Context, t Target, r io.Reader, conns int) (accepted, refused int, notice string, err error) {
	cs := make([]*websocket.Conn, conns)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range cs {
		if cs[i], err = dial(ctx, t); err != nil {
			return accepted, refused, notice, err
		}
	}
	dec := json.NewDecoder(r)
	step := make([]json.RawMessage, 0, seedStep)
	flush := func() error {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		answered := stepDeadlines(slices.Clone(cs))
		for i, c := range cs {
			var mine []json.RawMessage
			for j := i; j < len(step); j += len(cs) {
				mine = append(mine, step[j])
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, no, said, err := publishRaw(c, mine, answered)
				if errors.Is(err, errUnanswered) {
					c.Close()
					cs[i], err = dial(ctx, t)
				}
				mu.Lock()
				defer mu.Unlock()
				accepted, refused = accepted+ok, refused+no
				if notice == "" {
					notice = said
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}()
		}
		wg.Wait()
		step = step[:0]
		return firstErr
	}
	for {
		var ev json.RawMessage
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			return accepted, refused, notice, fmt.Errorf("read the events: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return accepted, refused, notice, err
		}
		// A group's moderation event (NIP-29: its creation, its members)
		// is a step of its own, so that a relay that checks the events of
		// a group against it has it before them.
		if moderation(ev) && len(step) > 0 {
			if err := flush(); err != nil {
				return accepted, refused, notice, err
			}
		}
		if step = append(step, ev); len(step) == seedStep || moderation(ev) {
			if err := flush(); err != nil {
				return accepted, refused, notice, err
			}
		}
	}
	err = flush()
	return accepted, refused, notice, err
}

// moderation says whether ev is a NIP-29 moderation event (kinds 9000 to
// 9030: a group's creation, its members and roles, its deletions).
func moderation(ev json.RawMessage) bool {
	var k struct {
		Kind int `json:"kind"`
	}
	return json.Unmarshal(ev, &k) == nil && k.Kind >= 9000 && k.Kind <= 9030
}

// seedWait bounds how long a step of the publication waits while the
// relay answers on none of its connections: a relay that answers some
// events with a NOTICE, or not at all, has the rest of the step counted
// as refused rather than the run stopped. A variable so that tests can
// wait less.
var seedWait = 20 * time.Second

// stepDeadlines gives the connections of a step until seedWait from now
// to answer, and returns what moves that on whenever any of them answers:
// a relay that is slow but answering (khatru checks every event against
// every deletion it holds, and answers a connection's events in a burst)
// keeps the events it would store, where a wait per connection gave up
// on a connection while the relay was still answering the others. A
// connection closed meanwhile refuses the new deadline, and its reader
// has failed already.
func stepDeadlines(cs []*websocket.Conn) (answered func()) {
	answered = func() {
		until := time.Now().Add(seedWait)
		for _, c := range cs {
			c.SetReadDeadline(until)
		}
	}
	answered()
	return answered
}

// publishRaw sends evs (signed events' JSON) as EVENT messages on c, all
// at once, then reads their answers: an OK counts as accepted or refused,
// and so does a NOTICE (khatru answers an EVENT it cannot parse with one,
// and no OK); what is still unanswered when c's read deadline passes
// (stepDeadlines) is refused too, and each answer calls answered. notice
// is the first NOTICE or refusal, as the relay sent it.
func publishRaw(c *websocket.Conn, evs []json.RawMessage, answered func()) (accepted, refused int, notice string, err error) {
	errc := make(chan error, 1)
	go func() {
		for _, ev := range evs {
			msg := append(append([]byte(`["EVENT",`), ev...), ']')
			if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
				errc <- fmt.Errorf("send EVENT: %w", err)
				return
			}
		}
		errc <- nil
	}()
	for accepted+refused < len(evs) {
		_, msg, err := c.ReadMessage()
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			// The connection cannot be read after a timeout: the next
			// step has to dial again.
			refused = len(evs) - accepted
			return accepted, refused, notice, errUnanswered
		}
		if err != nil {
			return accepted, refused, notice, fmt.Errorf("read: %w", err)
		}
		answered()
		if label, _, ok := envelope(msg); ok && label == "NOTICE" {
			if notice == "" {
				notice = string(msg)
			}
			refused++
			continue
		}
		a, ok, err := parseOK(msg)
		if err != nil {
			return accepted, refused, notice, err
		}
		switch {
		case !ok:
		case a.accepted:
			accepted++
		default:
			refused++
			if notice == "" {
				notice = string(msg)
			}
		}
	}
	return accepted, refused, notice, <-errc
}

// errUnanswered is a relay leaving events of a step unanswered.
var errUnanswered = errors.New("events left unanswered")

// Comparison is buzz-lite beside another relay on the same data
// (`--against`): each load measured on both in alternating rounds.
type Comparison struct {
	// Against is the other relay's WebSocket URL.
	Against string `json:"against"`
	Rounds  int    `json:"rounds"`
	Clients int    `json:"clients"`
	// Duration is each measurement's length.
	Duration time.Duration `json:"duration_ns"`
	// Channel is the channel the loads read, Messages its kind-9 events,
	// Threads the roots with replies the `#e` load picks from.
	Channel  string `json:"channel"`
	Messages int64  `json:"messages"`
	Threads  int    `json:"threads"`
	// Seeded and Refused are the community's events the other relay
	// accepted and refused when published to it before the rounds; both
	// 0 when it held them already.
	Seeded  int        `json:"seeded"`
	Refused int        `json:"refused"`
	Loads   []Compared `json:"loads"`
	Machine string     `json:"machine,omitempty"`
	Cores   int        `json:"cores"`
	Notes   []string   `json:"notes,omitempty"`
}

// Compared is one load on both relays: a result a round each, and the
// median rates.
type Compared struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	BuzzLite []Result `json:"buzz_lite"`
	Other    []Result `json:"other"`
	// BuzzLiteRate and OtherRate are the medians of the rounds' rates,
	// Ratio the first over the second.
	BuzzLiteRate float64 `json:"buzz_lite_rate"`
	OtherRate    float64 `json:"other_rate"`
	Ratio        float64 `json:"ratio"`
}

// Add records r, a round of load r.Name on buzz-lite (mine) or on the
// other relay, and updates the load's medians.
func (c *Comparison) Add(r Result, mine bool) {
	i := slices.IndexFunc(c.Loads, func(l Compared) bool { return l.Name == r.Name })
	if i < 0 {
		i = len(c.Loads)
		c.Loads = append(c.Loads, Compared{Name: r.Name, Unit: r.Unit})
	}
	l := &c.Loads[i]
	if mine {
		l.BuzzLite = append(l.BuzzLite, r)
	} else {
		l.Other = append(l.Other, r)
	}
	l.BuzzLiteRate, l.OtherRate = medianRate(l.BuzzLite), medianRate(l.Other)
	l.Ratio = ratio(l.BuzzLiteRate, l.OtherRate)
}

// medianRate is the median of the results' rates (the lower middle of an
// even count), 0 for none.
func medianRate(rs []Result) float64 {
	if len(rs) == 0 {
		return 0
	}
	rates := make([]float64, len(rs))
	for i, r := range rs {
		rates[i] = r.Rate()
	}
	slices.Sort(rates)
	return rates[(len(rates)-1)/2]
}

// medianP99 is the median of the results' p99 latencies.
func medianP99(rs []Result) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	p := make([]time.Duration, len(rs))
	for i, r := range rs {
		p[i] = r.P99
	}
	slices.Sort(p)
	return p[(len(p)-1)/2]
}

// WriteText prints the comparison for a person: a line per load, both
// relays' median rates and p99 latencies, and their ratio.
func (c Comparison) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "buzz-lite beside %s on the same data: %s, %d cores\n", c.Against, c.Machine, c.Cores)
	fmt.Fprintf(&b, "%d alternating rounds, %d clients, %s a measurement; medians of the rounds\n", c.Rounds, c.Clients, c.Duration)
	fmt.Fprintf(&b, "channel %s: %d messages, %d thread roots with replies\n", c.Channel, c.Messages, c.Threads)
	if c.Seeded+c.Refused > 0 {
		fmt.Fprintf(&b, "published to the other relay first: %d events accepted, %d refused\n", c.Seeded, c.Refused)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "\n%-24s %22s %22s %8s\n", "load", "buzz-lite (p99)", "other (p99)", "ratio")
	for _, l := range c.Loads {
		fmt.Fprintf(&b, "%-24s %22s %22s %7.2fx\n", l.Name,
			fmt.Sprintf("%.0f %s/s (%s)", l.BuzzLiteRate, l.Unit, ms(medianP99(l.BuzzLite))),
			fmt.Sprintf("%.0f %s/s (%s)", l.OtherRate, l.Unit, ms(medianP99(l.Other))), l.Ratio)
	}
	_, err := w.Write(b.Bytes())
	return err
}
