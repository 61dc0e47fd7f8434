package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// otherRelay serves a fresh buzz-lite relay of its own data directory in
// this process on 127.0.0.1 port 0, rates off as the bench runs its own,
// and gives its WebSocket URL: the other relay of an --against run.
func otherRelay(t *testing.T) string {
	t.Helper()
	cfg := config.Default()
	cfg.Storage.DataDir = filepath.Join(t.TempDir(), "other")
	cfg.Limits.Rates = false
	cfg.Limits.Exempt = []string{"127.0.0.0/8"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	key, err := cmd.RelayKey(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cmd.SQLiteOptions(cfg, key)
	if err != nil {
		t.Fatal(err)
	}
	opts.Schema, opts.Logger = cmd.Schema, log
	ctx, cancel := context.WithCancel(context.Background())
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := relay.New(relay.Config{Key: key, Limits: cfg.Limits.Relay(), Logger: log}, store)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rl.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := errors.Join(<-served, store.Close()); err != nil {
			t.Errorf("the other relay: %v", err)
		}
	})
	return "ws://" + ln.Addr().String()
}

// Issue 32 ("How it is shown"): `buzz-lite-bench --against URL` runs the
// relay-neutral loads on buzz-lite and on the relay at URL, here a second
// buzz-lite relay that starts empty and is sent the community first, in
// alternating rounds, and reports both rates of every load with their
// ratio. Tiny and short: that it runs and reports, not how fast.
func TestBenchAgainst(t *testing.T) {
	testutil.ClearEnv(t)
	other := otherRelay(t)
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"buzz-lite-bench", "--data", data, "--channels", "1", "--toplevel", "30",
		"--clients", "2", "--duration", "150ms", "--ingest", "90", "--ingest-conns", "2", "--against", other, "--rounds", "2"}
	var out bytes.Buffer
	app := newApp()
	app.Writer = &out
	if err := app.Run(append(args, "--json")); err != nil {
		t.Fatal(err)
	}
	var cmp bench.Comparison
	if err := json.Unmarshal(out.Bytes(), &cmp); err != nil {
		t.Fatalf("report: %v\n%s", err, out.Bytes())
	}
	if cmp.Against != other || cmp.Rounds != 2 || cmp.Channel == "" || cmp.Threads == 0 || cmp.Seeded == 0 {
		t.Errorf("comparison against %s: %+v", other, cmp)
	}
	want := []string{"REQ head #h", "REQ deep #h", "REQ thread #e", "first screen, generic", "ingest"}
	if len(cmp.Loads) != len(want) {
		t.Fatalf("%d loads, want %d: %+v", len(cmp.Loads), len(want), cmp.Loads)
	}
	for i, l := range cmp.Loads {
		if l.Name != want[i] || len(l.BuzzLite) != 2 || len(l.Other) != 2 || l.BuzzLiteRate <= 0 || l.OtherRate <= 0 || l.Ratio <= 0 {
			t.Errorf("load %d: %+v, want %q measured twice on each relay", i, l, want[i])
		}
		for _, r := range append(l.BuzzLite, l.Other...) {
			if r.Ops == 0 || r.Bytes == 0 {
				t.Errorf("%s: a round did nothing: %+v", l.Name, r)
			}
		}
	}
	// A second run's text report gives both columns and the ratio.
	out.Reset()
	app = newApp()
	app.Writer = &out
	if err := app.Run(append(args[:len(args)-2], "--rounds", "1")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"buzz-lite beside " + other, "buzz-lite (p99)", "other (p99)", "ratio", "REQ thread #e", "x\n"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report does not mention %q:\n%s", s, out.String())
		}
	}
}

// --against takes a WebSocket URL, and neither --abuse nor --postgres.
func TestBenchAgainstRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--against", "http://127.0.0.1:1"}, `--against needs a relay's WebSocket URL (ws://host:port), got "http://127.0.0.1:1"`},
		{[]string{"--against", "ws://127.0.0.1:1", "--abuse"}, "--against compares loads, not attacks: leave out --abuse"},
		{[]string{"--against", "ws://127.0.0.1:1", "--postgres", "postgres://x@127.0.0.1/db"}, "--against runs on the data directory's SQLite file, not with --postgres"},
		{[]string{"--against", "ws://127.0.0.1:1", "--rounds", "0"}, "--rounds must be at least 1, got 0"},
	} {
		err := newApp().Run(append([]string{"buzz-lite-bench", "--data", t.TempDir()}, tc.args...))
		if err == nil || err.Error() != tc.want {
			t.Errorf("bench %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
