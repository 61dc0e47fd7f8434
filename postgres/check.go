package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// Check is buzz.Check over this store. PostgreSQL has no integrity or
// foreign key check to run (buzz.CheckReport): those findings stay empty;
// the tag index is checked a page of events at a time (StorageChecks).
// The repair's write transaction moves the page versions of the channels
// it changes, so that every process drops the pages it cached. Check
// reads one snapshot, without the write lock, so the relay keeps serving.
func (s *Store) Check(ctx context.Context, repair bool) (buzz.CheckReport, error) {
	return buzz.Check(buzz.CheckStore{
		RelayPubKey: s.pubkey,
		CanSign:     s.key != "",
		ReadSnapshot: func(read func(buzz.CheckSnapshot) error) error {
			return s.readFor(ctx, 0, func(tx pgx.Tx, _ *buzz.Community) error { return read(checkSnapshot{ctx: ctx, tx: tx}) })
		},
		Repair: func(fix func(buzz.CheckRepairTx) error) error {
			return s.write(ctx, func(tx *writeTx) error { return fix(checkRepair{s: s, tx: tx}) })
		},
	}, repair)
}

// checkRepair is the write transaction of a check's repair.
type checkRepair struct {
	s  *Store
	tx *writeTx
}

func (r checkRepair) EventStored(seq int64) (bool, error) {
	t, err := r.tx.bySeq(seq)
	return t != nil, err
}

func (r checkRepair) ThreadRows() buzz.ThreadRows { return r.tx.threadRows(nil) }

// DropForeignGroupState removes the group state in force that the relay
// key did not sign, and has the state of its channels signed afresh
// (RL-11, RL-21).
func (r checkRepair) DropForeignGroupState() error {
	return buzz.DropForeignGroupState(r.s.groupState(r.tx), r.s.pubkey, r.s.nowUnix())
}

// checkSnapshot is the check's read transaction.
type checkSnapshot struct {
	ctx context.Context
	tx  pgx.Tx
}

func (c checkSnapshot) ThreadReplies(each func(root int64, r threadcount.Reply) error) error {
	var r threadcount.Reply
	var root int64
	rows, err := c.tx.Query(c.ctx, `SELECT root, seq, parent, pubkey, created_at, deleted_at IS NOT NULL
		FROM events WHERE root IS NOT NULL ORDER BY root, depth DESC`)
	return eachRow(rows, err, "check counters", []any{&root, &r.Seq, &r.Parent, &r.PubKey, &r.At, &r.Deleted},
		func() error { return each(root, r) })
}

func (c checkSnapshot) CounterRows(each func(seq int64, id []byte, row buzz.ThreadRow) error) error {
	var seq int64
	var id []byte
	var row buzz.ThreadRow
	var last *int64
	rows, err := c.tx.Query(c.ctx, `SELECT t.seq, e.id, t.reply_count, t.descendant_count, t.last_reply_at, t.participants
		FROM thread_metadata t JOIN events e ON e.seq = t.seq ORDER BY t.seq`)
	return eachRow(rows, err, "check counters", []any{&seq, &id, &row.Replies, &row.Descendants, &last, &row.Participants},
		func() error {
			row.LastReplyAt, row.HasLastReply = value(last), last != nil
			return each(seq, id, row)
		})
}

func (c checkSnapshot) EventID(seq int64) ([]byte, error) {
	var id []byte
	if err := c.tx.QueryRow(c.ctx, `SELECT id FROM events WHERE seq = $1`, seq).Scan(&id); err != nil {
		return nil, fmt.Errorf("check counters of #%d: %w", seq, err)
	}
	return id, nil
}

func (c checkSnapshot) ForeignGroupState(pubkey string, each func(kind int, channel string, signer []byte) error) error {
	key, err := hex.DecodeString(pubkey)
	if err != nil {
		return fmt.Errorf("check group state: relay public key: %w", err)
	}
	if key == nil {
		key = []byte{} // compared as bytes, not as NULL: no key signed anything
	}
	var kind int32
	var d, signer []byte
	rows, err := c.tx.Query(c.ctx, `SELECT kind, coalesce(dkey, ''::bytea), pubkey FROM events
		WHERE kind BETWEEN 39000 AND 39003 AND pubkey <> $1 AND deleted_at IS NULL ORDER BY dkey, kind`, key)
	return eachRow(rows, err, "check group state", []any{&kind, &d, &signer},
		func() error { return each(int(kind), string(d), signer) })
}

// StorageChecks checks the tag index; its repair writes the tag rows of
// each event found wrong again.
func (c checkSnapshot) StorageChecks(rep *buzz.CheckReport, repair bool) (func(buzz.CheckRepairTx) error, error) {
	seqs, err := checkTags(c.ctx, c.tx, rep)
	if err != nil || !repair || len(seqs) == 0 {
		return nil, err
	}
	return func(tx buzz.CheckRepairTx) error {
		// buzz.Check hands back the transaction of this store's Repair.
		w := tx.(checkRepair).tx
		for _, seq := range seqs {
			if err := w.repairTags(seq); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// checkPage is how many events checkTags compares with their tag index
// rows at a time: memory stays bounded whatever the database's size.
const checkPage = 1000

// tagCheck is one event of a checkTags page: the tag index rows its tags
// call for, and which of them were found.
type tagCheck struct {
	createdAt int64
	kind      int32
	want      map[string]bool // name NUL index key -> found
}

// checkTags checks that every event has exactly the tag index rows its
// tags call for, a page of events at a time (in seq order, with the rows
// of the seqs the page spans, so that a row whose event is gone is found
// too). A row its event calls for but with another kind counts as extra,
// and is replaced on repair. It returns the events (or seqs without an
// event) whose rows repair must write again.
func checkTags(ctx context.Context, tx pgx.Tx, rep *buzz.CheckReport) ([]int64, error) {
	var fixes []int64
	after := int64(math.MinInt64)
	for {
		page := map[int64]*tagCheck{}
		last := after
		var seq, createdAt int64
		var kind int32
		var tagsJSON []byte
		rows, err := tx.Query(ctx, `SELECT seq, created_at, kind, tags FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, checkPage)
		err = eachRow(rows, err, "check tags", []any{&seq, &createdAt, &kind, &tagsJSON}, func() error {
			tags, err := tagjson.Parse(string(tagsJSON))
			if err != nil {
				return fmt.Errorf("check tags of #%d: %w", seq, err)
			}
			c := &tagCheck{createdAt: createdAt, kind: kind, want: map[string]bool{}}
			for _, t := range indexedTags(tags) {
				c.want[t.name+"\x00"+string(t.value)] = false
			}
			page[seq], last = c, seq
			return nil
		})
		if err != nil {
			return nil, err
		}
		// The last page takes every row after it, whatever its seq.
		upto := int64(math.MaxInt64)
		if len(page) == checkPage {
			upto = last
		}
		broken := map[int64]bool{}
		var name string
		var value []byte
		rows, err = tx.Query(ctx, `SELECT seq, name, value, created_at, kind FROM tags WHERE seq > $1 AND seq <= $2`, after, upto)
		err = eachRow(rows, err, "check tags", []any{&seq, &name, &value, &createdAt, &kind}, func() error {
			c := page[seq]
			key := name + "\x00" + string(value)
			if c == nil || createdAt != c.createdAt {
				rep.ExtraTags++
				broken[seq] = true
				return nil
			}
			_, called := c.want[key]
			if !called || kind != c.kind {
				rep.ExtraTags++
				broken[seq] = true
			}
			if called {
				c.want[key] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for seq, c := range page {
			for _, found := range c.want {
				if !found {
					rep.MissingTags++
					broken[seq] = true
				}
			}
		}
		for seq := range broken {
			fixes = append(fixes, seq)
		}
		if len(page) < checkPage {
			return fixes, nil
		}
		after = last
	}
}

// repairTags writes the tag index rows of event seq again from its tags
// as stored now; the rows of a seq without an event are deleted.
func (tx *writeTx) repairTags(seq int64) error {
	t, err := tx.bySeq(seq)
	if err != nil {
		return err
	}
	if _, err := tx.tx.Exec(tx.ctx, `DELETE FROM tags WHERE seq = $1`, seq); err != nil {
		return fmt.Errorf("repair tags of #%d: %w", seq, err)
	}
	if t == nil {
		return nil
	}
	tags, err := tagjson.Parse(string(t.tagsJSON))
	if err != nil {
		return fmt.Errorf("repair tags of #%d: %w", seq, err)
	}
	if err := tx.insertTags(indexedTags(tags), t.createdAt, seq, t.kind); err != nil {
		return fmt.Errorf("repair tags of #%d: %w", seq, err)
	}
	// The tag index finds the aux events of a page (CW-18): the pages
	// that show t, or that t's `e` tags reach, may change.
	return tx.touchEvent(t)
}
