package relay

import (
	"io"
	"net/http"
	"runtime/debug"
	"testing"
)

// BenchmarkWebChannel measures the web view's channel head page (CW-25)
// over HTTP, 8 clients at once, on the generated community of the window
// benchmarks: 50 rows with their aux closure, summaries and profiles,
// rendered to HTML, with the store's page cache and without it.
func BenchmarkWebChannel(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, cache := range []string{"cached", "uncached"} {
		b.Run(cache, func(b *testing.B) {
			s, channel, _ := benchCommunity(b, cache == "cached", webOn)
			url := s.httpURL + "/c/" + channel
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
