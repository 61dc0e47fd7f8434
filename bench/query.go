package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// httpClient keeps a connection per concurrent client alive.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}

// WindowBody is the /query body of a window page of limit top-level
// messages of channel, with summaries and aux, after cursor (nil: the
// head).
func WindowBody(channel string, cursor *nipcw.Cursor, limit int) []byte {
	f := map[string]any{"kinds": []int{9}, "#h": []string{channel}, "limit": limit,
		"top_level": true, "include_summaries": true, "include_aux": true}
	if cursor != nil {
		f["until"], f["before_id"] = cursor.CreatedAt, cursor.ID
	}
	body, _ := json.Marshal([]any{f})
	return body
}

// ThreadBody is the /query body of the first page of root's thread, every
// depth, with aux (RL-20).
func ThreadBody(root string) []byte {
	body, _ := json.Marshal([]any{map[string]any{"#e": []string{root}, "depth_limit": 4, "limit": 100, "include_aux": true}})
	return body
}

// post sends one anonymous /query request and reads its answer whole.
func post(ctx context.Context, t Target, body []byte) ([]byte, error) {
	return postAs(ctx, t, body, "")
}

// postAs is post with the Authorization header auth ("" for none).
func postAs(ctx context.Context, t Target, body []byte, auth string) ([]byte, error) {
	var answer bytes.Buffer
	if err := postInto(ctx, t, body, auth, &answer); err != nil {
		return nil, err
	}
	return answer.Bytes(), nil
}

// postInto is postAs reading the answer into answer, which a client of a
// measurement reuses: on the relay's own cores, an answer of 100 KB read
// into a fresh, growing slice cost the load generator more than half a
// core at the window's rate.
func postInto(ctx context.Context, t Target, body []byte, auth string, answer *bytes.Buffer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.HTTP+"/query", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST /query: %w", err)
	}
	defer resp.Body.Close()
	answer.Reset()
	if _, err := answer.ReadFrom(resp.Body); err != nil {
		return fmt.Errorf("POST /query: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /query: %s: %s", resp.Status, answer.Bytes())
	}
	return nil
}

// Query measures POST /query from clients concurrent clients for d, each
// request's body picked at random from bodies.
func Query(ctx context.Context, t Target, name, unit string, bodies [][]byte, clients int, d time.Duration) (Result, error) {
	return queryPicking(ctx, t, name, unit, bodies, clients, d, uniform)
}

// Readers' skew over a channel's pages: the bodies of QueryZipf are picked
// with rank k (0 the head) in proportion to (ZipfV+k)^-ZipfS, as
// math/rand/v2's Zipf draws them. With s = 1.1 and v = 1, on a channel of
// 663 pages (the million-event community's largest) the head is asked
// for 19% of the time, the first 10 pages half of it and the first 150
// (what the default page cache holds) 84%: most readers open a channel
// at its head and scroll back a few pages, few reach its start.
const (
	ZipfS = 1.1
	ZipfV = 1.0
)

// QueryZipf is Query with each body picked Zipf-like by its rank in
// bodies (ZipfS, ZipfV), the first most often.
func QueryZipf(ctx context.Context, t Target, name, unit string, bodies [][]byte, clients int, d time.Duration) (Result, error) {
	return queryPicking(ctx, t, name, unit, bodies, clients, d, zipf)
}

// A picker makes a client's choice of body among n from the client's own
// random source.
type picker func(rng *rand.Rand, n int) func() int

func uniform(rng *rand.Rand, n int) func() int { return func() int { return rng.IntN(n) } }

func zipf(rng *rand.Rand, n int) func() int {
	z := rand.NewZipf(rng, ZipfS, ZipfV, uint64(n-1))
	return func() int { return int(z.Uint64()) }
}

// queryPicking is Query with each client's bodies chosen by pick.
func queryPicking(ctx context.Context, t Target, name, unit string, bodies [][]byte, clients int, d time.Duration,
	pick picker) (Result, error) {
	if len(bodies) == 0 {
		return Result{}, fmt.Errorf("%s: no requests to send", name)
	}
	return closedLoop(ctx, t, name, unit, clients, d, func(_ context.Context, process Target) (op, func(), error) {
		var answer bytes.Buffer
		var next func() int // made on the client's first operation, from its random source
		return func(ctx context.Context, rng *rand.Rand) (int, error) {
			if next == nil {
				next = pick(rng, len(bodies))
			}
			err := postInto(ctx, process, bodies[next()], "", &answer)
			return answer.Len(), err
		}, func() {}, nil
	})
}

// Chain is a channel's window, paged once from the head to its end.
type Chain struct {
	// Cursors are the request cursors of every page, nil for the head.
	Cursors []*nipcw.Cursor
	// Threads are the rows that have replies.
	Threads []string
}

// WalkWindow pages channel's whole window, limit rows a page, stopping
// after maxPages pages.
func WalkWindow(ctx context.Context, t Target, channel string, limit, maxPages int) (Chain, error) {
	chain := Chain{Cursors: []*nipcw.Cursor{nil}}
	for len(chain.Cursors) <= maxPages {
		answer, err := post(ctx, t, WindowBody(channel, chain.Cursors[len(chain.Cursors)-1], limit))
		if err != nil {
			return chain, err
		}
		var evs []nostr.Event
		if err := json.Unmarshal(answer, &evs); err != nil {
			return chain, fmt.Errorf("window page: %w", err)
		}
		var bounds *nipcw.Bounds
		for _, ev := range evs {
			switch ev.Kind {
			case nipcw.KindWindowBounds:
				bounds = new(nipcw.Bounds)
				if err := json.Unmarshal([]byte(ev.Content), bounds); err != nil {
					return chain, fmt.Errorf("window bounds: %w", err)
				}
			case nipcw.KindThreadSummary:
				if e := ev.Tags.Find("e"); len(e) >= 2 {
					chain.Threads = append(chain.Threads, e[1])
				}
			}
		}
		if bounds == nil {
			return chain, fmt.Errorf("window page of %s without bounds", channel)
		}
		if !bounds.HasMore {
			return chain, nil
		}
		chain.Cursors = append(chain.Cursors, bounds.NextCursor)
	}
	chain.Cursors = chain.Cursors[:maxPages]
	return chain, nil
}
