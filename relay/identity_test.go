package relay

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// RL-21, RL-33: relays starting together on one new key file (the
// processes of a community on PostgreSQL) all get the one key the file
// ends up with, and exactly one of them created it.
func TestLoadOrCreateKeyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.key")
	const starts = 8
	keys := make([]string, starts)
	created := make([]bool, starts)
	var wg sync.WaitGroup
	for i := range starts {
		wg.Go(func() {
			var err error
			if keys[i], created[i], err = LoadOrCreateKey(path); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	onDisk, _, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	creators := 0
	for i := range starts {
		if keys[i] != onDisk {
			t.Errorf("start %d: key %.8s..., the file holds %.8s...", i, keys[i], onDisk)
		}
		if created[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d starts say they created the key, want 1", creators)
	}
}

// RL-21: the relay identity key is created on first start in a 0600 file,
// the same key is returned afterwards, and a file that holds no key is
// refused rather than replaced.
func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "relay.key") // the directory does not exist yet

	sk, created, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !nostr.IsValid32ByteHex(sk) {
		t.Fatalf("key %q is not 64 lowercase hex characters", sk)
	}
	if _, err := nostr.GetPublicKey(sk); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if files, err := os.ReadDir(filepath.Dir(path)); err != nil || len(files) != 1 {
		t.Errorf("the key's directory holds %v (%v), want the key file alone", files, err)
	}

	again, createdAgain, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if again != sk {
		t.Fatal("second call returned a different key")
	}
	if !created || createdAgain {
		t.Fatalf("created = %v, then %v; want true, then false", created, createdAgain)
	}

	// A key written by hand, with surrounding whitespace, is read as is.
	manual := nostr.GeneratePrivateKey()
	manualPath := filepath.Join(t.TempDir(), "manual.key")
	if err := os.WriteFile(manualPath, []byte("  "+manual+"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, created, err := LoadOrCreateKey(manualPath); err != nil || got != manual || created {
		t.Fatalf("hand-written key: %q, %v", got, err)
	}
}

// RL-21: garbage in the key file is an error, and the file is left alone.
func TestLoadOrCreateKeyRefusesGarbage(t *testing.T) {
	for _, content := range []string{
		"garbage",
		"",
		"\n",
		"nsec1notreallyakey",
		"abcd",
		nostr.GeneratePrivateKey() + "00",     // too long
		nostr.GeneratePrivateKey()[:62],       // too short
		"zz" + nostr.GeneratePrivateKey()[2:], // not hex
	} {
		path := filepath.Join(t.TempDir(), "relay.key")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if sk, _, err := LoadOrCreateKey(path); err == nil {
			t.Errorf("file %q: accepted as key %q", content, sk)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("file %q was rewritten to %q", content, b)
		}
	}
}

// RL-21: a key path that cannot be read is an error, not a new key.
func TestLoadOrCreateKeyUnreadable(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should be.
	path := filepath.Join(dir, "relay.key")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(path); err == nil {
		t.Fatal("a directory was accepted as key file")
	}
}

// RL-21: a key path that is a link to nowhere is refused, not looped on.
func TestLoadOrCreateKeyDanglingLink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "relay.key")
	if err := os.Symlink(filepath.Join(dir, "missing", "key"), path); err != nil {
		t.Fatal(err)
	}
	if sk, _, err := LoadOrCreateKey(path); err == nil {
		t.Fatalf("a dangling link gave key %q", sk)
	}
}

// Issue 29 item 8: a relay key file that group or others may read or
// write is refused, as ssh refuses such a key, with the chmod that mends
// it; the relay never signs with a key others may have read.
func TestLoadOrCreateKeyRefusesOpenMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.key")
	sk, _, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		got, _, err := LoadOrCreateKey(path)
		if err == nil || !strings.Contains(err.Error(), "run chmod 600 "+path) {
			t.Errorf("mode %04o: %v, want a refusal saying chmod 600 %s", mode, err, path)
		}
		if got != "" {
			t.Errorf("mode %04o: returned a key", mode)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadOrCreateKey(path); err != nil || got != sk {
		t.Errorf("mode 0400: %v, want the key", err)
	}
}
