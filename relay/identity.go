package relay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// LoadOrCreateKey returns the relay identity secret key kept at path,
// creating it (mode 0600) on first start (RL-21), and whether it did. The
// file holds the key as 64 hex characters.
func LoadOrCreateKey(path string) (sk string, created bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		sk := strings.TrimSpace(string(b))
		if _, err := nostr.GetPublicKey(sk); err != nil || !nostr.IsValid32ByteHex(sk) {
			return "", false, fmt.Errorf("relay key %s: not a 64-hex secret key", path)
		}
		return sk, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("relay key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("relay key: %w", err)
	}
	sk = nostr.GeneratePrivateKey()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(sk+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("relay key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, fmt.Errorf("relay key: %w", err)
	}
	return sk, true, nil
}
