package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// Publishing the community waits for a slow relay as long as it answers on
// any connection of the step: a connection whose answers all come later
// than seedWait keeps its events while another connection's answers come
// in between; a connection that never answers has its events counted as
// refused once the relay has answered nothing for seedWait, and the
// publication ends.
func TestSeedWaitsWhileTheRelayAnswers(t *testing.T) {
	defer func(w time.Duration) { seedWait = w }(seedWait)
	seedWait = time.Second
	for _, tc := range []struct {
		name string
		// late is when the first connection answers all its events; 0:
		// never.
		late              time.Duration
		accepted, refused int
	}{
		{"late but answering", 1300 * time.Millisecond, 12, 0},
		{"silent", 0, 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer c.Close()
				first := conns.Add(1) == 1
				var ids []string
				for len(ids) < 6 {
					_, msg, err := c.ReadMessage()
					if err != nil {
						return
					}
					var env []json.RawMessage
					var ev struct {
						ID string `json:"id"`
					}
					if json.Unmarshal(msg, &env) != nil || len(env) != 2 || json.Unmarshal(env[1], &ev) != nil {
						t.Errorf("not an EVENT: %s", msg)
						return
					}
					ids = append(ids, ev.ID)
				}
				switch {
				case !first:
					// An answer every 250 ms: the relay answers for 1.5 s.
					for _, id := range ids {
						time.Sleep(250 * time.Millisecond)
						c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `["OK",%q,true,""]`, id))
					}
				case tc.late > 0:
					time.Sleep(tc.late)
					for _, id := range ids {
						c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `["OK",%q,true,""]`, id))
					}
				}
				// Hold the connection until the client hangs up.
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			var lines strings.Builder
			for i := range 12 {
				fmt.Fprintf(&lines, `{"id":"%064x","kind":1}`+"\n", i)
			}
			target := Target{WS: "ws" + strings.TrimPrefix(srv.URL, "http")}
			accepted, refused, _, err := Seed(t.Context(), target, strings.NewReader(lines.String()), 2)
			if err != nil || accepted != tc.accepted || refused != tc.refused {
				t.Errorf("Seed: %d accepted, %d refused, %v; want %d and %d", accepted, refused, err, tc.accepted, tc.refused)
			}
		})
	}
}
