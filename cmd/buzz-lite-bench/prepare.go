package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/postgres"
	"github.com/buzz-lite/buzz-lite/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
)

// The community the bench measures: generated into the store once, and
// reused by later runs.

// prepareBench fills the store with a generated community unless it holds
// one already: dir's SQLite file, or with pgURL that PostgreSQL database.
// Events are signed, then stored the way import stores them (their
// signatures were just made, so they are not checked again), and group
// state is signed once at the end.
func prepareBench(ctx context.Context, dir, pgURL string, channels, topLevel int, progress func(string, ...any)) error {
	if pgURL == "" {
		if _, err := os.Stat(filepath.Join(dir, cmd.DBFile)); err == nil {
			progress("using the database in %s", dir)
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	key, err := cmd.RelayKey(cfg, log)
	if err != nil {
		return err
	}
	policy, err := cfg.Access.Policy(cfg.Relay.Admins)
	if err != nil {
		return err
	}
	pgOptions := postgres.Options{URL: pgURL, Policy: &policy, RelayKey: key, Logger: log}
	if pgURL != "" {
		held, err := postgresCommunity(ctx, pgURL)
		if err != nil {
			return err
		}
		if held {
			// The relay key may be another than the one that signed the
			// community's group state (a data directory of its own each
			// run): the state is signed afresh with this one, as serve
			// would serve it.
			progress("using the community the bench generated in the PostgreSQL database")
			pg, err := postgres.Open(ctx, pgOptions)
			if err != nil {
				return err
			}
			if err := errors.Join(pg.RenewGroupState(ctx), pg.Close()); err != nil {
				return err
			}
			return analyze(ctx, pgURL)
		}
	}
	start := time.Now()
	where := dir
	if pgURL != "" {
		where = "the PostgreSQL database"
	}
	progress("generating %d channels of %d top-level messages with their threads into %s", channels, topLevel, where)
	community, err := gen.Generate(gen.Options{Channels: channels, TopLevel: topLevel})
	if err != nil {
		return err
	}
	generated := time.Since(start)
	// Opened once the community is signed: a run stopped while signing
	// leaves no empty database for the next run to take for its own.
	var store benchStore
	if pgURL != "" {
		store, err = postgres.Open(ctx, pgOptions)
	} else {
		opts, optsErr := cmd.SQLiteOptions(cfg, key)
		if optsErr != nil {
			return optsErr
		}
		opts.Logger = log
		store, err = sqlite.Open(ctx, opts)
	}
	if err != nil {
		return err
	}
	start = time.Now()
	evs := community.Events
	for i := 0; i < len(evs); i += 1000 {
		batch := evs[i:min(i+1000, len(evs))]
		outcomes, err := store.ImportBatch(ctx, batch)
		if err == nil {
			err = errors.Join(outcomes...)
		}
		if err != nil {
			return errors.Join(fmt.Errorf("storing the generated community: %w", err), store.Close())
		}
	}
	if err := store.RenewGroupState(ctx); err != nil {
		return errors.Join(err, store.Close())
	}
	if err := store.Close(); err != nil {
		return err
	}
	progress("%d events signed in %s, stored in %s (%.0f events/s)", len(evs), generated.Round(time.Second),
		time.Since(start).Round(time.Second), float64(len(evs))/time.Since(start).Seconds())
	if pgURL != "" {
		return analyze(ctx, pgURL)
	}
	return nil
}

// analyze has PostgreSQL gather the planner's statistics of the database
// at url, as after any bulk load: autovacuum may be off, or not yet have
// come round to it, and without statistics the planner took a thread
// page's recursive walk over every event in created_at order, seconds a
// page (docs/performance.md, issue 18).
func analyze(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}

// benchStore is what prepareBench needs of either store.
type benchStore interface {
	ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
	RenewGroupState(ctx context.Context) error
	Close() error
}

// postgresCommunity says whether the PostgreSQL database at url holds the
// community the bench generates, and refuses one that holds other events:
// the bench neither measures nor writes into a community it did not make.
// The generator is deterministic, so its community begins with the same
// event whatever its size: the creation of its first channel.
func postgresCommunity(ctx context.Context, url string) (bool, error) {
	first, err := gen.Generate(gen.Options{Channels: 1, TopLevel: 1})
	if err != nil {
		return false, err
	}
	marker, err := hex.DecodeString(first.Events[0].ID)
	if err != nil {
		return false, fmt.Errorf("the generated community's first event: %w", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	var events *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass('events')::text`).Scan(&events); err != nil {
		return false, fmt.Errorf("postgres: look for the events table: %w", err)
	}
	if events == nil {
		return false, nil
	}
	var holds, generated bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events), EXISTS (SELECT 1 FROM events WHERE id = $1)`, marker).
		Scan(&holds, &generated)
	if err != nil {
		return false, fmt.Errorf("postgres: look for the generated community: %w", err)
	}
	if holds && !generated {
		return false, errors.New("the PostgreSQL database holds events that are not the community the bench generates: " +
			"give the bench an empty database, or one it generated into")
	}
	return generated, nil
}
