package buzz

import (
	"encoding/hex"

	"github.com/nbd-wtf/go-nostr"
)

// OwnGroupState is a store's write transaction as group state renewal uses
// it (GroupStateTx): its Lookup, and the two storage calls renewal needs
// beyond it. Both stores build one per renewal.
type OwnGroupState[R StoredRow, P any] struct {
	*WriteRows[R]
	// Parse reads ev as the store's ingest takes it (ParseEvent and the
	// store's own columns); Ingest admits it in the transaction as any
	// event is (Admit).
	Parse  func(ev *nostr.Event) (P, error)
	Ingest func(p P, now int64) error
	// Foreign numbers the group state in force (39000-39003) that pubkey
	// (32 bytes) did not sign.
	Foreign func(pubkey []byte) ([]int64, error)
}

// AdmitOwn implements GroupStateTx: ev, signed by the relay key, is
// ingested and published after the commit.
func (g *OwnGroupState[R, P]) AdmitOwn(ev *nostr.Event, now int64) error {
	p, err := g.Parse(ev)
	if err != nil {
		return err
	}
	if err := g.Ingest(p, now); err != nil {
		return err
	}
	g.Publish(ev)
	return nil
}

// ForeignGroupState implements GroupStateTx.
func (g *OwnGroupState[R, P]) ForeignGroupState(pubkey string) ([]int64, error) {
	key, _ := hex.DecodeString(pubkey)
	return g.Foreign(key)
}
