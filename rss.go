package main

import (
	"os"
	"strconv"
	"strings"
)

// memory is what /proc (Linux) says of a running process's resident
// set, in bytes; all 0 where that is not known. Not getrusage: a child
// started by Go's vfork-style spawn takes its parent's peak as its own
// when it execs, so a large bench process would show as the relay's.
type memory struct {
	// Peak is VmHWM, the peak resident set;
	// Anon and File split the present one (RssAnon: heap and stacks,
	// SQLite's page caches included; RssFile: file pages mapped, the
	// program's code, the WAL index and the database's pages that the
	// read connections map, which the kernel may drop).
	Peak, Anon, File int64
	// PeakAnon is the largest Anon seen by whoever sampled it: the
	// kernel keeps no peak of it.
	PeakAnon int64
}

func memoryOf(pid int) memory {
	var m memory
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
		case "RssAnon":
			m.Anon = kb << 10
		case "RssFile":
			m.File = kb << 10
		}
	}
	return m
}
