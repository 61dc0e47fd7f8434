package relay

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// awaitClose reads from c until the connection ends and returns the error
// that ended it.
func awaitClose(c *rawClient) <-chan error {
	done := make(chan error, 1)
	go func() {
		c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
		for {
			if _, _, err := c.conn.ReadMessage(); err != nil {
				done <- err
				return
			}
		}
	}()
	return done
}

// RL-24: cancelling Serve's context closes every WebSocket with close code
// 1012 (service restart), Serve returns nil, and every event acknowledged
// before the shutdown is in the database when it is opened again.
func TestGracefulShutdown(t *testing.T) {
	s := startServer(t)
	idle := s.raw(t)
	writer := s.raw(t)
	a := testutil.NewSigner(t)
	now := time.Now().Unix()

	// A round trip on each connection makes sure the relay registered it.
	if _, closed := idle.req("idle", `{"kinds":[1],"limit":1}`); closed != "" {
		t.Fatal(closed)
	}
	var acked []string
	for i := range 5 {
		ev := a.Event(t, 1, now-int64(i), "before shutdown")
		if ok, reason := writer.publish(ev); !ok {
			t.Fatal(reason)
		}
		acked = append(acked, ev.ID)
	}

	// Keep writing from another connection while the relay stops: every
	// event it acknowledges must survive.
	busy := s.raw(t)
	if _, closed := busy.req("busy", `{"ids":["`+acked[0]+`"]}`); closed != "" {
		t.Fatal(closed)
	}
	var mu sync.Mutex
	var ackedDuring []string
	during := make([]*nostr.Event, 500)
	for i := range during {
		during[i] = a.Event(t, 1, now-100-int64(i), "during shutdown")
	}
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for _, ev := range during {
			busy.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
			if err := busy.conn.WriteJSON([]any{"EVENT", ev}); err != nil {
				return
			}
			for {
				msg, err := busy.read()
				if err != nil {
					return
				}
				if label(msg) == "OK" && str(msg, 1) == ev.ID {
					if string(msg[2]) == "true" {
						mu.Lock()
						ackedDuring = append(ackedDuring, ev.ID)
						mu.Unlock()
					}
					break
				}
			}
		}
	}()
	deadline := time.Now().Add(waitTimeout)
	for {
		mu.Lock()
		n := len(ackedDuring)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}

	idleClosed := awaitClose(idle)
	writerClosed := awaitClose(writer)
	if err := s.stop(); err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	for name, ch := range map[string]<-chan error{"idle": idleClosed, "writer": writerClosed} {
		err := <-ch
		if !websocket.IsCloseError(err, websocket.CloseServiceRestart) {
			t.Errorf("%s client: connection ended with %v, want close code 1012", name, err)
		}
	}
	select {
	case <-writing:
	case <-time.After(waitTimeout):
		t.Fatal("the busy client never saw the connection end")
	}
	busy.conn.Close()

	store, err := sqlite.Open(context.Background(), sqlite.Options{Path: s.sqlitePath(t), Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatalf("reopening the store: %v", err)
	}
	defer store.Close()
	mu.Lock()
	want := append(append([]string{}, acked...), ackedDuring...)
	mu.Unlock()
	got, err := store.Query(context.Background(), nostr.Filter{IDs: want}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("after reopening: %d of %d acknowledged events", len(got), len(want))
	}
}

// RL-24: Serve returns when its context ends even with no client at all,
// and a listener error (closed listener) is reported, not swallowed.
func TestServeReturns(t *testing.T) {
	s := startServer(t)
	if err := s.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	// A listener closed under Serve: Serve returns an error.
	s2 := startServer(t)
	ln := mustListener(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s2.relay.Serve(ctx, ln) }()
	ln.Close()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("Serve on a closed listener: %v, want an error", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Serve did not return on a closed listener")
	}
}

func mustListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
