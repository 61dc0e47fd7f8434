package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/mailru/easyjson"

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

// Export writes the stored events selected by f to w (buzz.WriteExport),
// in the replay order (buzz.ReplayRank: oldest first, within one second
// parents before their replies and aux events after their targets, then
// by id), so that an import or a live relay sees parents first. The
// relay's own group state (39000-39003) is never exported: import rebuilds
// it (RL-25). It returns how many events it wrote.
func (s *Store) Export(ctx context.Context, f buzz.ExportFilter, w io.Writer) (int64, error) {
	var channel any
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
		channel = seqs[0]
	}
	first, next, args := exportSQL(f, s.nowUnix(), channel)
	return buzz.WriteExport(w, func(after *buzz.ExportPosition) ([]buzz.ExportLine, error) {
		var page []buzz.ExportLine
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			var rows *sql.Rows
			var err error
			if after == nil {
				rows, err = tx.QueryContext(ctx, first, append(args, buzz.ExportPageSize)...)
			} else {
				rows, err = tx.QueryContext(ctx, next, append(args, after.CreatedAt, after.Rank, after.ID, buzz.ExportPageSize)...)
			}
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer rows.Close()
			for rows.Next() {
				var l buzz.ExportLine
				ev, err := scanEvent(rankScanner{rows, &l.At.Rank})
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				l.At.CreatedAt = int64(ev.CreatedAt)
				if l.At.ID, err = nipcw.DecodeHex(ev.ID, 32); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if l.JSON, err = easyjson.Marshal(ev); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				page = append(page, l)
			}
			return rows.Err()
		})
		return page, err
	})
}

// exportSQL is the statement of Export's first page and that of every
// page after it, each selecting eventSelect and the replay rank, and
// their arguments for f at time now; channel is the number of f.Channel,
// nil for none. The first page takes the page size after args; every
// later page the created_at, replay rank and id after which it starts,
// then the page size.
func exportSQL(f buzz.ExportFilter, now int64, channel any) (first, next string, args []any) {
	where := []string{"e.kind NOT BETWEEN 39000 AND 39003", "(e.expires_at IS NULL OR e.expires_at > ?)"}
	args = []any{now}
	if channel != nil {
		where = append(where, "e.channel = ?")
		args = append(args, channel)
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
		// those of buzz.ExportKeptDeletedKinds.
		keep := []string{"e.deleted_at IS NULL",
			"e.kind IN (" + buzz.ExportKeptDeletedKinds() + ")",
			"EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq)"}
		// So does the target of a 9005 (named by its id) that goes out
		// too (buzz.ExportFilter.KeepsDeletionTargets).
		if f.KeepsDeletionTargets() {
			dated, at := exportDated(f, "d")
			target := append([]string{"t.name = 'e'", "t.value = e.id", "t.kind = 9005", "d.deleted_at IS NULL"}, dated...)
			args = append(args, at...)
			keep = append(keep, "EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq WHERE "+
				strings.Join(target, " AND ")+")")
		}
		where = append(where, "("+strings.Join(keep, " OR ")+")")
	}
	rank := buzz.ReplayRankSQL("e")
	head := "SELECT " + eventSelect + ", " + rank + " FROM events e WHERE " + strings.Join(where, " AND ")
	first = head + " ORDER BY e.created_at ASC, " + rank + " ASC, e.id ASC LIMIT ?"
	// The keyset continuation, with one numbered parameter for the time so
	// that the planner keeps the created_at range.
	n := len(args)
	afterAt, afterRank, afterID, limit := fmt.Sprint("?", n+1), fmt.Sprint("?", n+2), fmt.Sprint("?", n+3), fmt.Sprint("?", n+4)
	next = head + " AND e.created_at >= " + afterAt + " AND (e.created_at > " + afterAt +
		" OR (" + rank + ", e.id) > (" + afterRank + ", " + afterID + "))" +
		" ORDER BY e.created_at ASC, " + rank + " ASC, e.id ASC LIMIT " + limit
	return first, next, args
}

// rankScanner scans eventSelect and, after it, the replay rank into rank.
type rankScanner struct {
	rows *sql.Rows
	rank *int64
}

func (r rankScanner) Scan(dest ...any) error { return r.rows.Scan(append(dest, r.rank)...) }
