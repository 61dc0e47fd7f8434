package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// Check is the store's consistency check, read in one snapshot: every
// thread counter agrees with its subtree, computed afresh, and the tag
// index holds exactly the rows of the events stored. It reports every
// disagreement found, joined.
func (s *Store) Check(ctx context.Context) error {
	var problems []error
	err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
		rows, err := tx.Query(ctx, `SELECT e.seq, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq
			WHERE t.seq IS NOT NULL OR EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq)
			ORDER BY e.seq`)
		if err != nil {
			return fmt.Errorf("check counters: %w", err)
		}
		type row struct {
			seq int64
			c   counters
		}
		var kept []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.seq, &r.c.replies, &r.c.descendants, &r.c.lastReplyAt, &r.c.participants); err != nil {
				rows.Close()
				return fmt.Errorf("check counters: %w", err)
			}
			kept = append(kept, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("check counters: %w", err)
		}
		for _, r := range kept {
			want, err := subtreeCounters(ctx, tx, r.seq)
			if err != nil {
				return err
			}
			if !sameCounters(r.c, want) {
				problems = append(problems, fmt.Errorf("counters of #%d: stored %s, subtree %s", r.seq, describe(r.c), describe(want)))
			}
		}
		return s.checkTags(ctx, tx, &problems)
	})
	if err != nil {
		return err
	}
	return errors.Join(problems...)
}

// checkTags compares the tag index with the tags of the events stored.
func (s *Store) checkTags(ctx context.Context, tx pgx.Tx, problems *[]error) error {
	want := map[int64][]string{}
	rows, err := tx.Query(ctx, `SELECT seq, tags FROM events`)
	if err != nil {
		return fmt.Errorf("check tags: %w", err)
	}
	for rows.Next() {
		var seq int64
		var tagsJSON []byte
		if err := rows.Scan(&seq, &tagsJSON); err != nil {
			rows.Close()
			return fmt.Errorf("check tags: %w", err)
		}
		tags, err := tagjson.Parse(string(tagsJSON))
		if err != nil {
			*problems = append(*problems, fmt.Errorf("tags of #%d: %w", seq, err))
			continue
		}
		var keys []string
		for _, t := range indexedTags(tags) {
			keys = append(keys, t.name+"\x00"+string(t.value))
		}
		want[seq] = keys
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check tags: %w", err)
	}
	have := map[int64][]string{}
	rows, err = tx.Query(ctx, `SELECT seq, name, value FROM tags`)
	if err != nil {
		return fmt.Errorf("check tags: %w", err)
	}
	for rows.Next() {
		var seq int64
		var name string
		var value []byte
		if err := rows.Scan(&seq, &name, &value); err != nil {
			rows.Close()
			return fmt.Errorf("check tags: %w", err)
		}
		have[seq] = append(have[seq], name+"\x00"+string(value))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check tags: %w", err)
	}
	for seq := range have {
		if _, ok := want[seq]; !ok {
			*problems = append(*problems, fmt.Errorf("tag index rows of #%d, which is not stored", seq))
		}
	}
	for seq, keys := range want {
		got := have[seq]
		slices.Sort(keys)
		slices.Sort(got)
		if !slices.Equal(keys, got) {
			*problems = append(*problems, fmt.Errorf("tag index of #%d: %d rows for %d tags", seq, len(got), len(keys)))
		}
	}
	return nil
}

// sameCounters compares stored counters with computed ones; a counter row
// of zeros is the same as none.
func sameCounters(a, b counters) bool {
	return a.replies == b.replies && a.descendants == b.descendants &&
		value(a.lastReplyAt) == value(b.lastReplyAt) && bytes.Equal(a.participants, b.participants)
}

func describe(c counters) string {
	return fmt.Sprintf("{replies %d, descendants %d, last %d, %d participants}",
		c.replies, c.descendants, value(c.lastReplyAt), len(c.participants)/participantSize)
}
