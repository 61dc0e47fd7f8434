package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/client"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

func windowCommand() *cli.Command {
	return &cli.Command{
		Name:      "window",
		Usage:     "print a channel's timeline, read through the channel window or, failing that, standard filters",
		UsageText: "buzz-lite window [--relay URL] (--channel ID [--limit N] [--all] [--follow] | --thread ID) [--key nsec|hex|file] [--json]",
		// A client of a relay. It takes --config and --data as every
		// command does (RL-25), without listing them: a configuration
		// names the relay to read when --relay is not given (its
		// relay.url, or its loopback listen address), and a data
		// directory means nothing to a client.
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "channel", Usage: "the channel: a UUID or a NIP-29 group id (required, unless --thread)"},
			&cli.StringFlag{Name: "thread", Usage: "print this event's whole thread instead, replies indented by depth"},
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one): NIP-98 for private channels"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "rows a page (1..200)"},
			&cli.BoolFlag{Name: "all", Usage: "every page down to the oldest, not only the newest"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object a row instead of text"},
			&cli.BoolFlag{Name: "follow", Usage: "then print new messages as they arrive (a quiet reply as its thread's count), until interrupted"},
		),
		// Not urfave's Required, which prints the whole help before the
		// error.
		Before: func(c *cli.Context) error {
			if c.IsSet("thread") {
				for _, f := range []string{"channel", "limit", "all", "follow"} {
					if c.IsSet(f) {
						return usageErr(c, fmt.Errorf("--%s: --thread reads one whole thread", f))
					}
				}
			} else if !c.IsSet("channel") {
				return usageErr(c, errors.New("missing --channel"))
			}
			return argsBetween(0, 0, "")(c)
		},
		Action: func(c *cli.Context) error {
			if c.IsSet("thread") {
				return thread(c)
			}
			return window(c)
		},
	}
}

// readingClient is a client of the command's relay for a read of at most
// five minutes within parent; cancel ends that bound.
func readingClient(parent context.Context, c *cli.Context, key string) (context.Context, context.CancelFunc, *client.Client, error) {
	ctx, cancel := context.WithTimeout(parent, 5*time.Minute)
	cl, err := relayClient(ctx, c, key)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, cancel, cl, nil
}

func window(c *cli.Context) error {
	ch, err := channelFlag(c)
	if err != nil {
		return err
	}
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	limit := c.Int("limit")
	if limit < 1 || limit > nipcw.MaxWindowLimit {
		return usageErr(c, fmt.Errorf("--limit: want 1 to %d, got %d", nipcw.MaxWindowLimit, limit))
	}
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel, cl, err := readingClient(sigCtx, c, key)
	if err != nil {
		return err
	}
	defer cancel()
	out := c.App.Writer
	started := time.Now().Unix()
	projection := false // the row mode the pages were served in (CL-4)
	more := false       // the last page said more pages remain
	names := authorNames{client: cl, names: map[string]string{}}
	path, err := cl.Timeline(ctx, ch, limit, c.Bool("all"), func(p *nipcw.Page) error {
		projection = p.Bounds.ThreadRepliesInChannel
		more = p.Next() != nil
		rows := pageRows(p)
		if err := names.name(ctx, rows); err != nil {
			return err
		}
		for _, row := range rows {
			if err := printRow(out, row, c.Bool("json")); err != nil {
				return err
			}
		}
		return nil
	})
	var closed *client.ClosedError
	if key == "" && errors.As(err, &closed) && closed.AuthRequired() {
		// Private and nonexistent channels answer alike (CW-3, RL-13); how
		// the client came to ask is of no help to its reader.
		return fmt.Errorf("channel %s is private or does not exist: give --key to read it as a member", ch)
	}
	if path.Kind == client.PathFallback {
		fmt.Fprintf(c.App.ErrWriter, "read through standard filters: %s\n", path.Reason)
	} else if path.Kind == client.PathWindow {
		fmt.Fprintf(c.App.ErrWriter, "read through the channel window (%s)\n", plural(path.WindowPages, "page", "pages"))
	}
	if err == nil && more && !c.Bool("all") {
		// Only the newest page was read: say how to read the rest.
		fmt.Fprintln(c.App.ErrWriter, "more messages: add --all to read them all")
	}
	if err != nil || !c.Bool("follow") {
		return err
	}
	// The live tail (CL-4): its own subscription, from when the timeline
	// was asked for, printed as it comes and never mixed into the pages.
	// Only a message that would be a row of the window is printed as a
	// row; a quiet reply counts toward its thread instead.
	fmt.Fprintln(c.App.ErrWriter, "following new messages; interrupt to stop")
	replies := map[string]int64{} // new quiet replies by thread root
	return cl.Follow(sigCtx, ch, started, projection, func(live client.LiveEvent) error {
		ev := live.Event
		if !live.Row {
			replies[live.Thread]++
			return printThread(out, threadUpdate{Thread: live.Thread, Reply: ev.ID, NewReplies: replies[live.Thread]}, c.Bool("json"))
		}
		rows := []windowRow{{ID: ev.ID, PubKey: ev.PubKey, CreatedAt: int64(ev.CreatedAt), Content: ev.Content,
			ReplyTo: buzz.ParseThreadTags(ev.Tags).Parent}}
		if err := names.name(sigCtx, rows); err != nil {
			return err
		}
		return printRow(out, rows[0], c.Bool("json"))
	})
}

// thread prints the thread of --thread: the root, then every reply
// indented by its depth, in reading order (depth first, siblings oldest
// first), each with its reply count, reactions, edit and deletion marks.
func thread(c *cli.Context) error {
	root := strings.ToLower(c.String("thread"))
	if !nostr.IsValid32ByteHex(root) {
		return usageErr(c, fmt.Errorf("--thread: want a 64-hex event id, got %q", c.String("thread")))
	}
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	sigCtx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel, cl, err := readingClient(sigCtx, c, key)
	if err != nil {
		return err
	}
	defer cancel()
	t, err := cl.Thread(ctx, root)
	if errors.Is(err, client.ErrNoThread) {
		if key == "" {
			return fmt.Errorf("thread %s is not on the relay, or is in a private channel: give --key to read it as a member", root)
		}
		return fmt.Errorf("thread %s is not on the relay, or is in a channel you cannot read", root)
	}
	var closed *client.ClosedError
	if key == "" && errors.As(err, &closed) && closed.AuthRequired() {
		return fmt.Errorf("thread %s is not on the relay, or is in a private channel: give --key to read it as a member", root)
	}
	if err != nil {
		return err
	}
	replies := map[string]int64{}
	for _, r := range t.Replies {
		replies[r.Parent]++
	}
	aux := auxByTarget(t.Aux)
	rows := []windowRow{auxRow(t.Root, aux[strings.ToLower(t.Root.ID)])}
	rows[0].Replies = replies[t.Root.ID]
	for _, r := range t.Replies {
		row := auxRow(r.Event, aux[strings.ToLower(r.Event.ID)])
		row.Replies, row.ReplyTo, row.Depth = replies[r.Event.ID], r.Parent, r.Depth
		rows = append(rows, row)
	}
	names := authorNames{client: cl, names: map[string]string{}}
	if err := names.name(ctx, rows); err != nil {
		return err
	}
	for _, row := range rows {
		if err := printRow(c.App.Writer, row, c.Bool("json")); err != nil {
			return err
		}
	}
	if t.Path.Kind == client.PathFallback {
		fmt.Fprintf(c.App.ErrWriter, "read through standard filters: %s\n", t.Path.Reason)
	} else {
		fmt.Fprintln(c.App.ErrWriter, "read through the thread path of the channel window")
	}
	return nil
}

// threadUpdate is what `window --follow` prints for a quiet reply (CL-4):
// not a row, a change of its thread's count, the replies that arrived
// since following began.
type threadUpdate struct {
	Thread     string `json:"thread"`
	Reply      string `json:"reply"`
	NewReplies int64  `json:"new_replies"`
}

func printThread(w io.Writer, u threadUpdate, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, u)
	}
	_, err := fmt.Fprintf(w, "  [thread %s: %s]\n", u.Thread[:8], plural(u.NewReplies, "new reply", "new replies"))
	return err
}

// pageRows applies a page's aux closure and summaries to its rows: the
// newest edit by the author replaces the content, reactions are counted, a
// deletion marks the row, reply counts come from the summaries (CL-6:
// overlays are metadata, not messages).
func pageRows(p *nipcw.Page) []windowRow {
	rows := make([]windowRow, 0, len(p.Rows))
	aux := auxByTarget(p.Aux)
	for _, ev := range p.Rows {
		row := auxRow(ev, aux[strings.ToLower(ev.ID)])
		if sm, ok := p.Summaries[ev.ID]; ok {
			row.Replies = sm.ReplyCount
		}
		rows = append(rows, row)
	}
	return rows
}

// auxByTarget indexes aux events by the ids they may act on (every `e`
// tag's, lowercase), so that rows read only their own: a page or a thread
// costs its events plus its aux events, not their product.
func auxByTarget(aux []*nostr.Event) map[string][]*nostr.Event {
	by := map[string][]*nostr.Event{}
	for _, a := range aux {
		seen := map[string]bool{}
		for _, tag := range a.Tags {
			if len(tag) >= 2 && tag[0] == "e" {
				if id := strings.ToLower(tag[1]); !seen[id] {
					seen[id] = true
					by[id] = append(by[id], a)
				}
			}
		}
	}
	return by
}

// auxRow is ev as a row, with what aux (the aux events naming it) does to
// it: the newest edit by the author replaces the content, reactions are
// counted, a deletion marks it.
func auxRow(ev *nostr.Event, aux []*nostr.Event) windowRow {
	row := windowRow{ID: ev.ID, PubKey: ev.PubKey, CreatedAt: int64(ev.CreatedAt), Content: ev.Content}
	var edit *nostr.Event
	for _, a := range aux {
		switch {
		case a.Kind == buzz.KindReaction && buzz.ScopeTarget(a) == ev.ID:
			row.Reactions++
		case a.Kind == buzz.KindEdit && a.PubKey == ev.PubKey && firstE(a) == ev.ID:
			if edit == nil || a.CreatedAt > edit.CreatedAt {
				edit = a
			}
		case (a.Kind == buzz.KindDeletion || a.Kind == buzz.KindGroupDelete) && names(a, ev.ID):
			row.Deleted = true
		}
	}
	if edit != nil {
		row.Content, row.Edited = edit.Content, true
	}
	return row
}

// names reports whether ev has an `e` tag naming id.
func names(ev *nostr.Event, id string) bool {
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "e" && strings.EqualFold(tag[1], id) {
			return true
		}
	}
	return false
}

func firstE(ev *nostr.Event) string {
	if tag := ev.Tags.Find("e"); tag != nil {
		return tag[1]
	}
	return ""
}

// authorNames names the authors of rows by their kind 0 profiles, each
// author asked of the relay once a command.
type authorNames struct {
	client *client.Client
	names  map[string]string // "" for an author known to have no name
}

// name sets the Name of each of rows.
func (a authorNames) name(ctx context.Context, rows []windowRow) error {
	var ask []string
	asked := map[string]bool{}
	for _, row := range rows {
		if _, known := a.names[row.PubKey]; !known && !asked[row.PubKey] {
			asked[row.PubKey] = true
			ask = append(ask, row.PubKey)
		}
	}
	got, err := a.client.Names(ctx, ask)
	if err != nil {
		return fmt.Errorf("authors' names: %w", err)
	}
	for _, pk := range ask {
		a.names[pk] = got[pk]
	}
	for i := range rows {
		rows[i].Name = a.names[rows[i].PubKey]
	}
	return nil
}
