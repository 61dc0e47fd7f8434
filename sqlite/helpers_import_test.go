package sqlite

// Helpers of check_test.go, export_test.go and rootonly_test.go: an
// import batch, and every event's stored classification and counters read
// with SQL. Names start with "im".

import (
	"context"
	"fmt"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// imState is every event's classification and counters, by event id: what
// two stores holding the same events must agree on.
func imState(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.readers.Query(`SELECT hex(e.id), coalesce(e.depth, -1), coalesce(hex(p.id), ''), coalesce(hex(r.id), ''),
		e.broadcast, e.row_class, coalesce(m.reply_count, 0), coalesce(m.descendant_count, 0),
		coalesce(m.last_reply_at, 0), coalesce(hex(m.participants), '')
		FROM events e LEFT JOIN events p ON p.seq = e.parent LEFT JOIN events r ON r.seq = e.root
		LEFT JOIN thread_metadata m ON m.seq = e.seq ORDER BY e.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, root, parts string
		var depth, bc, rc, replies, desc, last int64
		if err := rows.Scan(&id, &depth, &parent, &root, &bc, &rc, &replies, &desc, &last, &parts); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(id, depth, parent, root, bc, rc, replies, desc, last, parts))
	}
	return out
}

func imImport(t *testing.T, s *Store, evs []*nostr.Event) []error {
	t.Helper()
	out, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
