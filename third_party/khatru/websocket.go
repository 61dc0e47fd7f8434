package khatru

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/puzpuzpuz/xsync/v3"
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

	// nip77
	negentropySessions *xsync.MapOf[string, *NegentropySession]

	authLock sync.Mutex

	// buzz-lite patch: the open subscriptions by id (see subscription).
	subsMu sync.Mutex
	subs   map[string]*subscription

	// buzz-lite patch: every message to the peer goes through one of two
	// queues, written by one goroutine per connection (writeLoop), so that a
	// peer that stops reading never blocks anyone but itself. Answers to the
	// peer's own requests wait for room in theirs; live events never wait,
	// and have a queue of their own so that a long history being loaded
	// does not make a healthy peer look stalled.
	send      chan []byte
	live      chan []byte
	writeWait time.Duration
	closeOnce sync.Once
}

// answerQueue is how many answers may wait for a peer: the request goroutine
// waits for room, so a short queue costs nothing but memory saved (each
// slot is 24 bytes on every connection, a thousand connections at once).
// liveQueue is how many live events may wait: a live event for a peer
// whose live queue is full is not waited for, the peer is disconnected.
const (
	answerQueue = 64
	liveQueue   = 512
)

// ErrSlowConsumer is returned when a peer's queue is full and it was
// disconnected.
var ErrSlowConsumer = errors.New("connection dropped: peer does not read fast enough")

// errConnClosed is returned for writes to a closed connection.
var errConnClosed = errors.New("connection closed")

// WriteJSON queues a message for the peer, waiting while its queue is full:
// for answers to the peer's own requests, which may wait for the peer.
func (ws *WebSocket) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	select {
	case ws.send <- b:
		return nil
	case <-ws.Context.Done():
		return errConnClosed
	}
}

// TrySendJSON queues a message for the peer without waiting: a peer whose
// queue is full is disconnected. For live events, which must not wait for
// one slow peer.
func (ws *WebSocket) TrySendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	select {
	case ws.live <- b:
		return nil
	case <-ws.Context.Done():
		return errConnClosed
	default:
		// Not here: Close waits (up to a second) for the write lock the
		// stalled writeLoop holds, and the caller is delivering to others.
		ws.cancel()
		go ws.Close(websocket.ClosePolicyViolation, "too slow")
		return ErrSlowConsumer
	}
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
// that cannot finish within writeWait ends the connection.
func (ws *WebSocket) writeLoop() {
	for {
		var b []byte
		select {
		case b = <-ws.send:
		case b = <-ws.live:
		case <-ws.Context.Done():
			return
		}
		ws.mutex.Lock()
		ws.conn.SetWriteDeadline(time.Now().Add(ws.writeWait))
		err := ws.conn.WriteMessage(websocket.TextMessage, b)
		ws.mutex.Unlock()
		if err != nil {
			ws.Close(websocket.CloseGoingAway, "write failed")
			return
		}
	}
}
