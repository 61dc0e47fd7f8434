module github.com/fiatjaf/khatru

go 1.24.1

require (
	github.com/bep/debounce v1.2.1
	github.com/fasthttp/websocket v1.5.12
	github.com/fiatjaf/eventstore v0.16.2
	github.com/nbd-wtf/go-nostr v0.51.8
	github.com/puzpuzpuz/xsync/v3 v3.5.1
	github.com/rs/cors v1.11.1
)
