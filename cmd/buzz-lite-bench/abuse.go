package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/urfave/cli/v2"
)

// The abuse run (issue 13, RL-27): each attack against a relay process of
// its own, started with the default limits.

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
	wal := filepath.Join(dir, cmd.DBFile+"-wal")
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
		_, err := withRelay(ctx, run, func(t bench.Target, peak func() bench.Peaks) error {
			var err error
			anon := func() int64 { return peak().Anon }
			res, err = abuse.Run(ctx, t, name, bench.Probe{PeakRSS: anon, WALBytes: probeWAL})
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
