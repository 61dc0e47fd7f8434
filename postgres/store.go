// Package postgres is a buzz-lite store on PostgreSQL 15+: the same
// buzz.Store as package sqlite, for relays whose processes share one
// database. It knows SQL and nostr events and nothing of HTTP or khatru;
// the rules of ingest are buzz's (buzz/ingest.go), applied over a
// buzz.Lookup read inside each write transaction.
package postgres

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/sync/singleflight"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/barrier"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
)

// schemaSQL is migration 1: the whole schema of a fresh database.
//
//go:embed schema.sql
var schemaSQL string

// Options configure a Store.
type Options struct {
	// URL is the PostgreSQL connection string (a URL or key=value pairs).
	URL string
	// Admins are relay admins: they act as owner of every channel (RL-10)
	// and change community settings (RL-15). They are added to Policy's.
	Admins []string
	// Policy is the community's access configuration; nil means
	// buzz.DefaultPolicy().
	Policy *buzz.Policy
	// ThreadRepliesInChannel is the configured community setting (RL-15);
	// nil leaves the stored one as it is.
	ThreadRepliesInChannel *bool
	// RelayKey is the relay identity secret key (hex) that signs group
	// state (RL-11); empty means no group state is kept.
	RelayKey string
	// PageCacheBytes bounds the window page cache in bytes (pagecache);
	// 0 means the default (pagecache.DefaultBytes, 16 MiB), a negative
	// number no cache.
	PageCacheBytes int64
	// RequireSchema refuses a database that holds no buzz-lite schema
	// instead of creating it: an operator's command on a mistyped URL must
	// say so, not fill the database it names.
	RequireSchema bool
	// MaxConns bounds the connection pool; 0 leaves pgxpool's default.
	MaxConns int32
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// tracer observes every statement the pool's connections run: the
	// writer's plan test (plan_test.go) explains what a write ran.
	tracer pgx.QueryTracer
}

// Store is an open buzz-lite database on PostgreSQL.
type Store struct {
	pool   *pgxpool.Pool
	log    *slog.Logger
	now    func() time.Time
	key    string // relay identity secret key, hex; "" signs nothing
	pubkey string
	policy buzz.Policy

	// community is the access state as this process last read or wrote
	// it; every transaction compares its version with the database's.
	community atomic.Pointer[buzz.Community]
	onPublish atomic.Pointer[func([]*nostr.Event)]
	onRemote  atomic.Pointer[func(*nostr.Event, buzz.Admitted)]
	// probes coalesces the CommunityNow round trips asked at once.
	probes singleflight.Group

	// origin names this process in its notifications; connConfig is how
	// the listener connects (notify.go).
	origin     string
	connConfig *pgx.ConnConfig
	stopListen context.CancelFunc
	listening  chan struct{}
	// barriers answer CaughtUp, and know whether the listening
	// connection is up (notify.go).
	barriers *barrier.Barriers

	// writes counts the write transactions in flight or waiting, for the
	// metrics (RL-30); writeSlot is held by the one that waits for, or
	// holds, the write lock (write.go).
	writes    atomic.Int64
	writeSlot chan struct{}
	// queue holds the write jobs of this process not yet taken by a
	// transaction, in arrival order (write.go).
	queueMu sync.Mutex
	queue   []*writeJob
	// batches counts the write transactions and the jobs each took
	// (buzz.StoreStats).
	batches buzz.BatchCounts
	// pages caches window pages while no write changes their channel
	// (pagecache.go).
	pages *pagecache.Cache

	stop    chan struct{} // ends the background loop (expire.go)
	stopped chan struct{}
	closeMu sync.RWMutex
	closed  bool
}

// queryTimeout bounds every read, so that no statement outlives a client
// that went away.
const queryTimeout = 15 * time.Second

// Open connects to the database at opts.URL, brings its schema up to
// date and reads the access state.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.URL == "" {
		return nil, errors.New("postgres: no database URL")
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if _, set := cfg.ConnConfig.RuntimeParams["random_page_cost"]; !set {
		// The window's and a channel's REQ's indexes lead with the
		// channel, whose rows lie spread over the table; at the default
		// cost of a random page (4, a spinning disk's) the planner walked
		// the whole table's time index backwards instead, past every
		// other channel's events, for a quiet channel beside busy ones
		// (bench --postgres). A relay's hot pages are cached or on SSD;
		// the URL may still set another (?random_page_cost=4).
		cfg.ConnConfig.RuntimeParams["random_page_cost"] = "1.1"
	}
	basics, err := buzz.NewStoreBasics(opts.Logger, opts.Now, opts.Policy, opts.Admins, opts.RelayKey)
	if err != nil {
		return nil, err
	}
	s := &Store{log: basics.Log, now: basics.Now, key: opts.RelayKey, pubkey: basics.RelayPubKey, policy: basics.Policy,
		stop: make(chan struct{}), stopped: make(chan struct{}), writeSlot: make(chan struct{}, 1),
		pages: pagecache.New(opts.PageCacheBytes)}
	if s.origin, err = newOrigin(); err != nil {
		return nil, err
	}
	s.connConfig = cfg.ConnConfig.Copy()
	cfg.ConnConfig.Tracer = opts.tracer
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := s.open(ctx, opts); err != nil {
		s.pool.Close()
		return nil, err
	}
	// Listening before Open returns: a write another process commits from
	// now on reaches this one.
	conn, err := s.listenConn(ctx)
	if err != nil {
		s.pool.Close()
		return nil, err
	}
	var listenCtx context.Context
	listenCtx, s.stopListen = context.WithCancel(context.Background())
	s.listening = make(chan struct{})
	s.barriers = barrier.New(s.sendBarrier, barrierWait, barrierGap, s.log)
	s.barriers.Hearing()
	go s.listen(listenCtx, conn, s.listening)
	go s.background(s.stop, s.stopped)
	return s, nil
}

// open migrates the schema, applies the configured setting and reads the
// access state.
func (s *Store) open(ctx context.Context, opts Options) error {
	if err := migrate(ctx, s.pool, opts.RequireSchema); err != nil {
		return err
	}
	if opts.ThreadRepliesInChannel != nil {
		if err := s.applyConfiguredSetting(ctx, *opts.ThreadRepliesInChannel); err != nil {
			return err
		}
	}
	c, err := loadCommunity(ctx, s.pool, s.policy)
	if err != nil {
		return err
	}
	s.community.Store(c)
	return nil
}

// Close stops the background loop, waits for the reads and writes under
// way and closes every connection; work after it fails.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	close(s.stop)
	<-s.stopped
	s.stopListen()
	<-s.listening
	s.pool.Close()
	return nil
}

// errClosed is returned for work submitted after Close.
var errClosed = errors.New("store is closed")

func (s *Store) nowUnix() int64 { return s.now().Unix() }

// The store implements the interface the relay reads and writes through.
var _ buzz.Store = (*Store)(nil)
