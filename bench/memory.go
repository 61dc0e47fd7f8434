package bench

// The relay's memory as the bench reports it: what /proc says of the
// relay process, read once or sampled while a measurement runs.

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is what /proc (Linux) says of a running process's resident
// set, in bytes; all 0 where that is not known. Not getrusage: a child
// started by Go's vfork-style spawn takes its parent's peak as its own
// when it execs, so a large bench process would show as the relay's.
type Memory struct {
	// Peak is VmHWM, the peak resident set, and RSS (VmRSS) the present
	// one, which Anon and File split (RssAnon: heap and stacks, SQLite's
	// page caches included; RssFile: file pages mapped, the program's
	// code, the WAL index and the database's pages that the read
	// connections map, which the kernel may drop).
	Peak, RSS, Anon, File int64
	// PeakAnon is the largest Anon seen by whoever sampled it: the
	// kernel keeps no peak of it.
	PeakAnon int64
}

// MemoryOf is what /proc says of process pid's resident set now.
func MemoryOf(pid int) Memory {
	var m Memory
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmHWM":
			m.Peak = kb << 10
		case "VmRSS":
			m.RSS = kb << 10
		case "RssAnon":
			m.Anon = kb << 10
		case "RssFile":
			m.File = kb << 10
		}
	}
	return m
}

// anonSampling is how often SampleMemory reads a process's resident set.
const anonSampling = 50 * time.Millisecond

// Peaks are the largest anonymous resident set (RssAnon) and whole
// resident set (VmRSS) sampled, in bytes.
type Peaks struct {
	Anon, RSS int64
}

// Max is the larger of p and q, field by field.
func (p Peaks) Max(q Peaks) Peaks { return Peaks{Anon: max(p.Anon, q.Anon), RSS: max(p.RSS, q.RSS)} }

// SampleMemory reads process pid's anonymous and whole resident sets
// every anonSampling until stop is called. since is the largest of each
// read since its last call (or the start), and peak the largest of all.
// The kernel keeps a peak only of the whole resident set (VmHWM), which
// counts the pages of the database that the read connections map (file
// pages, the kernel's page cache, once per connection) with the relay's
// own memory, and is never reset: the anonymous set is the relay's own,
// and both are sampled to give each measurement its own peaks.
func SampleMemory(pid int) (stop func(), since, peak func() Peaks) {
	var mu sync.Mutex
	var sinceLast, largest Peaks
	read := func() Peaks {
		m := MemoryOf(pid)
		now := Peaks{Anon: m.Anon, RSS: m.RSS}
		mu.Lock()
		largest, sinceLast = largest.Max(now), sinceLast.Max(now)
		mu.Unlock()
		return now
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(anonSampling)
		defer tick.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(done); <-stopped }) }
	since = func() Peaks {
		read()
		mu.Lock()
		defer mu.Unlock()
		p := sinceLast
		sinceLast = Peaks{}
		return p
	}
	peak = func() Peaks {
		mu.Lock()
		defer mu.Unlock()
		return largest
	}
	return stop, since, peak
}
