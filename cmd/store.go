package cmd

// The two stores behind the commands (RL-33): the data directory's SQLite
// file, or with --postgres a PostgreSQL database that several relay
// processes share.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/postgres"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// commandStore is what the commands need of either store.
type commandStore interface {
	buzz.Store
	// ImportBatch stores the events of an import in one transaction.
	ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
	// RenewGroupState signs the group state of every channel afresh.
	RenewGroupState(ctx context.Context) error
	// RenewChangedGroupState does so once when the group state's form or
	// the configuration it reads changed (RL-36).
	RenewChangedGroupState(ctx context.Context) error
	// Backfill classifies the replies stored before their parents.
	Backfill(ctx context.Context) (buzz.BackfillResult, error)
	// Export writes the stored events f selects as JSON Lines.
	Export(ctx context.Context, f buzz.ExportFilter, w io.Writer) (int64, error)
	// Check verifies the database, repairing what it can with repair.
	Check(ctx context.Context, repair bool) (buzz.CheckReport, error)
	Close() error
}

// The compile-time proof that both stores are what the commands open.
var (
	_ commandStore = (*sqlite.Store)(nil)
	_ commandStore = (*postgres.Store)(nil)
)

// postgresFlag is --postgres, the flag of the commands RL-33 names.
func postgresFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "postgres",
		Usage: "keep everything in the PostgreSQL (15+) database at `URL` instead of the data directory's SQLite file; several relay processes may share it",
	}
}

// onPostgres reports whether cfg keeps the community in PostgreSQL.
func onPostgres(cfg config.Config) bool { return cfg.Storage.Postgres != "" }

// onSQLite is the SQLite store of a command only SQLite has (backup,
// reclassify), or the refusal of what stands in its place on PostgreSQL.
func onSQLite(store commandStore, refusal string) (*sqlite.Store, error) {
	if sq, ok := store.(*sqlite.Store); ok {
		return sq, nil
	}
	return nil, errors.New(refusal)
}

// storeConfig says how a command opens its store.
type storeConfig struct {
	// key is the relay identity key that signs group state, "" for
	// commands that change none.
	key string
	// serving marks serve: the configured community setting is applied,
	// and a PostgreSQL pool is sized for the relay's concurrent reads.
	serving bool
	// existing refuses to create a database: an operator's command on a
	// mistyped directory or URL must say so.
	existing bool
	// oneKey refuses, on PostgreSQL, a database whose group state another
	// relay key signed (RL-33): a process started without the community's
	// relay.key would create one and sign beside the others.
	oneKey bool
}

// openStore opens the store cfg names.
func openStore(ctx context.Context, cfg config.Config, sc storeConfig) (commandStore, error) {
	policy, err := cfg.Access.Policy(cfg.Relay.Admins)
	if err != nil {
		return nil, err
	}
	var threadReplies *bool
	if sc.serving {
		threadReplies = &cfg.Community.ThreadRepliesInChannel
	}
	if onPostgres(cfg) {
		opts := postgres.Options{
			URL:                    cfg.Storage.Postgres,
			Policy:                 &policy,
			ThreadRepliesInChannel: threadReplies,
			RelayKey:               sc.key,
			PageCacheBytes:         pageCacheOption(cfg),
			Logger:                 newLogger(cfg),
		}
		if sc.serving && !strings.Contains(cfg.Storage.Postgres, "pool_max_conns") {
			// A connection for each read the relay runs at once, the
			// write, and the background work (expiry, the live summary
			// push, the readiness round trip).
			opts.MaxConns = int32(cfg.Limits.MaxConcurrentQueries + 4)
		}
		opts.RequireSchema = sc.existing
		store, err := postgres.Open(ctx, opts)
		if err != nil || !sc.oneKey || sc.key == "" {
			return store, err
		}
		other, err := store.GroupStateSigner(ctx)
		if err == nil && other != "" {
			err = fmt.Errorf("this database's group state is signed by relay key %s, and %s holds another: "+
				"every process of a community signs with one key (copy its relay.key, docs/scale-out.md); "+
				"to sign it with this one from now on, run `buzz-lite check --repair --rekey` with it", other, relayKeyFile(cfg))
		}
		if err != nil {
			return nil, errors.Join(err, store.Close())
		}
		return store, nil
	}
	opts, err := SQLiteOptions(cfg, sc.key)
	if err != nil {
		return nil, err
	}
	opts.ThreadRepliesInChannel = threadReplies
	if sc.existing {
		if _, err := os.Stat(opts.Path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no buzz-lite database at %s (is --data right?)", opts.Path)
		}
	}
	return sqlite.Open(ctx, opts)
}

// SQLiteOptions are the options of the data directory's SQLite store under
// cfg; key is the relay identity key that signs group state, "" for
// commands that change none.
func SQLiteOptions(cfg config.Config, key string) (sqlite.Options, error) {
	policy, err := cfg.Access.Policy(cfg.Relay.Admins)
	if err != nil {
		return sqlite.Options{}, err
	}
	return sqlite.Options{
		Path:           filepath.Join(cfg.Storage.DataDir, DBFile),
		Schema:         Schema,
		Policy:         &policy,
		RelayKey:       key,
		PageCacheBytes: pageCacheOption(cfg),
		NoMap:          !cfg.Storage.MapReads,
		Logger:         newLogger(cfg),
	}, nil
}

// pageCacheOption is storage.page_cache_bytes in the stores' words: 0 is
// their default, a negative number off.
func pageCacheOption(cfg config.Config) int64 {
	if cfg.Storage.PageCacheBytes == 0 {
		return -1
	}
	return cfg.Storage.PageCacheBytes
}
