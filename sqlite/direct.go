package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// The window and thread pages, and the events of REQs and `/query` filters,
// are read through connections of their own, opened on modernc's SQLite
// engine without its database/sql driver (issue 15). A page is some 180
// events of a dozen values each, and through the driver every value cost a
// lock (the driver opens connections full-mutex), a type lookup, a copy
// into a fresh Go value boxed in an interface, and database/sql's
// conversion into the scan target: two fifths of a page's time went to
// reading values, not finding them. Here a connection is opened without
// SQLite's mutex (one goroutine uses it at a time), values are read where
// SQLite keeps them, and an event's JSON is written straight from them.

// cMem is the address p of memory the engine allocated (outside Go's
// heap, so the collector neither moves nor frees it) as a pointer.
func cMem(p uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&p))
}

// directConn is one read-only connection used by one goroutine at a time.
type directConn struct {
	tls   *libc.TLS
	db    uintptr
	stmts map[string]*directStmt // kept for reuse (prepare)
	seen  map[string]struct{}    // texts prepared once and not kept
	clock uint64                 // orders the kept statements by last use
}

// directStmt is a statement of a connection, from prepare to reset.
type directStmt struct {
	c     *directConn
	p     uintptr
	kept  bool   // in c.stmts, reused; otherwise finalized at reset
	inUse bool   // between prepare and reset: never finalized to make room
	used  uint64 // c.clock when last prepared
}

// sqliteTransient makes SQLite copy a bound value during the bind call.
const sqliteTransient = ^uintptr(0)

// openDirect opens path read-only, with the pragmas of the read pool
// (dsn): busy_timeout, query_only, mapSize bytes of the file mapped.
func openDirect(path string, mapSize int64) (*directConn, error) {
	c := &directConn{tls: libc.NewTLS(), stmts: map[string]*directStmt{}, seen: map[string]struct{}{}}
	name, err := libc.CString("file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro")
	if err != nil {
		c.tls.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	pdb := libc.Xmalloc(c.tls, 8)
	if pdb == 0 {
		libc.Xfree(c.tls, name)
		c.tls.Close()
		return nil, fmt.Errorf("open %s: out of memory", path)
	}
	rc := sqlite3.Xsqlite3_open_v2(c.tls, name, pdb, sqlite3.SQLITE_OPEN_READONLY|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	c.db = *(*uintptr)(cMem(pdb))
	libc.Xfree(c.tls, pdb)
	libc.Xfree(c.tls, name)
	if rc != sqlite3.SQLITE_OK {
		err := c.errorOf(rc)
		c.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	sqlite3.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	for _, pragma := range []string{
		fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMS),
		"PRAGMA query_only = 1",
		fmt.Sprintf("PRAGMA mmap_size = %d", mapSize),
	} {
		if err := c.exec(pragma); err != nil {
			c.close()
			return nil, fmt.Errorf("open %s: %s: %w", path, pragma, err)
		}
	}
	return c, nil
}

// errorOf is the error of result code rc, with the connection's message.
func (c *directConn) errorOf(rc int32) error {
	msg := "out of memory"
	if c.db != 0 {
		msg = libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	}
	err := &engineError{code: rc, msg: msg}
	if rc&0xff == sqlite3.SQLITE_INTERRUPT {
		return fmt.Errorf("%w: %w", err, errInterrupted)
	}
	return err
}

// engineError is a result code of the engine with its message, so that
// callers can tell a full disk (isFull) as they do the driver's errors.
type engineError struct {
	code int32
	msg  string
}

func (e *engineError) Error() string { return fmt.Sprintf("%s (%d)", e.msg, e.code) }

// errInterrupted is a statement ended by its read's context.
var errInterrupted = errors.New("interrupted")

// exec runs a statement that returns no rows.
func (c *directConn) exec(query string) error {
	st, err := c.prepare(query)
	if err != nil {
		return err
	}
	defer st.reset()
	_, err = st.step()
	return err
}

// prepare returns query prepared on c, for the caller to reset once done.
// A text is kept for reuse the second time it is prepared, up to
// maxReadStmts of them, the least recently used giving way: statement
// texts vary with a filter's shape (how many ids, kinds, tags), and a
// client sending filters of ever new shapes must not push out the
// statements every page runs (parsing them again was a tenth of a page).
// A statement a read holds is never finalized to make room: the cache then
// grows past its bound until the read resets it.
func (c *directConn) prepare(query string) (*directStmt, error) {
	c.clock++
	if st, ok := c.stmts[query]; ok {
		st.used, st.inUse = c.clock, true
		return st, nil
	}
	_, again := c.seen[query]
	var flags uint32
	if again {
		flags = sqlite3.SQLITE_PREPARE_PERSISTENT
	}
	p, err := c.compile(query, flags)
	if err != nil {
		return nil, err
	}
	st := &directStmt{c: c, p: p, inUse: true, used: c.clock}
	if !again {
		if len(c.seen) >= 4*maxReadStmts {
			clear(c.seen)
		}
		c.seen[query] = struct{}{}
		return st, nil
	}
	delete(c.seen, query)
	if len(c.stmts) >= maxReadStmts {
		c.evictOldest()
	}
	st.kept = true
	c.stmts[query] = st
	return st, nil
}

// compile prepares query on c with the flags of sqlite3_prepare_v3.
func (c *directConn) compile(query string, flags uint32) (uintptr, error) {
	z, err := libc.CString(query)
	if err != nil {
		return 0, fmt.Errorf("prepare: %w", err)
	}
	defer libc.Xfree(c.tls, z)
	pp := libc.Xmalloc(c.tls, 8)
	if pp == 0 {
		return 0, errors.New("prepare: out of memory")
	}
	defer libc.Xfree(c.tls, pp)
	if rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, z, -1, flags, pp, 0); rc != sqlite3.SQLITE_OK {
		return 0, fmt.Errorf("prepare: %w", c.errorOf(rc))
	}
	return *(*uintptr)(cMem(pp)), nil
}

// evictOldest finalizes the least recently used kept statement that no
// read holds.
func (c *directConn) evictOldest() {
	var oldest string
	var o *directStmt
	for q, st := range c.stmts {
		if !st.inUse && (o == nil || st.used < o.used) {
			oldest, o = q, st
		}
	}
	if o != nil {
		sqlite3.Xsqlite3_finalize(c.tls, o.p)
		delete(c.stmts, oldest)
	}
}

// close finalizes c's statements and closes it.
func (c *directConn) close() {
	c.finalizeKept()
	if c.db != 0 {
		sqlite3.Xsqlite3_close_v2(c.tls, c.db)
	}
	c.tls.Close()
}

// finalizeKept finalizes the statements c keeps.
func (c *directConn) finalizeKept() {
	for _, st := range c.stmts {
		sqlite3.Xsqlite3_finalize(c.tls, st.p)
	}
	clear(c.stmts)
}

// bind binds args to ?1, ?2, ...: int, int64, bool (as 0 or 1), []byte
// (nil binds NULL), string, sql.NullInt64, sql.NullString and nil.
func (st *directStmt) bind(args ...any) error {
	tls := st.c.tls
	for i, a := range args {
		n := int32(i + 1)
		switch v := a.(type) {
		case sql.NullInt64:
			a = nil
			if v.Valid {
				a = v.Int64
			}
		case sql.NullString:
			a = nil
			if v.Valid {
				a = v.String
			}
		}
		var rc int32
		switch v := a.(type) {
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(tls, st.p, n)
		case int:
			rc = sqlite3.Xsqlite3_bind_int64(tls, st.p, n, int64(v))
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(tls, st.p, n, v)
		case bool:
			var b int64
			if v {
				b = 1
			}
			rc = sqlite3.Xsqlite3_bind_int64(tls, st.p, n, b)
		case []byte:
			if v == nil {
				rc = sqlite3.Xsqlite3_bind_null(tls, st.p, n)
				break
			}
			rc = st.bindCopy(n, v, sqlite3.Xsqlite3_bind_blob)
		case string:
			rc = st.bindCopy(n, []byte(v), sqlite3.Xsqlite3_bind_text)
		default:
			return fmt.Errorf("bind ?%d: unsupported type %T", n, a)
		}
		if rc != sqlite3.SQLITE_OK {
			return fmt.Errorf("bind ?%d: %w", n, st.c.errorOf(rc))
		}
	}
	return nil
}

// bindCopy binds v through C memory that SQLite copies at once.
func (st *directStmt) bindCopy(n int32, v []byte, bind func(*libc.TLS, uintptr, int32, uintptr, int32, uintptr) int32) int32 {
	tls := st.c.tls
	p := libc.Xmalloc(tls, types.Size_t(max(len(v), 1)))
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	defer libc.Xfree(tls, p)
	copy(unsafe.Slice((*byte)(cMem(p)), len(v)), v)
	return bind(tls, st.p, n, p, int32(len(v)), sqliteTransient)
}

// step moves to the next row: false once there is none.
func (st *directStmt) step() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(st.c.tls, st.p); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, st.c.errorOf(rc)
	}
}

// reset makes the statement ready to bind and run again, or finalizes it
// when it is not kept.
func (st *directStmt) reset() {
	st.inUse = false
	if !st.kept {
		sqlite3.Xsqlite3_finalize(st.c.tls, st.p)
		st.p = 0
		return
	}
	sqlite3.Xsqlite3_reset(st.c.tls, st.p)
}

func (st *directStmt) int64(col int) int64 {
	return sqlite3.Xsqlite3_column_int64(st.c.tls, st.p, int32(col))
}

func (st *directStmt) isNull(col int) bool {
	return sqlite3.Xsqlite3_column_type(st.c.tls, st.p, int32(col)) == sqlite3.SQLITE_NULL
}

// nullInt64 is column col, or ok false when it is NULL.
func (st *directStmt) nullInt64(col int) (v int64, ok bool) {
	if st.isNull(col) {
		return 0, false
	}
	return st.int64(col), true
}

// bytes is column col where SQLite keeps it: valid until the statement
// steps or resets. Text comes as its UTF-8 bytes.
func (st *directStmt) bytes(col int) []byte {
	p := sqlite3.Xsqlite3_column_blob(st.c.tls, st.p, int32(col))
	n := sqlite3.Xsqlite3_column_bytes(st.c.tls, st.p, int32(col))
	if p == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(cMem(p)), n)
}

// directPool holds up to size direct connections to one database.
type directPool struct {
	path    string
	mapSize int64         // openDirect's
	slots   chan struct{} // one per connection open or being opened
	mu      sync.Mutex
	idle    []*directConn
	shut    bool
}

func newDirectPool(path string, size int, mapSize int64) *directPool {
	return &directPool{path: path, mapSize: mapSize, slots: make(chan struct{}, size)}
}

// get returns an idle connection, or opens one while fewer than size are
// open, or waits for one until ctx ends.
func (p *directPool) get(ctx context.Context) (*directConn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.shut {
		p.mu.Unlock()
		<-p.slots
		return nil, errors.New("store closed")
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := openDirect(p.path, p.mapSize)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return c, nil
}

// put returns c to the pool; broken, c is closed instead.
func (p *directPool) put(c *directConn, broken bool) {
	p.mu.Lock()
	if p.shut || broken {
		p.mu.Unlock()
		c.close()
	} else {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
	}
	<-p.slots
}

// close closes the idle connections, and each busy one once it is put back.
func (p *directPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shut = true
	for _, c := range p.idle {
		c.close()
	}
	p.idle = nil
}

// directTx is one read transaction on a direct connection: one snapshot
// for every statement run in it.
type directTx struct {
	c *directConn
}

// directRead runs fn in one read transaction on a direct connection,
// bounded by queryTimeout and by ctx: when either ends, the statement
// running is interrupted.
func (s *Store) directRead(ctx context.Context, fn func(tx directTx) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	c, err := s.direct.get(ctx)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	// Broken until the transaction ended cleanly: a panic in fn, an
	// interrupt or a failed ROLLBACK close the connection rather than
	// leave an open snapshot in the pool (it would hold back the WAL).
	broken := true
	defer func() { s.direct.put(c, broken) }()
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		// Another goroutine's TLS must not be used: a fresh one, as the
		// driver does for its own interrupts.
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_interrupt(tls, c.db)
		tls.Close()
	})
	defer func() {
		if !stop() {
			// The interrupt ran or is running: the connection must not
			// go back to the pool before it is done with it, and is
			// closed rather than trusted with a pending interrupt.
			<-interrupted
			broken = true
		}
	}()
	if err = c.exec("BEGIN"); err != nil {
		err = fmt.Errorf("begin read: %w", err)
	} else {
		err = fn(directTx{c: c})
		// A read has nothing to commit: a failed ROLLBACK after a whole
		// page costs the connection, not the page.
		broken = c.exec("ROLLBACK") != nil
	}
	if err != nil && ctx.Err() != nil {
		// Whatever SQLite made of the interrupt (it may surface as a
		// virtual table's failure), the reason is the context's.
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return err
}

// pageBuilds is how many window and thread pages are built at once: one a
// core, at least two. A page is CPU work on mapped memory, much the same
// for every page, and more pages at once than cores only interleave them:
// sixteen clients' deep window pages of the million-event bench, built
// four at a time (the direct connections) on two cores, cost 1,300 us of
// the relay's CPU each; two at a time, 1,150, each page finding the caches
// it warmed, and their p99 fell from 58 to 38 ms. Filters' reads are not
// held to it: their cost varies with what they ask for, and a client
// whose long reads held every turn would hold up every page; with more
// direct connections than turns, pages find one free however many
// filters one client runs (RL-27a bounds those by its read slots).
func pageBuilds() int { return max(2, runtime.NumCPU()) }

// pageBuild is pageRead for a window or thread page, waiting its turn
// among pageBuilds, in order of arrival. One queryTimeout bounds the wait
// and the read, its tries included, which hold the turn.
func (s *Store) pageBuild(ctx context.Context, fn func(tx directTx) error) error {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	select {
	case s.pageSlots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("begin read: %w", ctx.Err())
	}
	defer func() { <-s.pageSlots }()
	return s.pageRead(ctx, fn)
}

// pageRead is directRead for a page or a filter's events, read again (at
// most twice more) when the access state moved during the read.
func (s *Store) pageRead(ctx context.Context, fn func(tx directTx) error) error {
	for try := 0; ; try++ {
		err := s.directRead(ctx, fn)
		if !errors.Is(err, errAccessMoved) || try == 2 {
			return err
		}
	}
}

// query returns query prepared in tx with args bound, ready to step. The
// caller resets it once done.
func (tx directTx) query(query string, args ...any) (*directStmt, error) {
	st, err := tx.c.prepare(query)
	if err != nil {
		return nil, err
	}
	if err := st.bind(args...); err != nil {
		st.reset()
		return nil, err
	}
	return st, nil
}

// int64 runs a query of one integer value in tx.
func (tx directTx) int64(query string, args ...any) (int64, error) {
	st, err := tx.query(query, args...)
	if err != nil {
		return 0, err
	}
	defer st.reset()
	found, err := st.step()
	switch {
	case err != nil:
		return 0, err
	case !found:
		return 0, errors.New("no row")
	}
	return st.int64(0), nil
}

// channelSeq is a channelLookup in tx.
func (tx directTx) channelSeq(h string) (int64, bool, error) {
	st, err := tx.query(channelSeqSQL, h)
	if err != nil {
		return 0, false, err
	}
	defer st.reset()
	found, err := st.step()
	if err != nil || !found {
		return 0, false, err
	}
	return st.int64(0), true, nil
}
