package khatru

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"
	"github.com/nbd-wtf/go-nostr/nip45"
	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
	"github.com/nbd-wtf/go-nostr/nip70"
	"github.com/rs/cors"

	"github.com/buzz-lite/buzz-lite/internal/verify"
)

// ServeHTTP implements http.Handler interface.
func (rl *Relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	corsMiddleware := cors.New(cors.Options{
		AllowedOrigins: []string{"*"},
		AllowedMethods: []string{
			http.MethodHead,
			http.MethodGet,
			http.MethodPost,
			http.MethodPut,
			http.MethodPatch,
			http.MethodDelete,
		},
		AllowedHeaders: []string{"Authorization", "*"},
		MaxAge:         86400,
	})

	if r.Header.Get("Upgrade") == "websocket" {
		rl.HandleWebsocket(w, r)
	} else if r.Header.Get("Accept") == "application/nostr+json" {
		corsMiddleware.Handler(http.HandlerFunc(rl.HandleNIP11)).ServeHTTP(w, r)
	} else {
		corsMiddleware.Handler(http.NotFoundHandler()).ServeHTTP(w, r)
	}
}

func (rl *Relay) HandleWebsocket(w http.ResponseWriter, r *http.Request) {
	for _, reject := range rl.RejectConnection {
		if reject(r) {
			w.WriteHeader(429) // Too many requests
			return
		}
	}

	// buzz-lite patch 24: writes go through a batchConn.
	bw := &batchingWriter{ResponseWriter: w}
	conn, err := rl.upgrader.Upgrade(bw, r, nil)
	if err != nil {
		rl.Log.Printf("failed to upgrade websocket: %v\n", err)
		return
	}

	ticker := time.NewTicker(rl.PingPeriod)

	// NIP-42 challenge
	challenge := make([]byte, 8)
	rand.Read(challenge)

	ws := &WebSocket{
		conn:      conn,
		Request:   r,
		Challenge: hex.EncodeToString(challenge),
		budget:    rl.QueueBytes,
		ready:     make(chan struct{}, 1),
		writeWait: rl.WriteWait,
		batch:     bw.conn,
	}
	ws.Context, ws.cancel = context.WithCancel(context.Background())
	go ws.writeLoop()

	rl.clientsMutex.Lock()
	rl.clients[ws] = make([]*listenerSpec, 0, 2)
	rl.clientsMutex.Unlock()

	ctx, cancel := context.WithCancel(
		context.WithValue(
			context.Background(),
			wsKey, ws,
		),
	)

	kill := func() {
		for _, ondisconnect := range rl.OnDisconnect {
			ondisconnect(ctx)
		}

		ticker.Stop()
		cancel()
		ws.Close(websocket.CloseNormalClosure, "")

		rl.removeClientAndListeners(ws)
	}

	go rl.readMessages(ctx, ws, kill)

	go func() {
		defer kill()

		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				err := ws.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(rl.WriteWait))
				if err != nil {
					if !strings.HasSuffix(err.Error(), "use of closed network connection") {
						rl.Log.Printf("error writing ping: %v; closing websocket\n", err)
					}
					return
				}
			}
		}
	}()
}

// readMessages reads the connection's messages until it ends, and hands
// each to a goroutine of its own (handleMessage); what must happen in the
// order the peer sent it happens here first.
func (rl *Relay) readMessages(ctx context.Context, ws *WebSocket, kill func()) {
	defer kill()

	ws.conn.SetReadLimit(rl.MaxMessageSize)
	ws.conn.SetReadDeadline(time.Now().Add(rl.PongWait))
	ws.conn.SetPongHandler(func(string) error {
		ws.conn.SetReadDeadline(time.Now().Add(rl.PongWait))
		return nil
	})

	for _, onconnect := range rl.OnConnect {
		onconnect(ctx)
	}

	smp := nostr.NewMessageParser()

	// buzz-lite patch: at most maxHandlers messages of the connection
	// are handled at once, and together no more bytes than one message
	// may have (or a single message); past them the next is not read
	// until one is done, so that a peer that sends without waiting is
	// slowed down by TCP instead of costing a goroutine and its message
	// each.
	handlers := make(chan struct{}, maxHandlers)
	handled := &heldBytes{size: rl.MaxMessageSize, freed: make(chan struct{}, 1)}

	for {
		select {
		case handlers <- struct{}{}:
		case <-ws.Context.Done():
			return
		}
		typ, msgb, err := ws.conn.ReadMessage()
		if err != nil {
			if websocket.IsUnexpectedCloseError(
				err,
				websocket.CloseNormalClosure,    // 1000
				websocket.CloseGoingAway,        // 1001
				websocket.CloseNoStatusReceived, // 1005
				websocket.CloseAbnormalClosure,  // 1006
				4537,                            // some client seems to send many of these
			) {
				rl.Log.Printf("unexpected close error from %s: %v\n", GetIPFromRequest(ws.Request), err)
			}
			ws.cancel()
			return
		}

		if typ == websocket.PingMessage {
			ws.WriteMessage(websocket.PongMessage, nil)
			<-handlers
			continue
		}

		size := int64(len(msgb))
		if !handled.take(ws.Context.Done(), size) {
			return
		}

		// this is safe because ReadMessage() will always create a new slice
		message := unsafe.String(unsafe.SliceData(msgb), len(msgb))

		// parse messages sequentially otherwise sonic breaks
		envelope, err := smp.ParseMessage(message)

		// buzz-lite patch: a REQ opens its subscription (unless a
		// RejectRequest hook refuses it), and a CLOSE ends one, here, in
		// the order the peer sent them; in their goroutines a CLOSE sent
		// right after its REQ could run first and leave the subscription
		// open, delivering and counting against the cap.
		var sub *subscription
		var refused string
		switch env := envelope.(type) {
		case *nostr.ReqEnvelope:
			sub, refused = rl.openSubscription(ctx, ws, env.SubscriptionID, len(env.Filters))
		case *nostr.CloseEnvelope:
			rl.closeSubscriptionId(ws, string(*env))
		}

		// buzz-lite patch: a NIP-77 message (NEG-*) goes to the
		// NegentropyMessage hook, here in the reader, so that its
		// sessions open and close in the order the peer sent them; the
		// work it returns runs in the message's goroutine below.
		var negentropyWork func()
		isNegentropy := false
		if err == nostr.UnknownLabel && rl.NegentropyMessage != nil {
			negentropyWork, isNegentropy = rl.NegentropyMessage(ctx, message)
		}

		m := inbound{message: message, envelope: envelope, err: err, sub: sub, refused: refused,
			negentropyWork: negentropyWork, isNegentropy: isNegentropy}
		// then delegate to the goroutine
		go func() {
			defer func() {
				handled.give(size)
				<-handlers
			}()
			rl.handleMessage(ctx, ws, m)
		}()
	}
}

// inbound is a message the reader read, with what it did for it in the
// order the peer sent it: the subscription a REQ opened (or why it was
// refused) and the work of a NIP-77 message.
//
// buzz-lite patch.
type inbound struct {
	message        string
	envelope       nostr.Envelope
	err            error
	sub            *subscription
	refused        string
	negentropyWork func()
	isNegentropy   bool
}

// handleMessage handles one message, in its own goroutine.
func (rl *Relay) handleMessage(ctx context.Context, ws *WebSocket, m inbound) {
	if m.isNegentropy {
		if m.negentropyWork != nil {
			m.negentropyWork()
		}
		return
	}
	if m.err != nil {
		ws.WriteJSON(nostr.NoticeEnvelope("failed to parse envelope: " + m.err.Error()))
		return
	}

	switch env := m.envelope.(type) {
	case *nostr.EventEnvelope:
		rl.handleEventEnvelope(ctx, ws, env)
	case *nostr.CountEnvelope:
		rl.handleCountEnvelope(ctx, ws, env, m.message)
	case *nostr.ReqEnvelope:
		rl.handleReqEnvelope(ctx, ws, env, m.sub, m.refused)
	case *nostr.CloseEnvelope:
		// buzz-lite patch: ended in the reader, in order.
	case *nostr.AuthEnvelope:
		rl.handleAuthEnvelope(ws, env)
	}
}

// handleEventEnvelope answers an EVENT: checks, stores and broadcasts it.
func (rl *Relay) handleEventEnvelope(ctx context.Context, ws *WebSocket, env *nostr.EventEnvelope) {
	// buzz-lite patch: every OK of an EVENT is sent by
	// answerEvent, which tells the OnEventResult hooks.
	// buzz-lite patch: RejectUnverifiedEvent hooks come before the
	// id and signature checks, which cost a flood of events far
	// more CPU than refusing them does.
	for _, reject := range rl.RejectUnverifiedEvent {
		if rejecting, msg := reject(ctx, &env.Event); rejecting {
			rl.answerEvent(ctx, ws, &env.Event, false, nostr.NormalizeOKMessage(msg, "blocked"))
			return
		}
	}

	// buzz-lite patch: the id and the signature are checked with
	// one serialization and one hash, authors' parsed keys are kept,
	// and the EVENTs that wait at once are verified together
	// (internal/verify), those of a peer that sent a bad signature
	// alone; the answers are upstream's.
	check := rl.verifier.Event
	if ws.forged.Load() {
		check = rl.verifier.Alone
	}
	switch err := check(&env.Event); {
	case errors.Is(err, verify.ErrID):
		rl.answerEvent(ctx, ws, &env.Event, false, "invalid: id is computed incorrectly")
		return
	case errors.Is(err, verify.ErrSignature):
		ws.forged.Store(true)
		rl.answerEvent(ctx, ws, &env.Event, false, "invalid: signature is invalid")
		return
	case err != nil:
		rl.answerEvent(ctx, ws, &env.Event, false, "error: failed to verify signature")
		return
	}

	// check NIP-70 protected
	if nip70.IsProtected(env.Event) {
		authed := GetAuthed(ctx)
		if authed == "" {
			RequestAuth(ctx)
			rl.answerEvent(ctx, ws, &env.Event, false, "auth-required: must be published by authenticated event author")
			return
		} else if authed != env.Event.PubKey {
			rl.answerEvent(ctx, ws, &env.Event, false, "blocked: must be published by event author")
			return
		}
	} else if nip70.HasEmbeddedProtected(env.Event) {
		rl.answerEvent(ctx, ws, &env.Event, false, "blocked: can't repost nip70 protected")
		return
	}

	var ok bool
	var writeErr error
	var skipBroadcast bool
	var deliver func(*WebSocket) bool

	// buzz-lite patch 29: counted from before it is stored to
	// after its broadcast, so that a subscription that read it
	// stored knows when its live delivery is behind it.
	// It ends before the OK is written: a publisher that
	// reads slowly must not hold every subscription's
	// memory of what it sent (the defer covers a return
	// before that).
	write := rl.writes.begin()
	endWrite := sync.OnceFunc(func() { rl.writes.end(write) })
	defer endWrite()

	if env.Event.Kind == 5 {
		// this always returns "blocked: " whenever it returns an error
		writeErr = rl.handleDeleteRequest(ctx, &env.Event)
	}

	if writeErr == nil {
		if nostr.IsEphemeralKind(env.Event.Kind) {
			// this will also always return a prefixed reason
			if writeErr = rl.handleEphemeral(ctx, &env.Event); writeErr == nil {
				deliver = rl.deliverTo(&env.Event)
			}
		} else {
			// this will also always return a prefixed reason
			skipBroadcast, deliver, writeErr = rl.handleNormal(ctx, &env.Event)
		}
	}

	var reason string
	if writeErr == nil {
		ok = true
		for _, ovw := range rl.OverwriteResponseEvent {
			ovw(ctx, &env.Event)
		}
		if !skipBroadcast {
			// buzz-lite patch: with who may receive it, as the store
			// said (SaveEvent) or DeliverTo says.
			n := rl.notifyListeners(&env.Event, deliver, true)

			// the number of notified listeners matters in ephemeral events
			if nostr.IsEphemeralKind(env.Event.Kind) {
				if n == 0 && len(rl.OnEphemeralEvent) == 0 {
					ok = false
					reason = "mute: no one was listening for this"
				} else {
					reason = "broadcasted to " + strconv.Itoa(n) + " listeners"
				}
			}
		}
	} else {
		ok = false
		reason = writeErr.Error()
		if strings.HasPrefix(reason, "auth-required:") {
			RequestAuth(ctx)
		}
	}
	endWrite()
	rl.answerEvent(ctx, ws, &env.Event, ok, reason)
}

// handleCountEnvelope answers a COUNT (NIP-45).
func (rl *Relay) handleCountEnvelope(ctx context.Context, ws *WebSocket, env *nostr.CountEnvelope, message string) {
	if rl.CountEvents == nil && rl.CountEventsHLL == nil {
		ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: "unsupported: this relay does not support NIP-45"})
		return
	}

	// buzz-lite patch: RejectRequest hooks are asked about a COUNT
	// too, told how many filters it carries (go-nostr's envelope
	// merges them into one).
	if reason := rl.rejectRequest(ctx, Request{Label: "COUNT", SubscriptionID: env.SubscriptionID, Filters: countFilters(message)}); reason != "" {
		ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: reason})
		return
	}

	var total int64
	var hll *hyperloglog.HyperLogLog

	// buzz-lite patch: the HLL path only with HLL hooks, and only
	// for tag values go-nostr's offset helper can index without
	// panicking (a short #e/#p value crashed the process).
	var err error
	if offset := hllOffset(env.Filter); offset != -1 && len(rl.CountEventsHLL) > 0 {
		total, hll, err = rl.handleCountRequestWithHLL(ctx, ws, env.Filter, offset)
	} else {
		total, err = rl.handleCountRequest(ctx, ws, env.Filter)
	}
	// buzz-lite patch: a count that failed is refused with CLOSED;
	// it was a NOTICE and a COUNT of what was counted, 0.
	if err != nil {
		ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: nostr.NormalizeOKMessage(err.Error(), "error")})
		return
	}

	resp := nostr.CountEnvelope{
		SubscriptionID: env.SubscriptionID,
		Count:          &total,
	}
	if hll != nil {
		resp.HyperLogLog = hll.GetRegisters()
	}

	ws.WriteJSON(resp)
}

// handleReqEnvelope answers a REQ: its stored events, then EOSE, and adds
// its listeners; sub is the subscription the reader opened for it, nil when
// refused for the reason refused.
func (rl *Relay) handleReqEnvelope(ctx context.Context, ws *WebSocket, env *nostr.ReqEnvelope, sub *subscription, refused string) {
	// buzz-lite patch: the REQ opened a subscription of its own
	// (above), unless a RejectRequest hook refused it; one with
	// its id ended (NIP-01: it is replaced; it was added beside
	// it, and live events came twice).
	if sub == nil {
		ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: refused})
		return
	}

	eose := sync.WaitGroup{}
	eose.Add(len(env.Filters))

	// handle each filter separately -- dispatching events as they're loaded from databases
	for _, filter := range env.Filters {
		err := rl.handleRequest(sub.ctx, sub, &eose, ws, filter)
		if err != nil {
			// fail everything if any filter is rejected
			reason := err.Error()
			if strings.HasPrefix(reason, "auth-required:") {
				RequestAuth(ctx)
			}
			// buzz-lite patch: the filters of this REQ accepted before
			// the rejected one leave no listener behind; they kept
			// delivering on a CLOSED subscription id, and twice once
			// the client retried with that id (RL-13).
			rl.endSubscription(ws, sub, errors.New("filter rejected"))
			ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: reason})
			return
		} else {
			rl.addListener(ws, sub, rl, filter)
		}
	}

	go func() {
		// when all events have been loaded from databases and dispatched we can fire the EOSE message
		eose.Wait()
		// buzz-lite patch 29: its stored events are read; once
		// every live delivery of what they held is made, the
		// subscription forgets what it sent.
		go rl.settle(sub)
		// buzz-lite patch: a subscription a StreamEvents hook ended
		// is answered CLOSED, not EOSE; one that ended otherwise (a
		// CLOSE, a REQ with its id, the connection's end) gets
		// nothing: an EOSE would reach the client as that of the
		// REQ that replaced it, while its stored events still come.
		var closed closedError
		switch cause := context.Cause(sub.ctx); {
		case errors.As(cause, &closed):
			rl.endSubscription(ws, sub, closed)
			ws.WriteJSON(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: closed.reason})
			return
		case cause != nil:
			return
		}
		ws.WriteJSON(nostr.EOSEEnvelope(env.SubscriptionID))
	}()
}

// handleAuthEnvelope answers an AUTH (NIP-42).
func (rl *Relay) handleAuthEnvelope(ws *WebSocket, env *nostr.AuthEnvelope) {
	// buzz-lite patch: the ValidateAuth hook decides when set.
	validate := rl.ValidateAuth
	if validate == nil {
		validate = func(event *nostr.Event, challenge string) (string, bool) {
			wsBaseUrl := strings.Replace(rl.getBaseURL(ws.Request), "http", "ws", 1)
			return nip42.ValidateAuthEvent(event, challenge, wsBaseUrl)
		}
	}
	if pubkey, ok := validate(&env.Event, ws.Challenge); ok {
		ws.authLock.Lock()
		ws.AuthedPublicKey = pubkey // buzz-lite patch: written under authLock
		if ws.Authed != nil {
			close(ws.Authed)
			ws.Authed = nil
		}
		ws.authLock.Unlock()
		ws.WriteJSON(nostr.OKEnvelope{EventID: env.Event.ID, OK: true})
	} else {
		ws.WriteJSON(nostr.OKEnvelope{EventID: env.Event.ID, OK: false, Reason: "error: failed to authenticate"})
	}
}

// countFilters is how many filters a COUNT message carries.
//
// buzz-lite patch.
func countFilters(message string) int {
	var req nostr.ReqEnvelope
	if err := req.FromJSON(message); err != nil {
		return 1 // parsed as a COUNT of one filter, or it would not be here
	}
	return len(req.Filters)
}

// maxHandlers bounds the messages of one connection handled at once.
//
// buzz-lite patch.
const maxHandlers = 32

// heldBytes bounds the bytes of the messages of one connection being
// handled: a message is handled once it fits beside the others, or when no
// other is. Only the connection's reader takes; handlers give.
//
// buzz-lite patch.
type heldBytes struct {
	size  int64
	mu    sync.Mutex
	held  int64
	freed chan struct{} // capacity 1: wakes the reader after a give
}

// take counts n bytes handled, waiting while they do not fit; false when
// done is closed first.
func (h *heldBytes) take(done <-chan struct{}, n int64) bool {
	for {
		h.mu.Lock()
		if h.held == 0 || h.held+n <= h.size {
			h.held += n
			h.mu.Unlock()
			return true
		}
		h.mu.Unlock()
		select {
		case <-h.freed:
		case <-done:
			return false
		}
	}
}

// give uncounts n bytes taken before.
func (h *heldBytes) give(n int64) {
	h.mu.Lock()
	h.held -= n
	h.mu.Unlock()
	select {
	case h.freed <- struct{}{}:
	default:
	}
}

// hllOffset is nip45.HyperLogLogEventPubkeyOffsetForFilter for filters
// whose one tag value is a 64-hex id or pubkey; -1 for anything else.
func hllOffset(filter nostr.Filter) int {
	for _, values := range filter.Tags {
		for _, v := range values {
			if !nostr.IsValid32ByteHex(v) {
				return -1
			}
		}
	}
	return nip45.HyperLogLogEventPubkeyOffsetForFilter(filter)
}

// answerEvent sends the OK that answers an EVENT, after telling the
// OnEventResult hooks what it says.
//
// buzz-lite patch.
func (rl *Relay) answerEvent(ctx context.Context, ws *WebSocket, event *nostr.Event, ok bool, reason string) {
	for _, fn := range rl.OnEventResult {
		fn(ctx, event, ok, reason)
	}
	ws.WriteJSON(nostr.OKEnvelope{EventID: event.ID, OK: ok, Reason: reason})
}
