package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// ExportFilter selects the events Export writes.
type ExportFilter struct {
	// Channel limits the export to one channel's events (its h value).
	Channel string
	// Since and Until bound created_at, inclusive; nil is unbounded.
	Since, Until *int64
	// Kinds limits the export to these kinds; empty means all.
	Kinds []int
	// WithDeleted adds every deleted event and every deletion event (kinds
	// 5 and 9005). Without it, deleted events are left out, except two
	// kinds that go out with their deletions so that an import serves the
	// same: those that replies still hang below (the threads), and deleted
	// reactions and edits (the window's aux closure serves the deletions
	// of a message's reactions and edits, CW-18).
	WithDeleted bool
}

// deletesAnAnchor reports whether deletion ev deleted a stored event that
// still has replies below it, a reaction or edit, or a lifecycle event:
// the deletions a default export keeps.
func deletesAnAnchor(ctx context.Context, tx *sql.Tx, ev *nostr.Event) (bool, error) {
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "e" || !buzz.IsLowerHex64(tag[1]) {
			continue
		}
		id, _ := idKey(tag[1])
		var anchor bool
		err := tx.QueryRowContext(ctx, `SELECT e.deleted_at IS NOT NULL
			AND (e.kind IN (7, 40003, 9000, 9001, 9002, 9007, 9008, 9021, 9022)
			     OR EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq))
			FROM events e WHERE e.id = ?`, id).Scan(&anchor)
		if err != nil && err != sql.ErrNoRows {
			return false, fmt.Errorf("export: %w", err)
		}
		if anchor {
			return true, nil
		}
	}
	return false, nil
}

// exportPage is how many events one read transaction of Export reads:
// memory stays constant and no snapshot is held while the output is slow.
const exportPage = 1000

// Export writes the stored events selected by f to w as JSON Lines, one
// signed event per line and nothing else (the format of `strfry export` and
// `nak`), oldest first (`created_at ASC, id ASC`), so that an import sees
// parents before their replies. The relay's own group state (39000-39003)
// is never exported: import rebuilds it (RL-25). It returns how many events
// it wrote.
func (s *Store) Export(ctx context.Context, f ExportFilter, w io.Writer) (int64, error) {
	where := []string{"e.kind NOT BETWEEN 39000 AND 39003", "(e.expires_at IS NULL OR e.expires_at > ?)"}
	args := []any{s.nowUnix()}
	if !f.WithDeleted {
		// A deleted event that still has replies below goes out with the
		// deletion that deleted it: without it an import could not place
		// those replies, and the thread's counters would differ. So do
		// deleted reactions and edits, whose deletions the aux closure
		// serves. So do NIP-29 lifecycle events: deleting one does not
		// undo what it did to its channel, and import replays them.
		where = append(where, "(e.deleted_at IS NULL OR e.kind IN (7, 40003, 9000, 9001, 9002, 9007, 9008, 9021, 9022) OR EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq))")
	}
	if f.Channel != "" {
		var seqs []any
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			var err error
			seqs, err = s.channelSeqs(ctx, tx, []string{f.Channel})
			return err
		})
		if err != nil {
			return 0, err
		}
		if len(seqs) == 0 {
			return 0, nil
		}
		where = append(where, "e.channel = ?")
		args = append(args, seqs[0])
	}
	if f.Since != nil {
		where = append(where, "e.created_at >= ?")
		args = append(args, *f.Since)
	}
	if f.Until != nil {
		where = append(where, "e.created_at <= ?")
		args = append(args, *f.Until)
	}
	if len(f.Kinds) > 0 {
		where = append(where, "e.kind IN ("+placeholders(len(f.Kinds))+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	head := "SELECT " + eventSelect + " FROM events e WHERE " + strings.Join(where, " AND ")
	first := head + " ORDER BY e.created_at ASC, e.id ASC LIMIT ?"
	// The keyset continuation, with one numbered parameter for the time so
	// that the planner keeps the created_at range.
	next := head + " AND e.created_at >= ?" + fmt.Sprint(len(args)+1) +
		" AND (e.created_at > ?" + fmt.Sprint(len(args)+1) + " OR e.id > ?" + fmt.Sprint(len(args)+2) + ")" +
		" ORDER BY e.created_at ASC, e.id ASC LIMIT ?" + fmt.Sprint(len(args)+3)

	out := bufio.NewWriterSize(w, 256<<10)
	var (
		n      int64
		lastAt int64
		lastID []byte
	)
	for {
		var page []*nostr.Event
		scanned := 0
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			var rows *sql.Rows
			var err error
			if lastID == nil {
				rows, err = tx.QueryContext(ctx, first, append(args, exportPage)...)
			} else {
				rows, err = tx.QueryContext(ctx, next, append(args, lastAt, lastID, exportPage)...)
			}
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer rows.Close()
			for rows.Next() {
				ev, err := scanEvent(rows)
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				scanned++
				lastAt = int64(ev.CreatedAt)
				if lastID, err = decodeHex(ev.ID, 32); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if !f.WithDeleted && (ev.Kind == buzz.KindDeletion || ev.Kind == buzz.KindGroupDelete) {
					keep, err := deletesAnAnchor(ctx, tx, ev)
					if err != nil || !keep {
						continue
					}
				}
				page = append(page, ev)
			}
			return rows.Err()
		})
		if err != nil {
			return n, err
		}
		// Written after the read transaction: a slow output holds no
		// snapshot open.
		for _, ev := range page {
			if _, err := easyjson.MarshalToWriter(ev, out); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			if err := out.WriteByte('\n'); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			n++
		}
		if scanned < exportPage {
			break
		}
	}
	if err := out.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}
