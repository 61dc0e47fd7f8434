package cmd

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/buzz-lite/buzz-lite/internal/gen"
)

// Issue 8's figures on a community of about a million events, opt-in:
//
//	BUZZ_LITE_MILLION=1 go test -run Million -timeout 60m -v .
//
// It generates the community (internal/gen), writes it as JSON Lines,
// imports it into an empty data directory with every signature verified,
// exports it again, and reports rates and sizes.
func TestMillionImportExport(t *testing.T) {
	if os.Getenv("BUZZ_LITE_MILLION") == "" {
		t.Skip("set BUZZ_LITE_MILLION=1 to run (several minutes)")
	}
	topLevel := 25000
	if v := os.Getenv("BUZZ_LITE_MILLION_TOPLEVEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		topLevel = n
	}
	start := time.Now()
	c, err := gen.Generate(gen.Options{Channels: 4, TopLevel: topLevel})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d events in %s", len(c.Events), time.Since(start).Round(time.Second))

	work := t.TempDir()
	in := filepath.Join(work, "community.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, ev := range c.Events {
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(in)
	t.Logf("JSON Lines: %d bytes, %.0f bytes per event", st.Size(), float64(st.Size())/float64(len(c.Events)))

	data := filepath.Join(work, "data")
	start = time.Now()
	if err := newApp().Run([]string{"buzz-lite", "import", "--data", data, in}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("import: %s, %.0f events/s", took.Round(time.Second), float64(len(c.Events))/took.Seconds())
	db, _ := os.Stat(filepath.Join(data, DBFile))
	t.Logf("database: %d bytes, %.0f bytes per event (%.2fx the JSON)", db.Size(),
		float64(db.Size())/float64(len(c.Events)), float64(db.Size())/float64(st.Size()))

	out := filepath.Join(work, "export.jsonl")
	start = time.Now()
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", data, "-o", out}); err != nil {
		t.Fatal(err)
	}
	took = time.Since(start)
	ex, _ := os.Stat(out)
	t.Logf("export: %s, %.0f events/s, %d bytes", took.Round(time.Second), float64(len(c.Events))/took.Seconds(), ex.Size())
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", data}); err != nil {
		t.Fatal(err)
	}
}
