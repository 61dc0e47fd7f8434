// Command buzz-lite is a single-binary nostr relay for threaded group chat
// on embedded SQLite. This file is the command line only: it reads the
// configuration, opens the store, builds the relay and serves.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/datadir"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
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
			syncCommand(),
			benchCommand(),
		},
	})
}

// commonFlags are taken by every command (RL-25).
func commonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "TOML configuration file", EnvVars: []string{"BUZZ_LITE_CONFIG"}},
		&cli.StringFlag{Name: "data", Usage: "data directory (default ./buzz-lite-data)"},
	}
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the relay",
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "listen", Usage: "address to listen on (default 127.0.0.1:7777)"},
			&cli.StringFlag{Name: "relay-url", Usage: "public ws(s):// URL clients use to reach the relay, which NIP-42 AUTH events and NIP-98 tokens must name; required unless listening on loopback"},
			&cli.StringSliceFlag{Name: "admin", Usage: "relay admin pubkey (hex or npub); repeatable"},
		),
		Action: serve,
	}
}

// loadConfig applies, in rising precedence, defaults, the config file, the
// environment and the flags (RL-24).
func loadConfig(c *cli.Context) (config.Config, error) {
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

// storeOptions are the options of the data directory's store under cfg;
// key is the relay identity key that signs group state, "" for commands
// that change none.
func storeOptions(cfg config.Config, key string) (sqlite.Options, error) {
	policy, err := cfg.Access.Policy(cfg.Relay.Admins)
	if err != nil {
		return sqlite.Options{}, err
	}
	pageCache := cfg.Storage.PageCache
	if pageCache == 0 {
		pageCache = -1 // the store's word for off
	}
	return sqlite.Options{
		Path:      filepath.Join(cfg.Storage.DataDir, dbFile),
		Schema:    schema,
		Policy:    &policy,
		RelayKey:  key,
		PageCache: pageCache,
		Logger:    newLogger(cfg),
	}, nil
}

// tuneGC sets the collector for serving, unless GOGC or GOMEMLIMIT say
// otherwise: collecting a fifth as often gives a third more window pages
// a second (BenchmarkQueryWindow), and the memory limit keeps the heap that
// this lets grow within a Raspberry Pi's means: with SQLite's caches
// beside it, the relay stays near 150 MB resident on a million events
// with a thousand subscribers (buzz-lite bench, docs/performance.md).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
}

// serve runs the relay until SIGINT or SIGTERM (RL-24). It holds the
// data directory's lock (RL-31) until it returns.
func serve(c *cli.Context) (err error) {
	cfg, err := loadConfig(c)
	if err != nil {
		return err
	}
	// Before anything is created: a relay that cannot say which URL
	// tokens must name does not start (RL-28), nor one that cannot listen
	// on its address or write its data directory and database, nor a
	// second relay on a directory one already serves (RL-31).
	if _, err := relay.PublicURL(cfg.Relay.URL, cfg.Server.Listen); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	dir, lock, err := datadir.Claim(cfg.Storage.DataDir, dbFile)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	defer func() { err = errors.Join(err, lock.Release()) }()
	cfg.Storage.DataDir = dir
	tuneGC()
	log := newLogger(cfg)
	key, err := relayKey(cfg, log)
	if err != nil {
		return errors.Join(err, ln.Close())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one stops the process at once.
	context.AfterFunc(ctx, stop)

	opts, err := storeOptions(cfg, key)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	opts.ThreadRepliesInChannel = &cfg.Community.ThreadRepliesInChannel
	opts.Logger = log
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	rl, err := relay.New(relay.Config{
		Info: relay.Info{
			Name:        cfg.Relay.Name,
			Description: cfg.Relay.Description,
			Contact:     cfg.Relay.Contact,
			PubKey:      cfg.Relay.PubKey,
			Version:     buildVersion(),
		},
		URL:            cfg.Relay.URL,
		Key:            key,
		Limits:         cfg.Limits.Relay(),
		TrustedProxies: cfg.Server.TrustedProxyNets(),
		Metrics:        cfg.Server.Metrics,
		Logger:         log,
	}, store)
	if err != nil {
		return errors.Join(err, store.Close(), ln.Close())
	}
	log.Info("buzz-lite serving", "addr", ln.Addr().String(), "data", cfg.Storage.DataDir,
		"self", rl.PubKey(), "version", buildVersion())
	serveErr := rl.Serve(ctx, ln)
	closeErr := store.Close()
	if serveErr == nil && closeErr == nil {
		log.Info("buzz-lite stopped cleanly")
	}
	return errors.Join(serveErr, closeErr)
}
