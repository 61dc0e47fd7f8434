package relay

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/buzz-lite/buzz-lite/bench"
	"github.com/buzz-lite/buzz-lite/internal/gen"
)

// BenchmarkIngestWS measures ingest over WebSocket as `buzz-lite bench`
// does (16 connections, 32 events in flight on each, a generated
// community's messages, replies, reactions, edits and deletions), with the
// relay in this process so that a CPU profile shows where an event's time
// goes:
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
	b.ResetTimer()
	r, err := bench.Ingest(context.Background(), t, "ingest", load, 16, 32)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.Rate(), "events/s")
	b.ReportMetric(float64(r.P99.Microseconds())/1000, "p99-ms")
}
