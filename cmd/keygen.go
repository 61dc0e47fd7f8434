package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/urfave/cli/v2"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "make a new secret key and print it with its public key",
		UsageText: "buzz-lite keygen [-o FILE [--force]]",
		// --config and --data are taken, unlisted, as every command takes
		// them (RL-25); a new key needs neither.
		Flags: append(hidden(commonFlags()),
			&cli.StringFlag{Name: "o", Usage: "write the secret key (nsec) to FILE, mode 0600, for --key FILE"},
			&cli.BoolFlag{Name: "force", Usage: "overwrite FILE if it exists"},
		),
		Before: argsBetween(0, 0, ""),
		Action: keygen,
	}
}

// keygen prints a new key as nsec, npub and hex public key; with -o the
// secret goes to a file that `--key FILE` reads, and is not printed.
func keygen(c *cli.Context) error {
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	nsec, err := nip19.EncodePrivateKey(sk)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	npub, err := nip19.EncodePublicKey(pk)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	out := c.App.Writer
	if file := c.String("o"); file != "" {
		if err := writeKeyFile(file, nsec, c.Bool("force")); err != nil {
			return err
		}
		fmt.Fprintf(out, "secret key written to %s\n", file)
	} else {
		fmt.Fprintf(out, "nsec %s\n", nsec)
	}
	fmt.Fprintf(out, "npub %s\npubkey %s\n", npub, pk)
	return nil
}

// writeKeyFile writes nsec to file, readable by its owner only; an
// existing file is kept unless force, since it may hold the only copy of
// another key.
func writeKeyFile(file, nsec string, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(file, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("keygen: %s exists: give --force to overwrite it", file)
	}
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	// An existing file keeps its mode when truncated: a key is no one
	// else's to read.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	if _, err := fmt.Fprintln(f, nsec); err != nil {
		f.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	return nil
}
