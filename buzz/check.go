package buzz

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// This file holds the rules of the operator's check (RL-33): what the
// thread counters and the group state should be, how a finding is worded
// in the CheckReport, and which repairs follow, in which order. A store
// reads and writes rows for it (CheckStore); what only its own indexes can
// check (the database's own checks, the tag index, sqlite's deletion
// marks) it checks and repairs itself (CheckSnapshot.StorageChecks).

// CheckStore is a store as Check uses it.
type CheckStore struct {
	// RelayPubKey is the hex public key of the store's relay key, the one
	// the group state must be signed by; "" when the store has none.
	RelayPubKey string
	// CanSign says the store holds the relay key's secret, to sign the
	// group state afresh.
	CanSign bool
	// ReadSnapshot runs read over one snapshot of the store, without
	// holding the writer, so that the relay keeps serving while it reads.
	ReadSnapshot func(read func(CheckSnapshot) error) error
	// Repair runs fix in one write transaction.
	Repair func(fix func(CheckRepairTx) error) error
}

// CheckSnapshot is what Check reads of a store, all from one snapshot.
type CheckSnapshot interface {
	// ThreadReplies calls each with every classified reply of every
	// thread with its root: a thread's replies together, the deepest
	// first (threadcount.Tally's order).
	ThreadReplies(each func(root int64, r threadcount.Reply) error) error
	// CounterRows calls each with every stored thread counters row, with
	// its event's id.
	CounterRows(each func(seq int64, id []byte, row ThreadRow) error) error
	// EventID reads the id of event seq.
	EventID(seq int64) ([]byte, error)
	// ForeignGroupState calls each with every group state event in force
	// (39000-39003) that pubkey, a hex key or "" for none, did not sign:
	// its kind, channel and signer, by channel, then kind.
	ForeignGroupState(pubkey string, each func(kind int, channel string, signer []byte) error) error
	// StorageChecks checks what the store's own indexes alone can check
	// (the database's integrity, the tag index rows against the events'
	// tags, RL-3, and any mark the store keeps), counting its findings in
	// rep. With repair it returns how to make them right, run after the
	// counters' repair in the repair's transaction, computed again there
	// from what is stored then; nil when nothing is to be done.
	StorageChecks(rep *CheckReport, repair bool) (func(CheckRepairTx) error, error)
}

// CheckRepairTx is the write transaction of a check's repair.
type CheckRepairTx interface {
	// EventStored reports whether event seq is still stored.
	EventStored(seq int64) (bool, error)
	// ThreadRows are the counter rows of the transaction.
	ThreadRows() ThreadRows
	// DropForeignGroupState removes the group state the relay key did not
	// sign and has its channels' state signed afresh (RL-11, RL-21).
	DropForeignGroupState() error
}

// ErrNoKeyToSign is Check's error when the group state is signed by
// another key and the store has no relay key to sign it with: the other
// repairs are made all the same.
var ErrNoKeyToSign = errors.New("group state: no relay key to sign it with")

// Check verifies a store: every thread counter against the subtree it
// counts (RL-5), the group state against the relay key (RL-11, RL-21),
// and what the store checks of itself. With repair, what is wrong is
// made right in one transaction, each fix computed again from what is
// stored then: the snapshot read may be behind the writer by now. Without
// a key the group state cannot be signed again: it stays reported, and
// Check says so with ErrNoKeyToSign once the other repairs are made.
func Check(s CheckStore, repair bool) (CheckReport, error) {
	var rep CheckReport
	var counterFixes []int64
	var storageFix func(CheckRepairTx) error
	err := s.ReadSnapshot(func(snap CheckSnapshot) error {
		var err error
		if counterFixes, err = checkCounters(snap, &rep); err != nil {
			return err
		}
		if err := checkGroupState(snap, s.RelayPubKey, &rep); err != nil {
			return err
		}
		storageFix, err = snap.StorageChecks(&rep, repair)
		return err
	})
	if err != nil || !repair || rep.OK() {
		return rep, err
	}
	resign := len(rep.GroupState) > 0 && s.CanSign
	err = s.Repair(func(tx CheckRepairTx) error {
		if resign {
			if err := tx.DropForeignGroupState(); err != nil {
				return err
			}
		}
		for _, seq := range counterFixes {
			if err := repairCounters(tx, seq); err != nil {
				return err
			}
		}
		if storageFix == nil {
			return nil
		}
		return storageFix(tx)
	})
	rep.Repaired = err == nil
	if err == nil && len(rep.GroupState) > 0 && !resign {
		err = ErrNoKeyToSign
	}
	return rep, err
}

// ExpectedCounters computes, thread by thread, the counters every event
// with a live event below it should have (RL-5), from every classified
// reply read once (threadcount.Tally).
func ExpectedCounters(snap CheckSnapshot) (map[int64]Counters, error) {
	want := map[int64]Counters{}
	var root int64
	var replies []threadcount.Reply
	tally := func() error {
		if len(replies) == 0 {
			return nil
		}
		counts, err := threadcount.Tally(root, replies)
		if err != nil {
			return fmt.Errorf("check counters: %w", err)
		}
		for seq, c := range counts {
			want[seq] = Counters{Replies: c.Replies, Descendants: c.Descendants, LastReplyAt: c.LastReplyAt, Participants: c.Participants}
		}
		return nil
	}
	err := snap.ThreadReplies(func(thread int64, r threadcount.Reply) error {
		if thread != root {
			if err := tally(); err != nil {
				return err
			}
			root, replies = thread, replies[:0]
		}
		replies = append(replies, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tally(); err != nil {
		return nil, err
	}
	return want, nil
}

// checkCounters compares every thread counter with the subtree it counts,
// words each difference in rep and returns the events whose counters are
// wrong.
func checkCounters(snap CheckSnapshot, rep *CheckReport) ([]int64, error) {
	want, err := ExpectedCounters(snap)
	if err != nil {
		return nil, err
	}
	var fixes []int64
	seen := map[int64]bool{}
	compare := func(seq int64, id []byte, have ThreadRow) {
		if finding := CounterFinding(id, have, want[seq]); finding != "" {
			rep.Counters = append(rep.Counters, finding)
			fixes = append(fixes, seq)
		}
	}
	err = snap.CounterRows(func(seq int64, id []byte, have ThreadRow) error {
		seen[seq] = true
		compare(seq, id, have)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Events with replies below but no counters row at all.
	for seq, w := range want {
		if seen[seq] || w.Descendants == 0 {
			continue
		}
		id, err := snap.EventID(seq)
		if err != nil {
			return nil, err
		}
		compare(seq, id, ThreadRow{})
	}
	return fixes, nil
}

// SameCounters reports whether stored counters are those computed; a
// counters row of zeros is the same as none.
func SameCounters(have ThreadRow, want Counters) bool {
	return have.Replies == want.Replies && have.Descendants == want.Descendants &&
		lastReply(have) == want.LastReplyAt && bytes.Equal(have.Participants, threadcount.Encode(want.Participants))
}

// CounterFinding words how the counters of event id differ from those
// computed, "" when they do not.
func CounterFinding(id []byte, have ThreadRow, want Counters) string {
	if SameCounters(have, want) {
		return ""
	}
	haveLast, wantLast := "null", "null"
	if have.HasLastReply {
		haveLast = fmt.Sprint(have.LastReplyAt)
	}
	if want.Descendants > 0 {
		wantLast = fmt.Sprint(want.LastReplyAt)
	}
	return fmt.Sprintf("event %s: reply_count %d, descendant_count %d, last_reply_at %s, %d participants; want %d, %d, %s, %d",
		hex.EncodeToString(id), have.Replies, have.Descendants, haveLast, len(have.Participants)/threadcount.Size,
		want.Replies, want.Descendants, wantLast, len(want.Participants))
}

// lastReply is a stored row's last_reply_at, 0 for NULL.
func lastReply(r ThreadRow) int64 {
	if !r.HasLastReply {
		return 0
	}
	return r.LastReplyAt
}

// repairCounters makes the counters of seq those of its subtree as stored
// now; an event removed since the check is left alone.
func repairCounters(tx CheckRepairTx, seq int64) error {
	if stored, err := tx.EventStored(seq); err != nil || !stored {
		return err
	}
	rows := tx.ThreadRows()
	have, err := rows.ReadThreadRow(seq)
	if err != nil {
		return err
	}
	want, err := SubtreeCounters(rows, seq)
	if err != nil || SameCounters(have, want) {
		return err
	}
	row := ThreadRow{Up: have.Up, Replies: want.Replies, Descendants: want.Descendants,
		LastReplyAt: want.LastReplyAt, HasLastReply: want.Descendants > 0,
		Participants: threadcount.Encode(want.Participants)}
	if err := rows.WriteThreadRow(seq, row); err != nil {
		return fmt.Errorf("repair counters of #%d: %w", seq, err)
	}
	return nil
}

// checkGroupState lists the group state in force that pubkey, the relay
// key, did not sign: all of it when the store has no relay key.
func checkGroupState(snap CheckSnapshot, pubkey string, rep *CheckReport) error {
	want := "the relay key " + pubkey
	if pubkey == "" {
		want = "a relay key (there is none)"
	}
	return snap.ForeignGroupState(pubkey, func(kind int, channel string, signer []byte) error {
		rep.GroupState = append(rep.GroupState, GroupStateFinding(kind, channel, signer, want))
		return nil
	})
}

// GroupStateFinding words group state event kind of channel signed by
// signer, not by want.
func GroupStateFinding(kind int, channel string, signer []byte, want string) string {
	return fmt.Sprintf("kind %d of channel %s is signed by %x, not by %s", kind, channel, signer, want)
}
