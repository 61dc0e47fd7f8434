package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
	"github.com/nbd-wtf/go-nostr/nip46"

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
	m.until("the signed-in view", `!!document.querySelector('header .me') && !!document.querySelector('main[data-view]')`)
}

// problems is what the page logged that a clean page does not: errors,
// exceptions and warnings, a refused script or connection among them;
// but the 404s of the pages at the addresses expected, which a browser
// logs of its own accord.
func (m *browserMember) problems(expected404 ...string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.console {
		if slices.ContainsFunc(expected404, func(u string) bool {
			return strings.Contains(s, "status of 404") && strings.HasSuffix(s, " "+u)
		}) {
			continue
		}
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
// events they wrote. With BUZZ_LITE_BROWSER_OUT set, a screenshot of A's
// signed-in channel view is saved there as web-client.png (as the docs'
// docs/web-client.png).
// Opt-in: BUZZ_LITE_BROWSER=1.
func TestWebInBrowserClient(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, owner := startWithClient(t, webOn, func(cfg *Config) { cfg.Info.Name = "buzz-lite demo" })
	ada, bo := testutil.NewSigner(t), testutil.NewSigner(t)
	// CW-26: a picture on another origin is a link, never an image the
	// page would fetch from a third party.
	const adaPicture = "https://pictures.example/ada.png"
	for who, name := range map[*testutil.Signer]string{&ada: "Ada", &bo: "Bo"} {
		profile := map[string]string{"name": name}
		if who == &ada {
			profile["picture"] = adaPicture
		}
		p, err := json.Marshal(profile)
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
	b.until("Ada's picture as a link at B", row+`?.querySelector('.avatar a')?.getAttribute('href') === `+jsString(adaPicture))
	if got := b.eval(`String(document.querySelectorAll('main img').length)`); got != "0" {
		t.Errorf("B's page shows %s images: a third-party picture must be a link only", got)
	}

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
	if dir := os.Getenv("BUZZ_LITE_BROWSER_OUT"); dir != "" {
		shot := filepath.Join(dir, "web-client.png")
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
	m := a.signedKinds()
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

// signedKinds is the kinds m's signer signed, by count.
func (m *browserMember) signedKinds() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int]int{}
	for _, k := range m.signed {
		out[k]++
	}
	return out
}

// CW-26, RL-12, RL-13 in a real browser: a member of a private channel
// signed in finds it on the index, reads it (its page is a 404 to the
// server's anonymous view; the client reads it as the member) and posts
// in it; a signed-in non-member and an anonymous page see nothing of it,
// neither on the index nor at its address.
func TestWebInBrowserClientPrivate(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, owner := startWithClient(t, webOn)
	member, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	h := newChannelID(t)
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, now(), "", hTag(h), nostr.Tag{"name", "secret plans"}, nostr.Tag{"private"}))
	putUser(t, c, owner, h, member.PK, "")
	const secret = "The surprise party is on Friday."
	mustPublish(t, c, owner.Event(t, 9, now()-5, secret, hTag(h)))
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, now(), "", hTag("lobby"), nostr.Tag{"name", "lobby"}))

	browser := newBrowser(t)
	m, x := openMember(t, browser, member), openMember(t, browser, stranger)
	m.signIn(s.httpURL + "/")
	m.until("the private channel on the member's index", `[...document.querySelectorAll('main a.channel')].some((a) => a.textContent === 'secret plans')`)
	m.do("the member opens it", chromedp.Click(`//main//a[@class="channel" and text()="secret plans"]`))
	m.until("the private window", rowJS(secret)+` !== undefined`)
	const mine = "I will bring the cake."
	m.do("the member posts", chromedp.SetValue("main .compose textarea", mine), chromedp.Click("main .compose button.send"))
	m.until("the member's message", rowJS(mine)+` !== undefined && !document.querySelector('.status.error')`)
	m.do("reloading the private channel", chromedp.Navigate(s.httpURL+"/c/"+h))
	m.until("the private window after a reload (signed in again from the session)", rowJS(mine)+` !== undefined && `+rowJS(secret)+` !== undefined`)

	x.signIn(s.httpURL + "/")
	x.until("the stranger's index", `[...document.querySelectorAll('main a.channel')].some((a) => a.textContent === 'lobby')`)
	x.do("the stranger asks for the private channel", chromedp.Navigate(s.httpURL+"/c/"+h))
	x.until("the stranger's not-found view", `document.querySelector('header .me') && document.querySelector('main h1')?.textContent === 'Not found'`)
	anon, cancel := chromedp.NewContext(browser)
	defer cancel()
	for _, p := range []struct {
		who  *browserMember
		ctx  context.Context
		path string
	}{{x, x.ctx, "/c/" + h}, {x, x.ctx, "/"}, {nil, anon, "/c/" + h}, {nil, anon, "/"}} {
		if p.who != nil && p.path == "/" {
			if err := chromedp.Do(p.ctx, chromedp.Navigate(s.httpURL+"/")); err != nil {
				t.Fatal(err)
			}
			p.who.until("the stranger's index", `[...document.querySelectorAll('main a.channel')].some((a) => a.textContent === 'lobby')`)
		} else if err := chromedp.Do(p.ctx, chromedp.Navigate(s.httpURL+p.path)); err != nil {
			t.Fatal(err)
		}
		text, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			t.Fatal(err)
		}
		for _, hidden := range []string{secret, mine, "secret plans"} {
			if strings.Contains(text, hidden) {
				t.Errorf("%s (signed in: %v) shows %q", p.path, p.who != nil, hidden)
			}
		}
	}
	for _, who := range []*browserMember{m, x} {
		if p := who.problems(s.httpURL + "/c/" + h); len(p) > 0 {
			t.Errorf("a page logged:\n%s", strings.Join(p, "\n"))
		}
	}
}

// CW-26 in a real browser: hostile content — script tags, an onerror
// attribute, javascript: links, a link that tries to close its
// attribute, bidi overrides, markup in a profile name and a channel
// name, a huge message — shown to a signed-in member adds no element
// of its own, runs nothing, asks for nothing from another origin and
// makes the page sign nothing beyond the member's sign-in (AUTH and the
// /query tokens); the huge message is clipped.
func TestWebInBrowserClientHostile(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, eve := startWithClient(t, webOn)
	p, err := json.Marshal(map[string]string{"name": `<img src=x onerror="window.pwned='name'">` + "\u202e",
		"picture": `javascript:window.pwned='picture'`})
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, c, eve.Event(t, 0, now(), string(p)))
	const ch = "hostile"
	mustPublish(t, c, eve.Event(t, buzz.KindCreateChannel, now(), "", hTag(ch), nostr.Tag{"name", `<script>window.pwned='channel'</script>`},
		nostr.Tag{"about", `<b onmouseover="window.pwned='about'">about</b>`}))
	hostile := []string{
		`<script>window.pwned='script'</script>`,
		`<img src=x onerror="window.pwned='img'">`,
		`javascript:window.pwned='js' and <a href="javascript:window.pwned='a'">click</a>`,
		`see https://example.org/a?b=1&c="><script>window.pwned='attr'</script> now`,
		"\u202egnp.exe</p><iframe src=//evil.example>",
		`<form action="/query"><button>sign</button></form><textarea>x</textarea>`,
		strings.Repeat("huge ", 20000),
	}
	for i, content := range hostile {
		mustPublish(t, c, eve.Event(t, 9, now()-int64(i), content, hTag(ch)))
	}
	browser := newBrowser(t)
	m := openMember(t, browser, testutil.NewSigner(t))
	m.signIn(s.httpURL + "/c/" + ch)
	m.until("every hostile row", `document.querySelectorAll('main section.rows > article.msg').length === `+fmt.Sprint(len(hostile)))
	m.do("hovering and clicking the rows' text", chromedp.Click("main section.rows > article.msg .content"))
	report, err := chromedp.Run(m.ctx, chromedp.Evaluate[string](`JSON.stringify({
	  pwned: String(window.pwned),
	  bad: [...document.querySelectorAll('main *')].filter((e) => !['H1','P','SECTION','ARTICLE','DIV','SPAN','A','TIME','BUTTON','TEXTAREA','NAV'].includes(e.tagName)).map((e) => e.tagName),
	  attrs: [...document.querySelectorAll('main *')].flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith('on') || n === 'src' || n === 'style'),
	  links: [...document.querySelectorAll('main a')].map((a) => a.getAttribute('href')).filter((h) => !(h.startsWith('/') && !h.startsWith('//')) && !/^https?:\/\//.test(h)),
	  rels: [...document.querySelectorAll('main .content a[href^="http"]')].filter((a) => a.rel !== 'nofollow noopener ugc').length,
	  textareas: document.querySelectorAll('main textarea').length,
	  longest: Math.max(...[...document.querySelectorAll('main .content')].map((e) => e.textContent.length)),
	  requests: performance.getEntriesByType('resource').map((r) => r.name).filter((n) => !n.startsWith(location.origin) && !n.startsWith(document.querySelector('meta[name=buzz-relay]').content)),
	})`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Pwned     string   `json:"pwned"`
		Bad       []string `json:"bad"`
		Attrs     []string `json:"attrs"`
		Links     []string `json:"links"`
		Rels      int      `json:"rels"`
		Textareas int      `json:"textareas"`
		Longest   int      `json:"longest"`
		Requests  []string `json:"requests"`
	}
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatal(err)
	}
	if r.Pwned != "undefined" || len(r.Bad) > 0 || len(r.Attrs) > 0 || len(r.Links) > 0 || r.Rels > 0 || r.Textareas != 1 || len(r.Requests) > 0 {
		t.Errorf("hostile content took effect: %s", report)
	}
	if r.Longest > 8192+len(" the whole message")+1 {
		t.Errorf("the huge message is shown whole: %d characters", r.Longest)
	}
	for k := range m.signedKinds() {
		if k != 22242 && k != 27235 {
			t.Errorf("the page signed a kind %d without the member's action", k)
		}
	}
	if p := m.problems(); len(p) > 0 {
		t.Errorf("the page logged:\n%s", strings.Join(p, "\n"))
	}
}

// CW-26 in a real browser, the client's other actions: older pages by
// next_cursor until the window is read whole, a reaction, join (9021)
// and leave (9022) as the relay's member list (39002) says after a
// reload, and a new channel (9007) opened at once.
// Opt-in: BUZZ_LITE_BROWSER=1.
func TestWebInBrowserClientActions(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, owner := startWithClient(t, webOn)
	const ch, messages = "town", 120
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, now(), "", hTag(ch), nostr.Tag{"name", "town square"}))
	for i := range messages {
		mustPublish(t, c, owner.Event(t, 9, now()-int64(messages-i), fmt.Sprintf("message %d", i), hTag(ch)))
	}
	browser := newBrowser(t)
	m := openMember(t, browser, testutil.NewSigner(t))
	rows := `document.querySelectorAll('main section.rows > article.msg').length`
	m.signIn(s.httpURL + "/c/" + ch)
	m.until("the first page", rows+` === 50 && !!document.querySelector('main nav.pager button.older')`)
	m.do("older", chromedp.Click("main nav.pager button.older"))
	m.until("the second page", rows+` === 100`)
	m.do("older again", chromedp.Click("main nav.pager button.older"))
	m.until("the window read whole", rows+` === `+fmt.Sprint(messages)+` && !document.querySelector('main nav.pager button.older')`)
	if got := m.eval(`[...document.querySelectorAll('main section.rows > article.msg .content')].map((e) => e.textContent).slice(-1)[0]`); got != "message 0" {
		t.Errorf("the oldest row shows %q, want message 0", got)
	}

	newest := rowJS(fmt.Sprintf("message %d", messages-1))
	m.do("react", chromedp.Click(`main section.rows > article.msg:first-child button.act-react`))
	m.until("the reaction", newest+`?.querySelector('.reactions')?.textContent === '1 reaction'`)

	join := `document.querySelector('main .chan-acts button.join')?.textContent`
	m.until("the join button", join+` === 'Join'`)
	m.do("join", chromedp.Click("main .chan-acts button.join"))
	m.until("joined", join+` === 'Leave' && !document.querySelector('.status.error')`)
	m.do("reload", chromedp.Navigate(s.httpURL+"/c/"+ch))
	m.until("a member after a reload", join+` === 'Leave'`)
	m.do("leave", chromedp.Click("main .chan-acts button.join"))
	m.until("left", join+` === 'Join' && !document.querySelector('.status.error')`)
	m.do("reload", chromedp.Navigate(s.httpURL+"/c/"+ch))
	m.until("not a member after a reload", join+` === 'Join'`)

	m.do("the index", chromedp.Navigate(s.httpURL+"/"))
	m.until("the signed-in index", `!!document.querySelector('main .create input.new-name')`)
	m.do("create a channel", chromedp.SetValue("main .create input.new-name", "book club"), chromedp.Click("main .create button"))
	m.until("the new channel", `document.querySelector('main h1')?.textContent === 'book club' && !document.querySelector('.status.error')`)

	got := m.signedKinds()
	for _, k := range []int{7, 9021, 9022, 9007} {
		if got[k] != 1 {
			t.Errorf("the page signed %d events of kind %d, want 1 (signed: %v)", got[k], k, got)
		}
	}
	if p := m.problems(); len(p) > 0 {
		t.Errorf("the page logged:\n%s", strings.Join(p, "\n"))
	}
}

// CW-26 in a real browser, a NIP-46 remote signer: a bunker (go-nostr's
// nip46 signer with its own key, reached through this relay, as the
// bunker:// URL names it) signs in the page with its key and signs what
// the member posts; the page's own NIP-07 signer signs nothing.
// Opt-in: BUZZ_LITE_BROWSER=1.
func TestWebInBrowserClientBunker(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to run the web client in headless chromium")
	}
	s, c, owner := startWithClient(t, webOn)
	const ch = "bunkered"
	mustPublish(t, c, owner.Event(t, buzz.KindCreateChannel, now(), "", hTag(ch), nostr.Tag{"name", "bunkered"}))

	user := testutil.NewSigner(t)
	const secret = "bunker-test-secret"
	signer := nip46.NewStaticKeySigner(user.SK)
	signer.AuthorizeRequest = func(_ bool, _ string, got string) bool { return got == secret || got == "" }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bunkerRelay, err := nostr.RelayConnect(ctx, s.wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer bunkerRelay.Close()
	sub, err := bunkerRelay.Subscribe(ctx, nostr.Filters{{Kinds: []int{nostr.KindNostrConnect}, Tags: nostr.TagMap{"p": {user.PK}}}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range sub.Events {
			_, _, resp, err := signer.HandleRequest(ctx, ev)
			if err != nil {
				t.Logf("bunker: %v", err)
				continue
			}
			if err := bunkerRelay.Publish(ctx, resp); err != nil && ctx.Err() == nil {
				t.Logf("bunker: publishing its answer: %v", err)
			}
		}
	}()

	browser := newBrowser(t)
	m := openMember(t, browser, testutil.NewSigner(t))
	url := "bunker://" + user.PK + "?relay=" + s.wsURL + "&secret=" + secret
	m.do("loading the channel", chromedp.Navigate(s.httpURL+"/c/"+ch), chromedp.Click("button.signin-bunker"),
		chromedp.SetValue("input.bunker-url", url), chromedp.Click("button.bunker-go"))
	m.until("signed in by the bunker", `document.querySelector('header .me')?.title === `+jsString(must(nip19.EncodePublicKey(user.PK)))+
		` && !!document.querySelector('main .compose textarea')`)
	const msg = "Signed far away, posted here."
	m.do("post", chromedp.SetValue("main .compose textarea", msg), chromedp.Click("main .compose button.send"))
	m.until("the message", rowJS(msg)+` !== undefined && !document.querySelector('.status.error')`)
	evs := fetch(t, c, nostr.Filter{Kinds: []int{9}, Authors: []string{user.PK}, Tags: nostr.TagMap{"h": {ch}}})
	if len(evs) != 1 || evs[0].Content != msg {
		t.Fatalf("the bunker user's messages: %v, want the one posted", evs)
	}
	if got := m.signedKinds(); len(got) != 0 {
		t.Errorf("the page's NIP-07 signer signed %v: the bunker signs", got)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
