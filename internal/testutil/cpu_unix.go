//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time of the whole process so far
// (getrusage, RUSAGE_SELF).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
