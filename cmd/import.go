package cmd

// import: events from JSON Lines, through the relay's own ingest (RL-25).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/importer"
	"github.com/buzz-lite/buzz-lite/internal/datadir"
)

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "store the events of a JSON Lines file (buzz-lite/strfry export, nak dump); - or nothing reads standard input",
		UsageText: "buzz-lite import [--strict] [--no-verify] [FILE|-]",
		Flags: append(commonFlags(), postgresFlag(),
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
	if !onPostgres(cfg) {
		// As serve does (RL-31): a directory or database that cannot be
		// written is refused before anything is created or read, not found
		// at the first event. No lock: import runs beside a relay.
		if cfg.Storage.DataDir, err = datadir.Prepare(cfg.Storage.DataDir); err != nil {
			return err
		}
		if err := datadir.Writable(filepath.Join(cfg.Storage.DataDir, DBFile)); err != nil {
			return err
		}
	}
	key, err := RelayKey(cfg, newLogger(cfg))
	if err != nil {
		return err
	}
	store, err := openStore(ctx, cfg, storeConfig{key: key, oneKey: true})
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
