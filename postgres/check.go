package postgres

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/threadcount"
)

// Check verifies the database: every thread counter against the subtree
// it counts, every tag index row against the events' tags, and that the
// store's relay key signed the group state. PostgreSQL has no integrity or
// foreign key check to run (buzz.CheckReport): those findings stay empty.
// With repair, what is wrong in the counters, the tag index and the group
// state is made right in one write transaction, which moves the page
// versions of the channels it changes, so that every process drops the
// pages it cached. Check reads one snapshot, without the write lock, so
// the relay keeps serving.
func (s *Store) Check(ctx context.Context, repair bool) (buzz.CheckReport, error) {
	var rep buzz.CheckReport
	var counterSeqs, tagSeqs []int64
	err := s.readFor(ctx, 0, func(tx pgx.Tx, _ *buzz.Community) error {
		var err error
		if counterSeqs, err = checkCounters(ctx, tx, &rep); err != nil {
			return err
		}
		if err := checkGroupState(ctx, tx, s.pubkey, &rep); err != nil {
			return err
		}
		tagSeqs, err = checkTags(ctx, tx, &rep)
		return err
	})
	if err != nil || !repair || rep.OK() {
		return rep, err
	}
	// The snapshot read above may be behind the writers by now (the relay
	// keeps serving): every fix is computed again inside the repair's own
	// transaction, from what is stored at that moment.
	// Without a key the group state cannot be signed again: it stays
	// reported, and the other repairs are made all the same.
	resign := len(rep.GroupState) > 0 && s.key != ""
	err = s.write(ctx, func(tx *writeTx) error {
		if resign {
			if err := s.dropForeignGroupState(tx); err != nil {
				return err
			}
		}
		for _, seq := range counterSeqs {
			if err := tx.repairCounters(seq); err != nil {
				return err
			}
		}
		for _, seq := range tagSeqs {
			if err := tx.repairTags(seq); err != nil {
				return err
			}
		}
		return nil
	})
	rep.Repaired = err == nil
	if err == nil && len(rep.GroupState) > 0 && !resign {
		err = errors.New("group state: no relay key to sign it with")
	}
	return rep, err
}

// checkCounters compares every thread counter with the subtree it counts,
// and returns the events whose counters are wrong.
func checkCounters(ctx context.Context, tx pgx.Tx, rep *buzz.CheckReport) ([]int64, error) {
	want, err := expectedCounters(ctx, tx)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT t.seq, e.id, t.reply_count, t.descendant_count, t.last_reply_at, t.participants
		FROM thread_metadata t JOIN events e ON e.seq = t.seq ORDER BY t.seq`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer rows.Close()
	var fixes []int64
	seen := map[int64]bool{}
	mismatch := func(seq int64, id []byte, have counters) {
		w := want[seq]
		if sameCounters(have, w) {
			return
		}
		rep.Counters = append(rep.Counters, fmt.Sprintf(
			"event %s: reply_count %d, descendant_count %d, last_reply_at %s, %d participants; want %d, %d, %s, %d",
			hex.EncodeToString(id), have.replies, have.descendants, nullString(have.lastReplyAt), len(have.participants)/threadcount.Size,
			w.replies, w.descendants, nullString(w.lastReplyAt), len(w.participants)/threadcount.Size))
		fixes = append(fixes, seq)
	}
	for rows.Next() {
		var seq int64
		var id []byte
		var have counters
		if err := rows.Scan(&seq, &id, &have.replies, &have.descendants, &have.lastReplyAt, &have.participants); err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		seen[seq] = true
		mismatch(seq, id, have)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	// Events with replies below but no counters row at all.
	for seq, w := range want {
		if seen[seq] || w.descendants == 0 {
			continue
		}
		var id []byte
		if err := tx.QueryRow(ctx, `SELECT id FROM events WHERE seq = $1`, seq).Scan(&id); err != nil {
			return nil, fmt.Errorf("check counters of #%d: %w", seq, err)
		}
		mismatch(seq, id, counters{})
	}
	return fixes, nil
}

// expectedCounters computes, thread by thread, the counters every event
// with something below it should have. It reads every reply once, a
// thread's replies together and the deepest first (threadcount.Tally).
func expectedCounters(ctx context.Context, tx pgx.Tx) (map[int64]counters, error) {
	rows, err := tx.Query(ctx, `SELECT root, seq, parent, pubkey, created_at, deleted_at IS NOT NULL
		FROM events WHERE root IS NOT NULL ORDER BY root, depth DESC`)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer rows.Close()
	want := map[int64]counters{}
	var root int64
	var replies []threadcount.Reply
	sum := func() error {
		if len(replies) == 0 {
			return nil
		}
		counts, err := threadcount.Tally(root, replies)
		if err != nil {
			return fmt.Errorf("check counters: %w", err)
		}
		for seq, c := range counts {
			last := c.LastReplyAt
			want[seq] = counters{replies: c.Replies, descendants: c.Descendants, lastReplyAt: &last,
				participants: threadcount.Encode(c.Participants)}
		}
		return nil
	}
	for rows.Next() {
		var r threadcount.Reply
		var thread int64
		if err := rows.Scan(&thread, &r.Seq, &r.Parent, &r.PubKey, &r.At, &r.Deleted); err != nil {
			return nil, fmt.Errorf("check counters: %w", err)
		}
		if thread != root {
			if err := sum(); err != nil {
				return nil, err
			}
			root, replies = thread, replies[:0]
		}
		replies = append(replies, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	if err := sum(); err != nil {
		return nil, err
	}
	return want, nil
}

// repairCounters makes the counters of seq those of its subtree as stored
// now; an event removed since the check is left alone.
func (tx *writeTx) repairCounters(seq int64) error {
	_, have, err := tx.readCounters(seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	want, err := subtreeCounters(tx.ctx, tx.tx, seq)
	if err != nil || sameCounters(have, want) {
		return err
	}
	want.channel = have.channel
	return tx.writeCounters(seq, want)
}

// checkGroupState lists the group state in force that pubkey, the relay
// key, did not sign: all of it when the store has no relay key.
func checkGroupState(ctx context.Context, tx pgx.Tx, pubkey string, rep *buzz.CheckReport) error {
	key, err := hex.DecodeString(pubkey)
	if err != nil {
		return fmt.Errorf("check group state: relay public key: %w", err)
	}
	if key == nil {
		key = []byte{} // compared as bytes, not as NULL: no key signed anything
	}
	rows, err := tx.Query(ctx, `SELECT kind, coalesce(dkey, ''::bytea), pubkey FROM events
		WHERE kind BETWEEN 39000 AND 39003 AND pubkey <> $1 AND deleted_at IS NULL ORDER BY dkey, kind`, key)
	if err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	defer rows.Close()
	want := "the relay key " + pubkey
	if pubkey == "" {
		want = "a relay key (there is none)"
	}
	for rows.Next() {
		var kind int32
		var d, signer []byte
		if err := rows.Scan(&kind, &d, &signer); err != nil {
			return fmt.Errorf("check group state: %w", err)
		}
		rep.GroupState = append(rep.GroupState, fmt.Sprintf("kind %d of channel %s is signed by %x, not by %s", kind, d, signer, want))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check group state: %w", err)
	}
	return nil
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
		rows, err := tx.Query(ctx, `SELECT seq, created_at, kind, tags FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, checkPage)
		if err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
		}
		for rows.Next() {
			var seq int64
			var tagsJSON []byte
			c := &tagCheck{want: map[string]bool{}}
			if err := rows.Scan(&seq, &c.createdAt, &c.kind, &tagsJSON); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check tags: %w", err)
			}
			tags, err := tagjson.Parse(string(tagsJSON))
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("check tags of #%d: %w", seq, err)
			}
			for _, t := range indexedTags(tags) {
				c.want[t.name+"\x00"+string(t.value)] = false
			}
			page[seq], last = c, seq
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
		}
		// The last page takes every row after it, whatever its seq.
		upto := int64(math.MaxInt64)
		if len(page) == checkPage {
			upto = last
		}
		broken := map[int64]bool{}
		rows, err = tx.Query(ctx, `SELECT seq, name, value, created_at, kind FROM tags WHERE seq > $1 AND seq <= $2`, after, upto)
		if err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
		}
		for rows.Next() {
			var seq, createdAt int64
			var name string
			var value []byte
			var kind int32
			if err := rows.Scan(&seq, &name, &value, &createdAt, &kind); err != nil {
				rows.Close()
				return nil, fmt.Errorf("check tags: %w", err)
			}
			c := page[seq]
			key := name + "\x00" + string(value)
			if c == nil || createdAt != c.createdAt {
				rep.ExtraTags++
				broken[seq] = true
				continue
			}
			_, called := c.want[key]
			if !called || kind != c.kind {
				rep.ExtraTags++
				broken[seq] = true
			}
			if called {
				c.want[key] = true
			}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check tags: %w", err)
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

// sameCounters compares stored counters with computed ones; a counter row
// of zeros is the same as none.
func sameCounters(a, b counters) bool {
	return a.replies == b.replies && a.descendants == b.descendants &&
		value(a.lastReplyAt) == value(b.lastReplyAt) && bytes.Equal(a.participants, b.participants)
}

// nullString is a nullable column's value as text, "null" for NULL.
func nullString(v *int64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
