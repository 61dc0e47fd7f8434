package relay

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// syncBuffer is a log sink the relay's goroutines may write concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RL-26: the log is structured, one record per line, and never holds the
// relay's private key, even when khatru complains about a client.
func TestLogIsStructuredWithoutTheKey(t *testing.T) {
	var sink syncBuffer
	s := startServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := s.raw(t)
	a := testutil.NewSigner(t)
	mustPublish(t, c, a.Event(t, 1, 1_700_000_000, "hello"))
	c.sendText(`["EVENT", not json`) // khatru answers with a NOTICE and may log
	c.sendText(`["REQ","x",{"kinds":[1]}]`)
	c.await("EOSE x", func(m []json.RawMessage) bool { return label(m) == "EOSE" })
	// A close code khatru does not expect makes it log a line of its own.
	c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye"))
	deadline := time.Now().Add(waitTimeout)
	for !strings.Contains(sink.String(), "unexpected close") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	out := sink.String()
	if !strings.Contains(out, "unexpected close") {
		t.Fatalf("khatru's own log line did not reach the structured log:\n%s", out)
	}
	if strings.Contains(out, s.key) {
		t.Fatal("the log holds the relay's private key")
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !(strings.HasPrefix(line, "{") && strings.HasSuffix(line, "}")) {
			t.Errorf("log line is not one structured record: %q", line)
		}
	}
}
