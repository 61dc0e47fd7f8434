package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/buzz-lite/buzz-lite/client"
	"github.com/buzz-lite/buzz-lite/nipcw"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/urfave/cli/v2"
)

// What the commands that are clients of a relay (window, post, channels,
// feed, sync) share: the relay they talk to, the key they sign with, and
// the flags that name them.

// channelFlag is --channel, a UUID or a NIP-29 group id (CW-2), in its
// canonical spelling.
func channelFlag(c *cli.Context) (string, error) {
	ch, ok := nipcw.ParseChannelID(c.String("channel"))
	if !ok {
		return "", usageErr(c, fmt.Errorf("--channel: %q is not a channel id (a UUID or a NIP-29 group id)", c.String("channel")))
	}
	return ch, nil
}

// relayFlag is the relay a client command talks to: --relay, or the one
// the configuration serves (relay.url, or ws:// and a loopback listen
// address), as `serve` with that configuration would advertise it; with no
// configuration at all, the one `buzz-lite serve` starts with no
// arguments, ws://127.0.0.1:7777 (RL-24).
func relayFlag(c *cli.Context) (string, error) {
	if c.IsSet("relay") {
		return c.String("relay"), nil
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return "", err
	}
	u, err := relay.PublicURL(cfg.Relay.URL, cfg.Server.Listen)
	if err != nil {
		return "", fmt.Errorf("the configuration names no relay URL to use (%w): give --relay", err)
	}
	return u, nil
}

// relayClient is a client of the relay the command names (relayFlag),
// signing with key ("" for none).
func relayClient(ctx context.Context, c *cli.Context, key string) (*client.Client, error) {
	relayURL, err := relayFlag(c)
	if err != nil {
		return nil, usageErr(c, err)
	}
	return client.New(ctx, client.Options{Relay: relayURL, Key: key})
}

// clientFlags are the flags every command takes (RL-25) as a client of a
// relay takes them, not listed, since a data directory means nothing to a
// client, and the relay, which a configuration names when --relay is not
// given.
func clientFlags() []cli.Flag {
	return append(hidden(commonFlags()),
		&cli.StringFlag{Name: "relay", Usage: "ws:// or wss:// URL of the relay (default: the one the configuration serves, ws://127.0.0.1:7777 without one)"})
}

// hidden returns flags marked hidden from help.
func hidden(flags []cli.Flag) []cli.Flag {
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok {
			sf.Hidden = true
		}
	}
	return flags
}

// secretKey reads --key: an nsec, 64 hex characters, or a file holding
// either; "" is no key (public channels only). No message repeats v: a
// mistyped key is still most of a secret key (RL-26).
func secretKey(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if !strings.HasPrefix(v, "nsec1") && !nostr.IsValid32ByteHex(strings.ToLower(v)) {
		b, err := relay.ReadKeyFile(v)
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			// The open failed: v may be a key mistyped, not a file name.
			return "", fmt.Errorf("--key: not an nsec, not 64 hex characters, and no file of that name can be read (%w)", pathErr.Err)
		}
		if err != nil {
			return "", fmt.Errorf("--key: %w", err)
		}
		v = strings.TrimSpace(string(b))
	}
	if strings.HasPrefix(v, "nsec1") {
		prefix, sk, err := nip19.Decode(v)
		if err != nil || prefix != "nsec" {
			return "", errors.New("--key: invalid nsec")
		}
		return sk.(string), nil
	}
	v = strings.ToLower(v)
	if !nostr.IsValid32ByteHex(v) {
		return "", errors.New("--key: want an nsec or 64 hex characters")
	}
	return v, nil
}
