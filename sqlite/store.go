// Package sqlite is buzz-lite's store: one SQLite file in WAL mode, written
// by a single writer connection that commits events in batches, read through
// a pool of read-only connections (the window and thread pages and the
// events of filters through connections of their own, without
// database/sql: direct.go). It knows SQL
// and nostr events and nothing
// of HTTP or khatru. Thread metadata and channel state are computed inside
// the ingest transaction (RL-4, RL-5, RL-10); window pages, thread pages and
// aux closures are read in one snapshot each (issue 4).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
)

// Options configure a Store.
type Options struct {
	// Path of the database file; created when missing.
	Path string
	// Schema is the text of schema.sql.
	Schema string
	// Admins are relay admins: they act as owner of every channel (RL-10)
	// and change community settings (RL-15). They are added to Policy's.
	Admins []string
	// Policy is the community's access configuration; nil means
	// buzz.DefaultPolicy().
	Policy *buzz.Policy
	// ThreadRepliesInChannel is the configured community setting (RL-15);
	// nil leaves the stored one as it is (commands other than serve).
	ThreadRepliesInChannel *bool
	// RelayKey is the relay identity secret key (hex) that signs group
	// state (RL-11); empty means no group state is kept.
	RelayKey string
	// PageCacheBytes bounds the window page cache in bytes (pagecache);
	// 0 means the default (pagecache.DefaultBytes, 16 MiB), a negative
	// number no cache (benchmarks of the database work).
	PageCacheBytes int64
	// ReadConns bounds the read pool; 0 picks a default from the CPU count.
	ReadConns int
	// NoMap keeps the read connections from mapping the database file
	// (readMmapSize): every page then comes through read calls into each
	// connection's own page cache (storage.map_reads = false).
	NoMap bool
	// WALLimit bounds the WAL file, also while readers run without pause
	// (RL-1, RL-27a); 0 means DefaultWALLimit. Tests set a small one.
	WALLimit int64
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Tests move it.
	Now func() time.Time
}

// Store is an open buzz-lite database.
type Store struct {
	path    string
	writer  *writer
	readers *sql.DB
	// direct serves the window and thread pages and filters' events
	// (direct.go); pageSlots are the pages built at once (pageBuild).
	direct    *directPool
	pageSlots chan struct{}
	log       *slog.Logger
	now       func() time.Time
	key       string // relay identity secret key, hex; "" signs nothing
	pubkey    string

	// readStmts caches the statements of the read pool's repeated reads
	// (a REQ's filter shape, the access version, the feed), prepared once
	// per pool connection; the least recently used goes when it is full.
	readStmtsMu sync.Mutex
	readStmts   map[string]*cachedStmt
	stmtClock   uint64
	// seenOnce are statement texts seen once: a text is prepared for the
	// pool when it comes again, so that one-off filter shapes neither
	// push the repeated ones out nor keep the pool busy preparing.
	seenOnce map[string]bool
	// preparing are the statements being prepared for the pool.
	preparing map[string]bool
	// pages caches window pages while no write changes their channel
	// (pagecache.go).
	pages *pagecache.Cache

	channelsMu sync.RWMutex
	channels   map[string]int64 // h value -> channels.seq, append-only

	stopPurge chan struct{}
	purgeDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// queryTimeout bounds every read, so that no statement outlives a client
// that went away.
const queryTimeout = 15 * time.Second

// DefaultWALLimit is the bound on the WAL file of RL-27a.
const DefaultWALLimit = 128 << 20

// busyTimeoutMS is how long a connection waits for a lock before SQLite says
// "database is locked": long enough that the single writer and a concurrent
// command (backup, check) never surface it to a client (RL-1).
const busyTimeoutMS = 10000

// Open opens (creating or migrating as needed) the database at opts.Path.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("sqlite: no database path")
	}
	basics, err := buzz.NewStoreBasics(opts.Logger, opts.Now, opts.Policy, opts.Admins, opts.RelayKey)
	if err != nil {
		return nil, err
	}
	policy := basics.Policy
	s := &Store{
		path:      opts.Path,
		log:       basics.Log,
		now:       basics.Now,
		key:       opts.RelayKey,
		pubkey:    basics.RelayPubKey,
		channels:  make(map[string]int64),
		readStmts: make(map[string]*cachedStmt),
		seenOnce:  map[string]bool{},
		preparing: map[string]bool{},
		pages:     pagecache.New(opts.PageCacheBytes),
		stopPurge: make(chan struct{}),
		purgeDone: make(chan struct{}),
	}

	wdb, err := sql.Open("sqlite", dsn(opts.Path, false, 0))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", opts.Path, err)
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	conn, err := wdb.Conn(ctx)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open %s: %w", opts.Path, describeOpenError(err))
	}
	if err := migrate(ctx, conn, opts.Schema); err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("open %s: %w", opts.Path, err)
	}
	if opts.ThreadRepliesInChannel != nil {
		if err := applyConfiguredSetting(ctx, conn, *opts.ThreadRepliesInChannel); err != nil {
			conn.Close()
			wdb.Close()
			return nil, fmt.Errorf("open %s: %w", opts.Path, err)
		}
	}
	community, err := loadCommunity(ctx, conn, policy)
	if err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("open %s: %w", opts.Path, err)
	}
	// WAL is a property of the file: set only once the file is known to be
	// ours, so that refusing someone else's database leaves it untouched.
	// The WAL is checkpointed once it holds half the WAL limit (16384 pages,
	// 64 MiB by default) and cut back to that size after: a page rewritten
	// many times between checkpoints is copied to the database once
	// (BenchmarkIngest: about a quarter more events/s than with the default
	// of 1000 pages). Without readers that keeps the WAL bounded; the
	// writer keeps it so under readers (writer.boundWAL). The statement
	// journal and temporary tables live in memory, and the writer keeps a
	// 16 MiB page cache: the relay's resident set is its Go heap plus
	// SQLite's caches, and 32 MiB put it over 150 MB on a million events
	// (buzz-lite bench).
	walLimit := opts.WALLimit
	if walLimit <= 0 {
		walLimit = DefaultWALLimit
	}
	var pageSize int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("open %s: page size: %w", opts.Path, err)
	}
	for _, pragma := range []string{
		"PRAGMA journal_mode = WAL",
		fmt.Sprintf("PRAGMA journal_size_limit = %d", walLimit/2),
		fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", max(1, walLimit/2/pageSize)),
		"PRAGMA cache_size = -16384",
		"PRAGMA temp_store = MEMORY",
	} {
		if _, err := conn.ExecContext(ctx, pragma); err != nil {
			conn.Close()
			wdb.Close()
			return nil, fmt.Errorf("open %s: %s: %w", opts.Path, pragma, err)
		}
	}

	mapSize := int64(readMmapSize)
	if opts.NoMap {
		mapSize = 0
	}
	s.readers, err = sql.Open("sqlite", dsn(opts.Path, true, mapSize))
	if err != nil {
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("open read pool on %s: %w", opts.Path, err)
	}
	n := opts.ReadConns
	if n <= 0 {
		n = max(4, 2*runtime.NumCPU())
	}
	s.readers.SetMaxOpenConns(n)
	s.readers.SetMaxIdleConns(n)
	s.direct = newDirectPool(opts.Path, n, mapSize)
	s.pageSlots = make(chan struct{}, pageBuilds())

	s.writer, err = newWriter(ctx, wdb, conn, s.log, community, s.finish, s.nowUnix, opts.Path+"-wal", walLimit)
	if err != nil {
		s.readers.Close()
		conn.Close()
		wdb.Close()
		return nil, fmt.Errorf("open %s: %w", opts.Path, err)
	}
	go s.purgeLoop()
	return s, nil
}

// readMmapSize is how much of the database file each read connection maps
// (issue 15): a page read then finds the database's pages in the kernel's
// page cache where they are, instead of copying each into the
// connection's own cache first. A deep window page of a 500,000-event
// channel cost a third less. The mapped pages are the kernel's page cache,
// shared by every connection and process, not the relay's memory; they
// count in its resident set as file pages (RssFile), once per connection
// that touched them. 0x7fff0000 is the engine's largest map; a 32-bit
// build (a Raspberry Pi's armv7) maps nothing, its address space being too
// small for the maps of several connections. The writer maps nothing.
const readMmapSize = 0x7fff0000 * (strconv.IntSize / 64)

// dsn builds the connection string: busy_timeout first (the driver orders
// it so), NORMAL sync, foreign keys (RL-1). WAL mode and the bound on the WAL
// file left after a checkpoint are set by Open once the file is known to be
// a buzz-lite database. A read connection maps mapSize bytes of the file;
// the writer maps nothing, whatever mapSize says.
func dsn(path string, readOnly bool, mapSize int64) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", mapSize))
		q.Add("_pragma", "query_only(1)")
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "mmap_size(0)")
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Close stops the purge loop, lets the writer finish what is queued,
// checkpoints the WAL into the database file and closes every connection.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stopPurge)
		<-s.purgeDone
		// Readers first: the final checkpoint must not wait for a read.
		s.readStmtsMu.Lock()
		var serr []error
		for _, c := range s.readStmts {
			serr = append(serr, c.st.Close())
		}
		s.readStmts = nil
		s.readStmtsMu.Unlock()
		rerr := errors.Join(append(serr, s.readers.Close())...)
		s.direct.close()
		werr := s.writer.close()
		s.closeErr = errors.Join(rerr, werr)
	})
	return s.closeErr
}

func (s *Store) nowUnix() int64 { return s.now().Unix() }

// maxReadStmts bounds the cache of prepared read statements: a filter's
// statement text varies with its shape (how many ids, kinds, tags).
const maxReadStmts = 64

// cachedStmt is a statement prepared for the read pool and when it was
// last used (stmtClock).
type cachedStmt struct {
	st   *sql.Stmt
	used uint64
}

// prepared returns query as a statement of tx, prepared once per pool
// connection rather than parsed at every call (the parser was a tenth of a
// window page's time, and of a REQ's). A statement seen a second time is
// prepared for the pool in the background, and on tx for this call:
// preparing for the pool takes a connection of its own, and waiting for
// one while tx holds one can wait forever (every connection held by a
// transaction waiting so; a pool of one always).
func (s *Store) prepared(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.readStmtsMu.Lock()
	c, ok := s.readStmts[query]
	switch {
	case ok:
		s.stmtClock++
		c.used = s.stmtClock
	case s.readStmts == nil || s.preparing[query]:
	case !s.seenOnce[query]:
		if len(s.seenOnce) >= 4*maxReadStmts {
			clear(s.seenOnce)
		}
		s.seenOnce[query] = true
	case len(s.preparing) < maxPreparing:
		delete(s.seenOnce, query)
		s.preparing[query] = true
		go s.prepareForPool(query)
	}
	s.readStmtsMu.Unlock()
	if ok {
		return tx.StmtContext(ctx, c.st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// maxPreparing bounds the statements being prepared for the pool at once.
const maxPreparing = 4

// prepareForPool prepares query for the read pool and caches it, holding
// no connection while it waits for one; a full cache lets its least
// recently used statement go (closed once no transaction uses it). A
// failure leaves a later call to try again; that call's own preparation
// reports the error.
func (s *Store) prepareForPool(query string) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	st, err := s.readers.PrepareContext(ctx, query)
	s.readStmtsMu.Lock()
	defer s.readStmtsMu.Unlock()
	delete(s.preparing, query)
	if err != nil {
		s.log.Debug("preparing a read statement for the pool", "err", err)
		return
	}
	if s.readStmts == nil { // closed meanwhile
		st.Close()
		return
	}
	if len(s.readStmts) >= maxReadStmts {
		var oldest string
		for q, c := range s.readStmts {
			if oldest == "" || c.used < s.readStmts[oldest].used {
				oldest = q
			}
		}
		s.readStmts[oldest].st.Close()
		delete(s.readStmts, oldest)
	}
	s.stmtClock++
	s.readStmts[query] = &cachedStmt{st: st, used: s.stmtClock}
}

// readTx runs fn in one read transaction: one snapshot for everything fn
// reads. Bounded by queryTimeout.
func (s *Store) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.readTxFor(ctx, queryTimeout, fn)
}

// readTxFor is readTx bounded by timeout instead; 0 leaves the bound to ctx
// (operator commands that read the whole database).
func (s *Store) readTxFor(ctx context.Context, timeout time.Duration, fn func(tx *sql.Tx) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

// pageTx runs fn in one read transaction for the window, thread and
// summary reads. Their statements are each bounded by an index range and a
// LIMIT, and fn gets a context without cancellation to run them with: for a
// statement with a cancellable context the driver starts a watcher
// goroutine and a progress handler, which cost more than a page's own
// work. ctx still bounds the whole: the transaction ends with it, and fn
// checks it between statements (see checkpoint).
func (s *Store) pageTx(ctx context.Context, fn func(tx *sql.Tx, sctx context.Context) error) error {
	return s.readTx(ctx, func(tx *sql.Tx) error { return fn(tx, context.WithoutCancel(ctx)) })
}

// describeOpenError turns SQLite's "file is not a database" into a message an
// operator understands.
func describeOpenError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_NOTADB {
		return fmt.Errorf("not a buzz-lite database (not an SQLite file): %w", err)
	}
	return err
}

// isFull reports whether err is SQLite running out of disk, through the
// driver or stepped directly (engineError).
func isFull(err error) bool {
	var se *sqlite.Error
	var ee *engineError
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL ||
		errors.As(err, &ee) && ee.code&0xff == sqlite3.SQLITE_FULL
}

// The store implements the interface the relay reads and writes through.
var _ buzz.Store = (*Store)(nil)
