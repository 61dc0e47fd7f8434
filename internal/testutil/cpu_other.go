//go:build !unix

package testutil

import "time"

// processCPU has no portable source off unix: the benchmarks report their
// rates there without the CPU figures.
func processCPU() (time.Duration, bool) { return 0, false }
