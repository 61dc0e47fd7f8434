package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/importer"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// The operator's commands on a data directory (RL-25, issue 8). Each works
// on a database the relay has open: SQLite's WAL and busy timeout let them
// run beside it.

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write stored events as JSON Lines (strfry/nak format), oldest first",
		UsageText: "buzz-lite export [--channel H] [--since UNIX] [--until UNIX] [--kinds K,...] [--with-deleted] [-o FILE]",
		Before:    argsBetween(0, 0, ""),
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "channel", Usage: "only this channel's events (its h tag value: a UUID or a NIP-29 group id, as written)"},
			&cli.Int64Flag{Name: "since", Usage: "only events with created_at >= `UNIX`"},
			&cli.Int64Flag{Name: "until", Usage: "only events with created_at <= `UNIX`"},
			&cli.StringFlag{Name: "kinds", Usage: "only these kinds, comma-separated (e.g. 9,7)"},
			&cli.BoolFlag{Name: "with-deleted", Usage: "also every deleted event (every deletion goes out either way)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of standard output"},
		),
		Action: onExisting(export),
	}
}

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

// openExisting opens the database of the data directory, refusing to create
// one: an operator's command on a mistyped directory must say so. key, if
// set, gives the relay key the store signs group state with.
func openExisting(ctx context.Context, c *cli.Context, key func(*cli.Context, config.Config) (string, error)) (*sqlite.Store, error) {
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
	opts, err := storeOptions(cfg, sk)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(opts.Path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no buzz-lite database at %s (is --data right?)", opts.Path)
	}
	return sqlite.Open(ctx, opts)
}

// onExisting makes the action of a command that works on the database of
// the data directory: fn gets it open, with a context that ends on SIGINT
// or SIGTERM, and it is closed (and its WAL checkpointed) afterwards.
func onExisting(fn func(ctx context.Context, c *cli.Context, store *sqlite.Store) error) cli.ActionFunc {
	return onExistingKeyed(fn, nil)
}

// onExistingKeyed is onExisting with the store's relay key given by key.
func onExistingKeyed(fn func(ctx context.Context, c *cli.Context, store *sqlite.Store) error,
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

func export(ctx context.Context, c *cli.Context, store *sqlite.Store) error {
	f := sqlite.ExportFilter{Channel: c.String("channel"), WithDeleted: c.Bool("with-deleted")}
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
		// Written beside the target and renamed when complete: an
		// interrupted export never leaves a truncated file under its name.
		file, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer os.Remove(file.Name())
		defer file.Close()
		out, tmp = file, file.Name()
	}
	start := time.Now()
	n, err := store.Export(ctx, f, out)
	if err != nil {
		return err
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

// isTerminal reports whether f is a terminal: progress and summaries go
// there only (RL-25).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "store the events of a JSON Lines file (buzz-lite/strfry export, nak dump); - or nothing reads standard input",
		UsageText: "buzz-lite import [--strict] [--no-verify] [FILE|-]",
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "no-verify", Usage: "skip id and signature checks (only for dumps you made yourself)"},
			&cli.BoolFlag{Name: "strict", Usage: "stop at the first bad line"},
		),
		Before: argsBetween(0, 1, "FILE"),
		Action: importEvents,
	}
}

// maxReported is how many bad lines an import names one by one.
const maxReported = 100

func importEvents(c *cli.Context) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	in, size := os.Stdin, int64(0)
	if name := c.Args().First(); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in = f
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Storage.DataDir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	key, err := relayKey(cfg, newLogger(cfg))
	if err != nil {
		return err
	}
	storeOpts, err := storeOptions(cfg, key)
	if err != nil {
		return err
	}
	store, err := sqlite.Open(ctx, storeOpts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	tty := isTerminal(os.Stderr)
	start := time.Now()
	reported := 0
	opts := importer.Options{
		NoVerify: c.Bool("no-verify"),
		Strict:   c.Bool("strict"),
		Problem: func(b importer.BadLine) {
			if reported < maxReported {
				fmt.Fprintf(os.Stderr, "line %d: %s\n", b.Line, b.Reason)
			}
			reported++
		},
	}
	if tty {
		opts.Progress = func(read int64, lines int) { fmt.Fprint(os.Stderr, progressLine(read, size, lines, time.Since(start))) }
	}
	sum, err := importer.Run(ctx, in, store, opts)
	if tty {
		fmt.Fprintln(os.Stderr)
	}
	if reported > maxReported {
		fmt.Fprintf(os.Stderr, "... and %s more\n", plural(reported-maxReported, "bad line", "bad lines"))
	}
	out := c.App.Writer
	fmt.Fprintf(out, "%s in %s: %d accepted, %d duplicate, %d replaced by a newer version, %d rejected\n",
		plural(sum.Lines, "line", "lines"), time.Since(start).Round(time.Millisecond), sum.Accepted, sum.Duplicate, sum.Replaced, sum.Bad())
	for _, reason := range sum.Reasons() {
		fmt.Fprintf(out, "  %6d  %s\n", sum.Rejected[reason], reason)
	}
	// Replies met before their parents were kept unclassified: classify
	// them now that the file is in (as far as it went, after a stop).
	res, berr := store.Backfill(ctx)
	// The channels' group state was left for the end, when their lifecycle
	// events are all in.
	gerr := store.RenewGroupState(ctx)
	if err := errors.Join(err, berr, gerr); err != nil {
		return err
	}
	if res.Classified > 0 || res.Waiting > 0 {
		fmt.Fprintf(out, "threads: %s classified after the import, %d still without their parent\n",
			plural(res.Classified, "reply", "replies"), res.Waiting)
	}
	// A file that did not go in whole is a failed import to a script
	// (issue 14); --strict has stopped at the first bad line already.
	if n := sum.Bad(); n > 0 {
		return fmt.Errorf("import: %s rejected (the summary above says why)", plural(n, "line", "lines"))
	}
	return nil
}

// plural is n with the noun's singular or plural form.
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progressLine is the one-line progress display of a long command: how
// far, how fast, and how long still when the total is known.
func progressLine(done, total int64, lines int, elapsed time.Duration) string {
	rate := float64(lines) / max(elapsed.Seconds(), 0.001)
	s := fmt.Sprintf("\r%s, %.0f/s", plural(lines, "line", "lines"), rate)
	if total > 0 && done > 0 {
		frac := float64(done) / float64(total)
		eta := time.Duration(float64(elapsed) * (1 - frac) / frac).Round(time.Second)
		s += fmt.Sprintf(", %3.0f%%, %s left", 100*frac, eta)
	}
	return s + "   "
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify the database: SQLite integrity, thread counters, tag index, group state signed by the relay key; exit 1 when anything is wrong",
		UsageText: "buzz-lite check [--repair]",
		Before:    argsBetween(0, 0, ""),
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "repair", Usage: "fix wrong counters and tag index rows, and sign the group state with the relay key, in one transaction"},
		),
		Action: onExistingKeyed(check, checkKey),
	}
}

// relayKeyFile is where the relay key of cfg's data directory is kept.
func relayKeyFile(cfg config.Config) string {
	if cfg.Relay.KeyFile != "" {
		return cfg.Relay.KeyFile
	}
	return filepath.Join(cfg.Storage.DataDir, "relay.key")
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
	return relayKey(cfg, newLogger(cfg))
}

func backfillCommand() *cli.Command {
	return &cli.Command{
		Name:      "backfill",
		Usage:     "classify channel messages stored without thread metadata whose parent is now stored",
		UsageText: "buzz-lite backfill [--reclassify]",
		Before:    argsBetween(0, 0, ""),
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "reclassify", Usage: "first make the root-only replies stored top-level before CW-10 changed (2026-12-03) replies of their root"},
		),
		Action: onExisting(backfill),
	}
}

// maxListed is how many wrong counters check names one by one.
const maxListed = 50

func check(ctx context.Context, c *cli.Context, store *sqlite.Store) error {
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
		return errors.New("counters, tag index and group state repaired; the file itself is damaged: restore a backup")
	}
	return errors.New("check found problems (run with --repair to fix counters, tag index and group state)")
}

func backfill(ctx context.Context, c *cli.Context, store *sqlite.Store) error {
	if c.Bool("reclassify") {
		// Before the backfill, so that a reply still waiting below an event
		// that moves is classified once, at its new depth.
		res, err := store.Reclassify(ctx)
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
