// Command buzz-lite is a single-binary nostr relay for threaded group chat
// on embedded SQLite. This file wires the command line: the commands, the
// configuration and what every command builds from it (the logger, the
// relay key, the store's options); each command is a file of its own.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/relay"
)

// dbFile is the database file inside the data directory.
const dbFile = "buzz-lite.db"

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "buzz-lite:", err)
		os.Exit(1)
	}
}

func newApp() buzzApp {
	return withUsage(&cli.App{
		Name:    "buzz-lite",
		Usage:   "a single-binary nostr relay for threaded group chat",
		Version: buildVersion(),
		Commands: []*cli.Command{
			serveCommand(),
			exportCommand(),
			backupCommand(),
			importCommand(),
			checkCommand(),
			backfillCommand(),
			windowCommand(),
			keygenCommand(),
			postCommand(),
			channelsCommand(),
			feedCommand(),
			syncCommand(),
			benchCommand(),
		},
	})
}

// commonFlags are taken by every command (RL-25).
func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "TOML configuration file", EnvVars: []string{config.ConfigEnv}},
		&cli.StringFlag{Name: "data", Usage: "data directory (default ./buzz-lite-data)"},
	}
}

// loadConfig applies, in rising precedence, defaults, the config file, the
// environment and the flags (RL-24).
func loadConfig(c *cli.Context) (config.Config, error) {
	if err := config.CheckEnv(os.Environ()); err != nil {
		return config.Config{}, err
	}
	cfg, err := config.Load(c.String("config"), os.LookupEnv)
	if err != nil {
		return cfg, err
	}
	if c.IsSet("data") {
		cfg.Storage.DataDir = c.String("data")
	}
	if c.IsSet("listen") {
		cfg.Server.Listen = c.String("listen")
	}
	if c.IsSet("relay-url") {
		cfg.Relay.URL = c.String("relay-url")
	}
	if c.IsSet("postgres") {
		cfg.Storage.Postgres = c.String("postgres")
	}
	if c.IsSet("admin") {
		cfg.Relay.Admins = c.StringSlice("admin")
	}
	return cfg, cfg.Normalize()
}

// newLogger is the log of cfg on stderr.
func newLogger(cfg config.Config) *slog.Logger { return logTo(cfg, os.Stderr) }

// logTo is the log of cfg on w: its level, as text or JSON lines (RL-26,
// RL-30).
func logTo(cfg config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.Log.SlogLevel() // checked by Normalize
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// relayKey loads the relay identity key, creating it on first use (RL-21).
func relayKey(cfg config.Config, log *slog.Logger) (string, error) {
	keyFile := relayKeyFile(cfg)
	key, created, err := relay.LoadOrCreateKey(keyFile)
	if err != nil {
		return "", err
	}
	if created {
		log.Info("created a new relay identity key", "file", keyFile)
	}
	return key, nil
}
