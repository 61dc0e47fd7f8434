package cmd

// The operator's commands on a data directory (RL-25, issue 8), or with
// --postgres on a PostgreSQL database (RL-33), open it with these. Each
// works on a database the relay has open: SQLite's WAL and busy timeout,
// or PostgreSQL's own concurrency, let them run beside it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
)

// openExisting opens the community's database, refusing to create an
// SQLite file: an operator's command on a mistyped directory must say so.
// key, if set, gives the relay key the store signs group state with.
func openExisting(ctx context.Context, c *cli.Context, key func(*cli.Context, config.Config) (string, error)) (commandStore, error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return nil, err
	}
	sk := ""
	if key != nil {
		if sk, err = key(c, cfg); err != nil {
			return nil, err
		}
	}
	// check --repair signs group state: on PostgreSQL only with the key
	// that signed it, unless --rekey moves the community to another.
	return openStore(ctx, cfg, storeConfig{key: sk, existing: true, oneKey: c.Bool("repair") && !c.Bool("rekey")})
}

// onExisting makes the action of a command that works on the community's
// database: fn gets it open, with a context that ends on SIGINT or
// SIGTERM, and it is closed (an SQLite WAL checkpointed) afterwards.
func onExisting(fn func(ctx context.Context, c *cli.Context, store commandStore) error) cli.ActionFunc {
	return onExistingKeyed(fn, nil)
}

// onExistingKeyed is onExisting with the store's relay key given by key.
func onExistingKeyed(fn func(ctx context.Context, c *cli.Context, store commandStore) error,
	key func(*cli.Context, config.Config) (string, error)) cli.ActionFunc {
	return func(c *cli.Context) error {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		store, err := openExisting(ctx, c, key)
		if err != nil {
			return err
		}
		return errors.Join(fn(ctx, c, store), store.Close())
	}
}

// isTerminal reports whether f is a terminal: progress and summaries go
// there only (RL-25).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// plural is n with the noun's singular or plural form.
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// relayKeyFile is where the relay key of cfg's data directory is kept.
func relayKeyFile(cfg config.Config) string {
	if cfg.Relay.KeyFile != "" {
		return cfg.Relay.KeyFile
	}
	return filepath.Join(cfg.Storage.DataDir, "relay.key")
}
