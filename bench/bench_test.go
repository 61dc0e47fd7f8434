package bench

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Every event is dealt to exactly one stream, a unit (a thread and what
// names it) stays on one stream in its own order, and a stream takes its
// units in turn.
func TestInterleave(t *testing.T) {
	units := [][]int{{0, 3, 4}, {1, 5}, {2}, {6, 7, 8, 9}}
	streams := interleave(units, 2, 2)
	want := [][]int{{0, 2, 3, 4}, {1, 6, 5, 7, 8, 9}}
	if !slices.EqualFunc(streams, want, slices.Equal) {
		t.Fatalf("interleave = %v, want %v", streams, want)
	}
	// More connections than units: no empty stream.
	if got := interleave([][]int{{0, 1}}, 4, 64); len(got) != 1 || !slices.Equal(got[0], []int{0, 1}) {
		t.Errorf("interleave of one unit over 4 connections = %v", got)
	}
}

func TestParseOK(t *testing.T) {
	for _, tc := range []struct {
		msg      string
		ok       bool
		accepted bool
		reason   string
		bad      bool
	}{
		{`["OK","ab",true,""]`, true, true, "", false},
		{`["OK","ab",false,"blocked: no"]`, true, false, "blocked: no", false},
		{`["NOTICE","hi"]`, false, false, "", false},
		{`["EVENT","s",{}]`, false, false, "", false},
		{`["OK","ab",true]`, false, false, "", true},
		{`["OK","ab","yes",""]`, false, false, "", true},
	} {
		a, ok, err := parseOK([]byte(tc.msg))
		if (err != nil) != tc.bad || ok != tc.ok || (ok && (a.accepted != tc.accepted || a.message != tc.reason || a.id != "ab")) {
			t.Errorf("parseOK(%s) = %+v, %v, %v", tc.msg, a, ok, err)
		}
	}
}

func TestResultPercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	r := result("x", "pages", 4, lat, 2*time.Second, 1000)
	if r.Ops != 100 || r.P50 != 50*time.Millisecond || r.P95 != 95*time.Millisecond || r.P99 != 99*time.Millisecond || r.Rate() != 50 {
		t.Errorf("result = %+v, rate %v", r, r.Rate())
	}
	if empty := result("y", "pages", 1, nil, 0, 0); empty.Ops != 0 || empty.Rate() != 0 {
		t.Errorf("empty result = %+v", empty)
	}
	if one := result("z", "pages", 1, []time.Duration{time.Second}, time.Second, 0); one.P50 != time.Second || one.P99 != time.Second {
		t.Errorf("one sample: %+v", one)
	}
}

// Each target is judged against its aim: met just inside, missed just
// outside.
func TestVerdicts(t *testing.T) {
	// The database's mapped pages count in the resident set, not in the
	// relay's own (anonymous) memory, which the target bounds.
	base := Report{Cores: 2, VerifyPerCore: 1000, PeakRSS: 900_000_000, PeakRSSAnon: 100_000_000, StoredEvents: 10, DBBytes: 1000, JSONBytes: 600,
		Screens: map[string]Screen{
			"window uncached":  {Requests: 1, Bytes: 100, Elapsed: time.Millisecond},
			"generic uncached": {Requests: 9, Bytes: 400, Elapsed: 6 * time.Millisecond},
		},
		Results: []Result{
			{Name: "ingest", Ops: 1600, Elapsed: time.Second},
			{Name: "window head", Ops: 1500, Elapsed: time.Second, P99: 24 * time.Millisecond},
			{Name: "window deep", Ops: 1499, Elapsed: time.Second, P99: 10 * time.Millisecond},
			{Name: "window deep zipf", Ops: 2500, Elapsed: time.Second, P99: 30 * time.Millisecond, PageCache: &PageCache{Hits: 3, Misses: 1}},
		}}
	got := strings.Join(base.verdicts(), "\n")
	for _, want := range []string{
		"met  ingest 1600 events/s = 80% of the verification limit 2000/s",
		"met  window head: 1500 pages/s, p99 24.0 ms",
		"MISSED  window deep: 1499 pages/s",
		"met  window deep zipf (cached, deep pages skewed as readers ask): 2500 pages/s, 75.0% from the cache; aim 2500 pages/s",
		"met  peak anonymous RSS of the relay 100 MB (peak RSS 900 MB",
		"met  database 100 B per event, 1.67x its JSON (60 B)",
		"met  first screen, uncached: the generic way takes 4.0x the bytes and 6.0x the time",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts lack %q:\n%s", want, got)
		}
	}
	base.PeakRSSAnon, base.DBBytes = 150_000_000, 1300
	base.Results[0].Ops = 1599
	base.Results[3].Ops = 2499
	got = strings.Join(base.verdicts(), "\n")
	for _, want := range []string{"MISSED  ingest", "MISSED  window deep zipf", "MISSED  peak anonymous RSS", "MISSED  database"} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts lack %q:\n%s", want, got)
		}
	}
}

// Issue 32 item 5: each measurement's row gives the share of window pages
// the page cache served, and the relay's peak anonymous and whole
// resident sets; the JSON gives them as page_cache (with its hit_rate),
// peak_rss_anon and peak_rss.
func TestReportCacheAndMemory(t *testing.T) {
	r := Report{Cores: 2, Processes: 1, Results: []Result{
		{Name: "window deep zipf", Unit: "pages", Ops: 100, Elapsed: time.Second, PeakRSSAnon: 111_000_000, PeakRSS: 444_000_000,
			PageCache: &PageCache{Hits: 87, Misses: 13}},
		{Name: "REQ head", Unit: "REQs", Ops: 100, Elapsed: time.Second},
	}}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	header := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "measurement") })
	if header < 0 || !strings.Contains(lines[header], "from cache  peak anon  peak RSS") {
		t.Fatalf("no columns for the cache and memory:\n%s", text.String())
	}
	if zipf := strings.Fields(lines[header+1]); !slices.Equal(zipf[len(zipf)-5:], []string{"87.0%", "111", "MB", "444", "MB"}) {
		t.Errorf("window deep zipf row: %q", lines[header+1])
	}
	if req := strings.Fields(lines[header+2]); !slices.Equal(req[len(req)-3:], []string{"-", "-", "-"}) {
		t.Errorf("REQ head row, nothing known: %q", lines[header+2])
	}

	b, err := json.Marshal(r.Results[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"peak_rss_anon":111000000`, `"peak_rss":444000000`,
		`"page_cache":{"hits":87,"misses":13,"writes":0,"hit_rate":0.87}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}

// Issue 32 item 5: deep pages are asked for as readers ask, the head
// most, few far from it: over 663 pages about a fifth are the head, half
// the first 10 and some 84% the first 150 (math/rand/v2's Zipf, s = 1.1,
// v = 1); the uniform picker spreads them evenly.
func TestZipfPicker(t *testing.T) {
	const n, draws = 663, 200_000
	rng := rand.New(rand.NewPCG(1, 2))
	count := func(pick picker) []int {
		c := make([]int, n)
		next := pick(rng, n)
		for range draws {
			c[next()]++
		}
		return c
	}
	share := func(c []int, first int) float64 {
		sum := 0
		for _, x := range c[:first] {
			sum += x
		}
		return float64(sum) / draws
	}
	z := count(zipf)
	for _, tc := range []struct {
		first    int
		min, max float64
	}{{1, 0.17, 0.20}, {10, 0.48, 0.52}, {150, 0.83, 0.86}} {
		if got := share(z, tc.first); got < tc.min || got > tc.max {
			t.Errorf("zipf: the first %d pages drawn %.3f of the time, want %.2f-%.2f", tc.first, got, tc.min, tc.max)
		}
	}
	if z[0] <= z[1] || z[1] <= z[10] || z[10] <= z[600] {
		t.Errorf("zipf: not falling with depth: %d %d %d %d", z[0], z[1], z[10], z[600])
	}
	if got := share(count(uniform), 150); got < 0.20 || got > 0.25 {
		t.Errorf("uniform: the first 150 pages drawn %.3f of the time, want about 150/663", got)
	}
	if one := zipf(rng, 1); one() != 0 || one() != 0 {
		t.Error("zipf over one page drew another")
	}
}

// An event that names events of two threads joins them into one unit, so
// that both go before it on its connection; each unit keeps the input
// order.
func TestDependencies(t *testing.T) {
	ev := func(id string, names ...string) *nostr.Event {
		e := &nostr.Event{ID: id}
		for _, n := range names {
			e.Tags = append(e.Tags, nostr.Tag{"e", n})
		}
		return e
	}
	evs := []*nostr.Event{ev("a"), ev("b"), ev("c", "a"), ev("d"), ev("e", "c", "b"), ev("f", "unknown")}
	index, deps, units := dependencies(evs)
	if index["e"] != 4 || !slices.Equal(deps[4], []int{2, 1}) || deps[5] != nil {
		t.Errorf("index %v, deps %v", index, deps)
	}
	want := [][]int{{0, 1, 2, 4}, {3}, {5}}
	if !slices.EqualFunc(units, want, slices.Equal) {
		t.Errorf("units = %v, want %v", units, want)
	}
}

func TestLiveID(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for msg, want := range map[string]string{
		`["EVENT","live",{"id":"` + id + `","kind":9}]`:               id,
		`[ "EVENT" , "live" , {"kind":9, "id": "` + id + `"} ]`:       id,
		`["EVENT","live",{"content":"\"id\":\"x","id":"` + id + `"}]`: id,
		`["EVENT","other",{"id":"` + id + `"}]`:                       "",
		`["EOSE","live"]`:                                             "",
		`not json`:                                                    "",
	} {
		if got, ok := liveID([]byte(msg)); got != want || ok != (want != "") {
			t.Errorf("liveID(%s) = %q, %v", msg, got, ok)
		}
	}
}
