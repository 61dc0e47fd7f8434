package khatru

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// buzz-lite patch 24: the messages writeLoop finds queued together are
// written to the network in one call. Each message was a write system call
// of its own: a REQ's 50 events and its EOSE were 51, a fifth of the CPU
// a REQ cost the relay (BenchmarkReqChannel).

// batchBytes is how much a batch holds before it is written out.
const batchBytes = 64 << 10

// batchConn is the network side of a WebSocket connection. While writeLoop
// holds a batch, the frames written (whole frames: the websocket writer
// writes a frame in one call, under its own lock) are kept and written out
// together at release; at any other time a write goes straight through,
// after what is kept.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	kept    []byte
}

// hold starts a batch.
func (c *batchConn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// release ends the batch, writing out what it kept.
func (c *batchConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	return c.flushLocked()
}

func (c *batchConn) flushLocked() error {
	if len(c.kept) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.kept)
	if cap(c.kept) > batchBytes { // a frame larger than a batch passed through
		c.kept = nil
	} else {
		c.kept = c.kept[:0]
	}
	return err
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding && len(c.kept)+len(p) <= batchBytes {
		c.kept = append(c.kept, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// Close writes out what is kept (a close frame sent during a batch), for a
// second at most, before closing; while a write is blocked on a peer that
// stopped reading, it closes at once, which ends that write.
func (c *batchConn) Close() error {
	if c.mu.TryLock() {
		c.holding = false
		if len(c.kept) > 0 {
			c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			c.flushLocked()
		}
		c.mu.Unlock()
	}
	return c.Conn.Close()
}

// batchingWriter hands the upgrader a batchConn when it takes over the
// connection.
type batchingWriter struct {
	http.ResponseWriter
	conn *batchConn
}

func (w *batchingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &batchConn{Conn: conn}
	return w.conn, brw, nil
}
