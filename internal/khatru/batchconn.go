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

// batchBytes is how much a batch holds before it is written out: a REQ page
// of 50 events in two or three writes, and 16 KiB a connection writing.
const batchBytes = 16 << 10

// batchConn is the network side of a WebSocket connection. While writeLoop
// holds a batch, what the websocket writer writes (a frame in one or two
// calls, under its own lock, so frames stay whole and in order) is kept
// and written out together at release; at any other time a write goes
// straight through, after what is kept.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	// kept is the buffer lent from batchBuffers while the batch holds
	// frames; nil otherwise. Lent and returned as the pointer it came as,
	// so that a return allocates nothing (patch 26).
	kept *[]byte
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

// batchBuffers lend the connections their batch buffers, so that an idle
// connection holds none (10,000 connections that each once read a page
// would hold 160 MiB).
var batchBuffers = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes); return &b }}

func (c *batchConn) flushLocked() error {
	if c.kept == nil {
		return nil
	}
	var err error
	if len(*c.kept) > 0 {
		_, err = c.Conn.Write(*c.kept)
	}
	*c.kept = (*c.kept)[:0]
	batchBuffers.Put(c.kept)
	c.kept = nil
	return err
}

// keptLen is how many bytes the batch holds.
func (c *batchConn) keptLen() int {
	if c.kept == nil {
		return 0
	}
	return len(*c.kept)
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding && c.keptLen()+len(p) <= batchBytes {
		if c.kept == nil {
			c.kept = batchBuffers.Get().(*[]byte)
		}
		*c.kept = append(*c.kept, p...)
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
		if c.kept != nil {
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
