package relay

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/net/html"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/web"
)

// webWorstContent is about n bytes of content that html/template writes
// at its largest: short links of `&`, each written as &amp; in the link's
// text and again in its href.
func webWorstContent(n int) string {
	unit := "http://a/?" + strings.Repeat("&", 100) + " "
	return strings.Repeat(unit, n/len(unit))
}

// webContentOf is the shown text of a row and the href of its "the whole
// message" link ("" when it has none).
func webContentOf(row *html.Node) (text, whole string) {
	webWalk(row, func(n *html.Node) {
		switch {
		case webHasClass(n, "content"):
			text = nodeText(n)
		case n.Data == "a" && webHasClass(n, "whole"):
			whole = webAttr(n, "href")
		}
	})
	return text, whole
}

// CW-25, RL-27a: a row shows at most 8 KiB of its content, then an
// ellipsis and a link to its thread page, which shows up to 64 KiB of it;
// so a channel page and a thread page of the largest, most escaped
// content stay within web.PageMaxBytes however large the events are, and
// the page gives its whole reservation back. (Review finding 1: 50 rows
// of 128 KiB gave ~32 MiB of HTML per page, outside the budget.)
func TestWebPageBounded(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	content := webWorstContent(100 << 10)
	T := now() - 1000
	root := cwMsg(t, a, ch, T)
	root.Content = content
	if err := root.Sign(a.SK); err != nil {
		t.Fatal(err)
	}
	evs := []*nostr.Event{root}
	for i := range web.PageRows {
		row := a.Event(t, 9, T+1+int64(i), content, nostr.Tag{"h", ch})
		reply := a.Event(t, 9, T+1+int64(i), content, nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
		evs = append(evs, row, reply)
	}
	cwIngest(t, s, evs...)

	for _, path := range []string{"/c/" + ch, "/c/" + ch + "/t/" + root.ID} {
		ans := webGet(t, s, path, "text/html")
		if ans.status != http.StatusOK {
			t.Fatalf("GET %s: %d %q", path, ans.status, ans.body)
		}
		t.Logf("GET %s: %d bytes of HTML for %d rows of %d bytes", path, len(ans.body), web.PageRows, len(content))
		if len(ans.body) > web.PageMaxBytes {
			t.Errorf("GET %s: %d bytes of HTML, over the bound %d", path, len(ans.body), web.PageMaxBytes)
		}
		doc, err := html.Parse(strings.NewReader(ans.body))
		if err != nil {
			t.Fatal(err)
		}
		rows := webRows(doc)
		if len(rows) != 1+web.PageRows && len(rows) != web.PageRows {
			t.Fatalf("GET %s: %d rows", path, len(rows))
		}
		for _, row := range rows {
			id := webAttr(row, "data-id")
			text, whole := webContentOf(row)
			limit, wantWhole := web.RowTextBytes, "/c/"+ch+"/t/"+id
			if id == root.ID && strings.Contains(path, "/t/") {
				limit, wantWhole = web.RootTextBytes, ""
			}
			if !strings.HasSuffix(text, "…") || len(text) > limit+len("…") || len(text) < limit/2 {
				t.Fatalf("GET %s: row %.8s shows %d bytes of content, want it clipped at %d with an ellipsis", path, id, len(text), limit)
			}
			if !strings.HasPrefix(content, strings.TrimSuffix(text, "…")) {
				t.Fatalf("GET %s: row %.8s does not show the start of its content", path, id)
			}
			if whole != wantWhole {
				t.Fatalf("GET %s: row %.8s links the whole message at %q, want %q", path, id, whole, wantWhole)
			}
		}
	}
	if free := budgetFree(s.relay); free != DefaultLimits.QueryMemoryBytes {
		t.Fatalf("after the pages, %d bytes of the budget free, want all %d", free, DefaultLimits.QueryMemoryBytes)
	}
}

// meterStore is the real store, noting what each read of one request
// hands the relay, and what the relay has reserved of its budget by then.
type meterStore struct {
	buzz.Store
	budget func() *byteBudget

	mu   sync.Mutex
	read int64 // bytes read since reset
	// over are the reads after which what was read passed what was
	// reserved.
	over []string
}

func (m *meterStore) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read, m.over = 0, nil
}

func (m *meterStore) note(what string, n int) {
	b := m.budget()
	b.mu.Lock()
	reserved := b.size - b.free
	b.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read += int64(n)
	if m.read > reserved {
		m.over = append(m.over, fmt.Sprintf("after %s: %d bytes read, %d reserved", what, m.read, reserved))
	}
}

func (m *meterStore) QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) ([]buzz.RawEvent, bool, error) {
	evs, truncated, err := m.Store.QueryBounded(ctx, f, v, beforeID, maxBytes)
	m.note("a query", web.RawSize(evs))
	return evs, truncated, err
}

func (m *meterStore) Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error) {
	page, err := m.Store.Window(ctx, q)
	if page != nil {
		m.note("a window", web.RawSize(page.Rows, page.Aux))
	}
	return page, err
}

func (m *meterStore) Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error) {
	page, err := m.Store.Thread(ctx, q)
	if page != nil {
		m.note("a thread", web.RawSize(page.Replies, page.Aux))
	}
	return page, err
}

// RL-27a, CW-25: every read a page makes stays reserved until the page is
// written: after each read, what the page has read is within what it has
// reserved, also when a read had to be made again with a larger bound; so
// a page that needs more than is free is refused busy, and every page
// gives back all it reserved. (Review finding 3: the thread page's second
// read gave back the reservation of its first, the root.)
func TestWebReadsStayReserved(t *testing.T) {
	const budget = 8 << 20
	meter := &meterStore{}
	s := startHooked(t, serverHooks{
		wrap:  func(st buzz.Store) buzz.Store { meter.Store = st; return meter },
		relay: func(r *Relay) { meter.budget = func() *byteBudget { return r.queryMemory } },
	}, webOn, func(c *Config) { c.Limits.QueryMemoryBytes = budget })
	a := testutil.NewSigner(t)
	ch := newChannelID(t)
	T := now() - 1000
	root := a.Event(t, 9, T, strings.Repeat("r", 120<<10), nostr.Tag{"h", ch})
	// The replies are a little under 2 MiB: more than the first bound of
	// a read, so the thread is read again with twice the bound.
	evs := []*nostr.Event{cwEvent(t, a, buzz.KindCreateChannel, T, nostr.Tag{"h", ch}), root}
	for i := range 19 {
		evs = append(evs, cwReply(t, a, ch, T+1+int64(i), root))
		evs[len(evs)-1].Content = strings.Repeat("x", 104<<10)
		if err := evs[len(evs)-1].Sign(a.SK); err != nil {
			t.Fatal(err)
		}
	}
	cwIngest(t, s, evs...)
	thread := "/c/" + ch + "/t/" + root.ID

	for _, path := range []string{thread, "/c/" + ch, "/"} {
		meter.reset()
		webPageOK(t, s, path)
		if len(meter.over) > 0 {
			t.Errorf("GET %s: %s", path, strings.Join(meter.over, "; "))
		}
	}
	if free := budgetFree(s.relay); free != budget {
		t.Fatalf("after the pages, %d bytes of the budget free, want all %d", free, budget)
	}
	// With 3 MiB free, the thread page, which holds its 2 MiB of replies
	// read and decoded, does not fit; the channel page of one row does.
	held := int64(budget - 3<<20)
	if !s.relay.queryMemory.take(context.Background(), netip.Prefix{}, held) {
		t.Fatal("budget not free")
	}
	busy := webGet(t, s, thread, "text/html")
	if busy.status != http.StatusTooManyRequests || strings.TrimSpace(busy.body) != errBusy {
		t.Errorf("a thread page over the free budget: %d %q, want 429 %q", busy.status, busy.body, errBusy)
	}
	webPageOK(t, s, "/c/"+ch)
	s.relay.queryMemory.give(netip.Prefix{}, held)
	if free := budgetFree(s.relay); free != budget {
		t.Fatalf("after a refused page, %d bytes of the budget free, want all %d", free, budget)
	}
}

// CW-25: a link's text reads as the address it leads to: the bidi
// overrides, isolates and marks and other formatting characters in a URL
// are shown percent-escaped, as in its href, and the stylesheet isolates
// a link's direction from the text around it. (Review finding 2:
// "https://evil.example/\u202Emoc.elgoog" showed as another address.)
func TestWebLinkTextIsHref(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	ch := newChannelID(t)
	cwCreate(t, c, a, ch, false)
	hidden := []string{"\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u202d", "\u200b", "\ufeff", "\u2028", "\u3000"}
	var want []string
	for i, h := range hidden {
		link := "https://evil.example/" + h + "moc.elgoog/" + strconv.Itoa(i)
		ev := a.Event(t, 9, now()-int64(i), "see "+link+" now", nostr.Tag{"h", ch})
		mustPublish(t, c, ev)
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, u.String())
	}
	readable := "https://de.wikipedia.org/wiki/Äpfel"
	mustPublish(t, c, a.Event(t, 9, now()-100, readable, nostr.Tag{"h", ch}))

	doc := webPageOK(t, s, "/c/"+ch)
	got := map[string]string{}
	webWalk(doc, func(n *html.Node) {
		if n.Data == "a" && strings.HasPrefix(webAttr(n, "href"), "http") {
			got[webAttr(n, "href")] = nodeText(n)
		}
	})
	for _, href := range want {
		text, ok := got[href]
		if !ok {
			t.Errorf("no link to %q", href)
			continue
		}
		if text != href {
			t.Errorf("the link to %q reads %q", href, text)
		}
		for _, r := range text {
			if unicode.In(r, unicode.C, unicode.Z) {
				t.Errorf("the link to %q shows %U", href, r)
			}
		}
	}
	if u, _ := url.Parse(readable); got[u.String()] != readable {
		t.Errorf("the link to %q reads %q, want its letters as they are", readable, got[u.String()])
	}
	css := webGet(t, s, web.StylesheetURL(), "text/css")
	if !strings.Contains(css.body, ".content a { unicode-bidi: isolate; }") {
		t.Error("the stylesheet does not isolate the direction of a link in content")
	}
}

// webIndexWalk follows the index's "more channels" links from `/` and
// returns the channels listed and the `after` of each link.
func webIndexWalk(t *testing.T, s *testServer) (listed, afters []string) {
	t.Helper()
	path := "/"
	for pages := 0; path != ""; pages++ {
		if pages > 10 {
			t.Fatal("the more links do not end")
		}
		doc := webPageOK(t, s, path)
		path = ""
		webWalk(doc, func(n *html.Node) {
			switch {
			case n.Data == "a" && webHasClass(n, "channel"):
				listed = append(listed, webAttr(n, "href"))
			case n.Data == "a" && webAttr(n, "rel") == "next":
				path = webAttr(n, "href")
			}
		})
		if path != "" {
			u, err := url.Parse(path)
			if err != nil {
				t.Fatal(err)
			}
			afters = append(afters, u.Query().Get("after"))
		}
	}
	return listed, afters
}

// CW-25, RL-13: the index links on only when a channel follows (exactly
// 50 open channels make one page, no link), and its links carry no store
// number: with hidden channels among the open ones, the walk lists each
// open channel once (channels without a message, the newest first), and
// an `after` the relay did not make is refused. (Review finding 5: a link
// to an empty page, and `after=` a private channel's number.)
func TestWebIndexCursorHidesHidden(t *testing.T) {
	create := func(t *testing.T, s *testServer, a testutil.Signer, name string, private bool) string {
		tags := []nostr.Tag{{"h", name}, {"name", name}}
		if private {
			tags = append(tags, nostr.Tag{"private"})
		}
		cwIngest(t, s, cwEvent(t, a, buzz.KindCreateChannel, now(), tags...))
		return "/c/" + name
	}
	t.Run("full page, nothing after", func(t *testing.T) {
		s := startServer(t, webOn)
		a := testutil.NewSigner(t)
		var want []string
		for i := range web.PageRows {
			want = append(want, create(t, s, a, fmt.Sprintf("open-%02d", i), false))
		}
		create(t, s, a, "hidden-last", true)
		slices.Reverse(want)
		listed, afters := webIndexWalk(t, s)
		if !slices.Equal(listed, want) || len(afters) != 0 {
			t.Fatalf("listed %d channels with links %q, want %d on one page without a link", len(listed), afters, len(want))
		}
	})
	t.Run("hidden channels among the open ones", func(t *testing.T) {
		s := startServer(t, webOn)
		a := testutil.NewSigner(t)
		var want []string
		for i := range 10 {
			want = append(want, create(t, s, a, fmt.Sprintf("open-a%02d", i), false))
		}
		for i := range web.ChannelScan + 50 {
			create(t, s, a, fmt.Sprintf("hidden-%03d", i), true)
		}
		for i := range 45 {
			want = append(want, create(t, s, a, fmt.Sprintf("open-b%02d", i), false))
		}
		slices.Reverse(want)
		listed, afters := webIndexWalk(t, s)
		if !slices.Equal(listed, want) {
			t.Fatalf("listed %v\nwant %v", listed, want)
		}
		if len(afters) != 1 {
			t.Fatalf("links %q, want one past the first page", afters)
		}
		for _, after := range afters {
			if _, err := strconv.ParseInt(after, 10, 64); err == nil || len(after) != 22 {
				t.Fatalf("after=%q reads as a number, or is not a sealed position", after)
			}
		}
		forged := []byte(afters[0])
		forged[3] ^= 1
		for _, after := range []string{"57", string(forged), afters[0] + "A", "-1"} {
			if got := webGet(t, s, "/?after="+url.QueryEscape(after), "text/html"); got.status != http.StatusBadRequest {
				t.Errorf("after=%q: status %d, want 400", after, got.status)
			}
		}
	})
}

// CW-25, RL-20: the thread page of a deleted message still shows its
// replies, nested under a "deleted message" in its place; a deleted
// message without replies, or asked for under another channel, is not
// found, as is a message that never was. (Review finding 6: 404.)
func TestWebDeletedRootShowsReplies(t *testing.T) {
	s, c, a := startWithClient(t, webOn)
	b := testutil.NewSigner(t)
	ch, other := newChannelID(t), newChannelID(t)
	cwCreate(t, c, a, ch, false)
	cwCreate(t, c, a, other, false)
	T := now() - 100
	root := cwMsg(t, a, ch, T)
	r1 := cwReply(t, b, ch, T+1, root)
	r2 := cwReply(t, a, ch, T+2, r1)
	alone := cwMsg(t, a, ch, T+3)
	cwPublish(t, c, root, r1, r2, alone)
	cwPublish(t, c, cwDeletion(t, a, root, alone))

	doc := webPageOK(t, s, "/c/"+ch+"/t/"+root.ID)
	if got, want := webRowIDs(doc), []string{root.ID, r1.ID, r2.ID}; !slices.Equal(got, want) {
		t.Fatalf("rows %s, want the deleted root's place and its replies %s", cwShort(got), cwShort(want))
	}
	first := webRows(doc)[0]
	text, _ := webContentOf(first)
	if text != "deleted message" || strings.Contains(nodeText(first), root.Content) {
		t.Errorf("the deleted root shows %q", nodeText(first))
	}
	if parent := webAttr(firstArticle(webRows(doc)[1].Parent.Parent.Parent), "data-id"); parent != root.ID {
		t.Errorf("the first reply is nested under %.8s, want the deleted root", parent)
	}
	missing := webGet(t, s, "/c/"+ch+"/t/"+randomID(t), "text/html")
	for _, path := range []string{"/c/" + ch + "/t/" + alone.ID, "/c/" + other + "/t/" + root.ID} {
		got := webGet(t, s, path, "text/html")
		if got.status != http.StatusNotFound || got.body != missing.body {
			t.Errorf("GET %s: %d, want the 404 of a message that never was", path, got.status)
		}
	}
}
