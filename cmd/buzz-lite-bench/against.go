package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/cmd"
	"github.com/buzz-lite/buzz-lite/config"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// `--against URL` (issue 32): the relay-neutral loads on buzz-lite and on
// another relay serving the same community, in alternating rounds, so
// that an operator can compare any relay on their own machine.

// heldSample is how many thread roots are looked up on the other relay to
// tell whether it holds the community already.
const heldSample = 50

// checkAgainst refuses an --against run the bench cannot make.
func checkAgainst(c *cli.Context) error {
	if c.Int("rounds") < 1 {
		return fmt.Errorf("--rounds must be at least 1, got %d", c.Int("rounds"))
	}
	if !c.IsSet("against") {
		return nil
	}
	u, err := url.Parse(c.String("against"))
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return fmt.Errorf("--against needs a relay's WebSocket URL (ws://host:port), got %q", c.String("against"))
	}
	switch {
	case c.Bool("abuse"):
		return errors.New("--against compares loads, not attacks: leave out --abuse")
	case c.String("postgres") != "":
		return errors.New("--against runs on the data directory's SQLite file, not with --postgres")
	}
	return nil
}

// roundEvents are a round's ingest events: a fresh community of one
// channel, its setup published first, the same events to both relays.
type roundEvents struct{ setup, load []*nostr.Event }

// runAgainst measures the loads on buzz-lite serving dir and on the relay
// at --against, after publishing the community to it if it lacks it.
func runAgainst(ctx context.Context, c *cli.Context, dir string, progress func(string, ...any)) error {
	other := bench.Target{WS: c.String("against")}
	rounds, clients, d := c.Int("rounds"), c.Int("clients"), c.Duration("duration")
	cmp := bench.Comparison{Against: other.WS, Rounds: rounds, Clients: clients, Duration: d, Machine: machine(), Cores: runtime.NumCPU()}

	progress("signing the ingest events of %d rounds", rounds)
	ingest := make([]roundEvents, rounds)
	for i := range ingest {
		community, err := gen.Generate(gen.Options{Seed: uint64(time.Now().UnixNano()) + uint64(i), Channels: 1,
			TopLevel: max(1, c.Int("ingest")/9), Start: time.Now().Unix() - int64(c.Int("ingest"))})
		if err != nil {
			return err
		}
		ingest[i].setup, ingest[i].load = community.Split()
	}

	// The community as stored, for the other relay should it lack it:
	// written before the relay starts, which holds the data directory.
	exported, err := exportCommunity(ctx, dir)
	if err != nil {
		return err
	}
	defer os.Remove(exported)

	run := relayRun{dir: dir, config: c.String("config"),
		env: []string{"BUZZ_LITE_LIMITS_RATES=false", "BUZZ_LITE_LIMITS_EXEMPT=127.0.0.0/8,::1"}}
	_, err = withRelay(ctx, run, func(mine bench.Target, _ func() bench.Peaks) error {
		chans, err := bench.OpenChannels(ctx, mine)
		if err != nil {
			return err
		}
		if len(chans) == 0 {
			return errors.New("the database has no open channel to read")
		}
		cmp.Channel, cmp.Messages = chans[0].ID, chans[0].Messages
		progress("walking the window of channel %s (%d messages) for cursors and thread roots", cmp.Channel, cmp.Messages)
		chain, err := bench.WalkWindow(ctx, mine, cmp.Channel, 50, walkPages)
		if err != nil {
			return err
		}
		if len(chain.Threads) == 0 {
			return fmt.Errorf("channel %s has no threads to read", cmp.Channel)
		}
		cmp.Threads = len(chain.Threads)
		if err := seedOther(ctx, other, chain.Threads, exported, c.Int("ingest-conns"), &cmp, progress); err != nil {
			return err
		}
		loads := againstLoads(cmp.Channel, chain, clients, d)
		for round := range rounds {
			// Which relay goes first alternates, so that neither always
			// meets the machine the other has just warmed or heated.
			sides := []bool{true, false}
			if round%2 == 1 {
				sides = []bool{false, true}
			}
			for _, load := range loads {
				for _, me := range sides {
					t, who := other, "other"
					if me {
						t, who = mine, "buzz-lite"
					}
					progress("round %d/%d: %s on %s", round+1, rounds, load.name, who)
					r, err := load.run(ctx, t)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", load.name, who, err)
					}
					cmp.Add(r, me)
				}
			}
			for _, me := range sides {
				t, who := other, "other"
				if me {
					t, who = mine, "buzz-lite"
				}
				progress("round %d/%d: ingest of %d events on %s", round+1, rounds, len(ingest[round].load), who)
				r, err := ingestRound(ctx, t, ingest[round], c.Int("ingest-conns"))
				if err != nil {
					return fmt.Errorf("ingest on %s: %w", who, err)
				}
				cmp.Add(r, me)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(cmp)
	}
	return cmp.WriteText(c.App.Writer)
}

// againstLoad is one relay-neutral read load.
type againstLoad struct {
	name string
	run  func(ctx context.Context, t bench.Target) (bench.Result, error)
}

// againstLoads are the read loads on channel: REQ by `#h` at the head and
// at the window's page cursors, REQ by `#e` for a thread root with
// replies (a thread fetched the generic way), and a generic client's
// first screen.
func againstLoads(channel string, chain bench.Chain, clients int, d time.Duration) []againstLoad {
	head := []nostr.Filter{{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50}}
	var deep []nostr.Filter
	for _, c := range chain.Cursors[1:] {
		until := nostr.Timestamp(c.CreatedAt)
		deep = append(deep, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {channel}}, Limit: 50, Until: &until})
	}
	if len(deep) == 0 {
		deep = head
	}
	threads := make([]nostr.Filter, len(chain.Threads))
	for i, root := range chain.Threads {
		threads[i] = nostr.Filter{Tags: nostr.TagMap{"e": {root}}, Limit: 500}
	}
	req := func(name string, filters []nostr.Filter) againstLoad {
		return againstLoad{name, func(ctx context.Context, t bench.Target) (bench.Result, error) {
			return bench.REQEach(ctx, t, name, filters, clients, d)
		}}
	}
	return []againstLoad{
		req("REQ head #h", head),
		req("REQ deep #h", deep),
		req("REQ thread #e", threads),
		{"first screen, generic", func(ctx context.Context, t bench.Target) (bench.Result, error) {
			return bench.GenericScreens(ctx, t, "first screen, generic", channel, clients, d)
		}},
	}
}

// ingestRound publishes a round's events to t: the setup one at a time,
// then the load measured.
func ingestRound(ctx context.Context, t bench.Target, evs roundEvents, conns int) (bench.Result, error) {
	if _, err := bench.Ingest(ctx, t, "ingest setup", evs.setup, 1, 1); err != nil {
		return bench.Result{}, err
	}
	return bench.Ingest(ctx, t, "ingest", evs.load, conns, 32)
}

// seedOther publishes the exported community to the other relay unless it
// serves a sample of the channel's thread roots already.
func seedOther(ctx context.Context, other bench.Target, roots []string, exported string, conns int,
	cmp *bench.Comparison, progress func(string, ...any)) error {
	sample := make([]string, 0, heldSample)
	for i := 0; i < len(roots) && len(sample) < heldSample; i += max(1, len(roots)/heldSample) {
		sample = append(sample, roots[i])
	}
	held, err := bench.Holds(ctx, other, sample)
	if err != nil {
		return fmt.Errorf("the other relay: %w", err)
	}
	if held {
		progress("the other relay holds the community already")
		return nil
	}
	progress("publishing the community to the other relay, as stored")
	f, err := os.Open(exported)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	var notice string
	cmp.Seeded, cmp.Refused, notice, err = bench.Seed(ctx, other, f, conns)
	if err != nil {
		return fmt.Errorf("publish the community to the other relay: %w", err)
	}
	progress("%d events accepted, %d refused or unanswered in %s", cmp.Seeded, cmp.Refused, time.Since(start).Round(time.Second))
	if cmp.Refused > 0 {
		cmp.Notes = append(cmp.Notes, fmt.Sprintf("the other relay refused or left unanswered %d of the community's events: each relay serves what it stored", cmp.Refused))
	}
	if notice != "" {
		cmp.Notes = append(cmp.Notes, "the other relay's first refusal or NOTICE: "+notice)
	}
	return nil
}

// exportCommunity writes the events stored in dir's database to a
// temporary file as JSON Lines, oldest first (export's order, parents
// before replies), and gives its path.
func exportCommunity(ctx context.Context, dir string) (path string, err error) {
	cfg := config.Default()
	cfg.Storage.DataDir = dir
	opts, err := cmd.SQLiteOptions(cfg, "")
	if err != nil {
		return "", err
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := sqlite.Open(ctx, opts)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "buzz-lite-bench-community-*.jsonl")
	if err != nil {
		return "", errors.Join(err, store.Close())
	}
	_, err = store.Export(ctx, buzz.ExportFilter{}, f)
	if err = errors.Join(err, f.Close(), store.Close()); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("export the community: %w", err)
	}
	return f.Name(), nil
}
