package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// The statements the writer steps on its engine handle fail as the
// driver's do: a disk that fills up during an event's rows is the
// client's "storage is full" (RL-4), the event is not stored, and the
// store goes on writing once there is room again.
func TestWriterDirectStorageFull(t *testing.T) {
	s := ttOpen(t)
	sg := testutil.NewSigner(t)
	ctx := context.Background()
	pragma := func(q string) {
		t.Helper()
		if err := s.writer.do(ctx, func(tx *writeTx) error {
			_, err := s.writer.conn.ExecContext(tx.ctx, q)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	ttIngest(t, s, sg.Event(t, 9, ttBase, "root", ttH(ttChan)))
	var pages int64
	if err := s.readers.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	pragma(fmt.Sprintf("PRAGMA max_page_count = %d", pages))
	big := strings.Repeat("x", 64<<10)
	ev := sg.Event(t, 9, ttBase+1, big, ttH(ttChan))
	if err := s.Ingest(ctx, ev); !errors.Is(err, buzz.ErrStorageFull) {
		t.Fatalf("ingest on a full disk: %v; want %v", err, buzz.ErrStorageFull)
	}
	pragma("PRAGMA max_page_count = 4294967294")
	if err := s.Ingest(ctx, ev); err != nil {
		t.Fatalf("ingest once there is room again: %v", err)
	}
}

// A statement text kept twice on the writer's engine handle is one
// prepared statement, so that closing the store finalizes every one and
// the driver's close releases the handle.
func TestWriterDirectKeepsATextOnce(t *testing.T) {
	s := ttOpen(t)
	err := s.writer.do(context.Background(), func(tx *writeTx) error {
		hot := s.writer.stmts.hot
		kept := len(hot.stmts)
		first, err := hot.keep(`SELECT 1`)
		if err != nil {
			return err
		}
		again, err := hot.keep(`SELECT 1`)
		if err != nil {
			return err
		}
		if first != again || len(hot.stmts) != kept+1 {
			t.Errorf("keeping a text twice: %p and %p, %d statements kept after %d", first, again, len(hot.stmts), kept)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
