package cmd

// check: the database against its own invariants, and --repair (RL-25).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify the database: SQLite integrity, thread counters, tag index, deletion marks, group state signed by the relay key; exit 1 when anything is wrong",
		UsageText: "buzz-lite check [--repair [--rekey]]",
		Before: func(c *cli.Context) error {
			if c.Bool("rekey") && !c.Bool("repair") {
				return usageErr(c, errors.New("--rekey goes with --repair"))
			}
			return argsBetween(0, 0, "")(c)
		},
		Flags: append(commonFlags(), postgresFlag(),
			&cli.BoolFlag{Name: "repair", Usage: "fix wrong counters, tag index rows and deletion marks, and sign the group state with the relay key, in one transaction"},
			&cli.BoolFlag{Name: "rekey", Usage: "with --repair on PostgreSQL: sign the group state another relay key signed with this one (every process of the community must then use it)"},
		),
		Action: onExistingKeyed(check, checkKey),
	}
}

// checkKey is the relay key check holds the group state to: the data
// directory's, which serve signs with (RL-21). Without one, check only
// reports (every group state is then signed by another key), and
// check --repair creates it as serve would, to sign with.
func checkKey(c *cli.Context, cfg config.Config) (string, error) {
	if !c.Bool("repair") {
		if _, err := os.Stat(relayKeyFile(cfg)); errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
	}
	return RelayKey(cfg, newLogger(cfg))
}

// maxListed is how many wrong counters check names one by one.
const maxListed = 50

func check(ctx context.Context, c *cli.Context, store commandStore) error {
	rep, err := store.Check(ctx, c.Bool("repair"))
	if err != nil {
		return err
	}
	out := c.App.Writer
	for _, line := range rep.Integrity {
		fmt.Fprintln(out, "integrity:", line)
	}
	if rep.ForeignKeys > 0 {
		fmt.Fprintf(out, "foreign keys: %s point nowhere\n", plural(rep.ForeignKeys, "row", "rows"))
	}
	for i, line := range rep.Counters {
		if i == maxListed {
			fmt.Fprintf(out, "counters: ... and %d more\n", len(rep.Counters)-maxListed)
			break
		}
		fmt.Fprintln(out, "counters:", line)
	}
	if rep.MissingTags > 0 || rep.ExtraTags > 0 {
		fmt.Fprintf(out, "tag index: %s missing, %s that no event calls for\n",
			plural(rep.MissingTags, "row", "rows"), plural(rep.ExtraTags, "row", "rows"))
	}
	if rep.DeletionMarks > 0 {
		fmt.Fprintf(out, "deletion marks: %s that a stored deletion names not marked so\n",
			plural(rep.DeletionMarks, "event", "events"))
	}
	for i, line := range rep.GroupState {
		if i == maxListed {
			fmt.Fprintf(out, "group state: ... and %d more\n", len(rep.GroupState)-maxListed)
			break
		}
		fmt.Fprintln(out, "group state:", line)
	}
	switch {
	case rep.OK():
		fmt.Fprintln(out, "ok")
		return nil
	case rep.Repaired && len(rep.Integrity) == 0 && rep.ForeignKeys == 0:
		fmt.Fprintln(out, "repaired")
		return nil
	case rep.Repaired:
		return errors.New("counters, tag index, deletion marks and group state repaired; the file itself is damaged: restore a backup")
	}
	return errors.New("check found problems (run with --repair to fix counters, tag index, deletion marks and group state)")
}
