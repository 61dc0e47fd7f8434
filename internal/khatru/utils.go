package khatru

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
)

const (
	wsKey = iota
	internalCallKey
)

func RequestAuth(ctx context.Context) {
	ws := GetConnection(ctx)
	ws.authLock.Lock()
	if ws.Authed == nil {
		ws.Authed = make(chan struct{})
	}
	ws.authLock.Unlock()
	ws.WriteJSON(nostr.AuthEnvelope{Challenge: &ws.Challenge})
}

func GetConnection(ctx context.Context) *WebSocket {
	wsi := ctx.Value(wsKey)
	if wsi != nil {
		return wsi.(*WebSocket)
	}
	return nil
}

func GetAuthed(ctx context.Context) string {
	if conn := GetConnection(ctx); conn != nil {
		return conn.AuthedPubKey()
	}
	return ""
}

// IsInternalCall returns true when a call to QueryEvents, for example, is being made because of a deletion
// or expiration request.
func IsInternalCall(ctx context.Context) bool {
	return ctx.Value(internalCallKey) != nil
}

// AuthedPubKey is the pubkey the connection authenticated with (NIP-42),
// or "".
//
// buzz-lite patch: AuthedPublicKey is written by the goroutine that handles
// AUTH and read by those handling REQs and delivering live events; both
// now hold authLock.
func (ws *WebSocket) AuthedPubKey() string {
	ws.authLock.Lock()
	defer ws.authLock.Unlock()
	return ws.AuthedPublicKey
}
