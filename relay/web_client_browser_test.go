package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// browserMember is one member's page in the client test: a tab whose
// window.nostr is a NIP-07 signer whose key stays in Go (signEvent calls
// the exposed Go func buzzSign), the kinds it signed, and what the page
// logged to its console.
type browserMember struct {
	t       *testing.T
	ctx     context.Context
	key     testutil.Signer
	mu      sync.Mutex
	signed  []int
	console []string
}

// nip07Shim is window.nostr for a page, installed before any script of
// the page runs.
const nip07Shim = `window.nostr = {
  getPublicKey: async () => %q,
  signEvent: (tmpl) => window.buzzSign(tmpl),
};`

// openMember opens a tab of browser for key, with its signer and console
// watch.
func openMember(t *testing.T, browser context.Context, key testutil.Signer) *browserMember {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	m := &browserMember{t: t, ctx: ctx, key: key}
	sign := func(_ context.Context, tmpl nostr.Event) (nostr.Event, error) {
		ev := tmpl
		ev.PubKey = key.PK
		if ev.Tags == nil {
			ev.Tags = nostr.Tags{}
		}
		if err := ev.Sign(key.SK); err != nil {
			return nostr.Event{}, fmt.Errorf("test signer: %w", err)
		}
		m.mu.Lock()
		m.signed = append(m.signed, ev.Kind)
		m.mu.Unlock()
		return ev, nil
	}
	err := chromedp.Do(ctx,
		chromedp.ExposeFunc("buzzSign", sign),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(nip07Shim, key.PK)})
			return err
		}),
		chromedp.EmulateViewport(900, 760),
	)
	if err != nil {
		t.Fatalf("opening a page: %v", err)
	}
	go func() {
		for msg, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			if strings.HasSuffix(msg.URL, "/favicon.ico") {
				continue // the browser asks for one of its own accord; the relay has none
			}
			m.mu.Lock()
			m.console = append(m.console, msg.String()+" "+msg.URL)
			m.mu.Unlock()
		}
	}()
	return m
}

// do runs steps in the member's page, failing the test with what.
func (m *browserMember) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	m.t.Helper()
	if err := chromedp.Do(m.ctx, steps...); err != nil {
		m.t.Fatalf("%s: %v", what, err)
	}
}

// until waits for a JavaScript condition to hold in the page.
func (m *browserMember) until(what, cond string) {
	m.t.Helper()
	if _, err := chromedp.Run(m.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50e6))); err != nil {
		page, _ := chromedp.Run(m.ctx, chromedp.Evaluate[string](`location.href + "\nstatus: " + document.querySelector('.status')?.textContent + "\n" + document.querySelector('main')?.innerText`))
		m.t.Fatalf("waiting for %s: %v\n%s", what, err, page)
	}
}

// eval is the value of a JavaScript expression in the page.
func (m *browserMember) eval(expr string) string {
	m.t.Helper()
	s, err := chromedp.Run(m.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		m.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return s
}

// signIn loads path and signs in with the page's NIP-07 signer.
func (m *browserMember) signIn(url string) {
	m.t.Helper()
	m.do("loading "+url, chromedp.Navigate(url), chromedp.Click("button.signin"))
	m.until("the signed-in view", `!!document.querySelector('header .me') && !!document.querySelector('main .compose textarea, main h1')`)
}

// problems is what the page logged that a clean page does not: errors,
// exceptions and warnings, a refused script or connection among them.
func (m *browserMember) problems() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.console {
		if strings.HasPrefix(s, "error") || strings.HasPrefix(s, "exception") || strings.HasPrefix(s, "warning") {
			out = append(out, s)
		}
	}
	return out
}

// rowJS is the JavaScript of the row in main whose content is text.
func rowJS(text string) string {
	q, err := json.Marshal(text)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`[...document.querySelectorAll('main article.msg')].find((a) => a.querySelector('.content')?.textContent === %s)`, q)
}

// newBrowser starts headless chromium for the client tests.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.UserDataDir(t.TempDir()))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to run as root with its sandbox
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancelCtx := context.WithTimeout(alloc, 3*browserTimeout)
	t.Cleanup(cancelCtx)
	browser, cancelBrowser := chromedp.NewContext(ctx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return browser
}

// CW-26, in a real browser: two members chat through the web view's
// client, each signed in with a NIP-07 signer whose key stays in Go. A
// posts and B sees the message live; B replies in its thread and A's row
// badge moves to "1 reply" live (a pushed 39005); A edits and B sees the
// edit; A deletes and the row disappears for B. The pages log no error
// (no refused script or connection under the CSP), and each member
// signed only kinds of their own actions: AUTH, NIP-98 tokens and the
// events they wrote. With BUZZ_LITE_WEB_CLIENT_PNG set, a screenshot of
// A's signed-in channel view is saved there (docs/web-client.png).
// Opt-in: BUZZ_LITE_BROWSER=1.
func TestWebInBrowserClient(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, owner := startWithClient(t, webOn, func(cfg *Config) { cfg.Info.Name = "buzz-lite demo" })
	ada, bo := testutil.NewSigner(t), testutil.NewSigner(t)
	for who, name := range map[*testutil.Signer]string{&ada: "Ada", &bo: "Bo"} {
		p, err := json.Marshal(map[string]string{"name": name})
		if err != nil {
			t.Fatal(err)
		}
		mustPublish(t, c, who.Event(t, 0, now(), string(p)))
	}
	const ch = "general"
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, now(), "", nostr.Tag{"h", ch}, nostr.Tag{"name", "general"},
		nostr.Tag{"about", "Everything that is not in another channel."}))
	mustPublish(t, c, owner.Event(t, 9, now()-60, "Welcome to the community relay.", nostr.Tag{"h", ch}))

	browser := newBrowser(t)
	a, b := openMember(t, browser, ada), openMember(t, browser, bo)
	url := s.httpURL + "/c/" + ch
	a.signIn(url)
	b.signIn(url)
	a.until("the window", rowJS("Welcome to the community relay.")+` !== undefined`)

	const msg = "Release candidate is tagged. Please try it on your Pi."
	a.do("A posts", chromedp.SetValue("main .compose textarea", msg), chromedp.Click("main .compose button.send"))
	b.until("A's message, live at B", rowJS(msg)+` !== undefined`)
	id := a.eval(rowJS(msg) + `.dataset.id`)
	if len(id) != 64 {
		t.Fatalf("A's row id %q", id)
	}
	row := `document.getElementById('m-` + id + `')`

	const reply = "Running it on my Pi 4 now."
	b.do("B opens the thread", chromedp.Click(`#m-`+id+` button.act-reply`))
	b.until("the thread view", `!!document.querySelector('main section.thread #m-`+id+`') && !!document.querySelector('main .compose textarea')`)
	b.do("B replies", chromedp.SetValue("main .compose textarea", reply), chromedp.Click("main .compose button.send"))
	b.until("B's reply in the thread", `!!document.querySelector('main ul.tree article.msg') && `+rowJS(reply)+` !== undefined`)
	a.until(`A's badge moving to "1 reply"`, row+`?.querySelector('.replies')?.textContent === '1 reply'`)
	if got := a.eval(`String(document.querySelectorAll('main section.rows > article.msg').length)`); got != "2" {
		t.Errorf("A's channel shows %s rows, want 2: the reply is not a row", got)
	}
	b.do("B goes back to the channel", chromedp.Click("main .crumb a"))
	b.until("B's channel view", rowJS(msg)+` !== undefined && !document.querySelector('main section.thread')`)

	const edited = "Release candidate 2 is tagged. Please try it on your Pi."
	a.do("A edits", chromedp.Click(`#m-`+id+` button.act-edit`), chromedp.SetValue(`#m-`+id+` textarea.edit`, edited),
		chromedp.Click(`#m-`+id+` button.save`))
	b.until("A's edit at B", row+`?.querySelector('.content').textContent === `+jsString(edited)+` && !!`+row+`.querySelector('.edited')`)
	if shot := os.Getenv("BUZZ_LITE_WEB_CLIENT_PNG"); shot != "" {
		png, err := chromedp.Run(a.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the signed-in channel view: %s", shot)
	}

	a.do("A deletes", chromedp.Click(`#m-`+id+` button.act-delete`), chromedp.Click(`#m-`+id+` button.act-delete.sure`))
	b.until("the row gone at B", `!`+row)
	a.until("the row gone at A", `!`+row)

	for _, m := range []*browserMember{a, b} {
		if p := m.problems(); len(p) > 0 {
			t.Errorf("%s's page logged:\n%s", m.key.PK[:8], strings.Join(p, "\n"))
		}
	}
	m := map[int]int{}
	for _, k := range a.signed {
		m[k]++
	}
	for _, k := range []int{22242, 27235, 9, 40003, 5} {
		if m[k] == 0 {
			t.Errorf("A signed no kind %d", k)
		}
		delete(m, k)
	}
	if len(m) > 0 {
		t.Errorf("A signed kinds of no action of theirs: %v", m)
	}
}

func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
