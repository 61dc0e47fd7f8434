package khatru

import (
	"context"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buzz-lite/buzz-lite/internal/verify"
	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip11"
	"github.com/nbd-wtf/go-nostr/nip45/hyperloglog"
)

func NewRelay() *Relay {
	ctx := context.Background()

	rl := &Relay{
		Log:      log.New(os.Stderr, "[khatru-relay] ", log.LstdFlags),
		verifier: verify.NewGroup(&verify.Verifier{}),

		Info: &nip11.RelayInformationDocument{
			Software:      "https://github.com/fiatjaf/khatru",
			Version:       "n/a",
			SupportedNIPs: []any{1, 11, 40, 42, 70, 86},
		},

		upgrader: websocket.Upgrader{
			ReadBufferSize:  1024,
			WriteBufferSize: 1024,
			CheckOrigin:     func(r *http.Request) bool { return true },
		},

		clients:   make(map[*WebSocket][]*listenerSpec, 100),
		listeners: make([]listener, 0, 100),

		WriteWait:      10 * time.Second,
		PongWait:       60 * time.Second,
		PingPeriod:     30 * time.Second,
		MaxMessageSize: 512000,
		QueueBytes:     4 << 20,
	}

	rl.expirationManager = newExpirationManager(rl)
	go rl.expirationManager.start(ctx)

	return rl
}

type Relay struct {
	// setting this variable overwrites the hackish workaround we do to try to figure out our own base URL
	ServiceURL string

	// verifier checks EVENTs' ids and signatures, those of connections
	// that wait at once together. buzz-lite patch.
	verifier *verify.Group

	// RejectUnverifiedEvent hooks are asked about an EVENT before its id
	// and signature are checked, so they must decide nothing on what the
	// event claims (its pubkey may be forged): what they may decide is
	// about the connection that sent it, e.g. its rate. buzz-lite patch.
	RejectUnverifiedEvent []func(ctx context.Context, event *nostr.Event) (reject bool, msg string)

	// OnEventResult hooks hear the answer to every EVENT, as the OK sent
	// to the peer says it (ok, reason), whoever decided it: khatru's own
	// checks (id, signature, NIP-70) or a hook. buzz-lite patch.
	OnEventResult []func(ctx context.Context, event *nostr.Event, ok bool, reason string)

	// hooks that will be called at various times
	RejectEvent               []func(ctx context.Context, event *nostr.Event) (reject bool, msg string)
	OverwriteDeletionOutcome  []func(ctx context.Context, target *nostr.Event, deletion *nostr.Event) (acceptDeletion bool, msg string)
	StoreEvent                []func(ctx context.Context, event *nostr.Event) error
	ReplaceEvent              []func(ctx context.Context, event *nostr.Event) error
	DeleteEvent               []func(ctx context.Context, event *nostr.Event) error
	OnEventSaved              []func(ctx context.Context, event *nostr.Event)
	OnEphemeralEvent          []func(ctx context.Context, event *nostr.Event)
	RejectFilter              []func(ctx context.Context, filter nostr.Filter) (reject bool, msg string)
	RejectCountFilter         []func(ctx context.Context, filter nostr.Filter) (reject bool, msg string)
	OverwriteFilter           []func(ctx context.Context, filter *nostr.Filter)
	QueryEvents               []func(ctx context.Context, filter nostr.Filter) (chan *nostr.Event, error)
	CountEvents               []func(ctx context.Context, filter nostr.Filter) (int64, error)
	CountEventsHLL            []func(ctx context.Context, filter nostr.Filter, offset int) (int64, *hyperloglog.HyperLogLog, error)
	RejectConnection          []func(r *http.Request) bool
	OnConnect                 []func(ctx context.Context)
	OnDisconnect              []func(ctx context.Context)
	OverwriteRelayInformation []func(ctx context.Context, r *http.Request, info nip11.RelayInformationDocument) nip11.RelayInformationDocument
	OverwriteResponseEvent    []func(ctx context.Context, event *nostr.Event)
	PreventBroadcast          []func(ws *WebSocket, event *nostr.Event) bool
	// DeliverTo, when set, is called once for every event being broadcast
	// and returns which connections may receive it (nil: all); the
	// broadcast of an event a SaveEvent hook stored asks what the hook
	// returned instead. buzz-lite patch.
	DeliverTo func(event *nostr.Event) func(ws *WebSocket) bool
	// SaveEvent, when set, stores the events of EVENTs that are not
	// ephemeral, in place of the StoreEvent and ReplaceEvent hooks, of the
	// lookups khatru makes before them (for a deletion of the event, asking
	// QueryEvents hooks filters with "#e" and "#a" for tag names, and for
	// its older versions) and of its tracking of expiring events: the hook
	// decides all of that in its own transaction. It returns who may receive the event live
	// (nil: every listener), which the event's broadcast asks per
	// connection, so that what the hook found out while storing (an event's
	// channel, say) reaches the delivery with the event rather than by a
	// map from the event's pointer. eventstore.ErrDupEvent accepts the
	// event without a broadcast. buzz-lite patch.
	SaveEvent func(ctx context.Context, event *nostr.Event) (deliver func(ws *WebSocket) bool, err error)
	// RejectRequest hooks are asked once per REQ and COUNT, before its
	// filters; a refusal answers CLOSED with msg. buzz-lite patch.
	RejectRequest []func(ctx context.Context, req Request) (reject bool, msg string)
	// StreamEvents hooks serve a REQ filter's stored events, as
	// QueryEvents do, without handing them over all at once: send queues
	// one event for the client, waiting while the connection's queue is
	// full, and fails once the subscription or the connection ended. An
	// error ends the subscription, answered CLOSED with it as the reason.
	// An event is handed over as its signed JSON, which the hook vouches
	// for, and goes out as it is (no OverwriteResponseEvent hook sees it).
	// buzz-lite patch.
	//
	// send takes the event's id too: a subscription sends an event once,
	// whichever of its filters or its live delivery found it (buzz-lite
	// patch 29).
	StreamEvents []func(ctx context.Context, filter nostr.Filter, send func(id string, event []byte) error) error
	// LiveCaughtUp, when set, returns a channel closed once every live
	// delivery the relay makes beside khatru's EVENT path (BroadcastEventTo
	// of another process's event) of an event stored before the call has
	// been made: until then a subscription whose stored events were read
	// remembers what it sent, so as not to send it again live.
	// buzz-lite patch 29.
	LiveCaughtUp func() <-chan struct{}
	// FilterChannels and EventChannel, when both set, decide the "h"
	// condition of a listener's filter by channel, not by the tag's
	// letters: FilterChannels names the channels of the filter's "#h"
	// values (once, when the listener is added), EventChannel the channel
	// of a broadcast event (once per broadcast, when a listener with "#h"
	// first asks), and the condition holds when the event's channel is one
	// of the filter's. buzz-lite patch 30: a channel id is a UUID in any
	// spelling, and a live subscription heard an event only when both
	// spelled it alike, where its stored query found it.
	FilterChannels func(values []string) []string
	EventChannel   func(event *nostr.Event) string
	// ValidateAuth, when set, decides whether a NIP-42 AUTH event for the
	// connection's challenge authenticates its pubkey, instead of
	// nip42.ValidateAuthEvent against getBaseURL, which, without
	// ServiceURL, takes the relay's URL from the request's Host and
	// X-Forwarded-* headers: a client could name any relay it liked.
	// buzz-lite patch.
	ValidateAuth func(event *nostr.Event, challenge string) (pubkey string, ok bool)

	// editing info will affect the NIP-11 responses
	Info *nip11.RelayInformationDocument

	// Default logger, as set by NewServer, is a stdlib logger prefixed with "[khatru-relay] ",
	// outputting to stderr.
	Log *log.Logger

	// for establishing websockets
	upgrader websocket.Upgrader

	// keep a connection reference to all connected clients for Server.Shutdown
	// also used for keeping track of who is listening to what
	clients      map[*WebSocket][]*listenerSpec
	listeners    []listener
	clientsMutex sync.Mutex
	// broadcasts counts broadcasts, under clientsMutex (buzz-lite patch 29).
	broadcasts uint64
	// writes are the EVENTs being stored and broadcast (buzz-lite patch 29).
	writes writes

	// buzz-lite patch: NegentropyMessage, when set, is handed every message
	// whose label go-nostr does not know, in the connection's reader; ok
	// says it is a NIP-77 message (NEG-OPEN, NEG-MSG, NEG-CLOSE), and work,
	// if not nil, runs in the message's own goroutine. khatru's built-in
	// NIP-77 relied on go-nostr's nip77.ParseNegMessage, which keeps the
	// `["` of the envelope in the label and so recognised no message.
	NegentropyMessage func(ctx context.Context, message string) (work func(), ok bool)

	// websocket options
	WriteWait      time.Duration // Time allowed to write a message to the peer.
	PongWait       time.Duration // Time allowed to read the next pong message from the peer.
	PingPeriod     time.Duration // Send pings to peer with this period. Must be less than pongWait.
	MaxMessageSize int64         // Maximum message size allowed from peer.
	QueueBytes     int64         // Bytes that may be queued for one peer (buzz-lite patch).

	// NIP-40 expiration manager
	expirationManager *expirationManager
}

// Request is what RejectRequest hooks are told of a REQ or COUNT.
// buzz-lite patch.
type Request struct {
	Label          string // "REQ" or "COUNT"
	SubscriptionID string
	Filters        int // how many filters the message carries
	// Open counts, for a REQ, the connection's other open subscriptions:
	// one that this REQ replaces (the same id) is not among them.
	Open int
}

func (rl *Relay) getBaseURL(r *http.Request) string {
	if rl.ServiceURL != "" {
		return rl.ServiceURL
	}

	host := r.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = r.Host
	}
	proto := r.Header.Get("X-Forwarded-Proto")
	if proto == "" {
		if host == "localhost" {
			proto = "http"
		} else if strings.Contains(host, ":") {
			// has a port number
			proto = "http"
		} else if _, err := strconv.Atoi(strings.ReplaceAll(host, ".", "")); err == nil {
			// it's a naked IP
			proto = "http"
		} else {
			proto = "https"
		}
	}
	return proto + "://" + host
}
