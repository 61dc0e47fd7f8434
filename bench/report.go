package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Targets are the figures the relay aims for on a 2-core machine (issues
// 4 and 6).
var Targets = struct {
	// IngestShare is ingest over WebSocket as a share of the machine's
	// verification limit (cores times one core's verifications a second).
	IngestShare float64
	// WindowPages a second at P99 or better, from 16 clients.
	WindowPages float64
	WindowP99   time.Duration
	// CachedPages a second, the page cache on, deep pages asked for as
	// readers ask for them ("window deep zipf"; issue 15, settled in
	// issue 32).
	CachedPages float64
	// PeakRSS bounds the relay's anonymous resident set (RssAnon) over
	// the whole run: its own memory, not the database's pages it maps.
	PeakRSS int64
	// SizeRatio is database bytes per stored event over JSON bytes.
	SizeRatio float64
	// ScreenBytes and ScreenTime are how many times fewer bytes and less
	// time the window's first screen takes than the generic client's.
	ScreenBytes, ScreenTime float64
}{0.8, 1500, 25 * time.Millisecond, 2500, 150_000_000, 2, 3, 5}

// Report is a whole run: the machine, the data, every measurement.
type Report struct {
	Machine string `json:"machine"`
	Cores   int    `json:"cores"`
	// Store is where the relay kept the community: "sqlite" (the data
	// directory's file) or "postgres"; Processes is how many relay
	// processes served it, the clients spread over them.
	Store     string `json:"store"`
	Processes int    `json:"processes"`
	// VerifyPerCore is one core's signature verifications a second.
	VerifyPerCore float64 `json:"verify_per_core"`
	// Events is how many events the database held before the run.
	Events int64 `json:"events"`
	// Channel is the channel read, and Messages its kind-9 events.
	Channel  string `json:"channel"`
	Messages int64  `json:"messages"`
	// WindowPages is its window's length in pages of 50.
	WindowPages int      `json:"window_pages"`
	Results     []Result `json:"results"`
	// PageCache is how the page cache served "window mixed": pages of
	// several channels while one of them was written.
	PageCache PageCache `json:"page_cache_mixed"`
	// Screens are the first screen the window way and the generic way,
	// with the page cache and without.
	Screens map[string]Screen `json:"screens"`
	// PeakRSS is the relay process's peak resident set, in bytes, and
	// RSSAnon and RSSFile split its resident set at the end of that run:
	// anonymous memory (Go's heap and stacks, SQLite's caches) and file
	// pages mapped (the program's code, the WAL index, the database's
	// pages the read connections map). PeakRSSAnon is the largest anonymous
	// resident set sampled over the whole bench: the relay's own memory,
	// which Targets.PeakRSS bounds.
	PeakRSS     int64 `json:"peak_rss"`
	PeakRSSAnon int64 `json:"peak_rss_anon"`
	RSSAnon     int64 `json:"rss_anon"`
	RSSFile     int64 `json:"rss_file"`
	// StoredEvents, DBBytes and JSONBytes are the database after the run:
	// its events, its size, and the size of its events as JSON. On
	// PostgreSQL DBBytes is the store's tables with their indexes and
	// TOAST (pg_total_relation_size), and DatabaseBytes the whole
	// database (pg_database_size: the system catalogs too).
	StoredEvents  int64 `json:"stored_events"`
	DBBytes       int64 `json:"db_bytes"`
	JSONBytes     int64 `json:"json_bytes"`
	DatabaseBytes int64 `json:"database_bytes,omitempty"`
}

// result finds a measurement by name.
func (r Report) result(name string) (Result, bool) {
	for _, x := range r.Results {
		if x.Name == name {
			return x, true
		}
	}
	return Result{}, false
}

// WriteText prints the report as tables, each target with its verdict.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "machine: %s, %d cores\n", r.Machine, r.Cores)
	fmt.Fprintf(&b, "relay: %s on %s\n", plural(r.Processes, "process", "processes"), r.storeName())
	fmt.Fprintf(&b, "database: %d events before the run; channel %s: %d messages, %d window pages of 50\n\n",
		r.Events, r.Channel, r.Messages, r.WindowPages)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tclients\tops\tper second\tp50\tp95\tp99\tKB/op\tfrom cache\tpeak anon\tpeak RSS\t")
	for _, x := range r.Results {
		kb := 0.0
		if x.Ops > 0 {
			kb = float64(x.Bytes) / float64(x.Ops) / 1000
		}
		cached := "-"
		if pc := x.PageCache; pc != nil && pc.Hits+pc.Misses > 0 {
			cached = fmt.Sprintf("%.1f%%", 100*pc.HitRate())
		}
		fmt.Fprintf(tw, "%s\t%d\t%d %s\t%.0f\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t\n", x.Name, x.Clients, x.Ops, x.Unit, x.Rate(),
			ms(x.P50), ms(x.P95), ms(x.P99), kb, cached, mbOrDash(x.PeakRSSAnon), mbOrDash(x.PeakRSS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nfrom cache: the window pages the relay's page cache served; peak anon and peak RSS: the relay's\n" +
		"anonymous and whole resident sets at their largest during the measurement (the whole one counts the\n" +
		"database pages the read connections map, once per connection: the kernel's page cache, not the relay's memory)\n")
	if pc := r.PageCache; pc.Hits+pc.Misses > 0 {
		fmt.Fprintf(&b, "page cache under writes (window mixed): %.0f%% of %d pages from the cache while %d messages were written to one of the channels read\n",
			100*pc.HitRate(), pc.Hits+pc.Misses, pc.Writes)
	}
	for _, cache := range []string{"cached", "uncached"} {
		win, okW := r.Screens["window "+cache]
		gen, okG := r.Screens["generic "+cache]
		if !okW || !okG {
			continue
		}
		fmt.Fprintf(&b, "first screen (%s pages): window 1 request, %d B, %s; generic %d requests, %d B, %s: %.1fx the bytes, %.1fx the time\n",
			cache, win.Bytes, ms(win.Elapsed), gen.Requests, gen.Bytes, ms(gen.Elapsed),
			ratio(float64(gen.Bytes), float64(win.Bytes)), ratio(float64(gen.Elapsed), float64(win.Elapsed)))
	}
	b.WriteString("\ntargets:\n")
	for _, line := range r.verdicts() {
		b.WriteString("  " + line + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdicts compares the run with Targets.
func (r Report) verdicts() []string {
	var out []string
	verdict := func(met bool) string {
		if met {
			return "met"
		}
		return "MISSED"
	}
	limit := r.VerifyPerCore * float64(r.Cores)
	if in, ok := r.result("ingest"); ok && limit > 0 {
		share := in.Rate() / limit
		out = append(out, fmt.Sprintf("%s  ingest %.0f events/s = %.0f%% of the verification limit %.0f/s (%d cores x %.0f); aim %.0f%%",
			verdict(share >= Targets.IngestShare), in.Rate(), 100*share, limit, r.Cores, r.VerifyPerCore, 100*Targets.IngestShare))
	}
	if x, ok := r.result("window deep zipf"); ok {
		share := ""
		if pc := x.PageCache; pc != nil {
			share = fmt.Sprintf(", %.1f%% from the cache", 100*pc.HitRate())
		}
		out = append(out, fmt.Sprintf("%s  window deep zipf (cached, deep pages skewed as readers ask): %.0f pages/s%s; aim %.0f pages/s",
			verdict(x.Rate() >= Targets.CachedPages), x.Rate(), share, Targets.CachedPages))
	}
	for _, name := range []string{"window head", "window deep", "window head uncached", "window deep uncached", "window deep zipf uncached"} {
		x, ok := r.result(name)
		if !ok {
			continue
		}
		met := x.Rate() >= Targets.WindowPages && x.P99 < Targets.WindowP99
		out = append(out, fmt.Sprintf("%s  %s: %.0f pages/s, p99 %s; aim %.0f pages/s, p99 under %s",
			verdict(met), name, x.Rate(), ms(x.P99), Targets.WindowPages, ms(Targets.WindowP99)))
	}
	if r.PeakRSSAnon > 0 {
		of := "the relay"
		if r.Processes > 1 {
			of = "the largest relay process"
		}
		if r.Store == "postgres" {
			of += " (the PostgreSQL server not counted)"
		}
		out = append(out, fmt.Sprintf("%s  peak anonymous RSS of %s %.0f MB (peak RSS %.0f MB with the files mapped; at the end of the relay run with that peak %.0f MB anonymous, %.0f MB of files); aim under %.0f MB anonymous",
			verdict(r.PeakRSSAnon < Targets.PeakRSS), of, mb(r.PeakRSSAnon), mb(r.PeakRSS), mb(r.RSSAnon), mb(r.RSSFile), mb(Targets.PeakRSS)))
	}
	if r.StoredEvents > 0 && r.JSONBytes > 0 {
		size := float64(r.DBBytes) / float64(r.JSONBytes)
		what := "database"
		if r.Store == "postgres" {
			what = fmt.Sprintf("database tables with indexes and TOAST (pg_total_relation_size; the whole database, pg_database_size, %.0f MB)",
				mb(r.DatabaseBytes))
		}
		out = append(out, fmt.Sprintf("%s  %s %.0f B per event, %.2fx its JSON (%.0f B); aim within %.0fx",
			verdict(size <= Targets.SizeRatio), what, float64(r.DBBytes)/float64(r.StoredEvents), size,
			float64(r.JSONBytes)/float64(r.StoredEvents), Targets.SizeRatio))
	}
	if win, ok := r.Screens["window uncached"]; ok {
		gen := r.Screens["generic uncached"]
		bytes, took := ratio(float64(gen.Bytes), float64(win.Bytes)), ratio(float64(gen.Elapsed), float64(win.Elapsed))
		out = append(out, fmt.Sprintf("%s  first screen, uncached: the generic way takes %.1fx the bytes and %.1fx the time; aim %.0fx and %.0fx",
			verdict(bytes >= Targets.ScreenBytes && took >= Targets.ScreenTime), bytes, took, Targets.ScreenBytes, Targets.ScreenTime))
	}
	return out
}

// storeName is the store the report's relay ran on, in words.
func (r Report) storeName() string {
	if r.Store == "postgres" {
		return "PostgreSQL"
	}
	return "SQLite"
}

// plural is n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// mbOrDash is n bytes in megabytes, "-" for 0 (not known).
func mbOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MB", mb(n))
}

// mb is n bytes in megabytes (10^6 bytes, as KB/op is 10^3).
func mb(n int64) float64 { return float64(n) / 1e6 }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
