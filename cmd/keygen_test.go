package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// Issue 16: keygen prints a new key; -o writes the secret as `--key FILE`
// reads it, mode 0600, and keeps an existing file unless --force.
func TestKeygen(t *testing.T) {
	run := func(args ...string) (string, error) {
		app := newApp()
		var out bytes.Buffer
		app.Writer, app.ErrWriter = &out, &out
		err := app.Run(append([]string{"buzz-lite", "keygen"}, args...))
		return out.String(), err
	}
	out, err := run()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		fields[k] = v
	}
	sk, err := secretKey(fields["nsec"])
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	pk, _ := nostr.GetPublicKey(sk)
	if npub, _ := nip19.EncodePublicKey(pk); fields["npub"] != npub || fields["pubkey"] != pk {
		t.Fatalf("output %q: want npub %s and pubkey %s of its nsec", out, npub, pk)
	}

	file := filepath.Join(t.TempDir(), "key")
	out, err = run("-o", file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "nsec1") {
		t.Fatalf("output %q prints the secret written to a file", out)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	sk, err = secretKey(file)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ = nostr.GetPublicKey(sk)
	if !strings.Contains(out, "pubkey "+pk) {
		t.Fatalf("output %q does not name the key in %s", out, file)
	}
	before, _ := os.ReadFile(file)
	if _, err := run("-o", file); err == nil || !strings.Contains(err.Error(), "give --force") {
		t.Fatalf("second keygen -o: %v, want a refusal", err)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(before, after) {
		t.Fatal("a refused keygen changed the key file")
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run("extra"); err == nil || !strings.Contains(err.Error(), "unexpected argument") {
		t.Fatal("keygen takes no argument")
	}
	if _, err := run("-o", file, "--force"); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(file); bytes.Equal(before, after) {
		t.Fatal("keygen --force kept the old key")
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after --force %v, want 0600", st.Mode().Perm())
	}
}
