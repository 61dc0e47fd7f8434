package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// The bench's memory figures (issue 15): the anonymous resident set read
// every anonSampling, the largest since the last call and of all. 64 MiB
// touched and kept between two calls shows in the second; the peak of all
// never falls below what a window gave.
func TestSampleAnon(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	stop, since, peak := SampleAnon(os.Getpid())
	defer stop()
	first := since()
	if first <= 0 {
		t.Fatalf("no anonymous resident set read: %d", first)
	}
	block := make([]byte, 64<<20)
	for i := range block {
		block[i] = byte(i)
	}
	time.Sleep(3 * anonSampling)
	grown := since()
	runtime.KeepAlive(block)
	if grown < first+32<<20 {
		t.Fatalf("after 64 MiB touched: %d bytes, before %d", grown, first)
	}
	stop()
	if p := peak(); p < grown {
		t.Fatalf("peak %d below a window's %d", p, grown)
	}
}
