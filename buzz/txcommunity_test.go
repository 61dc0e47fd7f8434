package buzz

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// testKey is a relay key that signs group state, testPubKey its pubkey.
var (
	testKey       = strings.Repeat("0", 63) + "3"
	testPubKey, _ = nostr.GetPublicKey(testKey)
)

// renewTx is a GroupStateTx over a TxCommunity that stores nothing: it
// records the group state admitted and the foreign group state removed.
type renewTx struct {
	*TxCommunity
	admitted []*nostr.Event
	foreign  map[int64]*StoredEvent
	removed  []int64
}

func (r *renewTx) EventByID(string) (*StoredEvent, error)     { return nil, nil }
func (r *renewTx) EventByRef(ref int64) (*StoredEvent, error) { return r.foreign[ref], nil }
func (r *renewTx) Versions(int, string, string) ([]*StoredEvent, error) {
	return nil, nil
}
func (r *renewTx) ChannelNumber(string) (int64, bool, error) { return 0, false, nil }
func (r *renewTx) Remove(t *StoredEvent, _ int64) error {
	r.removed = append(r.removed, t.Ref)
	return nil
}
func (r *renewTx) AdmitOwn(ev *nostr.Event, _ int64) error {
	r.admitted = append(r.admitted, ev)
	r.Publish(ev)
	return nil
}
func (r *renewTx) ForeignGroupState(string) ([]int64, error) {
	refs := slices.Collect(func(yield func(int64) bool) {
		for ref := range r.foreign {
			if !yield(ref) {
				return
			}
		}
	})
	slices.Sort(refs)
	return refs, nil
}

// renewedChannels are the d tags of the group state admitted, in order.
func (r *renewTx) renewedChannels() []string {
	var out []string
	for _, ev := range r.admitted {
		if d := ev.Tags.GetD(); len(out) == 0 || out[len(out)-1] != d {
			out = append(out, d)
		}
	}
	return out
}

// RL-10, RL-11, RL-13: a write transaction's access state is its own copy
// once it changes (readers keep the published state until the commit),
// the commit versions it one past the state it began with, and the group
// state of every channel it changed is renewed before the commit, in the
// order of their numbers; an import defers that renewal, and a relay
// without a key signs nothing.
func TestTxCommunity(t *testing.T) {
	second := &Channel{Seq: 2, H: chanIDOther, Created: true, Name: "other", Members: staffed()}
	renamed := openChannel()
	renamed.Name = "renamed"
	cases := []struct {
		name     string
		key      string
		deferred bool
		change   func(tx *TxCommunity)
		// changed: Changed and Commit return a state (versioned 8).
		changed bool
		renewed []string
	}{
		{"reads only", testKey, false, func(tx *TxCommunity) { tx.Community() }, false, nil},
		{"setting", testKey, false, func(tx *TxCommunity) { tx.Change().ThreadRepliesInChannel = true }, true, nil},
		{"channel put", testKey, false, func(tx *TxCommunity) { tx.PutChannel(renamed) }, true, []string{chanID}},
		{"in number order", testKey, false, func(tx *TxCommunity) {
			tx.StateChanged(2)
			tx.StateChanged(1)
			tx.StateChanged(2)
		}, true, []string{chanID, chanIDOther}},
		{"import defers", testKey, true, func(tx *TxCommunity) { tx.PutChannel(renamed) }, true, nil},
		{"no key", "", false, func(tx *TxCommunity) { tx.PutChannel(renamed) }, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := NewCommunity(Policy{}, openChannel(), second)
			base.Version = 7
			access := NewTxCommunity(base)
			access.Deferred = tc.deferred
			tc.change(access)
			if base.Channel(chanID).Name != "general" || base.ThreadRepliesInChannel || base.Version != 7 {
				t.Fatalf("the published state changed: %+v", base.Channel(chanID))
			}
			next := access.Commit()
			if (next != nil) != tc.changed || (access.Changed() != nil) != tc.changed {
				t.Fatalf("Commit = %v, Changed = %v, want a state: %v", next, access.Changed(), tc.changed)
			}
			if next != nil && next.Version != 8 {
				t.Errorf("committed version %d, want 8", next.Version)
			}
			tx := &renewTx{TxCommunity: access}
			if err := access.RenewGroupState(tx, tc.key, testPubKey, 100); err != nil {
				t.Fatal(err)
			}
			if got := tx.renewedChannels(); !slices.Equal(got, tc.renewed) {
				t.Errorf("renewed %v, want %v", got, tc.renewed)
			}
			var state atomic.Pointer[Community]
			var onPublish atomic.Pointer[func([]*nostr.Event)]
			state.Store(base)
			heard := 0
			fn := func(evs []*nostr.Event) { heard += len(evs) }
			onPublish.Store(&fn)
			access.Committed(&state, &onPublish)
			if want := len(tx.admitted); heard != want {
				t.Errorf("heard of %d group state events, admitted %d", heard, want)
			}
			if got := state.Load().Version; (got == 8) != tc.changed {
				t.Errorf("published version %d after the commit", got)
			}
		})
	}
}

// RL-11, RL-21: renewing every channel's group state (the end of an
// import) marks each channel and, with a key, removes the group state
// another key signed, renewing the channel it was in.
func TestTxCommunityRenewEvery(t *testing.T) {
	second := &Channel{Seq: 2, H: chanIDOther, Created: true, Members: staffed()}
	for _, tc := range []struct {
		name        string
		key         string
		wantRemoved []int64
		wantRenewed []string
	}{
		{"with key", testKey, []int64{10, 11}, []string{chanID, chanIDOther}},
		{"without key", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			access := NewTxCommunity(NewCommunity(Policy{}, openChannel(), second))
			tx := &renewTx{TxCommunity: access, foreign: map[int64]*StoredEvent{
				10: {Ref: 10, Kind: KindGroupMetadata, Scope: 1},
				11: {Ref: 11, Kind: KindGroupMembers},
			}}
			if err := access.RenewEvery(tx, tc.key, testPubKey, 100); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tx.removed, tc.wantRemoved) {
				t.Errorf("removed %v, want %v", tx.removed, tc.wantRemoved)
			}
			if access.Commit() == nil {
				t.Fatal("renewing every channel left the state unchanged")
			}
			if err := access.RenewGroupState(tx, tc.key, testPubKey, 100); err != nil {
				t.Fatal(err)
			}
			if got := tx.renewedChannels(); !slices.Equal(got, tc.wantRenewed) {
				t.Errorf("renewed %v, want %v", got, tc.wantRenewed)
			}
		})
	}
}

// RL-13: a state read afresh never replaces a newer one published
// meanwhile.
func TestPublishNewer(t *testing.T) {
	at := func(v int64) *Community {
		c := NewCommunity(Policy{})
		c.Version = v
		return c
	}
	for _, tc := range []struct {
		name          string
		held, offered int64
		want          int64
	}{
		{"newer", 3, 4, 4},
		{"same", 3, 3, 3},
		{"older", 5, 4, 5},
	} {
		var p atomic.Pointer[Community]
		p.Store(at(tc.held))
		offered := at(tc.offered)
		PublishNewer(&p, offered)
		if got := p.Load().Version; got != tc.want {
			t.Errorf("%s: published version %d, want %d", tc.name, got, tc.want)
		}
		if tc.name == "same" && p.Load() != offered {
			t.Errorf("same: the state offered was not published")
		}
	}
}

// RL-36: the membership events a transaction issued are signed with the
// relay key and admitted, in the order issued, before the group state
// they change is renewed; a relay without a key issues none, and what a
// transaction issued is not issued again by the next renewal.
func TestTxCommunityIssues(t *testing.T) {
	for _, key := range []string{testKey, ""} {
		access := NewTxCommunity(NewCommunity(Policy{}, openChannel()))
		join, leave := event(KindJoin, pkOutsider), event(KindLeave, pkMember)
		join.ID, leave.ID = id(1), id(2)
		access.Issue(Issued(join, chanID, 100))
		access.Issue(Issued(leave, chanID, 100))
		access.PutChannel(openChannel())
		tx := &renewTx{TxCommunity: access}
		if err := access.RenewGroupState(tx, key, testPubKey, 100); err != nil {
			t.Fatal(err)
		}
		var kinds []int
		for _, ev := range tx.admitted {
			kinds = append(kinds, ev.Kind)
			if ok, err := ev.CheckSignature(); !ok || err != nil || ev.PubKey != testPubKey {
				t.Errorf("kind %d: signed by %s, valid %v (%v)", ev.Kind, ev.PubKey, ok, err)
			}
		}
		want := []int{KindPutUser, KindRemoveUser, KindGroupMetadata, KindGroupAdmins, KindGroupMembers, KindGroupRoles}
		if key == "" {
			want = nil
		}
		if !slices.Equal(kinds, want) {
			t.Fatalf("key %q: admitted kinds %v, want %v", key, kinds, want)
		}
		again := &renewTx{TxCommunity: access}
		if err := access.RenewGroupState(again, testKey, testPubKey, 100); err != nil {
			t.Fatal(err)
		}
		if len(again.admitted) > 0 && again.admitted[0].Kind == KindPutUser {
			t.Fatalf("key %q: issued again by the next renewal", key)
		}
	}
}
