package relay

import (
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/gen"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

// BenchmarkWebChannel measures the web view's channel head page (CW-25)
// over HTTP, 8 clients at once, on the generated community of the window
// benchmarks: 50 rows with their aux closure, summaries and profiles,
// rendered to HTML, with the store's page cache and without it.
func BenchmarkWebChannel(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, cache := range []string{"cached", "uncached"} {
		b.Run(cache, func(b *testing.B) {
			c, err := gen.Generate(gen.Options{Channels: benchChannels(b), TopLevel: benchTopLevel(b)})
			if err != nil {
				b.Fatal(err)
			}
			s := startServerWith(&testing.T{}, func(o *sqlite.Options) {
				if cache == "uncached" {
					o.PageCache = -1
				}
			}, webOn)
			b.Cleanup(func() { s.stop() })
			for i := 0; i < len(c.Events); i += 500 {
				if _, err := s.store.ImportBatch(context.Background(), c.Events[i:min(i+500, len(c.Events))]); err != nil {
					b.Fatal(err)
				}
			}
			url := s.httpURL + "/c/" + c.Channels[0]
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Errorf("GET %s: %d, %d bytes, %v", url, resp.StatusCode, n, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}
