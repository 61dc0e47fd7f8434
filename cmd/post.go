package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/urfave/cli/v2"

	"github.com/buzz-lite/buzz-lite/client"
)

func postCommand() *cli.Command {
	return &cli.Command{
		Name:      "post",
		Usage:     "post a message to a channel, or a reply in a thread",
		UsageText: "buzz-lite post [--relay URL] --key nsec|hex|file (--channel ID | --reply-to ID) TEXT",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "key", Usage: "your secret key (nsec, 64 hex, or a file holding one) (required)"},
			&cli.StringFlag{Name: "channel", Usage: "the channel: a UUID or a NIP-29 group id (required, unless --reply-to: the message's)"},
			&cli.StringFlag{Name: "reply-to", Usage: "the message to reply to: its full id (64 hex), nevent or note"},
		),
		Before: func(c *cli.Context) error {
			if !c.IsSet("key") {
				return usageErr(c, errors.New("missing --key"))
			}
			if !c.IsSet("channel") && !c.IsSet("reply-to") {
				return usageErr(c, errors.New("missing --channel (or --reply-to, a reply goes to its message's channel)"))
			}
			return argsBetween(1, 1, "TEXT")(c)
		},
		Action: post,
	}
}

// post publishes one message and prints the relay's answer: `ok ID`, or
// its refusal, which fails the command.
func post(c *cli.Context) error {
	ch := ""
	if c.IsSet("channel") {
		var err error
		if ch, err = channelFlag(c); err != nil {
			return err
		}
	}
	replyTo, err := messageID(c.String("reply-to"))
	if err != nil {
		return usageErr(c, fmt.Errorf("--reply-to: %w", err))
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
	ev, err := cl.Post(ctx, ch, text, replyTo)
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

// messageID is a message named on the command line: its id in hex, or
// the nevent or note that carries it; "" is none. A short id, as a
// timeline shows one, names no message a relay can be asked for.
func messageID(v string) (string, error) {
	switch {
	case v == "":
		return "", nil
	case strings.HasPrefix(v, "nevent1"), strings.HasPrefix(v, "note1"):
		prefix, data, err := nip19.Decode(v)
		switch p := data.(type) {
		case nostr.EventPointer:
			if err == nil && prefix == "nevent" {
				return p.ID, nil
			}
		case string:
			if err == nil && prefix == "note" {
				return p, nil
			}
		}
		return "", fmt.Errorf("invalid %s", strings.SplitN(v, "1", 2)[0])
	}
	id := strings.ToLower(v)
	if nostr.IsValid32ByteHex(id) {
		return id, nil
	}
	if len(id) < 64 && strings.Trim(id, "0123456789abcdef") == "" {
		return "", fmt.Errorf("%q is a short id: give the message's full id (64 hex) or its nevent", v)
	}
	return "", fmt.Errorf("want a message id (64 hex), an nevent or a note, got %q", v)
}
