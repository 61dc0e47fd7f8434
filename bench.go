package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/nipcw"
	"github.com/buzz-lite/buzz-lite/postgres"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// The load benchmark (issue 6): a generated community in a data directory,
// the relay serving it as its own process on loopback, and concurrent
// clients of package bench measuring it.

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure the relay under load on a generated community (see docs/performance.md)",
		Description: "Generates a community into the data directory unless it holds a database already,\n" +
			"starts `buzz-lite serve` on it on loopback, and measures ingest over WebSocket, window,\n" +
			"thread and REQ reads, the home feed, live fan-out and the first screen, then the window again with\n" +
			"the page cache off. Prints throughput, latency percentiles, the relay's peak anonymous RSS and\n" +
			"the database size per event, each against its target.\n\n" +
			"With --abuse it runs the attacks of issue 13 instead, each against a relay started for it\n" +
			"with its default limits, while an innocent client on another loopback address publishes\n" +
			"and REQs; it prints that client's latencies and the relay's peak anonymous RSS during each attack,\n" +
			"judged against RL-27.",
		ArgsUsage: " ",
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
		},
		Action: runBench,
	}
}

// fanoutRound is how many live events the fan-out measurement publishes
// before it waits for their delivery: enough to keep delivery busy, few
// enough that an event's latency is mostly its own delivery, not the
// queue of the events before it.
const fanoutRound = 8

// walkPages bounds the walk that finds the cursors of a channel's window
// pages: 5 million rows.
const walkPages = 100_000

// feedMentionCount is how many events of the run name the feed's reader:
// half a feed page, so that the rest of the page is its activity.
const feedMentionCount = 10

// feedMentions are publisher's messages in channel that mention reader
// (secret keys, hex), and one reminder for it (RL-35), dated now.
func feedMentions(publisher, reader, channel string) ([]*nostr.Event, error) {
	pk, err := nostr.GetPublicKey(reader)
	if err != nil {
		return nil, err
	}
	evs := make([]*nostr.Event, feedMentionCount)
	for i := range evs {
		evs[i] = &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", channel}, {"p", pk}},
			Content: fmt.Sprintf("for you %d", i)}
	}
	evs[0].Kind, evs[0].Tags = 40007, nostr.Tags{{"p", pk}}
	for _, ev := range evs {
		if err := ev.Sign(publisher); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// The mixed measurement (issue 15): window pages of every open channel's
// head, the first mixedDeepPages pages of the read channel and the head of
// the channel written to, while a message is written every mixedPace.
const (
	mixedDeepPages = 10
	mixedPace      = 20 * time.Millisecond
)

// relayExecutable is the program started as the relay under load.
var relayExecutable = os.Executable

func runBench(c *cli.Context) error {
	for _, name := range []string{"channels", "toplevel", "clients", "ingest", "ingest-conns", "subscribers", "fanout-events", "processes"} {
		if c.Int(name) < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	if c.Duration("duration") <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", c.Duration("duration"))
	}
	pgURL, processes := c.String("postgres"), c.Int("processes")
	// One SQLite file is served by one process (RL-31).
	if processes > 1 && pgURL == "" {
		return fmt.Errorf("--processes %d needs --postgres: a data directory's SQLite file is served by one process", processes)
	}
	// The attacks judge SQLite's WAL and one process's memory.
	if c.Bool("abuse") && pgURL != "" {
		return errors.New("--abuse runs on the data directory's SQLite file, not with --postgres")
	}
	var abuse *bench.Abuse
	var attacks []string
	if c.Bool("abuse") {
		var err error
		abuse, err = bench.NewAbuse(bench.AbuseOptions{Duration: c.Duration("abuse-duration"), Pace: c.Float64("abuse-pace"),
			LargeEvents: c.Int("abuse-large"), Sockets: c.Int("abuse-sockets"), Attacker: abuseAttacker, Innocent: abuseInnocent})
		if err != nil {
			return err
		}
		if attacks, err = chosenAttacks(abuse.Attacks(), *c.Generic("abuse-attack").(*attackNames)); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...) }

	dir := c.String("data")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "buzz-lite-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	topLevel := c.Int("toplevel")
	if abuse != nil && !c.IsSet("toplevel") {
		topLevel = abuseTopLevel
	}
	if err := prepareBench(ctx, dir, pgURL, c.Int("channels"), topLevel, progress); err != nil {
		return err
	}
	if abuse != nil {
		return runAbuse(ctx, c, abuse, attacks, dir, progress)
	}

	// What the run publishes, signed before any clock starts: a fresh
	// community of one channel for ingest, then live messages in it.
	ingest, err := gen.Generate(gen.Options{Seed: uint64(time.Now().UnixNano()), Channels: 1,
		TopLevel: max(1, c.Int("ingest")/9), Start: time.Now().Unix() - int64(c.Int("ingest"))})
	if err != nil {
		return err
	}
	setup, load := ingest.Split()
	live := make([]*nostr.Event, c.Int("fanout-events"))
	publisher := nostr.GeneratePrivateKey()
	for i := range live {
		live[i] = &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", ingest.Channels[0]}},
			Content: fmt.Sprintf("live %d", i)}
		if err := live[i].Sign(publisher); err != nil {
			return err
		}
	}

	// The home feed's reader, whom the community never mentions: the run
	// mentions it in the ingest channel and asks for a reminder of it.
	reader := nostr.GeneratePrivateKey()
	mentions, err := feedMentions(publisher, reader, ingest.Channels[0])
	if err != nil {
		return err
	}
	// The mixed measurement's writes: a message to the ingest channel
	// every mixedPace for as long as its reads run.
	mixed := make([]*nostr.Event, int(c.Duration("duration")/mixedPace)+1)
	for i := range mixed {
		mixed[i] = &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", ingest.Channels[0]}},
			Content: fmt.Sprintf("mixed %d", i)}
		if err := mixed[i].Sign(publisher); err != nil {
			return err
		}
	}

	report := bench.Report{Machine: machine(), Cores: runtime.NumCPU(), Store: "sqlite", Processes: processes, Screens: map[string]bench.Screen{}}
	if pgURL != "" {
		report.Store = "postgres"
	}
	progress("measuring one core's signature verifications")
	if report.VerifyPerCore, err = bench.VerifyRate(load[:min(len(load), 256)], 3*time.Second); err != nil {
		return err
	}

	clients, d := c.Int("clients"), c.Duration("duration")
	run := relayRun{dir: dir, config: c.String("config"), postgres: pgURL}
	if processes > 1 {
		progress("%d relay processes on the database, the clients spread over them", processes)
	}
	err = withLoadRelay(ctx, run, processes, true, &report, func(t bench.Target, observe func(*bench.Result)) error {
		// The channel read is the largest before the run adds its own.
		chans, err := bench.OpenChannels(ctx, t)
		if err != nil {
			return err
		}
		if len(chans) == 0 {
			return errors.New("the database has no open channel to read")
		}
		report.Channel, report.Messages = chans[0].ID, chans[0].Messages

		progress("ingest: %d events over %d connections", len(load), c.Int("ingest-conns"))
		if _, err := bench.Ingest(ctx, t, "setup", setup, 1, 1); err != nil {
			return err
		}
		r, err := bench.Ingest(ctx, t, "ingest", load, c.Int("ingest-conns"), 32)
		if err != nil {
			return err
		}
		observe(&r)
		report.Results = append(report.Results, r)

		progress("walking the window of channel %s (%d messages)", report.Channel, report.Messages)
		chain, err := bench.WalkWindow(ctx, t, report.Channel, 50, walkPages)
		if err != nil {
			return err
		}
		report.WindowPages = len(chain.Cursors)
		progress("reads: window, thread and REQ, %d clients, %s each", clients, d)
		reads, err := bench.Reads(ctx, t, chain, report.Channel, clients, d, "", false, observe)
		report.Results = append(report.Results, reads...)
		if err != nil {
			return err
		}
		progress("feed: %d mentions of the reader, then its feed and an anonymous one, %d clients, %s each", len(mentions), clients, d)
		if _, err := bench.Ingest(ctx, t, "feed setup", mentions, 1, 1); err != nil {
			return err
		}
		for _, m := range []struct {
			name, reader string
			types        []string
		}{
			{"feed", reader, []string{nipcw.FeedMentions, nipcw.FeedNeedsAction, nipcw.FeedActivity}},
			{"feed anonymous", "", []string{nipcw.FeedActivity}},
		} {
			r, err := bench.Feed(ctx, t, m.name, bench.FeedBody(m.types, nipcw.FeedLimit), m.reader, clients, d)
			if err != nil {
				return err
			}
			observe(&r)
			report.Results = append(report.Results, r)
		}
		progress("window pages while channel %s is written, %d clients, %s", ingest.Channels[0], clients, d)
		mixedBodies := [][]byte{bench.WindowBody(ingest.Channels[0], nil, 50)}
		for _, ch := range chans {
			mixedBodies = append(mixedBodies, bench.WindowBody(ch.ID, nil, 50))
		}
		for _, cursor := range chain.Cursors[1:min(len(chain.Cursors), mixedDeepPages)] {
			mixedBodies = append(mixedBodies, bench.WindowBody(report.Channel, cursor, 50))
		}
		r, report.PageCache, err = bench.Mixed(ctx, t, "window mixed", mixedBodies, clients, d, mixed, mixedPace)
		if err != nil {
			return err
		}
		observe(&r)
		report.Results = append(report.Results, r)
		progress("fan-out: %d events to %d subscribers", len(live), c.Int("subscribers"))
		fan, err := bench.Fanout(ctx, t, "fan-out", ingest.Channels[0], live, c.Int("subscribers"), fanoutRound)
		if err != nil {
			return err
		}
		observe(&fan[0])
		for i := 1; i < len(fan); i++ {
			fan[i].PeakRSS = fan[0].PeakRSS // the same measurement's
		}
		report.Results = append(report.Results, fan...)
		return firstScreen(ctx, t, report.Channel, report.Screens, "cached")
	})
	if err != nil {
		return err
	}
	err = withLoadRelay(ctx, run, processes, false, &report, func(t bench.Target, observe func(*bench.Result)) error {
		progress("window pages with the page cache off")
		chain, err := bench.WalkWindow(ctx, t, report.Channel, 50, walkPages)
		if err != nil {
			return err
		}
		reads, err := bench.Reads(ctx, t, chain, report.Channel, clients, d, " uncached", true, observe)
		report.Results = append(report.Results, reads...)
		if err != nil {
			return err
		}
		return firstScreen(ctx, t, report.Channel, report.Screens, "uncached")
	})
	if err != nil {
		return err
	}

	progress("measuring the database")
	if pgURL != "" {
		err = postgresSize(ctx, pgURL, &report)
	} else {
		err = storeSize(ctx, dir, &report)
	}
	if err != nil {
		return err
	}
	report.Events = report.StoredEvents - int64(len(ingest.Events)+len(live))
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return report.WriteText(c.App.Writer)
}

// attackNames are the values of --abuse-attack, each whole: a string
// slice flag would split "event flood, one socket" at its comma.
type attackNames []string

func (a *attackNames) Set(name string) error {
	*a = append(*a, name)
	return nil
}

func (a *attackNames) String() string { return strings.Join(*a, "; ") }

// chosenAttacks is all, in its order, or those of it named by only; an
// error for a name not in all, before anything is generated.
func chosenAttacks(all []string, only attackNames) ([]string, error) {
	if len(only) == 0 {
		return all, nil
	}
	for _, name := range only {
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("--abuse-attack: no attack %q; the attacks: %s", name, strings.Join(all, "; "))
		}
	}
	return slices.DeleteFunc(slices.Clone(all), func(name string) bool { return !slices.Contains(only, name) }), nil
}

// abuseTopLevel is the top-level messages per channel of the community
// the abuse run generates unless told: about 180,000 events, the size of
// the database the attacks of issue 13 were found on.
const abuseTopLevel = 5000

// The abuse run's two sides dial from two loopback addresses (Linux
// routes all of 127.0.0.0/8 to loopback), so that per-IP limits tell
// them apart as they would two hosts.
const abuseAttacker, abuseInnocent = "127.0.0.1", "127.0.0.2"

// abuseStopWait is how long an attacked relay may take to stop before it
// is killed: one that still works through an attack's backlog would
// otherwise hold the bench.
const abuseStopWait = 10 * time.Second

// runAbuse runs every attack against a relay process of its own, started
// with the default configuration: the limits on, as a user would run it.
// A fresh process per attack, so that none inherits the last one's
// backlog (queued deletions, listeners being removed, stalled sockets),
// its spent rate budgets or its grown heap, which would count against it.
func runAbuse(ctx context.Context, c *cli.Context, abuse *bench.Abuse, attacks []string, dir string, progress func(string, ...any)) error {
	var before bench.Report
	if err := storeSize(ctx, dir, &before); err != nil {
		return err
	}
	report := bench.AbuseReport{Machine: machine(), Cores: runtime.NumCPU(), Events: before.StoredEvents,
		Duration: c.Duration("abuse-duration"), Pace: c.Float64("abuse-pace"), Attacker: abuseAttacker, Innocent: abuseInnocent}
	wal := filepath.Join(dir, dbFile+"-wal")
	probeWAL := func() (int64, error) {
		st, err := os.Stat(wal)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	for _, name := range attacks {
		progress("abuse: %s", name)
		var res bench.AttackResult
		warnings, first := 0, ""
		run := relayRun{dir: dir, config: c.String("config"), env: abuse.RelayEnv(name), stopWait: abuseStopWait, warn: func(line string) {
			if warnings++; warnings == 1 {
				first = strings.TrimSpace(line)
			}
		}}
		_, err := withRelay(ctx, run, func(t bench.Target, peak func() int64) error {
			var err error
			res, err = abuse.Run(ctx, t, name, bench.Probe{PeakRSS: peak, WALBytes: probeWAL})
			return err
		})
		switch {
		case errors.Is(err, errRelayKilled):
			res.Notes = append(res.Notes, fmt.Sprintf("the relay did not stop within %s of SIGINT and was killed", abuseStopWait))
		case errors.Is(err, errRelayExited):
			res.RelayExit = err.Error()
		case err != nil:
			return err
		}
		res.RelayWarnings, res.FirstWarning = warnings, first
		res.Judge()
		report.Results = append(report.Results, res)
	}
	report.Channel = abuse.Channel()
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return report.WriteText(c.App.Writer)
}

// firstScreen measures channel's first screen both ways into screens.
func firstScreen(ctx context.Context, t bench.Target, channel string, screens map[string]bench.Screen, cache string) error {
	window, generic, err := bench.FirstScreen(ctx, t, channel, 21)
	if err != nil {
		return err
	}
	screens["window "+cache], screens["generic "+cache] = window, generic
	return nil
}

// prepareBench fills the store with a generated community unless it holds
// one already: dir's SQLite file, or with pgURL that PostgreSQL database.
// Events are signed, then stored the way import stores them (their
// signatures were just made, so they are not checked again), and group
// state is signed once at the end.
func prepareBench(ctx context.Context, dir, pgURL string, channels, topLevel int, progress func(string, ...any)) error {
	if pgURL == "" {
		if _, err := os.Stat(filepath.Join(dir, dbFile)); err == nil {
			progress("using the database in %s", dir)
			return nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	key, err := relayKey(cfg, log)
	if err != nil {
		return err
	}
	policy, err := cfg.Access.Policy(cfg.Relay.Admins)
	if err != nil {
		return err
	}
	pgOptions := postgres.Options{URL: pgURL, Policy: &policy, RelayKey: key, Logger: log}
	if pgURL != "" {
		held, err := postgresCommunity(ctx, pgURL)
		if err != nil {
			return err
		}
		if held {
			// The relay key may be another than the one that signed the
			// community's group state (a data directory of its own each
			// run): the state is signed afresh with this one, as serve
			// would serve it.
			progress("using the community the bench generated in the PostgreSQL database")
			pg, err := postgres.Open(ctx, pgOptions)
			if err != nil {
				return err
			}
			if err := errors.Join(pg.RenewGroupState(ctx), pg.Close()); err != nil {
				return err
			}
			return analyze(ctx, pgURL)
		}
	}
	start := time.Now()
	where := dir
	if pgURL != "" {
		where = "the PostgreSQL database"
	}
	progress("generating %d channels of %d top-level messages with their threads into %s", channels, topLevel, where)
	community, err := gen.Generate(gen.Options{Channels: channels, TopLevel: topLevel})
	if err != nil {
		return err
	}
	generated := time.Since(start)
	// Opened once the community is signed: a run stopped while signing
	// leaves no empty database for the next run to take for its own.
	var store benchStore
	if pgURL != "" {
		store, err = postgres.Open(ctx, pgOptions)
	} else {
		opts, optsErr := storeOptions(cfg, key)
		if optsErr != nil {
			return optsErr
		}
		opts.Logger = log
		store, err = sqlite.Open(ctx, opts)
	}
	if err != nil {
		return err
	}
	start = time.Now()
	evs := community.Events
	for i := 0; i < len(evs); i += 1000 {
		batch := evs[i:min(i+1000, len(evs))]
		outcomes, err := store.ImportBatch(ctx, batch)
		if err == nil {
			err = errors.Join(outcomes...)
		}
		if err != nil {
			return errors.Join(fmt.Errorf("storing the generated community: %w", err), store.Close())
		}
	}
	if err := store.RenewGroupState(ctx); err != nil {
		return errors.Join(err, store.Close())
	}
	if err := store.Close(); err != nil {
		return err
	}
	progress("%d events signed in %s, stored in %s (%.0f events/s)", len(evs), generated.Round(time.Second),
		time.Since(start).Round(time.Second), float64(len(evs))/time.Since(start).Seconds())
	if pgURL != "" {
		return analyze(ctx, pgURL)
	}
	return nil
}

// analyze has PostgreSQL gather the planner's statistics of the database
// at url, as after any bulk load: autovacuum may be off, or not yet have
// come round to it, and without statistics the planner took a thread
// page's recursive walk over every event in created_at order, seconds a
// page (docs/performance.md, issue 18).
func analyze(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("postgres: analyze: %w", err)
	}
	return nil
}

// benchStore is what prepareBench needs of either store.
type benchStore interface {
	ImportBatch(ctx context.Context, evs []*nostr.Event) ([]error, error)
	RenewGroupState(ctx context.Context) error
	Close() error
}

// postgresCommunity says whether the PostgreSQL database at url holds the
// community the bench generates, and refuses one that holds other events:
// the bench neither measures nor writes into a community it did not make.
// The generator is deterministic, so its community begins with the same
// event whatever its size: the creation of its first channel.
func postgresCommunity(ctx context.Context, url string) (bool, error) {
	first, err := gen.Generate(gen.Options{Channels: 1, TopLevel: 1})
	if err != nil {
		return false, err
	}
	marker, err := hex.DecodeString(first.Events[0].ID)
	if err != nil {
		return false, fmt.Errorf("the generated community's first event: %w", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return false, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	var events *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass('events')::text`).Scan(&events); err != nil {
		return false, fmt.Errorf("postgres: look for the events table: %w", err)
	}
	if events == nil {
		return false, nil
	}
	var holds, generated bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events), EXISTS (SELECT 1 FROM events WHERE id = $1)`, marker).
		Scan(&holds, &generated)
	if err != nil {
		return false, fmt.Errorf("postgres: look for the generated community: %w", err)
	}
	if holds && !generated {
		return false, errors.New("the PostgreSQL database holds events that are not the community the bench generates: " +
			"give the bench an empty database, or one it generated into")
	}
	return generated, nil
}

// withLoadRelay is withRelay for the load measurements: the page cache on
// or off, each measurement given its own peak RSS, and the run's memory
// kept in report if its peak is the highest yet. Rate and connection
// limits are off: every client of the load generator dials from one
// loopback address, and a thousand subscribers from one IP are the
// fan-out measurement, not an attack (RL-27 turns rates off for
// benchmarks; `--abuse` runs with the limits on).
func withLoadRelay(ctx context.Context, run relayRun, processes int, pageCache bool, report *bench.Report,
	fn func(t bench.Target, observe func(*bench.Result)) error) error {
	// Rate limits are for clients of a community, not for a load test
	// from one address (RL-27: `rates = false` is for benchmarks), and
	// the 1,000 fan-out subscribers all come from loopback, which the
	// connection cap per IP would refuse: loopback is exempt here.
	run.env = append(run.env, "BUZZ_LITE_LIMITS_RATES=false", "BUZZ_LITE_LIMITS_EXEMPT=127.0.0.0/8,::1")
	if !pageCache {
		run.env = append(run.env, "BUZZ_LITE_STORAGE_PAGE_CACHE=0")
	}
	m, err := withRelays(ctx, run, processes, func(t bench.Target, peak func() int64) error {
		return fn(t, func(r *bench.Result) { r.PeakRSS = peak() })
	})
	if m.Peak > report.PeakRSS {
		report.PeakRSS, report.RSSAnon, report.RSSFile = m.Peak, m.Anon, m.File
	}
	report.PeakRSSAnon = max(report.PeakRSSAnon, m.PeakAnon)
	return err
}

// relayRun is how the bench runs the relay.
type relayRun struct {
	dir string
	// postgres is the PostgreSQL database the relay serves, "" for the
	// data directory's SQLite file.
	postgres string
	// config is the relay's configuration file, "" for none.
	config string
	// env are settings beyond the defaults, as BUZZ_LITE_ variables.
	env []string
	// warn sees each warning or error the relay logs; nil passes them on
	// to stderr.
	warn func(line string)
	// stopWait bounds the wait for the relay to stop after SIGINT, after
	// which it is killed; 0 waits as long as it takes.
	stopWait time.Duration
}

var (
	// errRelayExited is the relay process ending other than by the
	// bench's SIGINT, or failing after it.
	errRelayExited = errors.New("the relay exited")
	// errRelayKilled is the relay killed for not stopping in time.
	errRelayKilled = errors.New("the relay did not stop after SIGINT and was killed")
)

// withRelay runs `buzz-lite serve` on run.dir on a loopback port, runs fn
// against it and stops it. It gives the relay's peak resident set (VmHWM)
// and peak anonymous resident set over the run, and its resident set at
// the end. fn's peak gives the largest anonymous resident set sampled
// since its last call (or the start).
func withRelay(ctx context.Context, run relayRun, fn func(t bench.Target, peak func() int64) error) (memory, error) {
	exe, err := relayExecutable()
	if err != nil {
		return memory{}, fmt.Errorf("the relay program: %w", err)
	}
	args := []string{"serve", "--data", run.dir, "--listen", "127.0.0.1:0"}
	if run.config != "" {
		args = append(args, "--config", run.config)
	}
	if run.postgres != "" {
		args = append(args, "--postgres", run.postgres)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	// The relay as its defaults make it, with run's settings: none of the
	// caller's BUZZ_LITE_ settings (a page cache turned off would make the
	// cached run uncached). Go's own variables, GOMEMLIMIT say, pass.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "BUZZ_LITE_LOG_LEVEL=info"), run.env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return memory{}, err
	}
	if err := cmd.Start(); err != nil {
		return memory{}, fmt.Errorf("start the relay: %w", err)
	}
	addr := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		relayLog(stderr, addr, run.warn)
	}()
	pid := cmd.Process.Pid
	stopSampling, peakSince, peakAnon := sampleAnon(pid)
	var runErr error
	select {
	case a, ok := <-addr:
		if !ok {
			runErr = errors.New("the relay exited before serving")
			break
		}
		runErr = fn(bench.Target{WS: "ws://" + a, HTTP: "http://" + a}, peakSince)
	case <-time.After(time.Minute):
		runErr = errors.New("the relay did not start serving within a minute")
	}
	// What shutdown adds is not counted.
	stopSampling()
	m := memoryOf(pid)
	m.PeakAnon = max(peakAnon(), m.Anon)
	if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) && runErr == nil {
		runErr = fmt.Errorf("stop the relay: %w", err)
	}
	killed := false
	if run.stopWait > 0 {
		select {
		case <-logDone:
		case <-time.After(run.stopWait):
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) && runErr == nil {
				runErr = fmt.Errorf("kill the relay: %w", err)
			}
			killed = true
		}
	}
	<-logDone // all of the log read before Wait closes the pipe
	err = cmd.Wait()
	switch {
	case runErr != nil:
	case killed:
		runErr = fmt.Errorf("%w within %s", errRelayKilled, run.stopWait)
	case err != nil:
		runErr = fmt.Errorf("%w: %w", errRelayExited, err)
	}
	return m, runErr
}

// anonSampling is how often sampleAnon reads a process's anonymous
// resident set.
const anonSampling = 50 * time.Millisecond

// sampleAnon reads process pid's anonymous resident set (RssAnon) every
// anonSampling until stop is called. since is the largest read since its
// last call (or the start), and peak the largest of all. The kernel keeps
// a peak only of the whole resident set (VmHWM), which counts the pages of
// the database that the read connections map (file pages, the kernel's
// page cache, once per connection) with the relay's own memory.
func sampleAnon(pid int) (stop func(), since, peak func() int64) {
	var sinceLast, largest atomic.Int64
	raise := func(v *atomic.Int64, a int64) {
		for old := v.Load(); a > old && !v.CompareAndSwap(old, a); old = v.Load() {
		}
	}
	read := func() int64 {
		a := memoryOf(pid).Anon
		raise(&largest, a)
		return a
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(anonSampling)
		defer tick.Stop()
		for {
			raise(&sinceLast, read())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(done); <-stopped }) }
	since = func() int64 { return max(sinceLast.Swap(0), read()) }
	return stop, since, largest.Load
}

// withRelays is withRelay for processes relay processes on one database
// (PostgreSQL), started one after the other: t's peers are the processes
// after the first, and peak and the memory given are the largest
// process's.
func withRelays(ctx context.Context, run relayRun, processes int, fn func(t bench.Target, peak func() int64) error) (memory, error) {
	if processes <= 1 {
		return withRelay(ctx, run, fn)
	}
	var rest memory
	first, err := withRelay(ctx, run, func(t bench.Target, firstPeak func() int64) error {
		var err error
		rest, err = withRelays(ctx, run, processes-1, func(others bench.Target, othersPeak func() int64) error {
			t.Peers = append([]bench.Target{{WS: others.WS, HTTP: others.HTTP}}, others.Peers...)
			return fn(t, func() int64 { return max(firstPeak(), othersPeak()) })
		})
		return err
	})
	largest := first
	if rest.Peak > first.Peak {
		largest = rest
	}
	largest.PeakAnon = max(first.PeakAnon, rest.PeakAnon)
	return largest, err
}

// servingLine is the relay's log line that gives its address.
var servingLine = regexp.MustCompile(`msg="buzz-lite serving" addr=(\S+)`)

// relayLog reads the relay's log to its end, so that the relay never
// blocks writing it: it sends the address once serving (closing addr if
// the log ends first) and gives warnings and errors to warn, or passes
// them on to stderr when warn is nil.
func relayLog(log io.Reader, addr chan<- string, warn func(line string)) {
	if warn == nil {
		warn = func(line string) { fmt.Fprint(os.Stderr, "relay: ", line) }
	}
	sent := false
	r := bufio.NewReader(log)
	for {
		line, err := r.ReadString('\n')
		if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warn(line)
		}
		if err != nil {
			break
		}
	}
	if !sent {
		close(addr)
	}
}

// storeSize fills in the database's events, size and JSON size.
func storeSize(ctx context.Context, dir string, report *bench.Report) error {
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	opts, err := storeOptions(cfg, "")
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		return err
	}
	var counted countingWriter
	n, err := store.Export(ctx, buzz.ExportFilter{WithDeleted: true}, &counted)
	if err = errors.Join(err, store.Close()); err != nil {
		return err
	}
	report.StoredEvents, report.JSONBytes = n, counted.n-n // without the newlines
	for _, suffix := range []string{"", "-wal"} {
		if st, err := os.Stat(filepath.Join(dir, dbFile+suffix)); err == nil {
			report.DBBytes += st.Size()
		}
	}
	return nil
}

// postgresSize fills in the PostgreSQL database's events, size and JSON
// size, counted as storeSize counts SQLite's: every event but the relay's
// group state (which export leaves out), deleted ones too; the size is
// the store's tables with their indexes and TOAST, and beside it the
// whole database's.
func postgresSize(ctx context.Context, url string, report *bench.Report) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id, pubkey, created_at, kind, tags, content, sig FROM events
		WHERE kind NOT BETWEEN 39000 AND 39003 AND (expires_at IS NULL OR expires_at > $1)`, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("postgres: read the events: %w", err)
	}
	var id, pubkey, tags, content, sig []byte
	var createdAt int64
	var kind int32
	_, err = pgx.ForEachRow(rows, []any{&id, &pubkey, &createdAt, &kind, &tags, &content, &sig}, func() error {
		ev := nostr.Event{ID: hex.EncodeToString(id), PubKey: hex.EncodeToString(pubkey), CreatedAt: nostr.Timestamp(createdAt),
			Kind: int(kind), Content: string(content), Sig: hex.EncodeToString(sig)}
		if err := json.Unmarshal(tags, &ev.Tags); err != nil {
			return fmt.Errorf("tags of event %s: %w", ev.ID, err)
		}
		b, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.ID, err)
		}
		report.StoredEvents++
		report.JSONBytes += int64(len(b))
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: read the events: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = current_schema()),
		pg_database_size(current_database())`).Scan(&report.DBBytes, &report.DatabaseBytes)
	if err != nil {
		return fmt.Errorf("postgres: database size: %w", err)
	}
	return nil
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// machine names the CPU and the Go runtime.
func machine() string {
	cpu := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %s %s/%s", cpu, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
