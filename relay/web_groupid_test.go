package relay

import (
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

// CW-2, CW-25, RL-36: the web view serves a channel named by any NIP-29
// group id, followed the way a browser follows links: from the index to
// the channel's page, along its "older" links, to a thread and back by
// the crumb. Each link, resolved against the page it is on as RFC 3986
// says (a browser removes `.` and `..` segments), leads to the page of
// that channel and no other: NDK's mixed-case id and the same letters in
// another case are two channels, and the ids `.` and `..`, which no path
// segment can carry, are linked with the channel in the query
// (`/c/?h=..`).
func TestWebGroupIDs(t *testing.T) {
	s, c, _ := startWithClient(t, webOn)
	groups := []string{"p0ZPf6Xc6Ngx7TZFdJHcWRxY", "P0zpF6xC6nGX7tzfDjhCwrXy", "a.b~C_d-e", ".", ".."}
	base, err := url.Parse(s.httpURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	T := now() - 1000
	rows := map[string][]string{} // each channel's rows, newest first
	replies := map[string]*nostr.Event{}
	for i, h := range groups {
		owner := testutil.NewSigner(t)
		mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), nostr.Tag{"h", h}, nostr.Tag{"name", "group " + h}))
		n := 2
		if h == "p0ZPf6Xc6Ngx7TZFdJHcWRxY" || h == ".." {
			n = web.PageRows + 2 // an "older" link
		}
		var evs []*nostr.Event
		for j := range n {
			evs = append(evs, cwMsg(t, owner, h, T-int64(100*i+j)))
		}
		replies[h] = cwReply(t, owner, h, T+1, evs[0])
		cwIngest(t, s, append(evs, replies[h])...)
		rows[h] = ids(evs)
	}

	follow := func(from *url.URL, href string) *url.URL {
		t.Helper()
		ref, err := url.Parse(href)
		if err != nil {
			t.Fatalf("link %q: %v", href, err)
		}
		return from.ResolveReference(ref)
	}
	get := func(u *url.URL) *html.Node {
		t.Helper()
		return webPageOK(t, s, u.RequestURI())
	}

	links := map[string]*url.URL{} // channel name -> its page
	webWalk(get(base), func(n *html.Node) {
		if n.Data == "a" && webHasClass(n, "channel") {
			links[nodeText(n)] = follow(base, webAttr(n, "href"))
		}
	})
	for _, h := range groups {
		page := links["group "+h]
		if page == nil {
			t.Fatalf("the index does not link %q: %v", h, links)
		}
		var got []string
		for at, pages := page, 0; at != nil; pages++ {
			if pages > 3 {
				t.Fatalf("%q: the older links do not end", h)
			}
			doc := get(at)
			got = append(got, webRowIDs(doc)...)
			page, at = at, nil
			if older := webLink(doc, "older"); older != "" {
				at = follow(page, older)
			}
		}
		if !slices.Equal(got, rows[h]) {
			t.Errorf("%q from %s: rows %s, want %s", h, links["group "+h], cwShort(got), cwShort(rows[h]))
			continue
		}

		doc := get(links["group "+h])
		thread := follow(links["group "+h], webLink(doc, "replies"))
		tdoc := get(thread)
		if got := webRowIDs(tdoc); !slices.Equal(got, []string{rows[h][0], replies[h].ID}) {
			t.Errorf("%q: thread page %s shows %s, want the root and its reply", h, thread, cwShort(got))
		}
		crumb := ""
		webWalk(tdoc, func(n *html.Node) {
			if crumb == "" && n.Data == "a" && n.Parent != nil && webHasClass(n.Parent, "crumb") {
				crumb = webAttr(n, "href")
			}
		})
		if back := follow(thread, crumb); back.String() != links["group "+h].String() {
			t.Errorf("%q: the thread's crumb leads to %s, want %s", h, back, links["group "+h])
		}
		if strings.Trim(h, ".") == "" && links["group "+h].Path != "/c/" {
			t.Errorf("%q is linked as %s, want the channel in the query", h, links["group "+h])
		}
	}
}
