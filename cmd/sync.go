package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mailru/easyjson"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/client"
	"github.com/buzz-lite/buzz-lite/importer"
	"github.com/buzz-lite/buzz-lite/internal/datadir"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// `buzz-lite sync` (RL-34): what a relay has and a destination lacks,
// found by NIP-77 reconciliation, is copied one way, from --from to a
// local data directory (a laptop's offline copy) or, with --to, to another
// relay (a mirror). Nothing goes back to --from: to sync both ways, run it
// again with the two swapped.

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:      "sync",
		Usage:     "copy what a relay has and a data directory (or, with --to, another relay) lacks, found by NIP-77",
		UsageText: "buzz-lite sync --from URL [--to URL | --data DIR] [--channel ID] [--key nsec|hex|file]",
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "from", Usage: "ws:// or wss:// URL of the relay to copy from (required)"},
			&cli.StringFlag{Name: "to", Usage: "ws:// or wss:// URL of the relay to copy to, instead of the data directory (--data, default ./buzz-lite-data)"},
			&cli.StringFlag{Name: "channel", Usage: "only this channel's events (#h): a UUID or a NIP-29 group id"},
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one), to authenticate (NIP-42) on both relays and sync the private channels you are a member of"},
		),
		Before: func(c *cli.Context) error {
			if !c.IsSet("from") {
				return usageErr(c, errors.New("missing --from"))
			}
			if c.IsSet("to") && c.IsSet("data") {
				return usageErr(c, errors.New("--to and --data: give one destination"))
			}
			return argsBetween(0, 0, "")(c)
		},
		Action: syncEvents,
	}
}

// syncTimeout bounds a whole sync.
const syncTimeout = time.Hour

// syncSummary counts what a sync did: of the events missing at the
// destination, those copied (Accepted), already there (Duplicate) and
// refused (Rejected, by reason), as an import counts its lines.
type syncSummary struct {
	importer.Summary
	// Missing is how many events --from has that the destination lacks,
	// but for --from's own group state (39000-39003): the destination
	// signs its own, and never takes another relay's.
	Missing int
}

func newSyncSummary() syncSummary {
	return syncSummary{Summary: importer.Summary{Rejected: map[string]int{}}}
}

func syncEvents(c *cli.Context) error {
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	filter := nostr.Filter{}
	if c.IsSet("channel") {
		ch, err := channelFlag(c)
		if err != nil {
			return err
		}
		filter.Tags = nostr.TagMap{"h": {ch}}
	}
	from, err := client.New(ctx, client.Options{Relay: c.String("from"), Key: key})
	if err != nil {
		return fmt.Errorf("sync: --from: %w", err)
	}
	src, err := from.Sync(ctx)
	if err != nil {
		return fmt.Errorf("sync: --from: %w", err)
	}
	defer src.Close()

	var sum syncSummary
	var where string
	if c.IsSet("to") {
		where = c.String("to")
		sum, err = syncToRelay(ctx, src, where, key, filter)
	} else {
		where, sum, err = syncToData(ctx, c, src, filter)
	}
	if err != nil {
		if errors.Is(err, errAuthRequired) && key == "" {
			err = fmt.Errorf("%w (give --key to sync the private channels you are a member of)", err)
		}
		return fmt.Errorf("sync: %w", err)
	}
	out := c.App.Writer
	fmt.Fprintf(out, "%s has %s that %s lacks: %d copied, %d duplicate, %d refused",
		c.String("from"), plural(sum.Missing, "event", "events"), where, sum.Accepted, sum.Duplicate, sum.Bad())
	fmt.Fprintln(out)
	for _, reason := range sum.Reasons() {
		fmt.Fprintf(out, "  %6d  %s\n", sum.Rejected[reason], reason)
	}
	if n := sum.Bad(); n > 0 {
		return fmt.Errorf("sync: %s refused by %s (the summary above says why)", plural(n, "event", "events"), where)
	}
	return nil
}

// tooManyToSync begins buzz-lite's refusal of a set larger than one sync
// session may hold (limits.sync_items).
const tooManyToSync = "blocked: too many events to sync"

// syncHorizon is past every created_at a relay stores: the end of the
// time range a sync halves.
const syncHorizon = int64(1) << 40

// reconcileAll is reconcile over the whole time range of f, halved while
// the relay refuses a part as larger than one sync session may hold, so
// that a community past limits.sync_items syncs in parts; local is
// narrowed to each part alike.
// The ids come sorted.
func reconcileAll(ctx context.Context, s *client.Syncer, f nostr.Filter, local []negentropy.Item, which string) ([]string, error) {
	ids, err := reconcilePart(ctx, s, f, local, 0, syncHorizon, which)
	slices.Sort(ids)
	return ids, err
}

func reconcilePart(ctx context.Context, s *client.Syncer, f nostr.Filter, local []negentropy.Item, since, until int64, which string) ([]string, error) {
	part := f
	from, to := nostr.Timestamp(since), nostr.Timestamp(until)
	part.Since, part.Until = &from, &to
	var inPart []negentropy.Item
	for _, it := range local {
		if int64(it.Timestamp) >= since && int64(it.Timestamp) <= until {
			inPart = append(inPart, it)
		}
	}
	missing, err := reconcile(ctx, s, part, inPart, which)
	var closed *client.ClosedError
	if !errors.As(err, &closed) || !strings.HasPrefix(closed.Reason, tooManyToSync) || since == until {
		return missing, err
	}
	mid := since + (until-since)/2
	older, err := reconcilePart(ctx, s, f, local, since, mid, which)
	if err != nil {
		return nil, err
	}
	newer, err := reconcilePart(ctx, s, f, local, mid+1, until, which)
	if err != nil {
		return nil, err
	}
	return append(older, newer...), nil
}

// errAuthRequired marks a sync a relay refused until the client
// authenticates.
var errAuthRequired = errors.New("the relay asks to authenticate to read this")

// reconcile runs NIP-77 with s, patiently, and says plainly when the
// relay wants a key.
func reconcile(ctx context.Context, s *client.Syncer, f nostr.Filter, local []negentropy.Item, which string) ([]string, error) {
	var missing []string
	err := patiently(ctx, func() (err error) {
		missing, _, err = s.Reconcile(ctx, f, local)
		return err
	})
	var closed *client.ClosedError
	if errors.As(err, &closed) && closed.AuthRequired() {
		return nil, fmt.Errorf("%s: %w: %s", which, errAuthRequired, closed.Reason)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: NIP-77: %w", which, err)
	}
	return missing, nil
}

// fetchMissing reads ids from s, leaves out the relay's own group state,
// which a destination signs for itself and so always lacks, and returns
// the rest, counted as missing, in the replay order of export (RL-25,
// RL-34: oldest first, within one second a channel before its messages,
// a parent before its replies, a target before its reactions, edits and
// deletions), so that a live destination refuses none for what it has
// not seen yet.
func fetchMissing(ctx context.Context, s *client.Syncer, ids []string, sum *syncSummary) ([]*nostr.Event, error) {
	// By id: a fetch tried again after a rate-limited refusal hands over
	// again what it had.
	got := map[string]*nostr.Event{}
	err := patiently(ctx, func() error {
		return s.Fetch(ctx, ids, func(chunk []*nostr.Event) error {
			for _, ev := range chunk {
				got[ev.ID] = ev
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("--from: fetching the missing events: %w", err)
	}
	var evs []*nostr.Event
	for _, ev := range got {
		if buzz.IsRelayOnlyKind(ev.Kind) {
			continue
		}
		evs = append(evs, ev)
	}
	sum.Missing = len(evs)
	buzz.SortForReplay(evs)
	return evs, nil
}

// syncToRelay copies to the relay at url what src has and it lacks. A
// relay's set is had from NIP-77 against an empty set (its ids, without
// the events); the events missing at url are read from src and
// published in the replay order of export.
func syncToRelay(ctx context.Context, src *client.Syncer, url, key string, f nostr.Filter) (syncSummary, error) {
	sum := newSyncSummary()
	to, err := client.New(ctx, client.Options{Relay: url, Key: key})
	if err != nil {
		return sum, fmt.Errorf("--to: %w", err)
	}
	dst, err := to.Sync(ctx)
	if err != nil {
		return sum, fmt.Errorf("--to: %w", err)
	}
	defer dst.Close()
	have, err := reconcileAll(ctx, src, f, nil, "--from")
	if err != nil {
		return sum, err
	}
	there, err := reconcileAll(ctx, dst, f, nil, "--to")
	if err != nil {
		return sum, err
	}
	missing := slices.DeleteFunc(have, func(id string) bool { _, found := slices.BinarySearch(there, id); return found })
	evs, err := fetchMissing(ctx, src, missing, &sum)
	if err != nil {
		return sum, err
	}
	for _, ev := range evs {
		err := patiently(ctx, func() error { return dst.Publish(ctx, ev) })
		var refused *client.RefusedError
		switch {
		case err == nil:
			sum.Accepted++
		case errors.As(err, &refused) && strings.HasPrefix(refused.Message, "duplicate:"):
			sum.Duplicate++
		case errors.As(err, &refused):
			sum.Rejected[refused.Message]++
		default:
			return sum, fmt.Errorf("--to: %w", err)
		}
	}
	return sum, nil
}

// syncRetries is how many times a publish or a reconciliation refused as
// rate-limited is tried again, a second apart and then longer: a relay's
// rates per client allow bursts and then a few a second.
const syncRetries = 8

// syncFirstWait is the wait before the first retry, doubled for each next
// one up to ten seconds (tests shorten it).
var syncFirstWait = time.Second

// patiently runs try, waiting and trying again while the relay refuses
// it as rate-limited (an OK, a CLOSED or a NEG-ERR), at most syncRetries
// times, a wait that doubles from syncFirstWait up to ten seconds apart.
func patiently(ctx context.Context, try func() error) error {
	wait := syncFirstWait
	for n := 0; ; n++ {
		err := try()
		var refused *client.RefusedError
		var closed *client.ClosedError
		limited := (errors.As(err, &refused) && strings.HasPrefix(refused.Message, "rate-limited:")) ||
			(errors.As(err, &closed) && strings.HasPrefix(closed.Reason, "rate-limited:"))
		if !limited || n == syncRetries {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// syncToData copies into the data directory of the configuration (--data)
// what src has and it lacks, through the store's import path, as `import`
// stores a file. It claims the directory as serve does (RL-31): a
// directory a relay serves is synced through that relay (--to), whose
// subscribers then hear of the new events.
func syncToData(ctx context.Context, c *cli.Context, src *client.Syncer, f nostr.Filter) (dir string, sum syncSummary, err error) {
	sum = newSyncSummary()
	cfg, err := loadConfig(c)
	if err != nil {
		return "", sum, err
	}
	if onPostgres(cfg) {
		// The configuration keeps the community in PostgreSQL: a file in
		// the data directory would be a copy nobody serves.
		return "", sum, errors.New("the community is in PostgreSQL (storage.postgres): sync into it through one of its relays, with --to")
	}
	var lock *datadir.Lock
	dir, lock, err = datadir.Claim(cfg.Storage.DataDir, DBFile)
	if err != nil {
		var inUse *datadir.InUseError
		if errors.As(err, &inUse) {
			err = fmt.Errorf("%w: sync into it through its relay, with --to", err)
		}
		return "", sum, err
	}
	defer func() { err = errors.Join(err, lock.Release()) }()
	cfg.Storage.DataDir = dir
	relayKey, err := RelayKey(cfg, newLogger(cfg))
	if err != nil {
		return "", sum, err
	}
	opts, err := SQLiteOptions(cfg, relayKey)
	if err != nil {
		return "", sum, err
	}
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		return "", sum, err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	local, err := storedItems(ctx, store, f)
	if err != nil {
		return "", sum, err
	}
	missing, err := reconcileAll(ctx, src, f, local, "--from")
	if err != nil {
		return "", sum, err
	}
	evs, err := fetchMissing(ctx, src, missing, &sum)
	if err != nil {
		return "", sum, err
	}
	// --from is any relay: what it sends is checked as an import checks
	// a file's lines (RL-9, CW-22) before the store takes it. The client
	// verified ids and signatures already, and refuses a relay that
	// forges one (nipcw.VerifyEvents).
	now := time.Now()
	evs = slices.DeleteFunc(evs, func(ev *nostr.Event) bool {
		refused := importer.Refusal(ev, now)
		if refused != "" {
			sum.Rejected[refused]++
		}
		return refused != ""
	})
	for batch := range slices.Chunk(evs, syncBatch) {
		outcomes, err := store.ImportBatch(ctx, batch)
		if err != nil {
			return "", sum, fmt.Errorf("storing: %w", err)
		}
		for _, err := range outcomes {
			switch {
			case err == nil:
				sum.Accepted++
			case errors.Is(err, buzz.ErrDuplicate), errors.Is(err, buzz.ErrNewerVersionStored):
				sum.Duplicate++
			default:
				sum.Rejected[err.Error()]++
			}
		}
	}
	// As after an import: replies stored before their parents are
	// classified, and the channels' group state renewed.
	if _, err := store.Backfill(ctx); err != nil {
		return "", sum, fmt.Errorf("classifying replies: %w", err)
	}
	if err := store.RenewGroupState(ctx); err != nil {
		return "", sum, fmt.Errorf("renewing group state: %w", err)
	}
	return dir, sum, nil
}

// syncBatch is how many events one store transaction takes, as in an
// import.
const syncBatch = 500

// storedItems is the (created_at, id) set the data directory holds for f,
// deleted events too (the relay that deleted them does not send them
// again either): every stored event, or one channel's.
func storedItems(ctx context.Context, store *sqlite.Store, f nostr.Filter) ([]negentropy.Item, error) {
	ef := buzz.ExportFilter{WithDeleted: true}
	if hs := f.Tags["h"]; len(hs) == 1 {
		ef.Channel = hs[0]
	}
	pr, pw := io.Pipe()
	exported := make(chan error, 1)
	go func() {
		_, err := store.Export(ctx, ef, pw)
		exported <- err
		pw.CloseWithError(err)
	}()
	var items []negentropy.Item
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev nostr.Event
		if err := easyjson.Unmarshal(sc.Bytes(), &ev); err != nil {
			pr.CloseWithError(err)
			return nil, fmt.Errorf("reading the data directory's events: %w", err)
		}
		items = append(items, negentropy.Item{Timestamp: ev.CreatedAt, ID: ev.ID})
	}
	if err := errors.Join(sc.Err(), <-exported); err != nil {
		return nil, fmt.Errorf("reading the data directory's events: %w", err)
	}
	return items, nil
}
