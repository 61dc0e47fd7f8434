package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
)

// What the report says of the store and the machine.

// storeSize fills in the database's events, size and JSON size.
func storeSize(ctx context.Context, dir string, report *bench.Report) error {
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	opts, err := cmd.SQLiteOptions(cfg, "")
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		return err
	}
	var counted countingWriter
	n, err := store.Export(ctx, buzz.ExportFilter{WithDeleted: true}, &counted)
	if err = errors.Join(err, store.Close()); err != nil {
		return err
	}
	report.StoredEvents, report.JSONBytes = n, counted.n-n // without the newlines
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(filepath.Join(dir, cmd.DBFile+suffix)); err == nil {
			report.DBBytes += st.Size()
		}
	}
	return nil
}

// postgresSize fills in the PostgreSQL database's events, size and JSON
// size, counted as storeSize counts SQLite's: every event but the relay's
// group state (which export leaves out), deleted ones too; the size is
// the store's tables with their indexes and TOAST, and beside it the
// whole database's.
func postgresSize(ctx context.Context, url string, report *bench.Report) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id, pubkey, created_at, kind, tags, content, sig FROM events
		WHERE kind NOT BETWEEN 39000 AND 39003 AND (expires_at IS NULL OR expires_at > $1)`, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("postgres: read the events: %w", err)
	}
	var id, pubkey, tags, content, sig []byte
	var createdAt int64
	var kind int32
	_, err = pgx.ForEachRow(rows, []any{&id, &pubkey, &createdAt, &kind, &tags, &content, &sig}, func() error {
		ev := nostr.Event{ID: hex.EncodeToString(id), PubKey: hex.EncodeToString(pubkey), CreatedAt: nostr.Timestamp(createdAt),
			Kind: int(kind), Content: string(content), Sig: hex.EncodeToString(sig)}
		if err := json.Unmarshal(tags, &ev.Tags); err != nil {
			return fmt.Errorf("tags of event %s: %w", ev.ID, err)
		}
		b, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.ID, err)
		}
		report.StoredEvents++
		report.JSONBytes += int64(len(b))
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: read the events: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = current_schema()),
		pg_database_size(current_database())`).Scan(&report.DBBytes, &report.DatabaseBytes)
	if err != nil {
		return fmt.Errorf("postgres: database size: %w", err)
	}
	return nil
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// machine names the CPU and the Go runtime.
func machine() string {
	cpu := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %s %s/%s", cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
