package cmd

// serve: the relay itself (RL-24, RL-28, RL-31).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/internal/datadir"
	"github.com/buzz-lite/buzz-lite/relay"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the relay",
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "listen", Usage: "address to listen on (default 127.0.0.1:7777)"},
			&cli.StringFlag{Name: "relay-url", Usage: "public ws(s):// URL clients use to reach the relay, which NIP-42 AUTH events and NIP-98 tokens must name; required unless listening on loopback"},
			&cli.StringSliceFlag{Name: "admin", Usage: "relay admin pubkey (hex or npub); repeatable"},
			postgresFlag(),
		),
		Action: serve,
	}
}

// tuneGC sets the collector for serving, unless GOGC or GOMEMLIMIT say
// otherwise: collecting a fifth as often gives a third more window pages
// a second (BenchmarkQueryWindow), and the memory limit keeps the heap that
// this lets grow within a Raspberry Pi's means: with SQLite's caches
// beside it, the relay's own (anonymous) memory stays near 130 MB on a
// million events with a thousand subscribers (buzz-lite bench,
// docs/performance.md).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(64 << 20)
	}
}

// serve runs the relay until SIGINT or SIGTERM (RL-24). On SQLite it holds
// the data directory's lock (RL-31) until it returns; on PostgreSQL
// several processes serve one database (RL-33).
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
	if !onPostgres(cfg) {
		// On PostgreSQL the data directory holds only the relay key, which
		// the processes sharing the database share (RL-33).
		dir, lock, claimErr := datadir.Claim(cfg.Storage.DataDir, DBFile)
		if claimErr != nil {
			return errors.Join(claimErr, ln.Close())
		}
		defer func() { err = errors.Join(err, lock.Release()) }()
		cfg.Storage.DataDir = dir
	}
	tuneGC()
	log := newLogger(cfg)
	key, err := RelayKey(cfg, log)
	if err != nil {
		return errors.Join(err, ln.Close())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal, a second one stops the process at once.
	context.AfterFunc(ctx, stop)

	store, err := openStore(ctx, cfg, storeConfig{key: key, serving: true, oneKey: true})
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	// Group state of an older form, or rendered under another open_write
	// or allowed_kinds, is renewed before clients read it (RL-36): after
	// openStore, which refuses a database another relay key signed.
	if err := store.RenewChangedGroupState(ctx); err != nil {
		return errors.Join(fmt.Errorf("renew group state: %w", err), store.Close(), ln.Close())
	}
	rl, err := relay.New(relay.Config{
		Info: relay.Info{
			Name:        cfg.Relay.Name,
			Description: cfg.Relay.Description,
			Contact:     cfg.Relay.Contact,
			PubKey:      cfg.Relay.PubKey,
			Version:     buildVersion(),
		},
		URL:             cfg.Relay.URL,
		Key:             key,
		Limits:          cfg.Limits.Relay(),
		TrustedProxies:  cfg.Server.TrustedProxyNets(),
		Metrics:         cfg.Server.Metrics,
		MetricsAllow:    cfg.Server.MetricsAllowNets(),
		Web:             cfg.Server.Web,
		WebConnectAllow: cfg.Server.WebConnectAllow,
		Logger:          log,
	}, store)
	if err != nil {
		return errors.Join(err, store.Close(), ln.Close())
	}
	where := []any{"data", cfg.Storage.DataDir}
	if onPostgres(cfg) {
		keyFile, _ := filepath.Abs(relayKeyFile(cfg)) // as given when it has no absolute form
		if keyFile == "" {
			keyFile = relayKeyFile(cfg)
		}
		where = []any{"store", "postgres", "key", keyFile}
	}
	log.Info("buzz-lite serving", append(append([]any{"addr", ln.Addr().String()}, where...),
		"self", rl.PubKey(), "version", buildVersion())...)
	serveErr := rl.Serve(ctx, ln)
	closeErr := store.Close()
	if serveErr == nil && closeErr == nil {
		log.Info("buzz-lite stopped cleanly")
	}
	return errors.Join(serveErr, closeErr)
}
