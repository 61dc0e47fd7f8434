package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/net/html"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// browserTimeout bounds one run of the browser on a loaded machine.
const browserTimeout = 90 * time.Second

// chromium finds the browser of the browser test: $BUZZ_LITE_CHROMIUM, or
// chromium on the PATH.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BUZZ_LITE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("BUZZ_LITE_BROWSER=1 needs chromium (apt-get install chromium) or BUZZ_LITE_CHROMIUM")
	return ""
}

// runChromium runs headless chromium with args and returns what it wrote
// to stdout and the console messages of the page, which it logs to stderr
// as INFO:CONSOLE lines: a script error, a refused inline script or
// handler and any Content-Security-Policy violation among them.
func runChromium(t *testing.T, bin string, args ...string) (stdout string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--no-first-run", "--disable-extensions", "--hide-scrollbars",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + t.TempDir()}
	if os.Geteuid() == 0 {
		base = append(base, "--no-sandbox") // chromium refuses to run as root with its sandbox
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return out.String(), console
}

// browserShots is where the browser test keeps its screenshots:
// $BUZZ_LITE_BROWSER_OUT, or a new directory that outlives the test.
func browserShots(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("BUZZ_LITE_BROWSER_OUT"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "buzz-lite-web-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// CW-25, in a real browser: headless chromium loads the index, a channel
// page and a thread page from a relay on loopback. Every message is in
// the rendered DOM; hostile content stayed text: no element, attribute
// or link of its own in the DOM, and no console message (a script that
// ran and failed, or one the Content-Security-Policy refused, would log
// one, as would a refused stylesheet). A screenshot of the channel page
// at a phone's size is saved and named in the output. Opt-in:
// BUZZ_LITE_BROWSER=1.
func TestWebInBrowser(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to load the web view in headless chromium")
	}
	bin := chromium(t)
	s, c, ada := startWithClient(t, webOn, func(cfg *Config) {
		cfg.Info.Name = "buzz-lite demo"
		cfg.Info.Description = "A community relay for threaded group chat."
	})
	bo, eve := testutil.NewSigner(t), testutil.NewSigner(t)
	for who, name := range map[*testutil.Signer]string{&ada: "Ada", &bo: "Bo", &eve: `<img src=x onerror=alert("name")>`} {
		p, err := json.Marshal(map[string]string{"name": name})
		if err != nil {
			t.Fatal(err)
		}
		mustPublish(t, c, who.Event(t, 0, now(), string(p)))
	}
	ch := "general"
	mustPublish(t, c, ada.Event(t, buzz.KindCreateChannel, now(), "", nostr.Tag{"h", ch}, nostr.Tag{"name", "general"},
		nostr.Tag{"about", "Everything that is not in another channel."}))
	mustPublish(t, c, ada.Event(t, buzz.KindCreateChannel, now(), "", nostr.Tag{"h", "releases"}, nostr.Tag{"name", "releases"},
		nostr.Tag{"about", "What shipped, and when."}))
	T := now() - 3*3600
	say := func(who testutil.Signer, at int64, content string, tags ...nostr.Tag) *nostr.Event {
		ev := who.Event(t, 9, at, content, append([]nostr.Tag{{"h", ch}}, tags...)...)
		mustPublish(t, c, ev)
		return ev
	}
	reply := func(who testutil.Signer, at int64, content string, parent *nostr.Event) *nostr.Event {
		return say(who, at, content, nostr.Tag{"e", parent.ID, "", "reply"})
	}
	plan := say(ada, T, "Morning all. The release is planned for Thursday; notes are at https://example.org/notes.")
	say(bo, T+600, "Reviewing the migration now. It looks good so far.")
	hostile := say(eve, T+1200, `<script>alert("x")</script><img src=x onerror=alert(1)> javascript:alert(2)`)
	q := say(bo, T+2400, "Can someone look at the flaky test in the relay package?")
	mustPublish(t, c, bo.Event(t, buzz.KindEdit, T+2500, "Can someone look at the flaky shutdown test in the relay package?",
		nostr.Tag{"e", q.ID}, nostr.Tag{"h", ch}))
	r1 := reply(ada, T+3000, "On it.", q)
	reply(bo, T+3300, "Thanks! It fails about once in fifty runs.", r1)
	reply(eve, T+3600, "Seen it too, on the arm64 runner.", q)
	for _, who := range []testutil.Signer{bo, eve} {
		mustPublish(t, c, who.Event(t, buzz.KindReaction, T+3700, "+", nostr.Tag{"e", plan.ID}, nostr.Tag{"p", ada.PK}))
	}
	say(ada, T+7000, "Release candidate is tagged. Please try it on your Pi.")

	shots := browserShots(t)
	pages := []struct {
		name, path string
		rows       int
	}{
		{"index", "/", 0},
		{"channel", "/c/" + ch, 5},
		{"thread", "/c/" + ch + "/t/" + q.ID, 4},
	}
	for _, p := range pages {
		dom, console := runChromium(t, bin, "--dump-dom", s.httpURL+p.path)
		if len(console) > 0 {
			t.Errorf("%s: console messages:\n%s", p.name, strings.Join(console, "\n"))
		}
		doc, err := html.Parse(strings.NewReader(dom))
		if err != nil {
			t.Fatal(err)
		}
		webCheckInert(t, doc)
		if got := len(webRows(doc)); got != p.rows {
			t.Errorf("%s: %d messages rendered, want %d", p.name, got, p.rows)
		}
		text := nodeText(doc)
		switch p.name {
		case "index":
			for _, want := range []string{"general", "releases", "Everything that is not in another channel."} {
				if !strings.Contains(text, want) {
					t.Errorf("index: %q not shown", want)
				}
			}
		case "channel":
			for _, want := range []string{hostile.Content, `<img src=x onerror=alert("name")>`, "Ada", "edited", "2 reactions", "3 replies"} {
				if !strings.Contains(text, want) {
					t.Errorf("channel: %q not shown as text", want)
				}
			}
		}
	}
	shot := filepath.Join(shots, "web-channel.png")
	runChromium(t, bin, "--window-size=430,760", "--screenshot="+shot, s.httpURL+"/c/"+ch)
	b, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot of the channel page: %s", shot)
}
