package buzz

import (
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// StoredRow is a store's own row of a stored event as its write path read
// it: the columns its writes need again, beyond what the rules know.
type StoredRow interface {
	// Fact is what the rules know of the row; nil for a nil row (no event
	// stored).
	Fact() *StoredEvent
	// Tags are the event's tags.
	Tags() (nostr.Tags, error)
}

// EventRows are a store's reads behind a Lookup inside its write
// transaction, and its writes to the rows the Lookup returned: SQL and
// row scanning, none of the rules. A row read is nil when no event
// matches.
type EventRows[R StoredRow] struct {
	// ByID reads the event of id (32 bytes; nil for an id that is no
	// 64-hex id, which matches none), ByRef the one the store numbers ref.
	ByID  func(id []byte) (R, error)
	ByRef func(ref int64) (R, error)
	// Versions reads the stored versions of a replaceable (d ignored) or
	// addressable event of kind by pubkey (32 bytes), deleted ones too.
	Versions func(kind int, pubkey []byte, d string) ([]R, error)
	// ChannelNumber is Lookup.ChannelNumber.
	ChannelNumber func(h string) (seq int64, found bool, err error)
	// SoftDelete marks an event deleted at now and makes its ancestors'
	// counters exact again (RL-6); Remove takes a replaced version away
	// (RL-9).
	SoftDelete, Remove func(row R, now int64) error
}

// WriteRows is what the rules read in a store's write transaction (a
// Lookup) over its EventRows and its access state (TxCommunity). It keeps
// the row of every event it returned, so that the writes carrying out the
// rules' decisions take the row back by number (Row) without reading it
// again.
type WriteRows[R StoredRow] struct {
	*TxCommunity
	rows  EventRows[R]
	found map[int64]R
}

// NewWriteRows reads through rows, in the transaction whose access state
// is access.
func NewWriteRows[R StoredRow](rows EventRows[R], access *TxCommunity) *WriteRows[R] {
	return &WriteRows[R]{TxCommunity: access, rows: rows, found: map[int64]R{}}
}

// Row is the row of the event numbered ref, which the lookup returned.
func (w *WriteRows[R]) Row(ref int64) R { return w.found[ref] }

// fact is what the rules know of r, whose row it keeps.
func (w *WriteRows[R]) fact(r R) *StoredEvent {
	f := r.Fact()
	if f != nil {
		w.found[f.Ref] = r
	}
	return f
}

// EventByID implements Lookup.
func (w *WriteRows[R]) EventByID(id string) (*StoredEvent, error) {
	key, _ := nipcw.ID32(id)
	r, err := w.rows.ByID(key)
	if err != nil {
		return nil, err
	}
	return w.fact(r), nil
}

// EventByRef implements Lookup.
func (w *WriteRows[R]) EventByRef(ref int64) (*StoredEvent, error) {
	r, err := w.rows.ByRef(ref)
	if err != nil {
		return nil, err
	}
	return w.fact(r), nil
}

// Versions implements Lookup.
func (w *WriteRows[R]) Versions(kind int, pubkey, d string) ([]*StoredEvent, error) {
	key, err := nipcw.DecodeHex(pubkey, 32)
	if err != nil {
		return nil, fmt.Errorf("versions of %d:%s: %w", kind, pubkey, err)
	}
	rows, err := w.rows.Versions(kind, key, d)
	if err != nil {
		return nil, err
	}
	out := make([]*StoredEvent, len(rows))
	for i, r := range rows {
		out[i] = w.fact(r)
	}
	return out, nil
}

// ChannelNumber implements Lookup.
func (w *WriteRows[R]) ChannelNumber(h string) (int64, bool, error) { return w.rows.ChannelNumber(h) }

// SoftDelete implements WriteTx.
func (w *WriteRows[R]) SoftDelete(t *StoredEvent, now int64) error {
	return w.rows.SoftDelete(w.found[t.Ref], now)
}

// Remove implements WriteTx and GroupStateTx.
func (w *WriteRows[R]) Remove(t *StoredEvent, now int64) error {
	return w.rows.Remove(w.found[t.Ref], now)
}

// TagsOf implements WriteTx.
func (w *WriteRows[R]) TagsOf(t *StoredEvent) (nostr.Tags, error) {
	tags, err := w.found[t.Ref].Tags()
	if err != nil {
		return nil, fmt.Errorf("tags of stored event #%d: %w", t.Ref, err)
	}
	return tags, nil
}
