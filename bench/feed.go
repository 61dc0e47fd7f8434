package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// FeedBody is the /query body of a home feed of limit events of types,
// served in that order (RL-35).
func FeedBody(types []string, limit int) []byte {
	body, _ := json.Marshal([]any{map[string]any{"feed_types": types, "limit": limit}})
	return body
}

// Feed measures the home feed (RL-35) from clients concurrent clients for
// d: body, signed for every request with a fresh NIP-98 token of the
// secret key reader (hex), or anonymous when reader is "". A request's
// latency includes signing its token.
func Feed(ctx context.Context, t Target, name string, body []byte, reader string, clients int, d time.Duration) (Result, error) {
	return closedLoop(ctx, t, name, "feeds", clients, d, func(_ context.Context, process Target) (op, func(), error) {
		// The token names the URL of the process it is sent to (NIP-98).
		url := process.HTTP + "/query"
		var answer bytes.Buffer
		return func(ctx context.Context, _ *rand.Rand) (int, error) {
			auth := ""
			if reader != "" {
				var err error
				if auth, err = nipcw.AuthHeader(reader, url, body); err != nil {
					return 0, err
				}
			}
			err := postInto(ctx, process, body, auth, &answer)
			return answer.Len(), err
		}, func() {}, nil
	})
}
