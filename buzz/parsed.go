package buzz

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ErrMalformedEvent refuses an event whose id, pubkey or signature is not
// hex of its length: nothing a store keeps can be made of it.
var ErrMalformedEvent = reject("invalid", "malformed event")

// ParsedEvent is an event as the write path reads it, decoded once before
// the store's write transaction, so that the transaction spends its time
// on SQL: its keys as bytes, and what the rules read of its tags.
type ParsedEvent struct {
	Event *nostr.Event
	// ID and PubKey are 32 bytes, Sig 64.
	ID, PubKey, Sig []byte
	// H is its channel (ChannelOf), "" for none; Thread its NIP-10 tags.
	H      string
	Thread ThreadTags
	// Expires says it carries a NIP-40 expiration, ExpiresAt.
	Expires   bool
	ExpiresAt int64
}

// ParseEvent decodes ev for the write path. It refuses a malformed id,
// pubkey or signature (ErrMalformedEvent) and an h tag that names no
// single channel by a channel id (ChannelOf, CW-2).
func ParseEvent(ev *nostr.Event) (*ParsedEvent, error) {
	p := &ParsedEvent{Event: ev}
	var err error
	if p.ID, err = nipcw.DecodeHex(ev.ID, 32); err != nil {
		return nil, ErrMalformedEvent
	}
	if p.PubKey, err = nipcw.DecodeHex(ev.PubKey, 32); err != nil {
		return nil, ErrMalformedEvent
	}
	if p.Sig, err = nipcw.DecodeHex(ev.Sig, 64); err != nil {
		return nil, ErrMalformedEvent
	}
	if p.H, err = ChannelOf(ev.Tags); err != nil {
		return nil, err
	}
	p.Thread = ParseThreadTags(ev.Tags)
	if at, ok := Expiration(ev.Tags); ok {
		p.Expires, p.ExpiresAt = true, at
	}
	return p, nil
}

// Input is what Admit knows of p, written by a store whose relay key is
// relay ("" when it signs nothing) at now, importing or not.
func (p *ParsedEvent) Input(relay string, now int64, importing bool) AdmitInput {
	return AdmitInput{
		H:         p.H,
		Thread:    p.Thread,
		Expires:   p.Expires,
		ExpiresAt: p.ExpiresAt,
		Relay:     relay,
		Now:       now,
		Importing: importing,
	}
}
