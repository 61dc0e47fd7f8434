package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// keyCommands are the commands that take --key, each with what it needs
// besides: a relay nobody listens on, since a key is read before any
// connection.
var keyCommands = [][]string{
	{"post", "--relay", "ws://127.0.0.1:1", "--channel", "lobby", "hello"},
	{"channels", "--relay", "ws://127.0.0.1:1"},
	{"feed", "--relay", "ws://127.0.0.1:1"},
	{"window", "--relay", "ws://127.0.0.1:1", "--channel", "lobby"},
	{"sync", "--from", "ws://127.0.0.1:1", "--to", "ws://127.0.0.1:2"},
}

// leaks reports whether msg holds 12 characters in a row of secret.
func leaks(msg, secret string) bool {
	for i := 0; i+12 <= len(secret); i++ {
		if strings.Contains(strings.ToLower(msg), strings.ToLower(secret[i:i+12])) {
			return true
		}
	}
	return false
}

// Issue 29 item 8, RL-26: a mistyped --key is never repeated in the error,
// by any command that takes one: it is most of a secret key.
func TestKeyNeverEchoed(t *testing.T) {
	testutil.ClearEnv(t)
	sk := testutil.NewSigner(t).SK
	nsec, err := nip19.EncodePrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ name, key string }{
		{"hex one short", sk[:63]},
		{"hex one too many", sk + "0"},
		{"hex with a typo", sk[:30] + "g" + sk[31:]},
		{"nsec with a typo", nsec[:20] + "x" + nsec[21:]},
		{"nsec cut short", nsec[:len(nsec)-1]},
	} {
		for _, args := range keyCommands {
			_, err := runApp(append(args, "--key", bad.key)...)
			if err == nil {
				t.Fatalf("%s %s: accepted", args[0], bad.name)
			}
			if !strings.Contains(err.Error(), "--key") {
				t.Errorf("%s %s: %q does not say --key is wrong", args[0], bad.name, err)
			}
			if leaks(err.Error(), bad.key) {
				t.Errorf("%s %s: the error repeats the key: %q", args[0], bad.name, err)
			}
		}
	}
}

// Issue 29 item 8: a key is taken in upper-case hex too, not looked for
// as a file of that name.
func TestKeyUpperCaseHex(t *testing.T) {
	sk := testutil.NewSigner(t).SK
	got, err := secretKey(strings.ToUpper(sk))
	if err != nil || got != sk {
		t.Fatalf("secretKey(upper case) = %.8s..., %v; want the key", got, err)
	}
}

// Issue 29 item 8: a --key file that group or others may read or write
// is refused, as ssh refuses such a key, naming the file and the chmod
// that mends it; at 0600 (or 0400) it is read.
func TestKeyFileMode(t *testing.T) {
	testutil.ClearEnv(t)
	sk := testutil.NewSigner(t).SK
	file := filepath.Join(t.TempDir(), "me.key")
	if err := os.WriteFile(file, []byte(sk+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		for _, args := range keyCommands {
			_, err := runApp(append(args, "--key", file)...)
			if err == nil || !strings.Contains(err.Error(), "run chmod 600 "+file) {
				t.Errorf("%s with a key file of mode %04o: %v, want a refusal saying chmod 600 %s", args[0], mode, err, file)
			}
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		got, err := secretKey(file)
		if err != nil || got != sk {
			t.Errorf("key file of mode %04o: %.8s..., %v; want the key", mode, got, err)
		}
	}
}
