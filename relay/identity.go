package relay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// LoadOrCreateKey returns the relay identity secret key kept at path,
// creating it (mode 0600) on first start (RL-21), and whether it did. The
// file holds the key as 64 hex characters. Relays that start together on
// one key file (the processes of a community on PostgreSQL, RL-33) all
// end up with the key of the one that created it: the file appears whole
// and is never replaced.
func LoadOrCreateKey(path string) (sk string, created bool, err error) {
	sk, err = readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return sk, false, err
	}
	sk, err = createKey(path)
	if !errors.Is(err, fs.ErrExist) {
		return sk, err == nil, err
	}
	// Another process created it first: its key, unless what is there is
	// no file that holds one (a link to nowhere). Where it is written in
	// place (no hard links), it may be read before the writer finished.
	for try := 1; ; try++ {
		sk, err = readKey(path)
		if err == nil || errors.Is(err, fs.ErrNotExist) || try == keyReadTries {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("relay key %s: exists but cannot be read: %w", path, err)
	}
	return sk, false, err
}

// keyReadTries is how often a key another process is writing in place is
// read before what is there counts as no key.
const keyReadTries = 20

// readKey reads the key kept at path.
func readKey(path string) (string, error) {
	b, err := ReadKeyFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("relay key: %w", err)
	}
	sk := strings.TrimSpace(string(b))
	if _, err := nostr.GetPublicKey(sk); err != nil || !nostr.IsValid32ByteHex(sk) {
		return "", fmt.Errorf("relay key %s: not a 64-hex secret key", path)
	}
	return sk, nil
}

// maxKeyFileBytes bounds what is read of a key file: an nsec and a line
// break are 64 bytes; more is no key file.
const maxKeyFileBytes = 4 << 10

// ReadKeyFile reads the secret key file at path, refusing it, as ssh
// does, when its mode lets group or others at it: a key someone else could
// read is no longer secret, and one they could write is not the owner's.
// The refusal names the file and the command that mends it.
func ReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The mode of the file opened, not of the path: a file swapped in
	// between is not read unchecked.
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %04o lets group or others at the secret key: run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("key file %s: larger than a key (%d bytes at most)", path, maxKeyFileBytes)
	}
	return b, nil
}

// createKey writes a new key to path unless a file is there: written to a
// file of its own first and linked to path, which fails with fs.ErrExist
// when path exists, so that a reader never sees half a key and a key
// another process created is never replaced.
func createKey(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("relay key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("relay key: %w", err)
	}
	defer os.Remove(tmp.Name())
	sk := nostr.GeneratePrivateKey()
	_, err = tmp.WriteString(sk + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if err = errors.Join(err, tmp.Close()); err != nil {
		return "", fmt.Errorf("relay key: %w", err)
	}
	err = os.Link(tmp.Name(), path)
	switch {
	case err == nil:
		return sk, nil
	case errors.Is(err, fs.ErrExist):
		return "", err
	}
	// A file system without hard links (vfat, some network mounts): the
	// file is created only if absent, and written in place.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", err
		}
		return "", fmt.Errorf("relay key: %w", err)
	}
	_, err = f.WriteString(sk + "\n")
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		// No half key left at the path for every later start to refuse.
		return "", fmt.Errorf("relay key: %w", errors.Join(err, os.Remove(path)))
	}
	return sk, nil
}
