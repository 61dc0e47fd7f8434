package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

func channelsCommand() *cli.Command {
	return &cli.Command{
		Name:      "channels",
		Usage:     "list the channels you can read: id, name, private or open",
		UsageText: "buzz-lite channels [--relay URL] [--key nsec|hex|file]",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one): adds the private channels you are a member of"},
		),
		Before: func(c *cli.Context) error {
			return argsBetween(0, 0, "")(c)
		},
		Action: channels,
	}
}

// channels prints one channel a line, tab separated, from the relay's
// group state.
func channels(c *cli.Context) error {
	key, err := secretKey(c.String("key"))
	if err != nil {
		return usageErr(c, err)
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Minute)
	defer cancel()
	cl, err := relayClient(ctx, c, key)
	if err != nil {
		return err
	}
	chs, err := cl.Channels(ctx)
	if err != nil {
		return fmt.Errorf("channels: %w", err)
	}
	for _, ch := range chs {
		access := "open"
		if ch.Private {
			access = "private"
		}
		if _, err := fmt.Fprintf(c.App.Writer, "%s\t%s\t%s\n", ch.ID, terminalText(ch.Name), access); err != nil {
			return err
		}
	}
	return nil
}
