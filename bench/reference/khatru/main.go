// Command khatru-reference is a plain nostr relay to measure buzz-lite
// against (`buzz-lite-bench --against`, issue 32): khatru v0.19.1, unpatched,
// on eventstore's LMDB backend, with no policy of its own: it stores and
// serves any valid event, as a generic relay does. It is a module of its
// own so that buzz-lite's cgo-free build and `go vet ./...` leave it out
// (LMDB is C).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/fiatjaf/eventstore/lmdb"
	"github.com/fiatjaf/khatru"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "khatru-reference:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:7447", "address to listen on (port 0: any free one, printed)")
	data := flag.String("data", "khatru-data", "directory of the LMDB database, created if missing")
	flag.Parse()
	if err := os.MkdirAll(*data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	db := &lmdb.LMDBBackend{Path: *data}
	if err := db.Init(); err != nil {
		return fmt.Errorf("open the LMDB database in %s: %w", *data, err)
	}
	defer db.Close()

	relay := khatru.NewRelay()
	relay.Info.Name = "khatru-reference"
	relay.Info.Description = "khatru v0.19.1 on eventstore's LMDB backend, buzz-lite's reference for --against"
	relay.StoreEvent = append(relay.StoreEvent, db.SaveEvent)
	relay.QueryEvents = append(relay.QueryEvents, db.QueryEvents)
	relay.CountEvents = append(relay.CountEvents, db.CountEvents)
	relay.DeleteEvent = append(relay.DeleteEvent, db.DeleteEvent)
	relay.ReplaceEvent = append(relay.ReplaceEvent, db.ReplaceEvent)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Printf("khatru-reference serving ws://%s (data %s)\n", ln.Addr(), *data)
	srv := &http.Server{Handler: relay, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Open WebSockets are hijacked connections, which Shutdown does not
	// wait for: the process ends with them.
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
