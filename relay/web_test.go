package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/net/html"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/web"
)

// webOn starts a relay with the web view on.
func webOn(c *Config) { c.Web = true }

// webAnswer is a web view answer as a browser would get it.
type webAnswer struct {
	status int
	header http.Header
	body   string
}

// webGet fetches path from s with accept as the Accept header ("" for
// none).
func webGet(t testing.TB, s *testServer, path, accept string) webAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.httpURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{Timeout: waitTimeout}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return webAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// webPageOK fetches path as a browser does and requires a 200 HTML page.
func webPageOK(t testing.TB, s *testServer, path string) *html.Node {
	t.Helper()
	a := webGet(t, s, path, "text/html")
	if a.status != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %q", path, a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	doc, err := html.Parse(strings.NewReader(a.body))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return doc
}

// webWalk calls fn for every element below n.
func webWalk(n *html.Node, fn func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			fn(c)
		}
		webWalk(c, fn)
	}
}

func webAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func webHasClass(n *html.Node, class string) bool {
	return slices.Contains(strings.Fields(webAttr(n, "class")), class)
}

// nodeText is the text below n.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// webRows are the message articles of a page, in page order.
func webRows(doc *html.Node) []*html.Node {
	var out []*html.Node
	webWalk(doc, func(n *html.Node) {
		if n.Data == "article" && webHasClass(n, "msg") {
			out = append(out, n)
		}
	})
	return out
}

func webRowIDs(doc *html.Node) []string {
	var ids []string
	for _, n := range webRows(doc) {
		ids = append(ids, webAttr(n, "data-id"))
	}
	return ids
}

// webLink is the href of the first <a> of class, "" when there is none.
func webLink(doc *html.Node, class string) string {
	href := ""
	webWalk(doc, func(n *html.Node) {
		if href == "" && n.Data == "a" && webHasClass(n, class) {
			href = webAttr(n, "href")
		}
	})
	return href
}

// webCheckInert fails the test when doc holds anything hostile content
// could have made active: a script, an element of the content's own, an
// event handler attribute, or a link that is neither the relay's own nor
// an http(s) one marked nofollow.
func webCheckInert(t *testing.T, doc *html.Node) {
	t.Helper()
	allowed := map[string]bool{"html": true, "head": true, "body": true, "meta": true, "title": true, "link": true,
		"header": true, "main": true, "footer": true, "h1": true, "h2": true, "p": true, "a": true, "ul": true,
		"li": true, "section": true, "article": true, "div": true, "span": true, "time": true, "nav": true,
		// The client's own controls (CW-26), which it adds in a browser.
		"button": true, "input": true, "textarea": true, "label": true, "form": true}
	webWalk(doc, func(n *html.Node) {
		if n.Data == "script" && n.Parent != nil && n.Parent.Data == "head" && webAttr(n, "src") == web.ScriptURL("app") &&
			webAttr(n, "type") == "module" && n.FirstChild == nil {
			return // the page's own module (CW-26)
		}
		if !allowed[n.Data] {
			t.Errorf("element <%s> on the page", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" || a.Key == "src" {
				t.Errorf("attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
			}
		}
		if n.Data != "a" && n.Data != "link" {
			return
		}
		href := webAttr(n, "href")
		switch {
		case strings.HasPrefix(href, "/") && !strings.HasPrefix(href, "//"):
		case strings.HasPrefix(href, "https://") || strings.HasPrefix(href, "http://"):
			if webAttr(n, "rel") != "nofollow noopener ugc" {
				t.Errorf("link %q has rel %q", href, webAttr(n, "rel"))
			}
		default:
			t.Errorf("link to %q", href)
		}
	})
}

// CW-25: every piece of user content is text: a message with a script,
// an onerror attribute, a javascript: URL, a channel named with markup and
// a kind 0 profile whose name is markup are shown as the characters they
// are, and nothing of them becomes an element, an attribute or a link;
// an http(s) URL becomes a nofollow link. The page carries a strict
// Content-Security-Policy and a Cache-Control a proxy may keep it by.
func TestWebEscapesHostileContent(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	hostileName := `<img src=x onerror=alert(1)>"'`
	mustPublish(t, c, cwEvent(t, a, buzz.KindCreateChannel, now(), nostr.Tag{"h", ch}, nostr.Tag{"name", `<script>alert("ch")</script>`},
		nostr.Tag{"about", `<b onmouseover=alert(2)>about</b>`}))
	profile, err := json.Marshal(map[string]string{"name": hostileName})
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, c, a.Event(t, 0, now(), string(profile)))
	hostile := []string{
		`<script>alert("x")</script>`,
		`<img src=x onerror=alert(1)>`,
		`javascript:alert(1) and <a href="javascript:alert(1)">click</a>`,
		`see https://example.org/a?b=1&c="><script>alert(3)</script> now`,
		"\u202egnp.exe</p><iframe src=//evil.example>",
	}
	var msgs []*nostr.Event
	base := now() // once: a second ticking between two messages gave two the same date
	for i, content := range hostile {
		ev := a.Event(t, 9, base-int64(i), content, nostr.Tag{"h", ch})
		mustPublish(t, c, ev)
		msgs = append(msgs, ev)
	}
	for _, path := range []string{"/", "/c/" + ch, "/c/" + ch + "/t/" + msgs[0].ID} {
		ans := webGet(t, s, path, "text/html")
		if ans.status != http.StatusOK {
			t.Fatalf("GET %s: %d %q", path, ans.status, ans.body)
		}
		if got := ans.header.Get("Content-Security-Policy"); got != web.CSP(s.wsURL) || !strings.Contains(got, "default-src 'none'") ||
			!strings.Contains(got, "script-src 'self';") || !strings.Contains(got, "connect-src 'self' "+s.wsURL+";") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, got)
		}
		if got := ans.header.Get("Cache-Control"); got != web.CacheControl {
			t.Errorf("GET %s: Cache-Control %q", path, got)
		}
		// The page's own module is its one script (CW-26).
		body := strings.Replace(ans.body, `<script type="module" src="`+web.ScriptURL("app")+`"></script>`, "", 1)
		for _, raw := range []string{"<script", "<img", "<iframe", "<b ", `href="javascript`} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s: the page holds %q unescaped", path, raw)
			}
		}
		doc, err := html.Parse(strings.NewReader(ans.body))
		if err != nil {
			t.Fatal(err)
		}
		webCheckInert(t, doc)
	}
	doc := webPageOK(t, s, "/c/"+ch)
	rows := webRows(doc)
	if len(rows) != len(hostile) {
		t.Fatalf("%d rows, want %d", len(rows), len(hostile))
	}
	for i, row := range rows {
		var content, author string
		webWalk(row, func(n *html.Node) {
			switch {
			case webHasClass(n, "content"):
				content = nodeText(n)
			case webHasClass(n, "author"):
				author = nodeText(n)
			}
		})
		if content != hostile[i] {
			t.Errorf("row %d shows %q, want the text %q", i, content, hostile[i])
		}
		if author != strings.TrimSpace(hostileName) {
			t.Errorf("row %d: author %q, want the profile name %q as text", i, author, hostileName)
		}
	}
	var links []string
	webWalk(doc, func(n *html.Node) {
		if n.Data == "a" && strings.HasPrefix(webAttr(n, "href"), "http") {
			links = append(links, webAttr(n, "href"))
		}
	})
	if len(links) != 1 || links[0] != "https://example.org/a?b=1&c=" {
		t.Errorf("external links %q, want the one https URL up to its quote", links)
	}
	css := webGet(t, s, web.StylesheetURL(), "text/css")
	if css.status != http.StatusOK || css.header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(css.body, "prefers-color-scheme: dark") {
		t.Errorf("stylesheet: %d %q", css.status, css.header.Get("Content-Type"))
	}
}

// CW-25, RL-13: a private channel and one that does not exist answer the
// same 404, byte for byte, on the channel and the thread pages; so does a
// message of a private channel asked for under an open one, and a
// malformed path.
func TestWebNotFoundAlike(t *testing.T) {
	s, c, owner := startWithClient(t, webOn)
	private, open := newChannelID(t), newChannelID(t)
	cwCreate(t, c, owner, private, true)
	cwCreate(t, c, owner, open, false)
	secret := cwMsg(t, owner, private, now())
	mustPublish(t, c, secret)
	visible := cwMsg(t, owner, open, now())
	mustPublish(t, c, visible)

	want := webGet(t, s, "/c/"+newChannelID(t), "text/html")
	if want.status != http.StatusNotFound {
		t.Fatalf("nonexistent channel: status %d", want.status)
	}
	for _, path := range []string{
		"/c/" + private,
		"/c/" + private + "/t/" + secret.ID,
		"/c/" + private + "?at=1&id=" + secret.ID,
		"/c/" + newChannelID(t) + "/t/" + randomID(t),
		"/c/" + open + "/t/" + secret.ID,
		"/c/" + open + "/t/" + randomID(t),
		"/c/" + private + "?at=bad",
		"/c/NOT%20A%20CHANNEL",
		"/c/" + open + "/t/zz",
		"/c/" + open + "/x",
	} {
		got := webGet(t, s, path, "text/html")
		if got.status != want.status || got.body != want.body || got.header.Get("Content-Type") != want.header.Get("Content-Type") ||
			got.header.Get("Cache-Control") != want.header.Get("Cache-Control") {
			t.Errorf("GET %s: %d %q, want the same 404 as a nonexistent channel", path, got.status, got.body)
		}
	}
	if strings.Contains(want.body, secret.Content) {
		t.Fatal("the 404 page holds the secret")
	}
	doc := webPageOK(t, s, "/")
	var listed []string
	webWalk(doc, func(n *html.Node) {
		if n.Data == "a" && webHasClass(n, "channel") {
			listed = append(listed, webAttr(n, "href"))
		}
	})
	if !slices.Equal(listed, []string{"/c/" + open}) {
		t.Fatalf("index lists %v, want the open channel only", listed)
	}
	if got := webGet(t, s, "/c/"+open+"?at=1", "text/html"); got.status != http.StatusBadRequest {
		t.Errorf("half a cursor on an open channel: status %d, want 400", got.status)
	}
}

// CW-25, CW-15..CW-17: following the "older" links from a channel's page
// walks the whole channel, 50 rows a page, without loss or repeat: the
// same rows, in the same order, as the window's own cursor chain, across
// a same-second burst that straddles page edges.
func TestWebOlderWalksChannel(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	b := testutil.NewSigner(t)
	T := now() - 10000
	var evs []*nostr.Event
	for i := range 130 {
		at := T - int64(i/3)
		if i >= 40 && i < 70 {
			at = T - 20 // a burst of 30 in one second across the first page edge
		}
		who := a
		if i%2 == 1 {
			who = b
		}
		evs = append(evs, cwMsg(t, who, ch, at))
	}
	evs = append(evs, cwReply(t, b, ch, T, evs[3])) // a reply is not a row
	cwIngest(t, s, evs...)

	want, _ := cwWalk(t, s, nil, ch, cwF(ch, "kinds", []int{9}, "include_aux", true, "include_summaries", true), web.PageRows)
	if len(want) != 130 {
		t.Fatalf("window walk: %d rows, want 130", len(want))
	}
	var got []string
	path := "/c/" + ch
	for pages := 0; path != ""; pages++ {
		if pages > 10 {
			t.Fatal("the older links do not end")
		}
		doc := webPageOK(t, s, path)
		rows := webRowIDs(doc)
		if len(rows) > web.PageRows {
			t.Fatalf("%s: %d rows", path, len(rows))
		}
		got = append(got, rows...)
		path = webLink(doc, "older")
		if path != "" {
			u, err := url.Parse(path)
			if err != nil || u.Path != "/c/"+ch {
				t.Fatalf("older link %q", path)
			}
		}
	}
	if !slices.Equal(got, ids(want)) {
		t.Fatalf("web walk: %d rows %s\nwindow walk: %d rows %s", len(got), cwShort(got), len(want), cwShort(ids(want)))
	}
}

// CW-25, RL-20: a thread page shows the root, then every reply nested
// under its parent at its depth; a channel page row shows its reply
// count, its reactions and the edited mark with the edited content.
// Issue 29 item 13: a row's reply count is its whole thread
// (descendant_count), as chat clients badge it, on both pages.
func TestWebThreadNesting(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	b := testutil.NewSigner(t)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	T := now() - 100
	root := cwMsg(t, a, ch, T)
	r1 := cwReply(t, b, ch, T+1, root)
	r2 := cwReply(t, a, ch, T+2, r1)
	r3 := cwReply(t, b, ch, T+3, root)
	r4 := cwReply(t, b, ch, T+4, r2)
	cwPublish(t, c, root, r1, r2, r3, r4)
	cwPublish(t, c, cwReaction(t, b, T+5, root), cwReaction(t, a, T+6, root))
	cwPublish(t, c, a.Event(t, buzz.KindEdit, T+7, "edited text", nostr.Tag{"e", root.ID}, nostr.Tag{"h", ch}))

	doc := webPageOK(t, s, "/c/"+ch+"/t/"+root.ID)
	wantParent := map[string]string{r1.ID: root.ID, r2.ID: r1.ID, r3.ID: root.ID, r4.ID: r2.ID}
	wantDepth := map[string]string{root.ID: "0", r1.ID: "1", r2.ID: "2", r3.ID: "1", r4.ID: "3"}
	rows := webRows(doc)
	if len(rows) != 5 {
		t.Fatalf("%d rows on the thread page, want 5", len(rows))
	}
	for _, n := range rows {
		id := webAttr(n, "data-id")
		if got := webAttr(n, "data-depth"); got != wantDepth[id] {
			t.Errorf("%s: depth %s, want %s", id[:8], got, wantDepth[id])
		}
		var badge string
		webWalk(n, func(m *html.Node) {
			if webHasClass(m, "replies") && badge == "" {
				badge = nodeText(m)
			}
		})
		if want := map[string]string{root.ID: "4 replies", r1.ID: "2 replies", r2.ID: "1 reply"}[id]; badge != want {
			t.Errorf("%s: badge %q, want %q", id[:8], badge, want)
		}
		if id == root.ID {
			continue
		}
		// article -> li -> ul.tree -> li of the parent (or the thread).
		parent := webAttr(firstArticle(n.Parent.Parent.Parent), "data-id")
		if parent != wantParent[id] {
			t.Errorf("%s is nested under %.8s, want %.8s", id[:8], parent, wantParent[id])
		}
	}

	page := webPageOK(t, s, "/c/"+ch)
	rows = webRows(page)
	if len(rows) != 1 || webAttr(rows[0], "data-id") != root.ID {
		t.Fatalf("channel rows %v, want the root alone", webRowIDs(page))
	}
	marks := map[string]string{}
	webWalk(rows[0], func(n *html.Node) {
		for _, class := range []string{"content", "edited", "reactions", "replies"} {
			if webHasClass(n, class) {
				marks[class] = nodeText(n)
			}
		}
	})
	want := map[string]string{"content": "edited text", "edited": "edited", "reactions": "2 reactions", "replies": "4 replies"}
	for k, v := range want {
		if marks[k] != v {
			t.Errorf("row %s: %q, want %q", k, marks[k], v)
		}
	}
}

func firstArticle(n *html.Node) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == "article" {
			return c
		}
	}
	return nil
}

// CW-25, RL-21: `/` with the nostr Accept header is still the NIP-11
// document; a browser's Accept (naming text/html) gets the HTML index,
// and any other, curl's `*/*` or none, the line of text. (Review finding
// 4: with the web view on, `*/*` got the HTML.)
func TestWebRootNegotiates(t *testing.T) {
	s := startServer(t, webOn)
	doc := webGet(t, s, "/", "application/nostr+json")
	var info struct {
		Self string `json:"self"`
	}
	if err := json.Unmarshal([]byte(doc.body), &info); err != nil || info.Self != s.relay.PubKey() {
		t.Fatalf("NIP-11: %q (%v)", doc.body, err)
	}
	if ct := doc.header.Get("Content-Type"); ct != "application/nostr+json" {
		t.Errorf("NIP-11 Content-Type %q", ct)
	}
	for _, accept := range []string{"text/html", "Text/HTML;q=0.9", "text/html,application/xhtml+xml,*/*;q=0.8"} {
		if got := webGet(t, s, "/", accept); got.status != http.StatusOK || !strings.HasPrefix(got.body, "<!doctype html>") {
			t.Errorf("GET / with Accept %q: %d %q, want the HTML index", accept, got.status, got.body)
		}
	}
	for _, accept := range []string{"", "*/*", "text/plain", "application/json"} {
		got := webGet(t, s, "/", accept)
		if got.status != http.StatusOK || !strings.HasPrefix(got.header.Get("Content-Type"), "text/plain") ||
			!strings.Contains(got.body, "is a nostr relay") || strings.Contains(got.body, "<") {
			t.Errorf("GET / with Accept %q: %d %q %q, want the line of text", accept, got.status, got.header.Get("Content-Type"), got.body)
		}
	}
}

// CW-25: server.web = false turns the view off: its pages 404 and `/`
// is the line of text it was.
func TestWebOff(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	msg := cwMsg(t, a, ch, now())
	mustPublish(t, c, msg)
	for _, path := range []string{"/c/" + ch, "/c/" + ch + "/t/" + msg.ID, web.CSSPath} {
		if got := webGet(t, s, path, "text/html"); got.status != http.StatusNotFound {
			t.Errorf("GET %s with the web view off: %d", path, got.status)
		}
	}
	root := webGet(t, s, "/", "text/html")
	if root.status != http.StatusOK || !strings.Contains(root.body, "is a nostr relay") || strings.Contains(root.body, "<") {
		t.Errorf("GET / with the web view off: %d %q", root.status, root.body)
	}
}

// CW-25, RL-27: the web pages count against the `/query` rate of their
// client IP, 429 with Retry-After past its burst.
func TestWebRatePerIP(t *testing.T) {
	s := startServer(t, webOn, func(c *Config) {
		c.Limits.Rates = &Rates{QueriesPerIP: Rate{PerSecond: 0.01, Burst: 2}}
	})
	for range 2 {
		webPageOK(t, s, "/")
	}
	got := webGet(t, s, "/c/"+newChannelID(t), "text/html")
	if got.status != http.StatusTooManyRequests || strings.TrimSpace(got.body) != errQueryRate || got.header.Get("Retry-After") != "100" {
		t.Fatalf("past the burst: %d %q Retry-After %q", got.status, got.body, got.header.Get("Retry-After"))
	}
	if css := webGet(t, s, web.CSSPath, ""); css.status != http.StatusOK {
		t.Errorf("the stylesheet, which reads nothing, is refused: %d", css.status)
	}
}

// CW-25, issue 29 item 13: the index lists the channels an anonymous
// reader can read, 50 a page, by their last message, newest first, as chat
// clients list them (a channel without one last, newest channel first),
// the "more" link continuing after the last: each open channel once, no
// private one.
func TestWebIndexPages(t *testing.T) {
	s, _, a := startWithClient(t, webOn)
	type listed struct {
		url string
		at  int64
	}
	var open []listed
	T := now() - 10000
	for i := range 75 {
		ch := fmt.Sprintf("group-%02d", i)
		tags := []nostr.Tag{{"h", ch}, {"name", "name " + ch}}
		if i%4 == 1 {
			tags = append(tags, nostr.Tag{"private"})
		}
		cwIngest(t, s, cwEvent(t, a, buzz.KindCreateChannel, T, tags...))
		// A last message in an order that is not the channels' own; every
		// tenth channel has none.
		at := int64(0)
		if i%10 != 3 {
			at = T + 1 + int64(i*37%75)
			cwIngest(t, s, cwMsg(t, a, ch, at))
		}
		if i%4 != 1 {
			open = append(open, listed{"/c/" + ch, at})
		}
	}
	slices.SortStableFunc(open, func(x, y listed) int {
		if x.at != y.at {
			return int(y.at - x.at)
		}
		return strings.Compare(y.url, x.url) // the newer channel first
	})
	var want []string
	for _, l := range open {
		want = append(want, l.url)
	}
	var got []string
	path := "/"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatal("the more links do not end")
		}
		doc := webPageOK(t, s, path)
		var listed []string
		webWalk(doc, func(n *html.Node) {
			if n.Data == "a" && webHasClass(n, "channel") {
				listed = append(listed, webAttr(n, "href"))
			}
		})
		if pages == 0 && len(listed) != web.PageRows {
			t.Fatalf("first page lists %d channels, want %d", len(listed), web.PageRows)
		}
		got = append(got, listed...)
		path = ""
		webWalk(doc, func(n *html.Node) {
			if n.Data == "a" && webAttr(n, "rel") == "next" {
				path = webAttr(n, "href")
			}
		})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v\nwant %v", got, want)
	}
	if got := webGet(t, s, "/?after=-1", "text/html"); got.status != http.StatusBadRequest {
		t.Errorf("a negative after: status %d, want 400", got.status)
	}
}

// CW-25, RL-20: a thread of more replies than a page is read 50 replies a
// page, the "later replies" link continuing after the last, each reply
// once and in thread order; a reply whose parent is on an earlier page
// says which message it answers.
func TestWebThreadPages(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	T := now() - 1000
	root := cwMsg(t, a, ch, T)
	cwIngest(t, s, root)
	var replies []*nostr.Event
	for i := range 55 {
		parent := root
		if i == 52 {
			parent = replies[10]
		}
		ev := cwReply(t, a, ch, T+1+int64(i/2), parent)
		cwIngest(t, s, ev)
		replies = append(replies, ev)
	}
	want := ids(threadOrder(replies))
	var got []string
	path := "/c/" + ch + "/t/" + root.ID
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the later links do not end")
		}
		doc := webPageOK(t, s, path)
		rows := webRowIDs(doc)
		if rows[0] != root.ID {
			t.Fatalf("%s: first row %.8s, want the root", path, rows[0])
		}
		if pages == 0 && len(rows) != 1+web.PageRows {
			t.Fatalf("first page: %d rows, want the root and %d replies", len(rows), web.PageRows)
		}
		got = append(got, rows[1:]...)
		if pages == 1 {
			var replyTo string
			webWalk(doc, func(n *html.Node) {
				if webHasClass(n, "replyto") {
					replyTo = nodeText(n)
				}
			})
			if replyTo != "reply to "+replies[10].ID[:8] {
				t.Errorf("second page: %q, want the parent's short id", replyTo)
			}
		}
		path = webLink(doc, "later")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("thread pages: %s\nwant %s", cwShort(got), cwShort(want))
	}
}

// threadOrder sorts evs as the thread path serves them: created_at
// ascending, then id ascending (RL-20).
func threadOrder(evs []*nostr.Event) []*nostr.Event {
	out := slices.Clone(evs)
	slices.SortFunc(out, func(x, y *nostr.Event) int {
		if x.CreatedAt != y.CreatedAt {
			return int(x.CreatedAt - y.CreatedAt)
		}
		return strings.Compare(x.ID, y.ID)
	})
	return out
}

// CW-25, RL-27a: a channel page takes one of the read slots it shares
// with REQ, COUNT and `/query` (429 busy when none comes free), and a
// page asked for again before any write comes from the page cache.
func TestWebSlotsAndCache(t *testing.T) {
	s, c, a := startWithClient(t, webOn, func(c *Config) { c.Limits.MaxConcurrentQueries = 1 })
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	mustPublish(t, c, cwMsg(t, a, ch, now()))
	if !s.relay.reads.acquire(context.Background(), netip.Prefix{}) {
		t.Fatal("no free slot")
	}
	busy := webGet(t, s, "/c/"+ch, "text/html")
	s.relay.reads.release(netip.Prefix{})
	if busy.status != http.StatusTooManyRequests || strings.TrimSpace(busy.body) != errBusy || busy.header.Get("Retry-After") == "" {
		t.Fatalf("with no slot free: %d %q", busy.status, busy.body)
	}
	webPageOK(t, s, "/c/"+ch)
	before, err := s.store.Stats()
	if err != nil {
		t.Fatal(err)
	}
	webPageOK(t, s, "/c/"+ch)
	after, err := s.store.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.PagesFromCache != before.PagesFromCache+1 || after.PagesFromDatabase != before.PagesFromDatabase {
		t.Fatalf("second page: cache %d -> %d, database %d -> %d; want one more from the cache",
			before.PagesFromCache, after.PagesFromCache, before.PagesFromDatabase, after.PagesFromDatabase)
	}
}

// Issue 29 item 8: every answer whose body depends on Accept says so
// (Vary: Accept), so that a shared cache never serves the public HTML
// index, the NIP-11 document or the line of text to a client that asked
// for another; a web page and its 404 vary too, since a nostr Accept gets
// NIP-11 at any path.
func TestWebVaryAccept(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	for _, path := range []string{"/", "/c/" + ch, "/c/no-such-channel", "/nowhere"} {
		for _, accept := range []string{"text/html", "application/nostr+json", "*/*", ""} {
			got := webGet(t, s, path, accept)
			vary := strings.Split(strings.Join(got.header.Values("Vary"), ","), ",")
			for i := range vary {
				vary[i] = strings.TrimSpace(vary[i])
			}
			if !slices.Contains(vary, "Accept") {
				t.Errorf("GET %s with Accept %q: Vary %q, want Accept", path, accept, got.header.Values("Vary"))
			}
		}
	}
}

// CW-26: the client's module is served from the binary at its versioned
// URL, kept for good there and for a day at its bare path; every page
// loads it as a module and names the relay's URL, which it connects to.
func TestWebServesClientScript(t *testing.T) {
	s := startServer(t, webOn)
	for path, cache := range map[string]string{web.ScriptURL("app"): "public, max-age=31536000, immutable", "/web/app.js": "public, max-age=86400"} {
		ans := webGet(t, s, path, "")
		if ans.status != http.StatusOK || !strings.HasPrefix(ans.header.Get("Content-Type"), "text/javascript") || !strings.Contains(ans.body, "window.nostr") {
			t.Fatalf("GET %s: %d %s", path, ans.status, ans.header.Get("Content-Type"))
		}
		if got := ans.header.Get("Cache-Control"); got != cache {
			t.Errorf("GET %s: Cache-Control %q, want %q", path, got, cache)
		}
	}
	if ans := webGet(t, s, "/web/none-such.js", ""); ans.status != http.StatusNotFound {
		t.Errorf("GET /web/none-such.js: %d", ans.status)
	}
	page := webGet(t, s, "/", "text/html")
	for _, want := range []string{`<script type="module" src="` + web.ScriptURL("app") + `"></script>`, `<meta name="buzz-relay" content="` + s.wsURL + `">`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the index lacks %s", want)
		}
	}
}
