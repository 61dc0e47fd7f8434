package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"
)

// The REQ measurement reads every answer of its subscription up to EOSE,
// skips other messages, counts the bytes, closes the subscription, and
// fails on a CLOSED.
func TestDrain(t *testing.T) {
	answers := map[string][]string{
		"ok":     {`["EVENT","bench",{"id":"a"}]`, `["NOTICE","hi"]`, `["EVENT","other",{}]`, `["EVENT","bench",{"id":"b"}]`, `["EOSE","bench"]`},
		"closed": {`["EVENT","bench",{"id":"a"}]`, `["CLOSED","bench","rate-limited: slow down"]`},
	}
	closed := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if strings.HasPrefix(string(msg), `["CLOSE"`) {
				closed <- string(msg)
				continue
			}
			for _, a := range answers[r.URL.Query().Get("case")] {
				c.WriteMessage(websocket.TextMessage, []byte(a))
			}
		}
	}))
	defer srv.Close()
	dial := func(name string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/?case="+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	want := 0
	for _, a := range answers["ok"] {
		want += len(a)
	}
	if n, err := drain(dial("ok"), "bench", []byte(`{}`), new(bytes.Buffer)); err != nil || n != want {
		t.Fatalf("drain: %d bytes, %v; want %d", n, err, want)
	}
	if got := <-closed; got != `["CLOSE","bench"]` {
		t.Fatalf("closed with %s", got)
	}
	if _, err := drain(dial("closed"), "bench", []byte(`{}`), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "rate-limited") {
		t.Fatalf("drain of a refused REQ: %v", err)
	}
}
