package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Issue 15: the read connections, of the read pool and of the pages, map
// the database file unless told not to (storage.map_reads = false); the
// writer never maps it.
func TestReadConnectionsMapTheDatabase(t *testing.T) {
	for _, noMap := range []bool{false, true} {
		ctx := context.Background()
		s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "m.db"), Schema: testutil.Schema(t), NoMap: noMap})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		want := int64(readMmapSize)
		if noMap {
			want = 0
		}
		var pool int64
		if err := s.readers.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&pool); err != nil {
			t.Fatal(err)
		}
		var page int64
		if err := s.directRead(ctx, func(tx directTx) (err error) {
			page, err = tx.int64("PRAGMA mmap_size")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var writer int64
		if err := s.writer.conn.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&writer); err != nil {
			t.Fatal(err)
		}
		if pool != want || page != want || writer != 0 {
			t.Errorf("NoMap %v: read pool maps %d, page connections %d, writer %d; want %d, %d, 0", noMap, pool, page, writer, want, want)
		}
	}
}
