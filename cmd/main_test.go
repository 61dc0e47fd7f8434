package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// asMainEnv makes this test binary run the command line instead of the
// tests, so that a test can start it as the buzz-lite program (a relay
// process of its own, serve_test.go).
// Not BUZZ_LITE_: the relay refuses settings of that prefix it does not
// know.
const asMainEnv = "TEST_BUZZ_LITE_AS_MAIN"

func TestMain(m *testing.M) {
	schema, err := testutil.SchemaText()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schema.sql:", err)
		os.Exit(1)
	}
	Schema = schema
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(Main(os.Args))
	}
	os.Exit(m.Run())
}

// runServeConfig runs the serve command's flag parsing with args and returns
// what loadConfig makes of it, without serving.
func runServeConfig(t *testing.T, args ...string) (config.Config, error) {
	t.Helper()
	var cfg config.Config
	var loadErr error
	called := false
	cmd := serveCommand()
	cmd.Action = func(c *cli.Context) error {
		called = true
		cfg, loadErr = loadConfig(c)
		return nil
	}
	app := &cli.App{
		Name:           "buzz-lite",
		Commands:       []*cli.Command{cmd},
		ExitErrHandler: func(*cli.Context, error) {},
		Writer:         new(strings.Builder),
		ErrWriter:      new(strings.Builder),
	}
	if err := app.Run(append([]string{"buzz-lite", "serve"}, args...)); err != nil {
		t.Fatalf("serve %v: %v", args, err)
	}
	if !called {
		t.Fatalf("serve %v: action not run", args)
	}
	return cfg, loadErr
}

// RL-24: `buzz-lite serve` with no arguments runs on the embedded default.
func TestServeDefaults(t *testing.T) {
	testutil.ClearEnv(t)
	cfg, err := runServeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("serve with no arguments:\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.Server.Listen != "127.0.0.1:7777" || cfg.Storage.DataDir != "./buzz-lite-data" {
		t.Errorf("listen %q, data %q", cfg.Server.Listen, cfg.Storage.DataDir)
	}
}

// RL-24: flags override the environment, which overrides the config file,
// which overrides the defaults; the file may be named by --config or by
// BUZZ_LITE_CONFIG.
func TestLoadConfigPrecedence(t *testing.T) {
	testutil.ClearEnv(t)
	fileAdmin, _ := testutil.NewPubKey(t)
	envAdmin, _ := testutil.NewPubKey(t)
	flagAdmin1, flagAdmin1npub := testutil.NewPubKey(t)
	flagAdmin2, _ := testutil.NewPubKey(t)
	path := testutil.WriteFile(t, "buzz-lite.toml", `
[relay]
name = "file name"
url = "wss://file.example.com"
admins = ["`+fileAdmin+`"]

[server]
listen = "127.0.0.1:1111"

[storage]
data_dir = "/file/data"

[limits]
max_limit = 111
`)

	// File only, named by --config.
	cfg, err := runServeConfig(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Relay.Name != "file name" || cfg.Server.Listen != "127.0.0.1:1111" || cfg.Storage.DataDir != "/file/data" ||
		cfg.Relay.URL != "wss://file.example.com" || cfg.Limits.MaxLimit != 111 ||
		!reflect.DeepEqual(cfg.Relay.Admins, []string{fileAdmin}) {
		t.Errorf("file only: %+v", cfg)
	}
	if cfg.Limits.MaxEventTags != config.Default().Limits.MaxEventTags {
		t.Errorf("a key absent from the file lost its default: %+v", cfg.Limits)
	}

	// File named by BUZZ_LITE_CONFIG; environment over file.
	t.Setenv("BUZZ_LITE_CONFIG", path)
	t.Setenv("BUZZ_LITE_SERVER_LISTEN", "127.0.0.1:2222")
	t.Setenv("BUZZ_LITE_STORAGE_DATA_DIR", "/env/data")
	t.Setenv("BUZZ_LITE_RELAY_ADMINS", envAdmin)
	t.Setenv("BUZZ_LITE_LIMITS_MAX_LIMIT", "222")
	cfg, err = runServeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Relay.Name != "file name" || cfg.Server.Listen != "127.0.0.1:2222" || cfg.Storage.DataDir != "/env/data" ||
		cfg.Limits.MaxLimit != 222 || !reflect.DeepEqual(cfg.Relay.Admins, []string{envAdmin}) {
		t.Errorf("env over file: %+v", cfg)
	}

	// Flags over environment over file.
	cfg, err = runServeConfig(t,
		"--data", "/flag/data",
		"--listen", "127.0.0.1:3333",
		"--relay-url", "ws://flag.example.com:3333",
		"--admin", flagAdmin1npub,
		"--admin", flagAdmin2,
	)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.Relay.Name = "file name"                        // file
	want.Relay.URL = "ws://flag.example.com:3333"        // flag over file
	want.Relay.Admins = []string{flagAdmin1, flagAdmin2} // flag over env over file, npub made hex
	want.Server.Listen = "127.0.0.1:3333"                // flag over env over file
	want.Storage.DataDir = "/flag/data"                  // flag over env over file
	want.Limits.MaxLimit = 222                           // env over file; no flag
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("flags over env over file:\n got %+v\nwant %+v", cfg, want)
	}

	// --config beats BUZZ_LITE_CONFIG.
	other := testutil.WriteFile(t, "other.toml", "[relay]\nname = \"other file\"\n")
	cfg, err = runServeConfig(t, "--config", other)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Relay.Name != "other file" {
		t.Errorf("--config over BUZZ_LITE_CONFIG: name %q", cfg.Relay.Name)
	}
}

// RL-24: loadConfig refuses what Normalize refuses, whatever the source.
func TestLoadConfigErrors(t *testing.T) {
	testutil.ClearEnv(t)
	if _, err := runServeConfig(t, "--relay-url", "http://relay.example.com"); err == nil || !strings.Contains(err.Error(), "relay.url") {
		t.Errorf("--relay-url http://: %v", err)
	}
	if _, err := runServeConfig(t, "--admin", "not-a-pubkey"); err == nil || !strings.Contains(err.Error(), "relay.admins") {
		t.Errorf("--admin garbage: %v", err)
	}
	t.Setenv("BUZZ_LITE_LIMITS_MAX_EVENT_TAGS", "0")
	if _, err := runServeConfig(t); err == nil || !strings.Contains(err.Error(), "limits.max_event_tags") {
		t.Errorf("BUZZ_LITE_LIMITS_MAX_EVENT_TAGS=0: %v", err)
	}
	t.Setenv("BUZZ_LITE_LIMITS_MAX_EVENT_TAGS", "2000")

	bad := testutil.WriteFile(t, "bad.toml", "[server]\nlisten = \"x\"\nport = 1\n")
	if _, err := runServeConfig(t, "--config", bad); err == nil || !strings.Contains(err.Error(), "server.port") {
		t.Errorf("unknown key in --config file: %v", err)
	}
	if _, err := runServeConfig(t, "--config", filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("a missing --config file is no error")
	}
}

// RL-28: `serve` on an address other than loopback, without relay.url,
// refuses to start with the spec's message before it creates anything
// (not even the data directory). On loopback it needs none: crash_test.go
// serves on 127.0.0.1:0 without one.
func TestServeNeedsRelayURLOffLoopback(t *testing.T) {
	testutil.ClearEnv(t)
	for _, listen := range []string{"0.0.0.0:7777", ":7777", "[::]:7777", "192.0.2.1:7777", "relay.example:7777"} {
		data := filepath.Join(t.TempDir(), "data")
		app := &cli.App{
			Name:           "buzz-lite",
			Commands:       []*cli.Command{serveCommand()},
			ExitErrHandler: func(*cli.Context, error) {},
			Writer:         new(strings.Builder),
			ErrWriter:      new(strings.Builder),
		}
		err := app.Run([]string{"buzz-lite", "serve", "--data", data, "--listen", listen})
		if err == nil || err.Error() != "set --relay-url to the ws:// or wss:// URL clients use to reach this relay" {
			t.Errorf("serve --listen %s without --relay-url: %v", listen, err)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("serve --listen %s created its data directory before refusing: %v", listen, err)
		}
	}
}

// Issue 29 item 15, RL-24: an unknown BUZZ_LITE_ variable stops serve at
// start, named, as an unknown key of the config file does.
func TestServeRefusesUnknownEnv(t *testing.T) {
	testutil.ClearEnv(t)
	// Spelt so that config's scan of the repository's names skips it.
	misspelt := config.EnvPrefix + "LIMITS_RATE"
	t.Setenv(misspelt, "false")
	_, err := runServeConfig(t)
	if err == nil || !strings.Contains(err.Error(), "unknown variable "+misspelt) {
		t.Fatalf("serve with %s set: %v, want a refusal naming it", misspelt, err)
	}
	os.Unsetenv(misspelt)
	t.Setenv("BUZZ_LITE_LIMITS_RATES", "false")
	t.Setenv("BUZZ_LITE_TEST_POSTGRES", "postgres://unused")
	if cfg, err := runServeConfig(t); err != nil || cfg.Limits.Rates {
		t.Fatalf("serve with BUZZ_LITE_LIMITS_RATES=false: rates %v, %v", cfg.Limits.Rates, err)
	}
}
