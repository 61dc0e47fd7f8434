package importer

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/postgres"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// benchFile signs n channel events, a third of them top-level and the rest
// replies to earlier ones, as JSON Lines in created_at order; it returns
// the events too.
func benchFile(b *testing.B, n int) ([]byte, []*nostr.Event) {
	b.Helper()
	signers := []testutil.Signer{testutil.NewSigner(b), testutil.NewSigner(b), testutil.NewSigner(b)}
	ch := "88888888-8888-4888-8888-888888888888"
	evs := make([]*nostr.Event, n)
	// Roots first (their ids are needed), in parallel; then the replies.
	sign := func(idx []int, mk func(i int) *nostr.Event) {
		var wg sync.WaitGroup
		for w := range runtime.NumCPU() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < len(idx); j += runtime.NumCPU() {
					evs[idx[j]] = mk(idx[j])
				}
			}()
		}
		wg.Wait()
	}
	var roots, replies []int
	for i := range n {
		if i%3 == 0 {
			roots = append(roots, i)
		} else {
			replies = append(replies, i)
		}
	}
	sign(roots, func(i int) *nostr.Event {
		return signers[i%3].Event(b, 9, int64(1_700_000_000+i), fmt.Sprint("message ", i), nostr.Tag{"h", ch})
	})
	sign(replies, func(i int) *nostr.Event {
		parent := evs[(i/3)*3]
		return signers[i%3].Event(b, 9, int64(1_700_000_000+i), fmt.Sprint("reply ", i), nostr.Tag{"h", ch},
			nostr.Tag{"e", parent.ID, "", "reply"})
	})
	var buf bytes.Buffer
	for _, ev := range evs {
		buf.WriteString(ev.String())
		buf.WriteByte('\n')
	}
	return buf.Bytes(), evs
}

// BenchmarkImport measures `buzz-lite import` of a JSON Lines file into an
// empty store of each kind, every id and signature verified (on every
// core), against the machine's verification limit: the cores times one
// core's verifications a second with the relay's verifier
// (internal/verify), measured first in the same run. It reports the
// process's CPU an event in microseconds and in verifications' worth; the
// no-verify rows are the store's own cost (RL-33: import --postgres). b.N
// is the number of events.
func BenchmarkImport(b *testing.B) {
	for _, store := range []string{"sqlite", "postgres"} {
		for _, verify := range []bool{true, false} {
			name := store
			if !verify {
				name += "/no-verify"
			}
			b.Run(name, func(b *testing.B) {
				file, evs := benchFile(b, b.N)
				s := openBenchStore(b, store)
				v := testutil.MeasureVerify(b, evs, time.Second)
				b.ResetTimer()
				cpu := testutil.StartCPU()
				sum, err := Run(context.Background(), bytes.NewReader(file), s, Options{NoVerify: !verify})
				b.StopTimer()
				if err != nil || sum.Accepted != b.N {
					b.Fatalf("%+v %v", sum, err)
				}
				cpu.Report(b, b.N, float64(b.N)/b.Elapsed().Seconds(), v)
			})
		}
	}
}

// openBenchStore opens an empty store of kind, closed when b ends.
func openBenchStore(b *testing.B, kind string) Store {
	b.Helper()
	var s interface {
		Store
		Close() error
	}
	var err error
	if kind == "postgres" {
		s, err = postgres.Open(context.Background(), postgres.Options{URL: pgtest.FreshDatabase(b)})
	} else {
		s, err = sqlite.Open(context.Background(), sqlite.Options{Path: b.TempDir() + "/bench.db", Schema: testutil.Schema(b)})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.Close(); err != nil {
			b.Error(err)
		}
	})
	return s
}

// BenchmarkExport measures `buzz-lite export` of a 50,000-event store.
func BenchmarkExport(b *testing.B) {
	const n = 50_000
	file, _ := benchFile(b, n)
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: b.TempDir() + "/bench.db", Schema: testutil.Schema(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := Run(context.Background(), bytes.NewReader(file), s, Options{NoVerify: true}); err != nil {
		b.Fatal(err)
	}
	var out bytes.Buffer
	b.ResetTimer()
	for range b.N {
		out.Reset()
		if got, err := s.Export(context.Background(), buzz.ExportFilter{}, &out); err != nil || got != n {
			b.Fatalf("exported %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}
