package main

// backup: a consistent copy of the database while the relay runs (RL-25).

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/sqlite"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "write a consistent snapshot of the database to PATH, while the relay serves",
		UsageText: "buzz-lite backup [--force] PATH",
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "force", Usage: "overwrite PATH if it exists"},
		),
		Before: argsBetween(1, 1, "destination path"),
		Action: onExisting(backup),
	}
}

func backup(ctx context.Context, c *cli.Context, store *sqlite.Store) error {
	start := time.Now()
	if err := store.Backup(ctx, c.Args().First(), c.Bool("force")); err != nil {
		return err
	}
	if isTerminal(os.Stderr) {
		fmt.Fprintf(os.Stderr, "backup written to %s in %s\n", c.Args().First(), time.Since(start).Round(time.Millisecond))
	}
	return nil
}
