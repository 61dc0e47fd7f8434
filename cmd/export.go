package cmd

// export: the data directory's events as JSON Lines (RL-25).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/buzz"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write stored events as JSON Lines (strfry/nak format), oldest first",
		UsageText: "buzz-lite export [--channel H] [--since UNIX] [--until UNIX] [--kinds K,...] [--with-deleted] [-o FILE]",
		Before:    argsBetween(0, 0, ""),
		Flags: append(commonFlags(), postgresFlag(),
			&cli.StringFlag{Name: "channel", Usage: "only this channel's events: a UUID (any spelling) or a NIP-29 group id (as written, letter case included)"},
			&cli.Int64Flag{Name: "since", Usage: "only events with created_at >= `UNIX`"},
			&cli.Int64Flag{Name: "until", Usage: "only events with created_at <= `UNIX`"},
			&cli.StringFlag{Name: "kinds", Usage: "only these kinds, comma-separated (e.g. 9,7)"},
			&cli.BoolFlag{Name: "with-deleted", Usage: "also every deleted event (every deletion goes out either way)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of standard output"},
		),
		Action: onExisting(export),
	}
}

func export(ctx context.Context, c *cli.Context, store commandStore) error {
	f := buzz.ExportFilter{WithDeleted: c.Bool("with-deleted")}
	if c.IsSet("channel") {
		ch, err := channelFlag(c)
		if err != nil {
			return err
		}
		f.Channel = ch
	}
	if c.IsSet("since") {
		v := c.Int64("since")
		f.Since = &v
	}
	if c.IsSet("until") {
		v := c.Int64("until")
		f.Until = &v
	}
	if c.IsSet("kinds") {
		for _, k := range strings.Split(c.String("kinds"), ",") {
			n, err := strconv.Atoi(strings.TrimSpace(k))
			if err != nil {
				return usageErr(c, fmt.Errorf("--kinds: %q is not a kind number", k))
			}
			f.Kinds = append(f.Kinds, n)
		}
	}

	out := os.Stdout
	tmp := ""
	if path := c.String("output"); path != "" {
		st, err := os.Stat(path)
		switch {
		case err == nil && st.IsDir():
			return fmt.Errorf("export: %s is a directory", path)
		case err == nil && !st.Mode().IsRegular():
			// A device or a pipe (/dev/null, /dev/stdout, a FIFO) is
			// written to: renamed over, it would become a file.
			file, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer file.Close()
			out = file
		case err == nil || errors.Is(err, fs.ErrNotExist):
			// Written beside the target and renamed when complete: an
			// interrupted export never leaves a truncated file under its
			// name.
			file, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer os.Remove(file.Name())
			defer file.Close()
			out, tmp = file, file.Name()
		default:
			return fmt.Errorf("export: %w", err)
		}
	}
	start := time.Now()
	n, err := store.Export(ctx, f, out)
	if err != nil {
		return err
	}
	if out != os.Stdout && tmp == "" {
		if err := out.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if tmp != "" {
		if err := out.Sync(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if err := os.Rename(tmp, c.String("output")); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if isTerminal(os.Stderr) {
		fmt.Fprintf(os.Stderr, "exported %s in %s\n", plural(n, "event", "events"), time.Since(start).Round(time.Millisecond))
	}
	return nil
}
