package cmd

// backup: a consistent copy of the database while the relay runs (RL-25).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent snapshot of the database to PATH, while the relay serves",
		UsageText: "buzz-lite backup [--force] PATH",
		Flags: append(commonFlags(), postgresFlag(),
			&cli.BoolFlag{Name: "force", Usage: "overwrite PATH if it exists"},
		),
		Before: argsBetween(1, 1, "destination path"),
		Action: func(c *cli.Context) error {
			// Refused before anything connects: opening a PostgreSQL store
			// would bring its schema up to date first.
			if cfg, err := loadConfig(c); err == nil && onPostgres(cfg) {
				return errors.New(backupOnPostgres)
			}
			return onExisting(backup)(c)
		},
	}
}

// backupOnPostgres refuses a backup of a community in PostgreSQL (RL-33).
const backupOnPostgres = "backup: the community is in PostgreSQL: back it up with pg_dump (docs/scale-out.md)"

func backup(ctx context.Context, c *cli.Context, store commandStore) error {
	sq, err := onSQLite(store, backupOnPostgres)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := sq.Backup(ctx, c.Args().First(), c.Bool("force")); err != nil {
		return err
	}
	if isTerminal(os.Stderr) {
		fmt.Fprintf(os.Stderr, "backup written to %s in %s\n", c.Args().First(), time.Since(start).Round(time.Millisecond))
	}
	return nil
}
