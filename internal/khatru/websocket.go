package khatru

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
)

type WebSocket struct {
	conn  *websocket.Conn
	mutex sync.Mutex

	// original request
	Request *http.Request

	// this Context will be canceled whenever the connection is closed from the client side or server-side.
	Context context.Context
	cancel  context.CancelFunc

	// nip42
	Challenge       string
	AuthedPublicKey string
	Authed          chan struct{}

	authLock sync.Mutex

	// buzz-lite patch: the open subscriptions by id (see subscription).
	subsMu sync.Mutex
	subs   map[string]*subscription

	// buzz-lite patch: set once the peer sent an EVENT whose signature
	// failed; its EVENTs are verified alone from then on, so that it
	// cannot make others' groups fail (handleEventEnvelope).
	forged atomic.Bool

	// buzz-lite patch: every message to the peer is queued and written by
	// one goroutine per connection (writeLoop), so that a peer that stops
	// reading never blocks anyone but itself. The queue is a byte budget
	// (RL-27a): answers to the peer's own requests wait while the queue
	// holds half of it or more, so that the relay stops reading from its
	// store for a peer that does not read, and live events always find room
	// beside a long history being loaded; a live event that would pass the
	// budget is not waited for, the peer is disconnected.
	qmu    sync.Mutex
	queue  [][]byte
	queued int64         // bytes in queue and being written
	budget int64         // bytes that may be queued
	ready  chan struct{} // wakes writeLoop; capacity 1
	room   chan struct{} // closed when answers may be queued again; nil while none waits

	writeWait time.Duration
	closeOnce sync.Once

	// buzz-lite patch 24: the network side, which writeLoop holds while it
	// writes the messages it finds queued together.
	batch *batchConn
}

// Subscriptions is how many subscriptions the connection holds open.
//
// buzz-lite patch.
func (ws *WebSocket) Subscriptions() int {
	ws.subsMu.Lock()
	defer ws.subsMu.Unlock()
	return len(ws.subs)
}

// ErrSlowConsumer is returned when a peer's queue is full and it was
// disconnected.
var ErrSlowConsumer = errors.New("connection dropped: peer does not read fast enough")

// errConnClosed is returned for writes to a closed connection.
var errConnClosed = errors.New("connection closed")

// WriteJSON queues a message for the peer, waiting while the queue holds
// half its budget or more: for answers to the peer's own requests, which
// may wait for the peer.
func (ws *WebSocket) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.queueAnswer(ws.Context, b)
}

// queueAnswer queues b as WriteJSON does; it stops waiting when ctx ends.
func (ws *WebSocket) queueAnswer(ctx context.Context, b []byte) error {
	for {
		if ws.Context.Err() != nil {
			return errConnClosed
		}
		ws.qmu.Lock()
		if ws.queued < ws.budget/2 {
			ws.push(b)
			ws.qmu.Unlock()
			return nil
		}
		if ws.room == nil {
			ws.room = make(chan struct{})
		}
		room := ws.room
		ws.qmu.Unlock()
		select {
		case <-room:
		case <-ws.Context.Done():
			return errConnClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TrySendJSON queues a message for the peer without waiting: a peer whose
// queue would pass its budget is disconnected. For live events, which must
// not wait for one slow peer.
func (ws *WebSocket) TrySendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.trySend(b)
}

// trySend is TrySendJSON of a message already encoded.
func (ws *WebSocket) trySend(b []byte) error {
	if ws.Context.Err() != nil {
		return errConnClosed
	}
	ws.qmu.Lock()
	if ws.queued > 0 && ws.queued+int64(len(b)) > ws.budget {
		ws.qmu.Unlock()
		// Not here: Close waits (up to a second) for the write lock the
		// stalled writeLoop holds, and the caller is delivering to others.
		ws.cancel()
		go ws.Close(websocket.ClosePolicyViolation, "too slow")
		return ErrSlowConsumer
	}
	ws.push(b)
	ws.qmu.Unlock()
	return nil
}

// push queues b and wakes writeLoop; called with qmu held.
func (ws *WebSocket) push(b []byte) {
	ws.queue = append(ws.queue, b)
	ws.queued += int64(len(b))
	select {
	case ws.ready <- struct{}{}:
	default:
	}
}

// next is the message writeLoop writes next, nil once the connection ended.
func (ws *WebSocket) next() []byte {
	for {
		if b := ws.queuedNext(); b != nil {
			return b
		}
		select {
		case <-ws.ready:
		case <-ws.Context.Done():
			return nil
		}
	}
}

// queuedNext takes the next queued message, nil when none is queued.
func (ws *WebSocket) queuedNext() []byte {
	ws.qmu.Lock()
	defer ws.qmu.Unlock()
	if len(ws.queue) == 0 {
		return nil
	}
	b := ws.queue[0]
	ws.queue[0] = nil
	ws.queue = ws.queue[1:]
	return b
}

// hasQueued reports whether a message is queued.
func (ws *WebSocket) hasQueued() bool {
	ws.qmu.Lock()
	defer ws.qmu.Unlock()
	return len(ws.queue) > 0
}

// written takes n bytes written out of the queue's count, and lets the
// answers waiting for room go on when there is.
func (ws *WebSocket) written(n int) {
	ws.qmu.Lock()
	ws.queued -= int64(n)
	if ws.room != nil && ws.queued < ws.budget/2 {
		close(ws.room)
		ws.room = nil
	}
	ws.qmu.Unlock()
}

// WriteMessage writes a control or data message directly.
func (ws *WebSocket) WriteMessage(t int, b []byte) error {
	if t == websocket.PingMessage || t == websocket.PongMessage || t == websocket.CloseMessage {
		return ws.conn.WriteControl(t, b, time.Now().Add(ws.writeWait))
	}
	ws.mutex.Lock()
	defer ws.mutex.Unlock()
	ws.conn.SetWriteDeadline(time.Now().Add(ws.writeWait))
	return ws.conn.WriteMessage(t, b)
}

// Close sends a close frame with code and reason (without waiting for a
// stalled peer) and closes the connection.
func (ws *WebSocket) Close(code int, reason string) {
	ws.closeOnce.Do(func() {
		ws.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason),
			time.Now().Add(time.Second))
		ws.cancel()
		ws.conn.Close()
	})
}

// writeLoop writes the queued messages until the connection ends. A write
// that cannot finish within writeWait ends the connection: a peer whose
// queue stays full is closed.
//
// buzz-lite patch 24: the messages found queued together, up to a batch
// of batchBytes, are written to the network in one call.
func (ws *WebSocket) writeLoop() {
	defer func() {
		ws.qmu.Lock()
		ws.queue = nil // what was queued for the peer is not kept for nothing
		ws.qmu.Unlock()
	}()
	for {
		b := ws.next()
		if b == nil {
			return
		}
		ws.mutex.Lock()
		ws.conn.SetWriteDeadline(time.Now().Add(ws.writeWait))
		// buzz-lite patch 26: a message found alone is written as it is
		// (one system call up to the websocket writer's 1 KiB buffer, two
		// above it). Batching it borrowed a 16 KiB buffer for each live
		// event a subscriber received; under a live community's fan-out
		// those buffers, lost from their pool at every collection, were
		// most of what the relay allocated.
		batching := ws.batch != nil && ws.hasQueued()
		if batching {
			ws.batch.hold()
		}
		n := 0
		var err error
		for b != nil && err == nil {
			err = ws.conn.WriteMessage(websocket.TextMessage, b)
			n += len(b)
			if !batching || n >= batchBytes {
				break
			}
			b = ws.queuedNext()
		}
		if batching {
			err = errors.Join(err, ws.batch.release())
		}
		ws.mutex.Unlock()
		ws.written(n)
		if err != nil {
			ws.Close(websocket.CloseGoingAway, "write failed")
			return
		}
	}
}
