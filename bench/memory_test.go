package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// The bench's memory figures (issue 15, issue 32 item 5): the anonymous
// and whole resident sets read every anonSampling, the largest since the
// last call and of all. 64 MiB touched and kept between two calls shows
// in the second, in both; the peak of all never falls below what a window
// gave; the whole resident set holds the anonymous one.
func TestSampleMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	stop, since, peak := SampleMemory(os.Getpid())
	defer stop()
	first := since()
	if first.Anon <= 0 || first.RSS < first.Anon {
		t.Fatalf("resident sets read: %+v", first)
	}
	block := make([]byte, 64<<20)
	for i := range block {
		block[i] = byte(i)
	}
	time.Sleep(3 * anonSampling)
	grown := since()
	runtime.KeepAlive(block)
	if grown.Anon < first.Anon+32<<20 || grown.RSS < first.RSS+32<<20 {
		t.Fatalf("after 64 MiB touched: %+v, before %+v", grown, first)
	}
	stop()
	if p := peak(); p.Anon < grown.Anon || p.RSS < grown.RSS {
		t.Fatalf("peak %+v below a window's %+v", p, grown)
	}
}
