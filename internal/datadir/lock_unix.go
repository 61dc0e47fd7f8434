//go:build unix

package datadir

import (
	"errors"
	"os"
	"syscall"
)

// lockFile opens (creating) the lock file at path and takes an exclusive
// flock on it without waiting; held reports that another open file holds
// it. The kernel releases a flock when its file is closed, by the process
// or by its death.
func lockFile(path string) (f *os.File, held bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, true, f.Close()
	}
	if err != nil {
		return nil, false, errors.Join(&os.PathError{Op: "flock", Path: path, Err: err}, f.Close())
	}
	return f, false, nil
}
