package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Unwritable makes the file or directory at path one this process cannot
// write, until the test ends. Its mode does that for any user but root,
// whom permission bits do not bind: as root it sets the immutable
// attribute (chattr +i), which binds root too, and skips the test where
// chattr or the file system does not allow it.
func Unwritable(t testing.TB, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, st.Mode().Perm()&^0o222); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, st.Mode().Perm()) })
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("running as root, and chattr +i %s failed: %v %s", path, err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("chattr", "-i", path).CombinedOutput(); err != nil {
			t.Errorf("chattr -i %s: %v %s", path, err, out)
		}
	})
}
