//go:build unix

package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// RL-31: a holder that has not written its pid yet is refused as held,
// with the pid said to be unknown.
func TestAcquireHeldWithoutPID(t *testing.T) {
	dir := t.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	want := fmt.Sprintf("data directory %s is in use by another buzz-lite (pid unknown)", dir)
	if err == nil || err.Error() != want {
		t.Fatalf("Acquire: %v, want %s", err, want)
	}
}
