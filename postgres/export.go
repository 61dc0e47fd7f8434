package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// exportDated is the Since and Until bounds of f on the created_at of
// table alias t, as conditions with their arguments added to q.
func exportDated(q *sqlQuery, f buzz.ExportFilter, t string) []string {
	var where []string
	if f.Since != nil {
		where = append(where, t+".created_at >= "+q.arg(*f.Since))
	}
	if f.Until != nil {
		where = append(where, t+".created_at <= "+q.arg(*f.Until))
	}
	return where
}

// Export writes the stored events selected by f to w (buzz.WriteExport),
// in the replay order (buzz.ReplayRank: oldest first, within one second
// parents before their replies and aux events after their targets, then
// by id), so that an import or a live relay sees parents first. The
// relay's own group state (39000-39003) is never exported: import
// rebuilds it (RL-25). Each event is written as stored, byte for byte as
// signed. It returns how many events it wrote; the selection is package
// sqlite's, event for event.
func (s *Store) Export(ctx context.Context, f buzz.ExportFilter, w io.Writer) (int64, error) {
	var channel *int64
	if f.Channel != "" {
		var seq int64
		err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
			return tx.QueryRow(ctx, `SELECT seq FROM channels WHERE h = $1`, f.Channel).Scan(&seq)
		})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("export: look up channel %s: %w", f.Channel, err)
		}
		channel = &seq
	}
	first, next := exportSQL(f, s.nowUnix(), channel)
	return buzz.WriteExport(w, func(after *buzz.ExportPosition) ([]buzz.ExportLine, error) {
		stmt := first
		if after != nil {
			stmt = next
			stmt.args = slices.Clone(next.args)
			stmt.args[len(stmt.args)-4], stmt.args[len(stmt.args)-3], stmt.args[len(stmt.args)-2] = after.CreatedAt, after.Rank, after.ID
		}
		var page []buzz.ExportLine
		err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
			var cols eventColumns
			var rank int64
			rows, err := tx.Query(ctx, stmt.sql, stmt.args...)
			return eachRow(rows, err, "export", append(cols.dest(), &rank), func() error {
				ev, err := cols.raw()
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				l := buzz.ExportLine{JSON: ev.JSON}
				l.At.CreatedAt, l.At.Rank = ev.CreatedAt, rank
				if l.At.ID, err = nipcw.DecodeHex(ev.ID, 32); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				page = append(page, l)
				return nil
			})
		})
		return page, err
	})
}

// exportSQL is the statement of Export's first page, and that of every
// page after it (its last four arguments are the created_at, replay rank
// and id after which the page starts, to be set, and the page size), each
// selecting eventSelect and the replay rank, at time now; channel is the
// number of f.Channel, nil for none.
func exportSQL(f buzz.ExportFilter, now int64, channel *int64) (first, next sqlQuery) {
	var q sqlQuery
	where := []string{"e.kind NOT BETWEEN 39000 AND 39003",
		"(e.expires_at IS NULL OR e.expires_at > " + q.arg(now) + ")"}
	if channel != nil {
		where = append(where, "e.channel = "+q.arg(*channel))
	}
	where = append(where, exportDated(&q, f, "e")...)
	if len(f.Kinds) > 0 {
		where = append(where, "e.kind = ANY("+q.arg(f.Kinds)+")")
	}
	if !f.WithDeleted {
		// A deleted event that still has replies below goes out with the
		// deletion that deleted it: without it an import could not place
		// those replies, and the thread's counters would differ. So do
		// those of buzz.ExportKeptDeletedKinds.
		keep := []string{"e.deleted_at IS NULL",
			"e.kind IN (" + buzz.ExportKeptDeletedKinds() + ")",
			"EXISTS (SELECT 1 FROM events c WHERE c.parent = e.seq OFFSET 0)"}
		// So does the target of a 9005 (named by its id in lowercase hex,
		// which the tag index keeps as its text) that goes out too
		// (buzz.ExportFilter.KeepsDeletionTargets).
		if f.KeepsDeletionTargets() {
			target := append([]string{"t.name = 'e'", "t.value = convert_to(encode(e.id, 'hex'), 'UTF8')",
				"t.kind = 9005", "d.deleted_at IS NULL"}, exportDated(&q, f, "d")...)
			keep = append(keep, "EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq WHERE "+
				strings.Join(target, " AND ")+" OFFSET 0)")
		}
		// OFFSET 0 keeps each EXISTS a probe of an index for the event at
		// hand: without it the planner may hash the whole subquery's
		// result once per statement, a scan of every event for each page.
		where = append(where, "("+strings.Join(keep, " OR ")+")")
	}
	rank := buzz.ReplayRankSQL("e")
	head := "SELECT " + eventSelect + ", " + rank + " FROM events e WHERE " + strings.Join(where, " AND ")
	order := " ORDER BY e.created_at ASC, " + rank + " ASC, e.id ASC LIMIT "
	first = q
	first.sql = head + order + first.arg(buzz.ExportPageSize)
	// The keyset continuation, the time bound apart so that the planner
	// keeps the created_at range.
	next = sqlQuery{args: slices.Clone(q.args)}
	at, r, id := next.arg(int64(0)), next.arg(int64(0)), next.arg([]byte(nil))
	next.sql = head + " AND e.created_at >= " + at + " AND (e.created_at > " + at + " OR (" + rank + ", e.id) > (" + r + ", " + id + "))" +
		order + next.arg(buzz.ExportPageSize)
	return first, next
}
