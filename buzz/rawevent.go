package buzz

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// EventOf rebuilds a stored event from its columns as a store holds
// them (NewRawEvent's), for the callers that need it decoded: the feed and
// the live delivery of another process's writes.
func EventOf(id, pubkey, sig []byte, createdAt int64, kind int, tags, content string) (*nostr.Event, error) {
	ev := &nostr.Event{
		ID:        hex.EncodeToString(id),
		PubKey:    hex.EncodeToString(pubkey),
		CreatedAt: nostr.Timestamp(createdAt),
		Kind:      kind,
		Content:   content,
		Sig:       hex.EncodeToString(sig),
	}
	var err error
	if ev.Tags, err = tagjson.Parse(tags); err != nil {
		return nil, fmt.Errorf("decode tags of stored event %s: %w", ev.ID, err)
	}
	return ev, nil
}

// NewRawEvent serves a stored event as its signed JSON, written straight
// from its columns as a store holds them: id, pubkey and sig as bytes,
// tags as their JSON. Decoding it into a nostr.Event only to encode it
// again was a third of a page's time. tags and content are only read
// during the call: a store may pass a view of memory it reuses. Columns
// that cannot make a sound event are an error: the caller skips the event
// (CW-17).
func NewRawEvent(id, pubkey, sig []byte, createdAt int64, kind int, tags, content string) (RawEvent, error) {
	if len(id) != 32 || len(pubkey) != 32 || len(sig) != 64 {
		return RawEvent{}, fmt.Errorf("stored event %x has malformed keys", id)
	}
	if !tagjson.Valid(tags) {
		return RawEvent{}, fmt.Errorf("stored event %x: %w", id, tagjson.ErrMalformed)
	}
	b := make([]byte, 0, RawEventFixedBytes+len(tags)+len(content)+len(content)/8)
	b = append(b, `{"id":"`...)
	b = hex.AppendEncode(b, id)
	hexID := string(b[len(b)-64:])
	b = append(b, `","pubkey":"`...)
	b = hex.AppendEncode(b, pubkey)
	b = append(b, `","created_at":`...)
	b = strconv.AppendInt(b, createdAt, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, int64(kind), 10)
	b = append(b, `,"tags":`...)
	b = append(b, tags...)
	b = append(b, `,"content":`...)
	b = tagjson.AppendString(b, content)
	b = append(b, `,"sig":"`...)
	b = hex.AppendEncode(b, sig)
	b = append(b, `"}`...)
	return RawEvent{ID: hexID, CreatedAt: createdAt, Kind: kind, JSON: b}, nil
}
