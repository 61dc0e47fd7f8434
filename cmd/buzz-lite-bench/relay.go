package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/config"
)

// The relay under load: buzz-lite serve run as a process of its own on
// loopback, its log read and its memory sampled.

// relayExecutable is the program started as the relay under load.
var relayExecutable = os.Executable

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
		run.env = append(run.env, "BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES=0")
	}
	m, err := withRelays(ctx, run, processes, func(t bench.Target, peak func() bench.Peaks) error {
		return fn(t, func(r *bench.Result) {
			p := peak()
			r.PeakRSSAnon, r.PeakRSS = p.Anon, p.RSS
		})
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
// the end. fn's peak gives the largest anonymous and whole resident sets
// sampled since its last call (or the start).
func withRelay(ctx context.Context, run relayRun, fn func(t bench.Target, peak func() bench.Peaks) error) (bench.Memory, error) {
	exe, err := relayExecutable()
	if err != nil {
		return bench.Memory{}, fmt.Errorf("the relay program: %w", err)
	}
	args := []string{"serve", "--data", run.dir, "--listen", "127.0.0.1:0"}
	if run.config != "" {
		args = append(args, "--config", run.config)
	}
	if run.postgres != "" {
		args = append(args, "--postgres", run.postgres)
	}
	proc := exec.CommandContext(ctx, exe, args...)
	// The relay as its defaults make it, with run's settings: none of the
	// caller's BUZZ_LITE_ settings (a page cache turned off would make the
	// cached run uncached). Go's own variables, GOMEMLIMIT say, pass.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, config.EnvPrefix) {
			proc.Env = append(proc.Env, kv)
		}
	}
	proc.Env = append(append(proc.Env, "BUZZ_LITE_LOG_LEVEL=info", asRelayEnv+"=1"), run.env...)
	proc.Cancel = func() error { return proc.Process.Signal(os.Interrupt) }
	proc.WaitDelay = time.Minute
	stderr, err := proc.StderrPipe()
	if err != nil {
		return bench.Memory{}, err
	}
	if err := proc.Start(); err != nil {
		return bench.Memory{}, fmt.Errorf("start the relay: %w", err)
	}
	addr := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		relayLog(stderr, addr, run.warn)
	}()
	pid := proc.Process.Pid
	stopSampling, peakSince, peaks := bench.SampleMemory(pid)
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
	m := bench.MemoryOf(pid)
	m.PeakAnon = max(peaks().Anon, m.Anon)
	if err := proc.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) && runErr == nil {
		runErr = fmt.Errorf("stop the relay: %w", err)
	}
	killed := false
	if run.stopWait > 0 {
		select {
		case <-logDone:
		case <-time.After(run.stopWait):
			if err := proc.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) && runErr == nil {
				runErr = fmt.Errorf("kill the relay: %w", err)
			}
			killed = true
		}
	}
	<-logDone // all of the log read before Wait closes the pipe
	err = proc.Wait()
	switch {
	case runErr != nil:
	case killed:
		runErr = fmt.Errorf("%w within %s", errRelayKilled, run.stopWait)
	case err != nil:
		runErr = fmt.Errorf("%w: %w", errRelayExited, err)
	}
	return m, runErr
}

// withRelays is withRelay for processes relay processes on one database
// (PostgreSQL), started one after the other: t's peers are the processes
// after the first, and peak and the memory given are the largest
// process's.
func withRelays(ctx context.Context, run relayRun, processes int, fn func(t bench.Target, peak func() bench.Peaks) error) (bench.Memory, error) {
	if processes <= 1 {
		return withRelay(ctx, run, fn)
	}
	var rest bench.Memory
	first, err := withRelay(ctx, run, func(t bench.Target, firstPeak func() bench.Peaks) error {
		var err error
		rest, err = withRelays(ctx, run, processes-1, func(others bench.Target, othersPeak func() bench.Peaks) error {
			t.Peers = append([]bench.Target{{WS: others.WS, HTTP: others.HTTP}}, others.Peers...)
			return fn(t, func() bench.Peaks { return firstPeak().Max(othersPeak()) })
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
