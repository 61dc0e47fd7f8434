package testutil

import (
	"runtime"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/verify"
)

// VerifyCost is one core's signature verification as the relay does it
// (internal/verify), measured in the run that uses it: the machine is
// shared, and its speed moves from one hour to the next.
type VerifyCost struct {
	// PerSecond is verifications a wall-clock second on one goroutine.
	PerSecond float64
	// CPU is the process CPU time of one verification; zero where the
	// platform does not report it.
	CPU time.Duration
}

// MeasureVerify verifies evs round robin on one goroutine for about d
// with a fresh verify.Verifier, which keeps parsed keys as the relay's and
// the importer's do.
func MeasureVerify(tb testing.TB, evs []*nostr.Event, d time.Duration) VerifyCost {
	tb.Helper()
	if len(evs) == 0 {
		tb.Fatal("MeasureVerify: no events")
	}
	var v verify.Verifier
	cpu0, cpuOK := processCPU()
	start := time.Now()
	n := 0
	for ; n == 0 || time.Since(start) < d; n++ {
		if err := v.Event(evs[n%len(evs)]); err != nil {
			tb.Fatalf("MeasureVerify: event %s: %v", evs[n%len(evs)].ID, err)
		}
	}
	elapsed := time.Since(start)
	c := VerifyCost{PerSecond: float64(n) / elapsed.Seconds()}
	if cpu1, ok := processCPU(); ok && cpuOK {
		c.CPU = (cpu1 - cpu0) / time.Duration(n)
	}
	return c
}

// CPUMeter measures the process CPU time a benchmark's events cost.
type CPUMeter struct {
	cpu time.Duration
	ok  bool
}

// StartCPU starts a CPUMeter; start it where the benchmark's timer starts.
func StartCPU() *CPUMeter {
	cpu, ok := processCPU()
	return &CPUMeter{cpu: cpu, ok: ok}
}

// Report ends the measurement of events events, done at rate a second,
// and reports beside the benchmark's own figures:
//   - events/s, rate;
//   - %-of-limit: rate against the machine's verification limit, the
//     cores times v.PerSecond;
//   - cpu-us/event: the process's CPU time an event since StartCPU,
//     everything in the process (a load generator in it too);
//   - verifications/event: that CPU time in verifications' worth, v.CPU
//     each.
//
// The last two are left out where the platform does not report CPU time.
func (m *CPUMeter) Report(b *testing.B, events int, rate float64, v VerifyCost) {
	b.Helper()
	cpu, ok := processCPU()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(100*rate/(float64(runtime.NumCPU())*v.PerSecond), "%-of-limit")
	if !ok || !m.ok || events == 0 {
		return
	}
	perEvent := (cpu - m.cpu) / time.Duration(events)
	b.ReportMetric(float64(perEvent)/float64(time.Microsecond), "cpu-us/event")
	if v.CPU > 0 {
		b.ReportMetric(float64(perEvent)/float64(v.CPU), "verifications/event")
	}
}
