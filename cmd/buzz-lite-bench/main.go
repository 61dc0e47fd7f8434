// Command buzz-lite-bench is buzz-lite's load and attack harness: it
// generates a community, runs the relay on it as a process of its own on
// loopback, and measures it with the concurrent clients of package bench
// (issue 6), or with --abuse runs the attacks of issue 13 against it. It is
// a program of its own so that the relay binary carries only what
// operators run; the relay it starts is itself, run as `buzz-lite serve`
// (package cmd, compiled in), so that it needs no buzz-lite binary beside
// it and measures the relay of its own source tree.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/cmd"
)

// asRelayEnv makes this program the relay it measures: withRelay starts it
// with asRelayEnv=1 and the command line of `buzz-lite serve`. Not
// BUZZ_LITE_: the relay refuses settings of that prefix it does not know.
const asRelayEnv = "BUZZLITEBENCH_AS_RELAY"

func main() {
	schema, err := sourceSchema()
	if err != nil {
		fmt.Fprintln(os.Stderr, "buzz-lite-bench:", err)
		os.Exit(1)
	}
	cmd.Schema = schema
	if os.Getenv(asRelayEnv) == "1" {
		os.Exit(cmd.Main(append([]string{"buzz-lite"}, os.Args[1:]...)))
	}
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "buzz-lite-bench:", err)
		os.Exit(1)
	}
}

// sourceSchema reads schema.sql from the source tree this program was
// built from: the relay it measures is that tree's (the package comment),
// and a file of the module root cannot be embedded from here.
func sourceSchema() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the source tree's schema.sql")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "schema.sql"))
	if err != nil {
		return "", fmt.Errorf("read the source tree's schema.sql (run buzz-lite-bench from its checkout, built without -trimpath): %w", err)
	}
	return string(b), nil
}

// The load benchmark (issue 6): a generated community in a data directory,
// the relay serving it as its own process on loopback, and concurrent
// clients of package bench measuring it.

func newApp() *cli.App {
	return &cli.App{
		Name:  "buzz-lite-bench",
		Usage: "measure the relay under load on a generated community (see docs/performance.md)",
		Description: "Generates a community into the data directory unless it holds a database already,\n" +
			"starts `buzz-lite serve` on it on loopback, and measures ingest over WebSocket, window\n" +
			"(deep pages asked uniformly and skewed as readers ask, Zipf-like), thread and REQ reads, the home\n" +
			"feed, live fan-out and the first screen, then the window again with the page cache off. Prints\n" +
			"throughput, latency percentiles, the share of window pages the page cache served, the relay's\n" +
			"peak anonymous and whole RSS and the database size per event, each against its target.\n\n" +
			"With --abuse it runs the attacks of issue 13 instead, each against a relay started for it\n" +
			"with its default limits, while an innocent client on another loopback address publishes\n" +
			"and REQs; it prints that client's latencies and the relay's peak anonymous RSS during each attack,\n" +
			"judged against RL-27.\n\n" +
			"With --against URL it runs the loads any relay answers on buzz-lite and on the relay at URL,\n" +
			"the same community in both, in alternating rounds, and prints both with their ratio.",
		UsageText:       "buzz-lite-bench [options]\n   buzz-lite-bench --against ws://HOST:PORT [--rounds N] [options]",
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "data directory to generate into or reuse (default: a temporary one, removed after); with --postgres it holds only the relay key"},
			&cli.StringFlag{Name: "postgres", Usage: "generate into and serve from the PostgreSQL (15+) database at `URL` instead of the data directory's SQLite file; " +
				"a database that holds events is reused only if they are the community the bench generates"},
			&cli.IntFlag{Name: "processes", Value: 1, Usage: "relay processes serving the database at once, the clients spread over them (more than 1 only with --postgres)"},
			// Not BUZZ_LITE_CONFIG: the relay measured takes none of the
			// caller's BUZZ_LITE_ settings unless asked.
			&cli.StringFlag{Name: "config", Usage: "the relay's configuration file (the bench's own settings, listen address and data directory win over it)"},
			&cli.IntFlag{Name: "channels", Value: 4, Usage: "channels of the generated community"},
			&cli.IntFlag{Name: "toplevel", Value: 27_000, Usage: "top-level messages per channel, about 9 events each with their threads (5,000 with --abuse)"},
			&cli.IntFlag{Name: "clients", Value: 16, Usage: "concurrent clients of each read measurement"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "length of each read measurement"},
			&cli.IntFlag{Name: "ingest", Value: 40_000, Usage: "events published over WebSocket in the ingest measurement"},
			&cli.IntFlag{Name: "ingest-conns", Value: 16, Usage: "connections publishing at once"},
			&cli.IntFlag{Name: "subscribers", Value: 1000, Usage: "live subscribers in the fan-out measurement"},
			&cli.IntFlag{Name: "fanout-events", Value: 256, Usage: "events delivered to every subscriber"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&cli.BoolFlag{Name: "abuse", Usage: "run the attacks of issue 13 instead, the relay with its default limits, and judge an innocent client's latency against RL-27"},
			&cli.DurationFlag{Name: "abuse-duration", Value: 10 * time.Second, Usage: "length of each attack"},
			&cli.Float64Flag{Name: "abuse-pace", Value: 4, Usage: "publishes and REQs a second of the innocent client, each"},
			&cli.IntFlag{Name: "abuse-large", Value: 300, Usage: "events near the event size limit the attacker stores to ask for"},
			&cli.GenericFlag{Name: "abuse-attack", Value: &attackNames{}, Usage: "run only the attack named, each as in the full run; repeat the flag for several (baseline, \"/query flood\", ...)"},
			&cli.IntFlag{Name: "abuse-sockets", Value: 3000, Usage: "WebSockets of the many-sockets attack (a sixth as many slowloris connections)"},
			&cli.StringFlag{Name: "against", Usage: "run the relay-neutral loads (REQ by #h head and deep, REQ by #e, a generic client's first screen, ingest) " +
				"on buzz-lite and on the relay at this WebSocket `URL` on the same data, publishing the community to it first if it lacks it, and print both with their ratio"},
			&cli.IntFlag{Name: "rounds", Value: 3, Usage: "alternating rounds of --against; the report gives each load's median"},
		},
		Action: runBench,
		// A mistake in the command line is answered by the error and a
		// short usage line, as the relay binary answers, not the whole help.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w\nusage: buzz-lite-bench [options] (see buzz-lite-bench --help)", err)
		},
	}
}
