package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/mailru/easyjson"
)

// ExportFilter selects the events Export writes.
type ExportFilter struct {
	// Channel limits the export to one channel's events (its h value).
	Channel string
	// Since and Until bound created_at, inclusive; nil is unbounded.
	Since, Until *int64
	// Kinds limits the export to these kinds; empty means all.
	Kinds []int
	// WithDeleted adds the deleted events and the deletion events (kinds 5
	// and 9005) that deleted them; without it neither is written, so that
	// an import of the file has the live history only.
	WithDeleted bool
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
		where = append(where, "e.deleted_at IS NULL", "e.kind NOT IN (5, 9005)")
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
		page := 0
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
				page++
				lastAt = int64(ev.CreatedAt)
				if lastID, err = decodeHex(ev.ID, 32); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if _, err := easyjson.MarshalToWriter(ev, out); err != nil {
					return fmt.Errorf("export: write: %w", err)
				}
				if err := out.WriteByte('\n'); err != nil {
					return fmt.Errorf("export: write: %w", err)
				}
				n++
			}
			return rows.Err()
		})
		if err != nil {
			return n, err
		}
		if page < exportPage {
			break
		}
	}
	if err := out.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}
