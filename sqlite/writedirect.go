package sqlite

import (
	"database/sql"
	"fmt"
	"reflect"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The statements every event runs in the writer (the duplicate check,
// its parent's lookup, its rows, its ancestors' counters) are stepped on
// the writer connection's engine handle without database/sql (issue 32),
// as the pages are read (direct.go): through the driver a fifth of the
// writer's time went to binding, result and row objects, conversions and
// locks around sqlite3_step. They run inside the transaction the writer
// began on the same connection, from the writer's goroutine only, which
// is the only user of that connection; the other statements of the
// writer stay on database/sql.

// writerEngine is the direct side of the writer connection conn: its
// engine handle, with a TLS of its own (the engine's calls on a handle do
// not overlap: the driver opens connections serialized).
func writerEngine(conn *sql.Conn) (*directConn, error) {
	var db uintptr
	// The driver keeps the handle in an unexported field of its
	// connection, the one way to reach it: a driver that moves it fails
	// here, at Open, not later.
	err := conn.Raw(func(dc any) error {
		v := reflect.ValueOf(dc)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			if f := v.FieldByName("db"); f.IsValid() && f.Kind() == reflect.Uintptr {
				db = uintptr(f.Uint())
			}
		}
		if db == 0 {
			return fmt.Errorf("the SQLite driver's connection (%T) keeps no engine handle in db", dc)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	return &directConn{tls: libc.NewTLS(), db: db, stmts: map[string]*directStmt{}}, nil
}

// keep prepares query on c for the life of c; a text kept already is the
// statement kept for it, so that no prepared statement is left out of
// finalizeKept (one left would keep the handle open past the driver's
// close).
func (c *directConn) keep(query string) (*directStmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	p, err := c.compile(query, sqlite3.SQLITE_PREPARE_PERSISTENT)
	if err != nil {
		return nil, err
	}
	st := &directStmt{c: c, p: p, kept: true}
	c.stmts[query] = st
	return st, nil
}

// release finalizes the statements of c, the direct side of a connection
// the driver closes.
func (c *directConn) release() {
	c.finalizeKept()
	c.tls.Close()
}

// exec runs st with args to its end and resets it.
func (st *directStmt) exec(args ...any) error {
	defer st.reset()
	if err := st.bind(args...); err != nil {
		return err
	}
	for {
		more, err := st.step()
		if err != nil || !more {
			return err
		}
	}
}

// first runs st with args to its first row: found is false when there is
// none. Its columns stay readable until the caller resets st, which it
// must do whatever first returns.
func (st *directStmt) first(args ...any) (found bool, err error) {
	if err := st.bind(args...); err != nil {
		return false, err
	}
	return st.step()
}

// lastInsertID is the rowid of the connection's last insert.
func (st *directStmt) lastInsertID() int64 {
	return sqlite3.Xsqlite3_last_insert_rowid(st.c.tls, st.c.db)
}

// bytesCopy is column col in memory of its own; nil for NULL or empty,
// as the driver reads a blob.
func (st *directStmt) bytesCopy(col int) []byte {
	b := st.bytes(col)
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// nullInt64Col is column col as the driver scans it into sql.NullInt64.
func (st *directStmt) nullInt64Col(col int) sql.NullInt64 {
	v, ok := st.nullInt64(col)
	return sql.NullInt64{Int64: v, Valid: ok}
}
