package buzz

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"
)

// TxCommunity is the access state of one write transaction: the state
// published when it began, and once a write changes it the transaction's
// own copy (a rollback drops the copy, and with it the change; readers
// keep the published state until the commit). It keeps the channels whose
// group state must be renewed before the commit (RL-10, RL-11) and the
// group state events the transaction signed and stored. A store holds one
// per write transaction; its SQL writes what the state says.
type TxCommunity struct {
	base, work *Community
	renew      map[int64]bool
	// Deferred leaves the group state of changed channels to a later
	// renewal of every channel's (an import, RenewEvery).
	Deferred bool
	// Published are the group state events the transaction signed and
	// stored, for those who hear of them once it is committed.
	Published []*nostr.Event
	// issued are the membership events the relay issues (Issue), to be
	// signed and stored before the commit.
	issued []*nostr.Event
}

// NewTxCommunity begins the access state of a write transaction with
// base, the state published when it began.
func NewTxCommunity(base *Community) *TxCommunity { return &TxCommunity{base: base} }

// Community is the access state as the transaction sees it: what was
// published, with the transaction's changes so far.
func (t *TxCommunity) Community() *Community {
	if t.work != nil {
		return t.work
	}
	return t.base
}

// Change returns the transaction's own copy of the access state, making
// it on the first change.
func (t *TxCommunity) Change() *Community {
	if t.work == nil {
		t.work = t.base.Clone()
	}
	return t.work
}

// Changed is the transaction's changed state; nil when it changed
// nothing, and nothing is to be published.
func (t *TxCommunity) Changed() *Community { return t.work }

// Channel is the state of channel h, numbered seq (stateOf): a row the
// state does not know is an open channel without members.
func (t *TxCommunity) Channel(seq int64, h string) *Channel { return stateOf(t.Community(), seq, h) }

// PutChannel makes ch the transaction's state of its channel, whose group
// state is renewed before the commit (RL-10, RL-11).
func (t *TxCommunity) PutChannel(ch *Channel) {
	t.Change().Put(ch)
	t.StateChanged(ch.Seq)
}

// StateChanged marks the group state of channel number seq for renewal
// before the commit, unless it is Deferred. The state counts as changed
// either way: the commit bumps its version.
func (t *TxCommunity) StateChanged(seq int64) {
	t.Change()
	if t.Deferred {
		return
	}
	if t.renew == nil {
		t.renew = map[int64]bool{}
	}
	t.renew[seq] = true
}

// Commit readies the changed state for the commit: its version one past
// the state the transaction began with, so that every reader and process
// reads it afresh. It returns the state the store records and publishes,
// nil when the transaction changed nothing.
func (t *TxCommunity) Commit() *Community {
	if t.work != nil {
		t.work.Version = t.base.Version + 1
	}
	return t.work
}

// Issue implements WriteTx: ev, a membership event the relay issues
// (Issued), is signed and stored by RenewGroupState, in the order issued.
func (t *TxCommunity) Issue(ev *nostr.Event) { t.issued = append(t.issued, ev) }

// RenewGroupState stores, through tx, the membership events the
// transaction issued (Issue), then renews the relay-signed group state of
// every channel marked StateChanged (ReplaceGroupState), in the order of
// their numbers, so that the signed events do not depend on map order.
// Without a key (key "") the relay signs nothing: a store opened without
// one (a command that changes no group state) issues no events either.
func (t *TxCommunity) RenewGroupState(tx GroupStateTx, key, pubkey string, now int64) error {
	issued := t.issued
	t.issued = nil
	if key == "" || t.work == nil {
		return nil
	}
	for _, ev := range issued {
		if err := ev.Sign(key); err != nil {
			return fmt.Errorf("sign membership event: %w", err)
		}
		if err := tx.AdmitOwn(ev, now); err != nil {
			return fmt.Errorf("store membership event: %w", err)
		}
	}
	seqs := make([]int64, 0, len(t.renew))
	for seq := range t.renew {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		ch := t.work.ChannelBySeq(seq)
		if ch == nil {
			return fmt.Errorf("renew group state: channel #%d is not in the access state", seq)
		}
		if err := ReplaceGroupState(tx, ch, key, pubkey, now); err != nil {
			return err
		}
	}
	return nil
}

// RenewEvery marks every channel's group state for renewal before the
// commit, as an import does once at its end instead of after every batch,
// and with a key, removes the group state another key signed
// (DropForeignGroupState).
func (t *TxCommunity) RenewEvery(tx GroupStateTx, key, pubkey string, now int64) error {
	t.markEvery()
	if key == "" {
		return nil
	}
	return DropForeignGroupState(tx, pubkey, now)
}

// FingerprintSetting is the store setting that records the
// GroupStateFingerprint of the last renewal of every channel's group
// state (RenewIfChanged).
const FingerprintSetting = "group_state.fingerprint"

// Settings are a store's integer settings, read and written in its write
// transaction.
type Settings interface {
	// Setting reads setting key; found is false when it has none.
	Setting(key string) (v int64, found bool, err error)
	PutSetting(key string, v int64) error
}

// RenewIfChanged marks every channel's group state for renewal before
// the commit when what it is rendered from beyond the channels
// (GroupStateFingerprint) differs from the one settings record under
// FingerprintSetting (none yet: it differs), and records the new one in
// the same transaction: after an upgrade that changed the renderer
// (39003, picture, the flags), or a change of the configuration it reads
// (restricted, supported_kinds), no channel keeps group state of the old
// form (RL-11, RL-36). Without a key (key "") the relay signs nothing,
// and nothing is renewed or recorded.
func (t *TxCommunity) RenewIfChanged(settings Settings, key string) error {
	if key == "" {
		return nil
	}
	recorded, found, err := settings.Setting(FingerprintSetting)
	if err != nil {
		return fmt.Errorf("read %s: %w", FingerprintSetting, err)
	}
	fp := GroupStateFingerprint(t.Community().Policy)
	if found && fp == recorded {
		return nil
	}
	t.markEvery()
	if err := settings.PutSetting(FingerprintSetting, fp); err != nil {
		return fmt.Errorf("write %s: %w", FingerprintSetting, err)
	}
	return nil
}

// markEvery marks every channel's group state for renewal.
func (t *TxCommunity) markEvery() {
	for _, ch := range t.Change().Channels() {
		t.StateChanged(ch.Seq)
	}
}

// Publish notes ev, group state the transaction signed and stored, in
// Published.
func (t *TxCommunity) Publish(ev *nostr.Event) { t.Published = append(t.Published, ev) }

// Committed publishes what the committed transaction changed: its access
// state in state (PublishNewer), and the group state it signed to the
// function onPublish holds, if any.
func (t *TxCommunity) Committed(state *atomic.Pointer[Community], onPublish *atomic.Pointer[func([]*nostr.Event)]) {
	if t.work != nil {
		PublishNewer(state, t.work)
	}
	if len(t.Published) > 0 {
		if fn := onPublish.Load(); fn != nil {
			(*fn)(t.Published)
		}
	}
}

// PublishNewer makes c the access state published in p, unless a newer one
// is published already: a state read afresh must not replace what a later
// write published.
func PublishNewer(p *atomic.Pointer[Community], c *Community) {
	for {
		cur := p.Load()
		if cur != nil && cur.Version > c.Version {
			return
		}
		if p.CompareAndSwap(cur, c) {
			return
		}
	}
}
