package relay

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// BenchmarkIngestWS measures ingest over WebSocket as `buzz-lite bench`
// does (16 connections, 32 events in flight on each, a generated
// community's messages, replies, reactions, edits and deletions), with the
// relay in this process so that a CPU profile shows where an event's time
// goes. Beside the rate it reports the process's CPU an event (the load
// generator's included: it runs in this process) in microseconds and in
// verifications' worth, one core's verification measured first in the
// same run with the relay's verifier (internal/verify), and the rate
// against the machine's verification limit, and the events the writer
// took in a batch (one transaction, one commit):
//
//	go test ./relay -run '^$' -bench IngestWS -benchtime 20000x -cpuprofile cpu.out
func BenchmarkIngestWS(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	c, err := gen.Generate(gen.Options{Seed: 7, Channels: 1, TopLevel: max(1, b.N/9)})
	if err != nil {
		b.Fatal(err)
	}
	setup, load := c.Split()
	s := startServer(&testing.T{})
	b.Cleanup(func() { s.stop() })
	t := bench.Target{WS: s.wsURL, HTTP: s.httpURL}
	if _, err := bench.Ingest(context.Background(), t, "setup", setup, 1, 1); err != nil {
		b.Fatal(err)
	}
	v := testutil.MeasureVerify(b, load, time.Second)
	before := batches(b, s)
	b.ResetTimer()
	cpu := testutil.StartCPU()
	r, err := bench.Ingest(context.Background(), t, "ingest", load, 16, 32)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu.Report(b, len(load), r.Rate(), v)
	b.ReportMetric(float64(r.P99.Microseconds())/1000, "p99-ms")
	after := batches(b, s)
	b.ReportMetric(float64(after[0]-before[0])/float64(max(1, after[1]-before[1])), "events/batch")
}

// batches is the writer's jobs and batches so far.
func batches(b *testing.B, s *testServer) [2]uint64 {
	b.Helper()
	st, err := s.store.Stats()
	if err != nil {
		b.Fatal(err)
	}
	var n uint64
	for _, c := range st.BatchSizes {
		n += c
	}
	return [2]uint64{st.BatchJobs, n}
}
