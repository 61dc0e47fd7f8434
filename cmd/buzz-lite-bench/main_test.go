package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/postgres"
)

// TestMain makes this test binary the relay when the bench starts it as
// one (asRelayEnv): the bench runs itself as the relay under load.
func TestMain(m *testing.M) {
	if os.Getenv(asRelayEnv) == "1" {
		main()
		os.Exit(0)
	}
	schema, err := sourceSchema()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd.Schema = schema
	os.Exit(m.Run())
}

// Issue 6: `buzz-lite bench` generates a community, runs the relay as its
// own process, measures every path with real clients and reports each
// measurement, the relay's peak RSS and the database size per event. Run
// here on a tiny community with short measurements: that it works, not
// how fast.
func TestBenchCommand(t *testing.T) {
	testutil.ClearEnv(t)
	data := filepath.Join(t.TempDir(), "data")
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	err := app.Run([]string{"buzz-lite-bench", "--data", data, "--channels", "2", "--toplevel", "20",
		"--clients", "2", "--duration", "200ms", "--ingest", "300", "--ingest-conns", "4",
		"--subscribers", "10", "--fanout-events", "12", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	var report bench.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out.Bytes())
	}
	want := []string{"ingest", "window head", "window deep", "window deep zipf", "thread", "REQ head", "REQ deep", "feed", "feed anonymous",
		"window mixed", "fan-out", "window head uncached", "window deep uncached", "window deep zipf uncached"}
	if len(report.Results) != len(want) {
		t.Fatalf("%d measurements, want %d: %+v", len(report.Results), len(want), report.Results)
	}
	for i, r := range report.Results {
		if r.Name != want[i] || r.Ops == 0 || r.Bytes == 0 || r.P99 < r.P50 || r.Rate() <= 0 {
			t.Errorf("measurement %d: %+v, want %q with operations", i, r, want[i])
		}
	}
	// Every event of the ingest measurement was acknowledged: gen makes
	// about 9 per top-level message, less the channel's lifecycle events.
	if in := report.Results[0]; in.Ops < 200 {
		t.Errorf("ingest acknowledged %d events", in.Ops)
	}
	// Issue 15: the pages read while a channel was written were counted
	// by the relay, and messages were written meanwhile.
	if pc := report.PageCache; pc.Hits+pc.Misses == 0 || pc.Writes == 0 {
		t.Errorf("page cache under writes: %+v", pc)
	}
	// Issue 32 item 5: every window measurement says how the page cache
	// served its pages, each counted once; with the cache off, none from
	// it. Every measurement has the relay's peak memory, both ways.
	for _, r := range report.Results {
		pc := r.PageCache
		switch {
		case !strings.HasPrefix(r.Name, "window"):
			if pc != nil {
				t.Errorf("%s: page cache %+v", r.Name, *pc)
			}
		case pc == nil || pc.Hits+pc.Misses != uint64(r.Ops):
			t.Errorf("%s: %d pages, page cache %+v", r.Name, r.Ops, pc)
		case strings.HasSuffix(r.Name, "uncached") && pc.Hits != 0:
			t.Errorf("%s: %d pages from the cache that was off", r.Name, pc.Hits)
		case r.Name == "window head" && pc.Hits == 0:
			t.Errorf("%s: none of %d pages from the cache", r.Name, r.Ops)
		}
		if runtime.GOOS == "linux" && (r.PeakRSSAnon == 0 || r.PeakRSS < r.PeakRSSAnon) {
			t.Errorf("%s: peak anonymous RSS %d, peak RSS %d", r.Name, r.PeakRSSAnon, r.PeakRSS)
		}
	}
	if fan := report.Results[10]; fan.Ops != 10*12 || fan.Clients != 10 {
		t.Errorf("fan-out: %d deliveries to %d subscribers, want 120 to 10", fan.Ops, fan.Clients)
	}
	for _, s := range []string{"window cached", "generic cached", "window uncached", "generic uncached"} {
		if sc, ok := report.Screens[s]; !ok || sc.Bytes == 0 || sc.Requests == 0 {
			t.Errorf("first screen %q: %+v", s, sc)
		}
	}
	if report.Screens["generic uncached"].Requests < 2 {
		t.Errorf("the generic first screen took %d requests", report.Screens["generic uncached"].Requests)
	}
	if report.Channel == "" || report.Messages == 0 || report.WindowPages == 0 || report.VerifyPerCore <= 0 {
		t.Errorf("report: channel %q, %d messages, %d pages, %.0f verifications/s", report.Channel,
			report.Messages, report.WindowPages, report.VerifyPerCore)
	}
	if report.StoredEvents <= report.Events || report.DBBytes == 0 || report.JSONBytes == 0 {
		t.Errorf("database: %d events stored, %d before, %d bytes, %d bytes of JSON", report.StoredEvents,
			report.Events, report.DBBytes, report.JSONBytes)
	}
	if runtime.GOOS == "linux" && report.PeakRSS == 0 {
		t.Error("no peak RSS")
	}

	// A second run reuses the database, and the text report names every
	// target.
	out.Reset()
	app = newApp()
	app.Writer = &out
	if err := app.Run([]string{"buzz-lite-bench", "--data", data, "--clients", "1", "--duration", "100ms",
		"--ingest", "100", "--subscribers", "2", "--fanout-events", "2"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ingest", "window deep uncached", "window deep zipf uncached", "first screen (uncached pages)",
		"of the verification limit", "page cache under writes", "peak anonymous RSS of the relay", "B per event", "the generic way takes",
		"from cache  peak anon  peak RSS", "window deep zipf (cached, deep pages skewed as readers ask)"} {
		if !bytes.Contains(out.Bytes(), []byte(s)) {
			t.Errorf("the report does not mention %q:\n%s", s, out.Bytes())
		}
	}
}

// Issue 18 (RL-33): `buzz-lite bench --postgres URL --processes 2`
// generates the community into the PostgreSQL database, serves it from two
// relay processes with the clients spread over them, delivers live events
// published through one process to the other's subscribers, and reports
// the database's size as PostgreSQL counts it. A second run reuses the
// community with a relay key of its own; a database holding other events
// is refused. Tiny, as TestBenchCommand: that it works, not how fast.
func TestBenchCommandPostgres(t *testing.T) {
	// Before clearEnv, which unsets the server's variable.
	pgURL, foreign := pgtest.FreshDatabase(t), pgtest.FreshDatabase(t)
	testutil.ClearEnv(t)
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	err := app.Run([]string{"buzz-lite-bench", "--postgres", pgURL, "--processes", "2", "--channels", "2", "--toplevel", "20",
		"--clients", "2", "--duration", "200ms", "--ingest", "300", "--ingest-conns", "4",
		"--subscribers", "10", "--fanout-events", "12", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	var report bench.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out.Bytes())
	}
	if report.Store != "postgres" || report.Processes != 2 {
		t.Errorf("report of %d processes on %q, want 2 on postgres", report.Processes, report.Store)
	}
	want := []string{"ingest", "window head", "window deep", "window deep zipf", "thread", "REQ head", "REQ deep", "feed", "feed anonymous",
		"window mixed", "fan-out", "fan-out other processes", "window head uncached", "window deep uncached", "window deep zipf uncached"}
	if len(report.Results) != len(want) {
		t.Fatalf("%d measurements, want %d: %+v", len(report.Results), len(want), report.Results)
	}
	for i, r := range report.Results {
		if r.Name != want[i] || r.Ops == 0 || r.Bytes == 0 || r.P99 < r.P50 || r.Rate() <= 0 {
			t.Errorf("measurement %d: %+v, want %q with operations", i, r, want[i])
		}
	}
	// Every event reached every subscriber, half of them on the process
	// the publisher did not use.
	if fan, other := report.Results[10], report.Results[11]; fan.Ops != 10*12 || other.Ops != 5*12 || other.Clients != 5 {
		t.Errorf("fan-out: %d deliveries, %d to %d subscribers of the other process; want 120, 60 to 5", fan.Ops, other.Ops, other.Clients)
	}
	if pc := report.PageCache; pc.Hits+pc.Misses == 0 || pc.Writes == 0 {
		t.Errorf("page cache under writes: %+v", pc)
	}
	if report.StoredEvents <= report.Events || report.JSONBytes == 0 || report.DBBytes == 0 || report.DatabaseBytes < report.DBBytes {
		t.Errorf("database: %d events stored, %d before, %d bytes of tables, %d of database, %d bytes of JSON", report.StoredEvents,
			report.Events, report.DBBytes, report.DatabaseBytes, report.JSONBytes)
	}
	if runtime.GOOS == "linux" && report.PeakRSS == 0 {
		t.Error("no peak RSS")
	}

	out.Reset()
	app = newApp()
	app.Writer = &out
	if err := app.Run([]string{"buzz-lite-bench", "--postgres", pgURL, "--clients", "1", "--duration", "100ms",
		"--ingest", "100", "--subscribers", "2", "--fanout-events", "2"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"relay: 1 process on PostgreSQL", "window deep uncached", "pg_database_size", "B per event"} {
		if !bytes.Contains(out.Bytes(), []byte(s)) {
			t.Errorf("the report does not mention %q:\n%s", s, out.Bytes())
		}
	}

	// A community the bench did not generate is not measured, nor added
	// to.
	other, err := gen.Generate(gen.Options{Seed: 2, Channels: 1, TopLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	store, err := postgres.Open(context.Background(), postgres.Options{URL: foreign})
	if err != nil {
		t.Fatal(err)
	}
	outcomes, err := store.ImportBatch(context.Background(), other.Events)
	if err = errors.Join(err, errors.Join(outcomes...), store.Close()); err != nil {
		t.Fatal(err)
	}
	err = newApp().Run([]string{"buzz-lite-bench", "--postgres", foreign})
	if err == nil || !strings.Contains(err.Error(), "holds events that are not the community the bench generates") {
		t.Errorf("bench on a foreign community: %v", err)
	}
}

// Counts and durations that would measure nothing are refused before
// anything is generated or started.
func TestBenchCommandRefusesEmptyMeasurements(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--clients", "0", "--clients must be at least 1, got 0"},
		{"--subscribers", "-3", "--subscribers must be at least 1, got -3"},
		{"--toplevel", "0", "--toplevel must be at least 1, got 0"},
		{"--duration", "0s", "--duration must be positive, got 0s"},
		{"--processes", "0", "--processes must be at least 1, got 0"},
		// RL-31: one process serves a data directory's SQLite file.
		{"--processes", "2", "--processes 2 needs --postgres: a data directory's SQLite file is served by one process"},
		{"--abuse-duration", "0s", "abuse: the duration must be positive, got 0s"},
		{"--abuse-sockets", "0", "abuse: need at least one large event and one socket, got 300 and 0"},
	} {
		data := t.TempDir()
		args := []string{"buzz-lite-bench", "--data", data, tc.flag, tc.value}
		if strings.HasPrefix(tc.flag, "--abuse-") {
			args = append(args, "--abuse")
		}
		err := newApp().Run(args)
		if err == nil || err.Error() != tc.want {
			t.Errorf("bench %s %s: %v, want %q", tc.flag, tc.value, err, tc.want)
		}
		if entries, _ := os.ReadDir(data); len(entries) != 0 {
			t.Errorf("bench %s %s wrote %d files", tc.flag, tc.value, len(entries))
		}
	}
}

// `--abuse-attack` names one attack whole, commas and all, and a name that
// is no attack is refused before anything is generated; repeated, it runs
// those attacks in the order of the full run.
func TestBenchAbuseAttackNames(t *testing.T) {
	data := t.TempDir()
	err := newApp().Run([]string{"buzz-lite-bench", "--data", data, "--abuse", "--abuse-attack", "baseline",
		"--abuse-attack", "event flood, one sockets"})
	want := `--abuse-attack: no attack "event flood, one sockets"; the attacks: baseline; `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("bench --abuse-attack with a wrong name: %v, want %q...", err, want)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("the refused bench wrote %d files", len(entries))
	}
	all := []string{"baseline", "/query flood", "event flood, one socket", "REQ flood"}
	got, err := chosenAttacks(all, attackNames{"REQ flood", "event flood, one socket"})
	if err != nil || !slices.Equal(got, []string{"event flood, one socket", "REQ flood"}) {
		t.Fatalf("chosen attacks %q, %v; want the two named, in the full run's order", got, err)
	}
	if got, _ := chosenAttacks(all, nil); !slices.Equal(got, all) {
		t.Fatalf("with none named: %q, want all", got)
	}
}

// RL-27 (issue 13, "How it is shown"): `buzz-lite bench --abuse` runs every
// attack of the issue against a relay process with its default limits,
// each while an innocent client on another loopback address publishes and
// REQs, and reports per attack the innocent client's latencies, the
// relay's peak RSS, what the attacker did and had refused, and a verdict.
// Run here on a tiny community with attacks of a few hundred
// milliseconds: that every attack runs and is reported, not how the relay
// holds up.
func TestBenchAbuse(t *testing.T) {
	testutil.ClearEnv(t)
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	err := app.Run([]string{"buzz-lite-bench", "--abuse", "--channels", "1", "--toplevel", "10",
		"--abuse-duration", "300ms", "--abuse-pace", "20", "--abuse-large", "3", "--abuse-sockets", "12", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	var report bench.AbuseReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out.Bytes())
	}
	want := []string{"baseline", "deep-thread deletion", "subscriptions then hang-up", "unread huge answers",
		"/query flood", "event flood, one socket", "event flood, 8 sockets", "REQ flood", "COUNT flood",
		"many sockets", "slowloris", "many channels", "WAL under readers",
		"sync memory, one client", "/query flood from one /64", "unread /query answers"}
	if len(report.Results) != len(want) {
		t.Fatalf("%d attacks, want %d: %+v", len(report.Results), len(want), report.Results)
	}
	for i, r := range report.Results {
		if r.Name != want[i] || r.Does == "" {
			t.Errorf("attack %d: %q (%q), want %q", i, r.Name, r.Does, want[i])
		}
		// The innocent client kept at it during each attack, every
		// operation timed: answered, or failed and counted.
		for _, l := range []bench.Latency{r.Publish, r.REQ} {
			failed := 0
			for _, n := range l.Failed {
				failed += n
			}
			if l.Ops+failed == 0 || l.P50 <= 0 || l.P95 < l.P50 || l.P99 < l.P95 {
				t.Errorf("%s: innocent latency %+v", r.Name, l)
			}
		}
		if i > 0 && (r.Actions == 0 || r.Unit == "") {
			t.Errorf("%s: the attacker did nothing: %d %q", r.Name, r.Actions, r.Unit)
		}
		if runtime.GOOS == "linux" && r.PeakRSS == 0 {
			t.Errorf("%s: no peak RSS", r.Name)
		}
		// Issue 29: the attacks on what one client may hold time what the
		// innocent client does of the same kind (a sync, a /query).
		if i >= slices.Index(want, "sync memory, one client") && (r.Probe == nil || r.ProbeName == "") {
			t.Errorf("%s: no probe of the innocent client: %q %+v", r.Name, r.ProbeName, r.Probe)
		}
		if r.Met != (len(r.Missed) == 0) {
			t.Errorf("%s: met %v but missed %q", r.Name, r.Met, r.Missed)
		}
	}
	if wal := report.Results[slices.Index(want, "WAL under readers")]; !strings.Contains(strings.Join(wal.Notes, "\n"), "the WAL reached") {
		t.Errorf("no WAL size: %+v", wal)
	}
	if report.Events == 0 || report.Channel == "" || report.Attacker == report.Innocent {
		t.Errorf("report: %d events, channel %q, attacker %s, innocent %s", report.Events, report.Channel,
			report.Attacker, report.Innocent)
	}

	// The text report gives every attack its line and its verdict.
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, r := range report.Results {
		verdict := "MISSED  " + r.Name
		if r.Met {
			verdict = "met     " + r.Name
		}
		if !bytes.Contains(text.Bytes(), []byte(verdict)) || !bytes.Contains(text.Bytes(), []byte(r.Name+": "+r.Does)) {
			t.Errorf("the text report lacks %q or what %s does:\n%s", verdict, r.Name, text.Bytes())
		}
	}
}
