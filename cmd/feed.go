package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

func feedCommand() *cli.Command {
	return &cli.Command{
		Name:      "feed",
		Usage:     "print your home feed: mentions of you, what asks for your action, and the newest messages of the channels you can read",
		UsageText: "buzz-lite feed [--relay URL] [--key nsec|hex|file] [--types mentions,needs_action,activity] [--limit N] [--json]",
		// A client of a relay, taking --config and --data as window does.
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one); without it, only the activity of open channels"},
			&cli.StringFlag{Name: "types", Value: strings.Join([]string{nipcw.FeedMentions, nipcw.FeedNeedsAction, nipcw.FeedActivity}, ","),
				Usage: "the feed types, served in this order: mentions, needs_action, activity (or agent_activity)"},
			&cli.IntFlag{Name: "limit", Value: nipcw.FeedLimit, Usage: fmt.Sprintf("events across the types (1..%d)", nipcw.MaxFeedLimit)},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object an event instead of text"},
		),
		Before: func(c *cli.Context) error {
			return argsBetween(0, 0, "")(c)
		},
		Action: feed,
	}
}

// feedRow is a feed event as `feed --json` prints it: a window row, with
// what it is to the reader and where it was said.
type feedRow struct {
	windowRow
	// Type is the feed type the event answers for the reader: a mention
	// or an action asked of them names them, anything else is activity.
	Type    string `json:"type"`
	Kind    int    `json:"kind"`
	Channel string `json:"channel,omitempty"`
}

func feed(c *cli.Context) error {
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	var types []string
	for _, t := range strings.Split(c.String("types"), ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if _, ok := nipcw.FeedType(t); !ok {
			return usageErr(c, fmt.Errorf("--types: %q is not a feed type (mentions, needs_action, activity, agent_activity)", t))
		}
		types = append(types, t)
	}
	if len(types) == 0 {
		return usageErr(c, errors.New("--types: name at least one of mentions, needs_action, activity"))
	}
	limit := c.Int("limit")
	if limit < 1 || limit > nipcw.MaxFeedLimit {
		return usageErr(c, fmt.Errorf("--limit: want 1 to %d, got %d", nipcw.MaxFeedLimit, limit))
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Minute)
	defer cancel()
	cl, err := relayClient(ctx, c, key)
	if err != nil {
		return err
	}
	evs, err := cl.Feed(ctx, types, limit)
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	me := ""
	if key != "" {
		if me, err = nostr.GetPublicKey(key); err != nil {
			return usageErr(c, fmt.Errorf("--key: %w", err))
		}
	}
	for _, ev := range evs {
		if err := printFeedRow(c.App.Writer, feedRowOf(ev, me, types), c.Bool("json")); err != nil {
			return err
		}
	}
	return nil
}

// feedRowOf is ev as the feed of the reader me (hex; "" anonymous) asked
// for types shows it: the relay serves the types in the order asked and an
// event once, so its type is the first asked that it belongs to (RL-35).
func feedRowOf(ev *nostr.Event, me string, types []string) feedRow {
	row := feedRow{
		windowRow: windowRow{ID: ev.ID, PubKey: ev.PubKey, CreatedAt: int64(ev.CreatedAt), Content: ev.Content,
			ReplyTo: buzz.ParseThreadTags(ev.Tags).Parent},
		Type: nipcw.FeedActivity,
		Kind: ev.Kind,
	}
	// An event whose h tags name several channels belongs to none: it is
	// shown without one.
	if ch, err := buzz.ChannelOf(ev.Tags); err == nil {
		row.Channel = ch
	}
	named := me != "" && slices.ContainsFunc(ev.Tags, func(tag nostr.Tag) bool { return len(tag) >= 2 && tag[0] == "p" && tag[1] == me })
	for _, name := range types {
		t, _ := nipcw.FeedType(name)
		switch {
		case t == nipcw.FeedMentions && named && slices.Contains(buzz.MentionKinds, ev.Kind),
			t == nipcw.FeedNeedsAction && named && slices.Contains(buzz.NeedsActionKinds, ev.Kind),
			t == nipcw.FeedActivity && row.Channel != "" && slices.Contains(buzz.ActivityKinds, ev.Kind):
			row.Type = t
			return row
		}
	}
	return row
}

// printFeedRow prints row as window prints its rows, led by its type and
// channel.
func printFeedRow(w io.Writer, row feedRow, asJSON bool) error {
	if asJSON {
		return printJSONLine(w, row)
	}
	where := "-"
	if row.Channel != "" {
		where = row.Channel[:min(8, len(row.Channel))]
	}
	if _, err := fmt.Fprintf(w, "%-12s %-8s  ", row.Type, where); err != nil {
		return err
	}
	return printRow(w, row.windowRow, false)
}
