package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/client"
)

func postCommand() *cli.Command {
	return &cli.Command{
		Name:      "post",
		Usage:     "post a message to a channel, or a reply in a thread",
		UsageText: "buzz-lite post [--relay URL] --key nsec|hex|file --channel ID [--reply-to ID] TEXT",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one) (required)"},
			&cli.StringFlag{Name: "channel", Usage: "the channel: a UUID or a NIP-29 group id (required)"},
			&cli.StringFlag{Name: "reply-to", Usage: "id of the message to reply to"},
		),
		Before: func(c *cli.Context) error {
			for _, name := range []string{"key", "channel"} {
				if !c.IsSet(name) {
					return usageErr(c, fmt.Errorf("missing --%s", name))
				}
			}
			return argsBetween(1, 1, "TEXT")(c)
		},
		Action: post,
	}
}

// post publishes one message and prints the relay's answer: `ok ID`, or
// its refusal, which fails the command.
func post(c *cli.Context) error {
	ch, err := channelFlag(c)
	if err != nil {
		return err
	}
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	text := c.Args().First()
	if strings.TrimSpace(text) == "" {
		return usageErr(c, errors.New("empty TEXT"))
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Minute)
	defer cancel()
	cl, err := relayClient(ctx, c, key)
	if err != nil {
		return err
	}
	ev, err := cl.Post(ctx, ch, text, c.String("reply-to"))
	var refused *client.RefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("post: refused: %s", refused.Message)
	}
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "ok %s\n", ev.ID)
	return err
}
