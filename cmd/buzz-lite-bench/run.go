package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// fanoutRound is how many live events the fan-out measurement publishes
// before it waits for their delivery: enough to keep delivery busy, few
// enough that an event's latency is mostly its own delivery, not the
// queue of the events before it.
const fanoutRound = 8

// walkPages bounds the walk that finds the cursors of a channel's window
// pages: 5 million rows.
const walkPages = 100_000

// feedMentionCount is how many events of the run name the feed's reader:
// half a feed page, so that the rest of the page is its activity.
const feedMentionCount = 10

// feedMentions are publisher's messages in channel that mention reader
// (secret keys, hex), and one reminder for it (RL-35), dated now.
func feedMentions(publisher, reader, channel string) ([]*nostr.Event, error) {
	pk, err := nostr.GetPublicKey(reader)
	if err != nil {
		return nil, err
	}
	evs := make([]*nostr.Event, feedMentionCount)
	for i := range evs {
		evs[i] = &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", channel}, {"p", pk}},
			Content: fmt.Sprintf("for you %d", i)}
	}
	evs[0].Kind, evs[0].Tags = 40007, nostr.Tags{{"p", pk}}
	for _, ev := range evs {
		if err := ev.Sign(publisher); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// The mixed measurement (issue 15): window pages of every open channel's
// head, the first mixedDeepPages pages of the read channel and the head of
// the channel written to, while a message is written every mixedPace.
const (
	mixedDeepPages = 10
	mixedPace      = 20 * time.Millisecond
)

// runBench checks the flags, prepares the community, and runs the load
// measurements, or with --abuse the attacks.
func runBench(c *cli.Context) error {
	if err := checkFlags(c); err != nil {
		return err
	}
	var abuse *bench.Abuse
	var attacks []string
	if c.Bool("abuse") {
		var err error
		abuse, err = bench.NewAbuse(bench.AbuseOptions{Duration: c.Duration("abuse-duration"), Pace: c.Float64("abuse-pace"),
			LargeEvents: c.Int("abuse-large"), Sockets: c.Int("abuse-sockets"), Attacker: abuseAttacker, Innocent: abuseInnocent})
		if err != nil {
			return err
		}
		if attacks, err = chosenAttacks(abuse.Attacks(), *c.Generic("abuse-attack").(*attackNames)); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...) }

	dir := c.String("data")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "buzz-lite-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	topLevel := c.Int("toplevel")
	if abuse != nil && !c.IsSet("toplevel") {
		topLevel = abuseTopLevel
	}
	if err := prepareBench(ctx, dir, c.String("postgres"), c.Int("channels"), topLevel, progress); err != nil {
		return err
	}
	if abuse != nil {
		return runAbuse(ctx, c, abuse, attacks, dir, progress)
	}
	if c.IsSet("against") {
		return runAgainst(ctx, c, dir, progress)
	}
	return runLoad(ctx, c, dir, progress)
}

// checkFlags refuses, before anything is generated or started, counts and
// durations that would measure nothing and stores the run cannot use.
func checkFlags(c *cli.Context) error {
	for _, name := range []string{"channels", "toplevel", "clients", "ingest", "ingest-conns", "subscribers", "fanout-events", "processes"} {
		if c.Int(name) < 1 {
			return fmt.Errorf("--%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	if c.Duration("duration") <= 0 {
		return fmt.Errorf("--duration must be positive, got %s", c.Duration("duration"))
	}
	pgURL, processes := c.String("postgres"), c.Int("processes")
	// One SQLite file is served by one process (RL-31).
	if processes > 1 && pgURL == "" {
		return fmt.Errorf("--processes %d needs --postgres: a data directory's SQLite file is served by one process", processes)
	}
	// The attacks judge SQLite's WAL and one process's memory.
	if c.Bool("abuse") && pgURL != "" {
		return errors.New("--abuse runs on the data directory's SQLite file, not with --postgres")
	}
	return checkAgainst(c)
}

// loadEvents is what the load run publishes, signed before any clock
// starts.
type loadEvents struct {
	// ingest is a fresh community of one channel, published in the
	// ingest measurement: setup (its lifecycle events) first, then load.
	ingest      *gen.Community
	setup, load []*nostr.Event
	// live are messages in ingest's channel for the fan-out measurement.
	live []*nostr.Event
	// reader is the home feed's reader (a secret key), whom the community
	// never mentions: mentions name it in ingest's channel and ask for a
	// reminder of it.
	reader   string
	mentions []*nostr.Event
	// mixed are the mixed measurement's writes: a message to ingest's
	// channel every mixedPace for as long as its reads run.
	mixed []*nostr.Event
}

// signLoadEvents makes and signs the events of a load run.
func signLoadEvents(c *cli.Context) (loadEvents, error) {
	var ev loadEvents
	var err error
	ev.ingest, err = gen.Generate(gen.Options{Seed: uint64(time.Now().UnixNano()), Channels: 1,
		TopLevel: max(1, c.Int("ingest")/9), Start: time.Now().Unix() - int64(c.Int("ingest"))})
	if err != nil {
		return ev, err
	}
	ev.setup, ev.load = ev.ingest.Split()
	channel := ev.ingest.Channels[0]
	publisher := nostr.GeneratePrivateKey()
	if ev.live, err = signedMessages(publisher, channel, "live", c.Int("fanout-events")); err != nil {
		return ev, err
	}
	ev.reader = nostr.GeneratePrivateKey()
	if ev.mentions, err = feedMentions(publisher, ev.reader, channel); err != nil {
		return ev, err
	}
	ev.mixed, err = signedMessages(publisher, channel, "mixed", int(c.Duration("duration")/mixedPace)+1)
	return ev, err
}

// signedMessages are n messages by publisher in channel, dated now, whose
// contents are label and their number.
func signedMessages(publisher, channel, label string, n int) ([]*nostr.Event, error) {
	evs := make([]*nostr.Event, n)
	for i := range evs {
		evs[i] = &nostr.Event{Kind: 9, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", channel}},
			Content: fmt.Sprintf("%s %d", label, i)}
		if err := evs[i].Sign(publisher); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// runLoad runs the load measurements on the prepared community in dir
// (or --postgres), the page cache on and then off, and prints the report.
func runLoad(ctx context.Context, c *cli.Context, dir string, progress func(string, ...any)) error {
	pgURL, processes := c.String("postgres"), c.Int("processes")
	ev, err := signLoadEvents(c)
	if err != nil {
		return err
	}
	report := bench.Report{Machine: machine(), Cores: runtime.NumCPU(), Store: "sqlite", Processes: processes, Screens: map[string]bench.Screen{}}
	if pgURL != "" {
		report.Store = "postgres"
	}
	progress("measuring one core's signature verifications")
	if report.VerifyPerCore, err = bench.VerifyRate(ev.load[:min(len(ev.load), 256)], 3*time.Second); err != nil {
		return err
	}

	run := relayRun{dir: dir, config: c.String("config"), postgres: pgURL}
	if processes > 1 {
		progress("%d relay processes on the database, the clients spread over them", processes)
	}
	err = withLoadRelay(ctx, run, processes, true, &report, func(t bench.Target, observe func(*bench.Result)) error {
		return measureCached(ctx, c, t, observe, ev, &report, progress)
	})
	if err != nil {
		return err
	}
	err = withLoadRelay(ctx, run, processes, false, &report, func(t bench.Target, observe func(*bench.Result)) error {
		return measureUncached(ctx, c, t, observe, &report, progress)
	})
	if err != nil {
		return err
	}

	progress("measuring the database")
	if pgURL != "" {
		err = postgresSize(ctx, pgURL, &report)
	} else {
		err = storeSize(ctx, dir, &report)
	}
	if err != nil {
		return err
	}
	report.Events = report.StoredEvents - int64(len(ev.ingest.Events)+len(ev.live))
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return report.WriteText(c.App.Writer)
}

// measureCached runs the measurements with the page cache on against t:
// ingest, the reads, the feeds, the mixed reads and writes, fan-out and
// the first screen.
func measureCached(ctx context.Context, c *cli.Context, t bench.Target, observe func(*bench.Result), ev loadEvents,
	report *bench.Report, progress func(string, ...any)) error {
	clients, d := c.Int("clients"), c.Duration("duration")
	// The channel read is the largest before the run adds its own.
	chans, err := bench.OpenChannels(ctx, t)
	if err != nil {
		return err
	}
	if len(chans) == 0 {
		return errors.New("the database has no open channel to read")
	}
	report.Channel, report.Messages = chans[0].ID, chans[0].Messages

	progress("ingest: %d events over %d connections", len(ev.load), c.Int("ingest-conns"))
	if _, err := bench.Ingest(ctx, t, "setup", ev.setup, 1, 1); err != nil {
		return err
	}
	r, err := bench.Ingest(ctx, t, "ingest", ev.load, c.Int("ingest-conns"), 32)
	if err != nil {
		return err
	}
	observe(&r)
	report.Results = append(report.Results, r)

	progress("walking the window of channel %s (%d messages)", report.Channel, report.Messages)
	chain, err := bench.WalkWindow(ctx, t, report.Channel, 50, walkPages)
	if err != nil {
		return err
	}
	report.WindowPages = len(chain.Cursors)
	progress("reads: window, thread and REQ, %d clients, %s each", clients, d)
	reads, err := bench.Reads(ctx, t, chain, report.Channel, clients, d, "", false, observe)
	report.Results = append(report.Results, reads...)
	if err != nil {
		return err
	}
	if err := measureFeeds(ctx, t, observe, ev, report, clients, d, progress); err != nil {
		return err
	}
	channel := ev.ingest.Channels[0]
	progress("window pages while channel %s is written, %d clients, %s", channel, clients, d)
	mixedBodies := [][]byte{bench.WindowBody(channel, nil, 50)}
	for _, ch := range chans {
		mixedBodies = append(mixedBodies, bench.WindowBody(ch.ID, nil, 50))
	}
	for _, cursor := range chain.Cursors[1:min(len(chain.Cursors), mixedDeepPages)] {
		mixedBodies = append(mixedBodies, bench.WindowBody(report.Channel, cursor, 50))
	}
	r, report.PageCache, err = bench.Mixed(ctx, t, "window mixed", mixedBodies, clients, d, ev.mixed, mixedPace)
	if err != nil {
		return err
	}
	observe(&r)
	report.Results = append(report.Results, r)
	progress("fan-out: %d events to %d subscribers", len(ev.live), c.Int("subscribers"))
	fan, err := bench.Fanout(ctx, t, "fan-out", channel, ev.live, c.Int("subscribers"), fanoutRound)
	if err != nil {
		return err
	}
	observe(&fan[0])
	for i := 1; i < len(fan); i++ {
		fan[i].PeakRSSAnon, fan[i].PeakRSS = fan[0].PeakRSSAnon, fan[0].PeakRSS // the same measurement's
	}
	report.Results = append(report.Results, fan...)
	return firstScreen(ctx, t, report.Channel, report.Screens, "cached")
}

// measureFeeds publishes the mentions of the feed's reader, then measures
// its home feed and an anonymous one.
func measureFeeds(ctx context.Context, t bench.Target, observe func(*bench.Result), ev loadEvents,
	report *bench.Report, clients int, d time.Duration, progress func(string, ...any)) error {
	progress("feed: %d mentions of the reader, then its feed and an anonymous one, %d clients, %s each", len(ev.mentions), clients, d)
	if _, err := bench.Ingest(ctx, t, "feed setup", ev.mentions, 1, 1); err != nil {
		return err
	}
	for _, m := range []struct {
		name, reader string
		types        []string
	}{
		{"feed", ev.reader, []string{nipcw.FeedMentions, nipcw.FeedNeedsAction, nipcw.FeedActivity}},
		{"feed anonymous", "", []string{nipcw.FeedActivity}},
	} {
		r, err := bench.Feed(ctx, t, m.name, bench.FeedBody(m.types, nipcw.FeedLimit), m.reader, clients, d)
		if err != nil {
			return err
		}
		observe(&r)
		report.Results = append(report.Results, r)
	}
	return nil
}

// measureUncached runs the window reads and the first screen against t
// with the page cache off.
func measureUncached(ctx context.Context, c *cli.Context, t bench.Target, observe func(*bench.Result),
	report *bench.Report, progress func(string, ...any)) error {
	progress("window pages with the page cache off")
	chain, err := bench.WalkWindow(ctx, t, report.Channel, 50, walkPages)
	if err != nil {
		return err
	}
	reads, err := bench.Reads(ctx, t, chain, report.Channel, c.Int("clients"), c.Duration("duration"), " uncached", true, observe)
	report.Results = append(report.Results, reads...)
	if err != nil {
		return err
	}
	return firstScreen(ctx, t, report.Channel, report.Screens, "uncached")
}

// firstScreen measures channel's first screen both ways into screens.
func firstScreen(ctx context.Context, t bench.Target, channel string, screens map[string]bench.Screen, cache string) error {
	window, generic, err := bench.FirstScreen(ctx, t, channel, 21)
	if err != nil {
		return err
	}
	screens["window "+cache], screens["generic "+cache] = window, generic
	return nil
}
