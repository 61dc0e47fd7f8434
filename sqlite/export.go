package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// exportDated is the Since and Until bounds of f on the created_at of
// table alias t, as conditions and their arguments.
func exportDated(f buzz.ExportFilter, t string) ([]string, []any) {
	var where []string
	var args []any
	if f.Since != nil {
		where = append(where, t+".created_at >= ?")
		args = append(args, *f.Since)
	}
	if f.Until != nil {
		where = append(where, t+".created_at <= ?")
		args = append(args, *f.Until)
	}
	return where, args
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
func (s *Store) Export(ctx context.Context, f buzz.ExportFilter, w io.Writer) (int64, error) {
	where := []string{"e.kind NOT BETWEEN 39000 AND 39003", "(e.expires_at IS NULL OR e.expires_at > ?)"}
	args := []any{s.nowUnix()}
	if f.Channel != "" {
		var seqs []any
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			var err error
			seqs, err = s.channelSeqs([]string{f.Channel}, channelIn(ctx, tx))
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
	dated, at := exportDated(f, "e")
	where, args = append(where, dated...), append(args, at...)
	if len(f.Kinds) > 0 {
		// A channel's export walks the channel, not the kind across
		// every channel (the unary + keeps events_kind from driving).
		col := "e.kind"
		if f.Channel != "" {
			col = "+e.kind"
		}
		where = append(where, col+" IN ("+placeholders(len(f.Kinds))+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	if !f.WithDeleted {
		// A deleted event that still has replies below goes out with the
		// deletion that deleted it: without it an import could not place
		// those replies, and the thread's counters would differ. So do
		// deleted reactions and edits, whose deletions the aux closure
		// serves. So do NIP-29 lifecycle events: deleting one does not
		// undo what it did to its channel, and import replays them.
		keep := []string{"e.deleted_at IS NULL",
			"e.kind IN (7, 40003, 9000, 9001, 9002, 9007, 9008, 9021, 9022)",
			"EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq)"}
		// So does the target of a 9005 (named by its id) that goes out
		// too, to be deleted again on import: RL-6 refuses a 9005 whose
		// target is not stored, while a kind 5 is stored without its
		// target (NIP-09) and refuses it when it arrives. A target whose
		// 9005 the filter leaves out would come back alive: it stays out.
		if len(f.Kinds) == 0 || slices.Contains(f.Kinds, buzz.KindGroupDelete) {
			dated, at := exportDated(f, "d")
			target := append([]string{"t.name = 'e'", "t.value = e.id", "t.kind = 9005", "d.deleted_at IS NULL"}, dated...)
			args = append(args, at...)
			keep = append(keep, "EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq WHERE "+
				strings.Join(target, " AND ")+")")
		}
		where = append(where, "("+strings.Join(keep, " OR ")+")")
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
				if lastID, err = nipcw.DecodeHex(ev.ID, 32); err != nil {
					return fmt.Errorf("export: %w", err)
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
