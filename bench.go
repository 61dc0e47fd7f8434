package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/gen"
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
			"thread and REQ reads, live fan-out and the first screen, then the window again with\n" +
			"the page cache off. Prints throughput, latency percentiles, the relay's peak RSS and\n" +
			"the database size per event, each against its target.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "data directory to generate into or reuse (default: a temporary one, removed after)"},
			&cli.IntFlag{Name: "channels", Value: 4, Usage: "channels of the generated community"},
			&cli.IntFlag{Name: "toplevel", Value: 27_000, Usage: "top-level messages per channel, about 9 events each with their threads"},
			&cli.IntFlag{Name: "clients", Value: 16, Usage: "concurrent clients of each read measurement"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "length of each read measurement"},
			&cli.IntFlag{Name: "ingest", Value: 40_000, Usage: "events published over WebSocket in the ingest measurement"},
			&cli.IntFlag{Name: "ingest-conns", Value: 16, Usage: "connections publishing at once"},
			&cli.IntFlag{Name: "subscribers", Value: 1000, Usage: "live subscribers in the fan-out measurement"},
			&cli.IntFlag{Name: "fanout-events", Value: 256, Usage: "events delivered to every subscriber"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
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

// relayExecutable is the program started as the relay under load.
var relayExecutable = os.Executable

func runBench(c *cli.Context) error {
	for _, name := range []string{"channels", "toplevel", "clients", "ingest", "ingest-conns", "subscribers", "fanout-events"} {
		if c.Int(name) < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	if c.Duration("duration") <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", c.Duration("duration"))
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
	if err := prepareBench(ctx, dir, c.Int("channels"), c.Int("toplevel"), progress); err != nil {
		return err
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

	report := bench.Report{Machine: machine(), Cores: runtime.NumCPU(), Screens: map[string]bench.Screen{}}
	progress("measuring one core's signature verifications")
	if report.VerifyPerCore, err = bench.VerifyRate(load[:min(len(load), 256)], 3*time.Second); err != nil {
		return err
	}

	clients, d := c.Int("clients"), c.Duration("duration")
	err = withRelay(ctx, dir, true, &report, func(t bench.Target, observe func(*bench.Result)) error {
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
		progress("fan-out: %d events to %d subscribers", len(live), c.Int("subscribers"))
		r, err = bench.Fanout(ctx, t, "fan-out", ingest.Channels[0], live, c.Int("subscribers"), fanoutRound)
		if err != nil {
			return err
		}
		observe(&r)
		report.Results = append(report.Results, r)
		return firstScreen(ctx, t, report.Channel, report.Screens, "cached")
	})
	if err != nil {
		return err
	}
	err = withRelay(ctx, dir, false, &report, func(t bench.Target, observe func(*bench.Result)) error {
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
	if err := storeSize(ctx, dir, &report); err != nil {
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

// firstScreen measures channel's first screen both ways into screens.
func firstScreen(ctx context.Context, t bench.Target, channel string, screens map[string]bench.Screen, cache string) error {
	window, generic, err := bench.FirstScreen(ctx, t, channel, 21)
	if err != nil {
		return err
	}
	screens["window "+cache], screens["generic "+cache] = window, generic
	return nil
}

// prepareBench fills dir with a generated community unless it holds a
// database already. Events are signed, then stored the way import stores
// them (their signatures were just made, so they are not checked again),
// and group state is signed once at the end.
func prepareBench(ctx context.Context, dir string, channels, topLevel int, progress func(string, ...any)) error {
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err == nil {
		progress("using the database in %s", dir)
		return nil
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
	opts, err := storeOptions(cfg, key)
	if err != nil {
		return err
	}
	opts.Logger = log
	start := time.Now()
	progress("generating %d channels of %d top-level messages with their threads into %s", channels, topLevel, dir)
	community, err := gen.Generate(gen.Options{Channels: channels, TopLevel: topLevel})
	if err != nil {
		return err
	}
	generated := time.Since(start)
	store, err := sqlite.Open(ctx, opts)
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
	return nil
}

// withRelay runs `buzz-lite serve` on dir on a loopback port, with the
// page cache on or off, runs fn against it, keeps its memory in report if
// its peak is the highest yet, and stops it.
func withRelay(ctx context.Context, dir string, pageCache bool, report *bench.Report,
	fn func(t bench.Target, observe func(*bench.Result)) error) error {
	exe, err := relayExecutable()
	if err != nil {
		return fmt.Errorf("the relay program: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--data", dir, "--listen", "127.0.0.1:0")
	// The relay as its defaults make it: none of the caller's BUZZ_LITE_
	// settings (a page cache turned off would make the cached run
	// uncached). Go's own variables, GOMEMLIMIT say, pass.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Rate limits are for clients of a community, not for a load test
	// from one address (RL-27: `rates = false` is for benchmarks), and
	// the 1,000 fan-out subscribers all come from loopback, which the
	// connection cap per IP would refuse: loopback is exempt here.
	cmd.Env = append(cmd.Env, "BUZZ_LITE_LOG_LEVEL=info", "BUZZ_LITE_LIMITS_RATES=false",
		"BUZZ_LITE_LIMITS_EXEMPT=127.0.0.0/8,::1")
	if !pageCache {
		cmd.Env = append(cmd.Env, "BUZZ_LITE_STORAGE_PAGE_CACHE=0")
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the relay: %w", err)
	}
	addr := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		relayLog(stderr, addr)
	}()
	// Each measurement's peak: VmHWM, then reset to the present resident
	// set for the next one. The run's peak is the highest of them. Where
	// the reset fails, VmHWM is the run's peak so far, which is no
	// measurement's own: then only the run's peak is reported.
	pid := cmd.Process.Pid
	var runPeak int64
	resettable := true
	observe := func(r *bench.Result) {
		peak := memoryOf(pid).Peak
		runPeak = max(runPeak, peak)
		if resettable {
			r.PeakRSS = peak
			resettable = resetPeak(pid) == nil
		}
	}
	var runErr error
	select {
	case a, ok := <-addr:
		if !ok {
			runErr = errors.New("the relay exited before serving")
			break
		}
		runErr = fn(bench.Target{WS: "ws://" + a, HTTP: "http://" + a}, observe)
	case <-time.After(time.Minute):
		runErr = errors.New("the relay did not start serving within a minute")
	}
	// What shutdown adds is not counted.
	m := memoryOf(pid)
	if runPeak = max(runPeak, m.Peak); runPeak > report.PeakRSS {
		report.PeakRSS, report.RSSAnon, report.RSSFile = runPeak, m.Anon, m.File
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil && runErr == nil {
		runErr = fmt.Errorf("stop the relay: %w", err)
	}
	<-logDone // all of the log read before Wait closes the pipe
	if err := cmd.Wait(); err != nil && runErr == nil {
		runErr = fmt.Errorf("the relay: %w", err)
	}
	return runErr
}

// servingLine is the relay's log line that gives its address.
var servingLine = regexp.MustCompile(`msg="buzz-lite serving" addr=(\S+)`)

// relayLog reads the relay's log to its end, so that the relay never
// blocks writing it: it sends the address once serving (closing addr if
// the log ends first) and passes warnings and errors on.
func relayLog(log io.Reader, addr chan<- string) {
	sent := false
	r := bufio.NewReader(log)
	for {
		line, err := r.ReadString('\n')
		if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			fmt.Fprint(os.Stderr, "relay: ", line)
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
	n, err := store.Export(ctx, sqlite.ExportFilter{WithDeleted: true}, &counted)
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
