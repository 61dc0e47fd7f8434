package testutil

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// Publish sends evs to the relay at url over one WebSocket, each once the
// relay accepted the one before (a reply needs its parent stored), and
// fails the test unless every one is accepted.
func Publish(t testing.TB, url string, evs ...*nostr.Event) {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, ev := range evs {
		if err := conn.WriteJSON([]any{"EVENT", ev}); err != nil {
			t.Fatal(err)
		}
		for {
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var msg []json.RawMessage
			if err := conn.ReadJSON(&msg); err != nil {
				t.Fatal(err)
			}
			var label, id string
			var ok bool
			if len(msg) < 3 || json.Unmarshal(msg[0], &label) != nil || label != "OK" ||
				json.Unmarshal(msg[1], &id) != nil || id != ev.ID {
				continue
			}
			if json.Unmarshal(msg[2], &ok) != nil || !ok {
				t.Fatalf("%s refused kind %d: %s", url, ev.Kind, msg)
			}
			break
		}
	}
}
