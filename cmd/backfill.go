package cmd

// backfill: thread metadata for messages stored before their parent (RL-25).

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"
)

func backfillCommand() *cli.Command {
	return &cli.Command{
		Name:      "backfill",
		Usage:     "classify channel messages stored without thread metadata whose parent is now stored",
		UsageText: "buzz-lite backfill [--reclassify]",
		Before:    argsBetween(0, 0, ""),
		Flags: append(commonFlags(), postgresFlag(),
			&cli.BoolFlag{Name: "reclassify", Usage: "first make the root-only replies stored top-level before CW-10 changed (2026-12-03) replies of their root"},
		),
		Action: onExisting(backfill),
	}
}

func backfill(ctx context.Context, c *cli.Context, store commandStore) error {
	if c.Bool("reclassify") {
		// Before the backfill, so that a reply still waiting below an event
		// that moves is classified once, at its new depth.
		sq, err := onSQLite(store, "backfill --reclassify: nothing to reclassify on PostgreSQL: its replies were classified by the current rule (CW-10 of 2026-12-03) from the start")
		if err != nil {
			return err
		}
		res, err := sq.Reclassify(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "reclassified %s as replies of their root, %d kept top-level (ingest would refuse them now)\n",
			plural(res.Reclassified, "root-only reply", "root-only replies"), res.Kept)
	}
	res, err := store.Backfill(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "%s classified, %d still without their parent or breaking a thread rule\n",
		plural(res.Classified, "message", "messages"), res.Waiting)
	return nil
}
