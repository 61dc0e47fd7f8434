package relay

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"golang.org/x/net/html"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// CW-2, CW-25, RL-36: in a real browser, the pages of channels named by
// NDK's mixed-case id and by the group id `..` load at the addresses the
// web view links them by, the latter with the channel in the query; and
// `..` as a path segment, plain or percent-encoded, is what the browser
// resolves away before it asks (it loads the index), which is why the web
// view does not link it so.
func TestWebInBrowserGroupIDs(t *testing.T) {
	if os.Getenv("BUZZ_LITE_BROWSER") != "1" {
		t.Skip("set BUZZ_LITE_BROWSER=1 to load the web view in headless chromium")
	}
	bin := chromium(t)
	s, c, owner := startWithClient(t, webOn)
	const ndk, dots = "p0ZPf6Xc6Ngx7TZFdJHcWRxY", ".."
	msgs := map[string]*nostr.Event{}
	for _, h := range []string{ndk, dots} {
		mustPublish(t, c, cwEvent(t, owner, buzz.KindCreateChannel, now(), nostr.Tag{"h", h}, nostr.Tag{"name", "group " + h}))
		msgs[h] = owner.Event(t, 9, now()-10, "message in "+h, nostr.Tag{"h", h})
		mustPublish(t, c, msgs[h])
	}
	reply := cwReply(t, owner, dots, now()-5, msgs[dots])
	mustPublish(t, c, reply)

	load := func(path string) (*html.Node, string) {
		t.Helper()
		dom, console := runChromium(t, bin, "--dump-dom", s.httpURL+path)
		if len(console) > 0 {
			t.Errorf("%s: console messages:\n%s", path, strings.Join(console, "\n"))
		}
		doc, err := html.Parse(strings.NewReader(dom))
		if err != nil {
			t.Fatal(err)
		}
		return doc, nodeText(doc)
	}
	for _, p := range []struct {
		path string
		rows []string
	}{
		{"/c/" + ndk, []string{msgs[ndk].ID}},
		{"/c/?h=..", []string{msgs[dots].ID}},
		{"/c/?h=..&t=" + msgs[dots].ID, []string{msgs[dots].ID, reply.ID}},
	} {
		doc, _ := load(p.path)
		if got := webRowIDs(doc); !slices.Equal(got, p.rows) {
			t.Errorf("%s: rows %s, want %s", p.path, cwShort(got), cwShort(p.rows))
		}
	}
	for _, path := range []string{"/c/..", "/c/%2E%2E", "/c/.%2e"} {
		doc, text := load(path)
		if rows := webRowIDs(doc); len(rows) != 0 || !strings.Contains(text, "group "+ndk) {
			t.Errorf("%s: %d rows, index shown %v; want the browser to load the index", path, len(rows), strings.Contains(text, "group "+ndk))
		}
	}
}
