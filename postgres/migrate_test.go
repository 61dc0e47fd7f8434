package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Opening a database again applies no migration twice, and a database
// whose schema is newer than the binary's is refused.
func TestMigrations(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	s := suiteOpen(t, url, storetest.Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = suiteOpen(t, url, storetest.Config{})
	ctx := context.Background()
	var versions []int32
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || int(versions[len(versions)-1]) != len(migrations) {
		t.Fatalf("schema_migrations holds %v, want 1..%d once each", versions, len(migrations))
	}
	newer := len(migrations) + 1
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, newer); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{URL: url}); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("opening a newer database: %v, want a refusal", err)
	}
}
