// Package pgtest gives tests a fresh PostgreSQL database on the server
// that BUZZ_LITE_TEST_POSTGRES names: the PostgreSQL store's tests run on a
// real server, never a stand-in, and skip saying why without one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// URLVar names the PostgreSQL server the tests run on: a URL whose user
// may create databases. Unset, the PostgreSQL tests skip.
const URLVar = "BUZZ_LITE_TEST_POSTGRES"

// FreshDatabase creates an empty database with a random name on the
// server of BUZZ_LITE_TEST_POSTGRES and returns its URL; it is dropped
// when the test ends. The test skips, saying why, when the variable is
// unset: these tests run on a real PostgreSQL, never a stand-in.
func FreshDatabase(t testing.TB) string {
	t.Helper()
	server := os.Getenv(URLVar)
	if server == "" {
		t.Skipf("%s is not set: the PostgreSQL store's tests need a server (a URL whose user may create databases)", URLVar)
	}
	if u, err := url.Parse(server); err != nil || u.Scheme == "" {
		t.Fatalf("%s must be a URL (postgres://user@host:port/db): %q", URLVar, server)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", URLVar, err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "buzz_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("connect to drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, _ := url.Parse(server)
	u.Path = "/" + name
	return u.String()
}
