package postgres

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// BenchmarkAdmitConcurrent is ingest as the relay's connections run it
// (issue 32): 16 writers admitting pre-signed events at once, messages
// in one channel with every fourth a reply to the message before it, so
// that the writer's batches hold counters to keep. events/s is the
// store's rate, signatures not counted.
func BenchmarkAdmitConcurrent(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: pgtest.FreshDatabase(b), MaxConns: 24})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	signers := make([]testutil.Signer, 8)
	for i := range signers {
		signers[i] = testutil.NewSigner(b)
	}
	evs := make([]*nostr.Event, b.N)
	for i := range evs {
		tags := nostr.Tags{{"h", procChan}}
		if i%4 == 3 {
			tags = append(tags, nostr.Tag{"e", evs[i-1].ID, "", "reply"})
		}
		evs[i] = signers[i%len(signers)].Event(b, 9, procT+int64(i), "message", tags...)
	}
	// The replies' parents are stored first: the writers race otherwise.
	for i := 2; i < len(evs); i += 4 {
		if _, err := s.Admit(ctx, evs[i]); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	b.SetParallelism(8) // 16 writers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if i%4 == 2 {
				continue
			}
			if _, err := s.Admit(ctx, evs[i]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)*3/4/b.Elapsed().Seconds(), "events/s")
}
