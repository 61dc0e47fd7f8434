package khatru

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// recordingConn is the network end of a connection: it records each
// write call.
type recordingConn struct {
	net.Conn
	writes [][]byte
	closed bool
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

func (c *recordingConn) Close() error { c.closed = true; return nil }

func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }

// buzz-lite patch 24: the frames of a batch reach the network in one
// write, in order; outside a batch each goes straight through; a frame
// larger than a batch is not copied; a close during a batch writes out
// what the batch kept first.
func TestBatchConn(t *testing.T) {
	rec := &recordingConn{}
	c := &batchConn{Conn: rec}
	write := func(s string) {
		t.Helper()
		if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	write("a")
	c.hold()
	write("b")
	write("c")
	write("d")
	if len(rec.writes) != 1 {
		t.Fatalf("during a batch: %d writes, want only the one before it", len(rec.writes))
	}
	if err := c.release(); err != nil {
		t.Fatal(err)
	}
	write("e")
	want := []string{"a", "bcd", "e"}
	if got := asStrings(rec.writes); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if c.kept != nil {
		t.Fatal("an idle connection keeps its batch buffer")
	}

	rec.writes = nil
	big := string(bytes.Repeat([]byte{'x'}, batchBytes+1))
	c.hold()
	write("f")
	write(big)
	write("g")
	c.Close()
	if got := asStrings(rec.writes); !slices.Equal(got, []string{"f", big, "g"}) || !rec.closed {
		t.Fatalf("writes %d (closed %v), want f, the big frame alone, then g at close", len(got), rec.closed)
	}
}

func asStrings(b [][]byte) []string {
	out := make([]string, len(b))
	for i, w := range b {
		out[i] = string(w)
	}
	return out
}

// buzz-lite patch 24: closing while a write is blocked on a peer that
// stopped reading does not wait for the write: it ends it (RL-24, a
// stalled client must not hold up the shutdown).
func TestBatchConnCloseDuringBlockedWrite(t *testing.T) {
	server, client := net.Pipe() // nobody reads client: writes block
	defer client.Close()
	c := &batchConn{Conn: server}
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("frame"))
		wrote <- err
	}()
	time.Sleep(50 * time.Millisecond) // the write is blocked in the pipe
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a write blocked on the peer")
	}
	if err := <-wrote; err == nil {
		t.Fatal("the blocked write succeeded after Close")
	}
}

// buzz-lite patch 26: a live event that finds its subscriber's queue
// empty is written without a batch buffer. Each delivery borrowed a 16
// KiB buffer from a pool that every collection empties, and under a
// live community's fan-out the collector ran all the time: the relay
// allocated 16 KiB a delivery. The pool is emptied before each event
// here, as continuous collection empties it.
func TestLoneLiveEventBorrowsNoBatchBuffer(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	c := dialRelay(t, rl)
	c.subscribe("live", nostr.Filter{Kinds: []int{1}})
	const events = 20
	var allocated uint64
	for i := range events {
		ev := signer.Event(t, 1, time.Now().Unix(), fmt.Sprintf("live %d", i))
		runtime.GC()
		runtime.GC() // the pool's victim cache too
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if n := rl.BroadcastEvent(ev); n != 1 {
			t.Fatalf("event %d reached %d subscribers", i, n)
		}
		if label, rest := c.read(); label != "EVENT" || len(rest) != 2 {
			t.Fatalf("event %d: got %s %s", i, label, rest)
		}
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
	}
	if per := allocated / events; per >= batchBytes/2 {
		t.Fatalf("%d bytes allocated a delivery, want under %d: a lone event borrowed a batch buffer", per, batchBytes/2)
	}
}
