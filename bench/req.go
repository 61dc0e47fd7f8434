package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// subscribe sends one REQ with id sub and reads its stored events up to
// EOSE; it returns them and the bytes read. A relay's CLOSED ends it with
// an error.
func subscribe(c *websocket.Conn, sub string, filter any) ([]*nostr.Event, int, error) {
	req, err := json.Marshal([]any{"REQ", sub, filter})
	if err != nil {
		return nil, 0, err
	}
	return request(c, sub, req)
}

// request sends req, a REQ with id sub, reads its events up to EOSE and
// closes the subscription.
func request(c *websocket.Conn, sub string, req []byte) ([]*nostr.Event, int, error) {
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, 0, fmt.Errorf("send REQ: %w", err)
	}
	var evs []*nostr.Event
	n := 0
	for {
		msg, err := read(c)
		if err != nil {
			return nil, n, fmt.Errorf("read: %w", err)
		}
		n += len(msg)
		var env []json.RawMessage
		if err := json.Unmarshal(msg, &env); err != nil || len(env) < 2 {
			return nil, n, fmt.Errorf("malformed message %.200s", msg)
		}
		var label, id string
		json.Unmarshal(env[0], &label)
		json.Unmarshal(env[1], &id)
		if id != sub {
			continue
		}
		switch label {
		case "EVENT":
			if len(env) < 3 {
				return nil, n, fmt.Errorf("malformed message %.200s", msg)
			}
			ev := new(nostr.Event)
			if err := json.Unmarshal(env[2], ev); err != nil {
				return nil, n, fmt.Errorf("event: %w", err)
			}
			evs = append(evs, ev)
		case "EOSE":
			closeMsg, _ := json.Marshal([]any{"CLOSE", sub})
			if err := c.WriteMessage(websocket.TextMessage, closeMsg); err != nil {
				return nil, n, fmt.Errorf("send CLOSE: %w", err)
			}
			return evs, n, nil
		case "CLOSED":
			return nil, n, fmt.Errorf("REQ closed: %s", msg)
		}
	}
}

// drain sends filter (JSON) as a REQ of subscription sub, reads its
// answers whole (into buf) up to EOSE without decoding events, and closes
// it, returning the bytes read. Unlike request it decodes no event: on the
// relay's own cores, decoding 50 events a REQ took the measured relay more
// CPU than answering.
func drain(c *websocket.Conn, sub string, filter []byte, buf *bytes.Buffer) (int, error) {
	req := make([]byte, 0, len(filter)+len(sub)+16)
	req = append(append(append(append(req, `["REQ","`...), sub...), `",`...), filter...)
	req = append(req, ']')
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		return 0, fmt.Errorf("send REQ: %w", err)
	}
	n := 0
	for {
		msg, err := readInto(c, buf)
		if err != nil {
			return n, fmt.Errorf("read: %w", err)
		}
		n += len(msg)
		label, id, ok := envelope(msg)
		if !ok {
			return n, fmt.Errorf("malformed message %.200s", msg)
		}
		if id != sub {
			continue
		}
		switch label {
		case "EOSE":
			return n, c.WriteMessage(websocket.TextMessage, []byte(`["CLOSE","`+sub+`"]`))
		case "CLOSED":
			return n, fmt.Errorf("REQ closed: %s", msg)
		}
	}
}

// REQ measures stored-event queries over WebSocket: clients connections
// at once, for d, each sending a REQ of the subscription "bench" with a
// filter picked at random from filters and reading its answers up to EOSE
// (drain).
func REQ(ctx context.Context, t Target, name string, filters []nostr.Filter, clients int, d time.Duration) (Result, error) {
	return reqLoad(ctx, t, name, filters, clients, d, func() string { return "bench" })
}

// REQEach is REQ with a subscription id of its own for every request.
func REQEach(ctx context.Context, t Target, name string, filters []nostr.Filter, clients int, d time.Duration) (Result, error) {
	return reqLoad(ctx, t, name, filters, clients, d, nextSub)
}

// reqLoad is REQ with each request's subscription id from sub.
func reqLoad(ctx context.Context, t Target, name string, filters []nostr.Filter, clients int, d time.Duration, sub func() string) (Result, error) {
	if len(filters) == 0 {
		return Result{}, fmt.Errorf("%s: no filters", name)
	}
	encoded := make([][]byte, len(filters))
	for i, f := range filters {
		b, err := json.Marshal(f)
		if err != nil {
			return Result{}, fmt.Errorf("%s: filter %d: %w", name, i, err)
		}
		encoded[i] = b
	}
	return closedLoop(ctx, t, name, "REQs", clients, d, func(ctx context.Context, process Target) (op, func(), error) {
		c, err := dial(ctx, process)
		if err != nil {
			return nil, nil, err
		}
		var buf bytes.Buffer
		return func(_ context.Context, rng *rand.Rand) (int, error) {
			return drain(c, sub(), encoded[rng.IntN(len(encoded))], &buf)
		}, func() { c.Close() }, nil
	})
}

// Channel is a readable channel of the relay.
type Channel struct {
	ID string
	// Messages counts its kind-9 events (NIP-45 COUNT).
	Messages int64
}

// OpenChannels lists the channels that an anonymous client may read, from
// their group metadata (kind 39000, NIP-29), with their message counts,
// the largest first.
func OpenChannels(ctx context.Context, t Target) ([]Channel, error) {
	c, err := dial(ctx, t)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	meta, _, err := subscribe(c, "meta", nostr.Filter{Kinds: []int{buzz.KindGroupMetadata}, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("group metadata: %w", err)
	}
	var chans []Channel
	for _, ev := range meta {
		d := ev.Tags.Find("d")
		if len(d) < 2 || ev.Tags.Find("private") != nil {
			continue
		}
		count, err := countMessages(c, d[1])
		if err != nil {
			return nil, err
		}
		chans = append(chans, Channel{ID: d[1], Messages: count})
	}
	slices.SortFunc(chans, func(a, b Channel) int { return int(b.Messages - a.Messages) })
	return chans, nil
}

// countMessages asks for the number of kind-9 events of channel (NIP-45).
func countMessages(c *websocket.Conn, channel string) (int64, error) {
	req, _ := json.Marshal([]any{"COUNT", "n", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}}})
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		return 0, fmt.Errorf("send COUNT: %w", err)
	}
	for {
		msg, err := read(c)
		if err != nil {
			return 0, fmt.Errorf("read COUNT: %w", err)
		}
		if !bytes.HasPrefix(msg, []byte(`["COUNT"`)) {
			if bytes.HasPrefix(msg, []byte(`["CLOSED"`)) {
				return 0, fmt.Errorf("COUNT refused: %s", msg)
			}
			continue
		}
		var env []json.RawMessage
		var answer struct {
			Count int64 `json:"count"`
		}
		if err := json.Unmarshal(msg, &env); err != nil || len(env) != 3 || json.Unmarshal(env[2], &answer) != nil {
			return 0, fmt.Errorf("malformed COUNT answer %s", msg)
		}
		return answer.Count, nil
	}
}

// Screen is the cost of a channel's first screen one way.
type Screen struct {
	Requests int           `json:"requests"`
	Bytes    int           `json:"bytes"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// FirstScreen measures the two ways to show channel's first 50 top-level
// messages with their reply counts and reactions ("Why it exists" in the
// channel-window contract), runs times each, and gives the median time of
// each: one window request, and what a generic client must do over
// WebSocket (GenericScreen).
func FirstScreen(ctx context.Context, t Target, channel string, runs int) (window, generic Screen, err error) {
	c, err := dial(ctx, t)
	if err != nil {
		return window, generic, err
	}
	defer c.Close()
	var wt, gt []time.Duration
	for range runs {
		start := time.Now()
		answer, err := post(ctx, t, WindowBody(channel, nil, 50))
		if err != nil {
			return window, generic, err
		}
		wt = append(wt, time.Since(start))
		window = Screen{Requests: 1, Bytes: len(answer)}

		start = time.Now()
		generic, err = GenericScreen(c, channel)
		if err != nil {
			return window, generic, err
		}
		gt = append(gt, time.Since(start))
	}
	slices.Sort(wt)
	slices.Sort(gt)
	window.Elapsed, generic.Elapsed = wt[len(wt)/2], gt[len(gt)/2]
	return window, generic, nil
}

// GenericScreen is a generic client's way to a channel's first screen: it
// pages the channel's messages with plain filters, classifying NIP-10 tags
// itself, until it has 50 top-level messages, then asks for the replies,
// reactions, edits and deletions naming them.
func GenericScreen(c *websocket.Conn, channel string) (Screen, error) {
	return genericScreen(c, channel, func() string { return "screen" })
}

// genericScreen is GenericScreen sending each REQ with the subscription
// id sub gives.
func genericScreen(c *websocket.Conn, channel string, sub func() string) (Screen, error) {
	var s Screen
	var rows []string
	seen := map[string]bool{}
	var until *nostr.Timestamp
	for len(rows) < 50 {
		f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50, Until: until}
		evs, n, err := subscribe(c, sub(), f)
		if err != nil {
			return s, err
		}
		s.Bytes += n
		s.Requests++
		fresh := 0
		for _, ev := range evs {
			if seen[ev.ID] {
				continue
			}
			seen[ev.ID], fresh = true, fresh+1
			if buzz.ParseThreadTags(ev.Tags).Parent == "" && len(rows) < 50 {
				rows = append(rows, ev.ID)
			}
			at := ev.CreatedAt
			until = &at
		}
		if len(evs) == 0 {
			break
		}
		if fresh == 0 { // a second fuller than a page: step past it
			*until--
		}
	}
	_, n, err := subscribe(c, sub(), nostr.Filter{Kinds: []int{9, 7, 5, 40003}, Tags: nostr.TagMap{"e": rows}, Limit: 1000})
	if err != nil {
		return s, err
	}
	s.Bytes += n
	s.Requests++
	return s, nil
}
