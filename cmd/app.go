// Package cmd is buzz-lite's command line: one file per command, each
// building only on what every command shares (this file: the
// configuration, the logger and the relay key; store.go and existing.go:
// opening a store; client.go and rows.go: a client of a relay and what it
// prints; cli.go: how mistakes in a command line are answered;
// version.go). commands.go lists the commands; the module root's main
// runs them.
package cmd

import (
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/relay"
)

// DBFile is the database file inside the data directory.
const DBFile = "buzz-lite.db"

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

// RelayKey loads the relay identity key, creating it on first use (RL-21).
func RelayKey(cfg config.Config, log *slog.Logger) (string, error) {
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
