package web

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// CW-25: the web view's path parser takes any path and query a client
// sends and yields only routes whose channel is a canonical channel id and
// whose event is a lowercase 64-hex id.
func FuzzWebPath(f *testing.F) {
	for _, s := range []string{"/", "/web.css", "/c/general", "/c/3F1C2F6E-1D7A-4C3E-9A59-4C2B1A0E7B11/t/" + strings.Repeat("A", 64),
		"/c/", "/c//t/", "/c/a/t/b/t/c", "/c/../etc/passwd", "/c/x\x00y", "/c/p0ZPf6Xc6Ngx7TZFdJHcWRxY", "/c/a.b~c/t/" + strings.Repeat("a", 64)} {
		f.Add(s, "")
	}
	f.Add("/c/", "h=..")
	f.Add("/c/", "h=.&t="+strings.Repeat("F", 64))
	f.Add("/c/", "h=a%2Fb&t=")
	f.Fuzz(func(t *testing.T, path, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		route, ok := parsePath(path, q)
		if !ok {
			return
		}
		switch route.kind {
		case routeChannel, routeThread:
			if canon, ok := nipcw.ParseChannelID(route.channel); !ok || canon != route.channel {
				t.Fatalf("%q: channel %q is not a canonical channel id", path, route.channel)
			}
		}
		if route.kind == routeThread && !nipcw.IsLowerHex64(route.event) {
			t.Fatalf("%q: event %q is not lowercase 64 hex", path, route.event)
		}
	})
}

// CW-2, CW-25: the link to a channel's page, a thread's page and their
// next pages leads back to that page, for any channel id: a browser keeps
// its path as it is (no segment it takes for `.` or `..`, percent-encoded
// or not), and the relay reads it as the same channel, event and cursor.
func FuzzWebLink(f *testing.F) {
	for _, ch := range []string{"3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", "p0ZPf6Xc6Ngx7TZFdJHcWRxY", ".", "..", "...", "~", "a.b~C_d-e", strings.Repeat("Zz9-_.~", 19)[:128]} {
		f.Add(ch, true, true, int64(1), strings.Repeat("ab", 32))
		f.Add(ch, false, false, int64(0), "")
	}
	f.Fuzz(func(t *testing.T, ch string, thread, next bool, at int64, id string) {
		ch, ok := nipcw.ParseChannelID(ch)
		if !ok || (thread || next) && !nipcw.IsLowerHex64(id) || at < 0 {
			return
		}
		want := route{kind: routeChannel, channel: ch}
		if thread {
			want = route{kind: routeThread, channel: ch, event: id}
		}
		var p *buzz.Position
		if next {
			p = &buzz.Position{CreatedAt: at, ID: id}
		}
		link := pageLink(ch, want.event, p)
		u, err := url.Parse(link)
		if err != nil {
			t.Fatalf("link %q: %v", link, err)
		}
		for _, seg := range strings.Split(u.EscapedPath(), "/") {
			switch strings.ToLower(seg) {
			case ".", "..", "%2e", ".%2e", "%2e.", "%2e%2e":
				t.Fatalf("link %q: a browser takes segment %q for a directory", link, seg)
			}
		}
		got, ok := parsePath(u.Path, u.Query())
		if !ok || got != want {
			t.Fatalf("link %q reads as %+v, %v; want %+v", link, got, ok, want)
		}
		back, err := parseCursor(u.Query())
		switch {
		case err != nil:
			t.Fatalf("link %q: cursor: %v", link, err)
		case (back == nil) != (p == nil), back != nil && *back != *p:
			t.Fatalf("link %q: cursor %+v, want %+v", link, back, p)
		}
	})
}

// CW-25: the cursor of a page link is a non-negative timestamp and a
// lowercase 64-hex id, both or neither, whatever the query string holds.
func FuzzWebCursor(f *testing.F) {
	f.Add("at=1&id=" + strings.Repeat("f", 64))
	f.Add("at=-1&id=x")
	f.Add("at=99999999999999999999")
	f.Add("id=" + strings.Repeat("F", 64))
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		p, err := parseCursor(q)
		if err != nil || p == nil {
			return
		}
		if p.CreatedAt < 0 || !nipcw.IsLowerHex64(p.ID) {
			t.Fatalf("%q: cursor %+v", query, *p)
		}
		link, err := url.Parse(pageLink("general", "", p))
		if err != nil {
			t.Fatal(err)
		}
		if again, err := parseCursor(link.Query()); err != nil || *again != *p {
			t.Fatalf("%q: the link of %+v reads back as %+v (%v)", query, *p, again, err)
		}
	})
}

// CW-25: linkify keeps the content, in order, up to its limit: the
// parts, with what a link's text escapes escaped in the text parts too,
// read as the start of the content so escaped, the whole of it unless
// clipped; it shows at most limit bytes, and makes links of http(s) URLs
// only, whose text holds no control, formatting or separator character.
func FuzzLinkify(f *testing.F) {
	for _, s := range []string{"see https://example.org/x.", "javascript:alert(1)", "http://", "https://a.b/<script>", "xhttps://a http://[::1]:80/", "",
		"https://evil.example/\u202emoc.elgoog", "x https://a.b/\u2066\u200f\xe2\x80 y"} {
		f.Add(s, 64)
	}
	f.Fuzz(func(t *testing.T, content string, limit int) {
		if limit < 0 {
			return
		}
		parts, clipped := linkify(content, limit)
		var b strings.Builder
		shown := 0
		for _, p := range parts {
			b.WriteString(linkText(p.Text))
			shown += len(p.Text)
			if p.URL == "" {
				continue
			}
			u, err := url.Parse(p.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("%q: link to %q", content, p.URL)
			}
			for _, c := range p.Text {
				if c == utf8.RuneError || unicode.In(c, unicode.C, unicode.Z) {
					t.Fatalf("%q: link text %q holds %U", content, p.Text, c)
				}
			}
		}
		whole := linkText(content)
		switch {
		case shown > limit:
			t.Fatalf("%q: %d bytes shown, limit %d", content, shown, limit)
		case !strings.HasPrefix(whole, b.String()):
			t.Fatalf("linkify(%q) reads %q", content, b.String())
		case clipped == (b.String() == whole):
			t.Fatalf("linkify(%q, %d) reads %q, clipped %v", content, limit, b.String(), clipped)
		}
	})
}

// CW-25: the index's `after`, whatever a client sends, opens only to a
// non-negative position the relay seals back to one that opens the same.
func FuzzWebIndexAfter(f *testing.F) {
	seal, err := newIndexSeal(strings.Repeat("ab", 32))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seal.seal(buzz.ChannelPosition{}))
	f.Add(seal.seal(buzz.ChannelPosition{LastMessageAt: 1 << 40, Seq: 1 << 30}))
	f.Add(seal.seal(buzz.ChannelPosition{LastMessageAt: 1<<48 - 1, Seq: 1<<48 - 1}))
	f.Add("AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("57")
	f.Fuzz(func(t *testing.T, after string) {
		pos, err := seal.open(after)
		if err != nil {
			return
		}
		again, err := seal.open(seal.seal(pos))
		if pos.LastMessageAt < 0 || pos.Seq < 0 || err != nil || again != pos {
			t.Fatalf("%q opens to %+v, whose link opens to %+v (%v)", after, pos, again, err)
		}
	})
}

// CW-25: a name from a kind 0 profile, whatever its content, is clipped
// and holds no control or formatting character.
func FuzzProfileName(f *testing.F) {
	f.Add(`{"display_name":"<b>x</b>","name":"y"}`)
	f.Add(`{"name":"\u202eevil\u0000"}`)
	f.Add(`{"name":5}`)
	f.Fuzz(func(t *testing.T, content string) {
		name := profileName(content)
		if utf8.RuneCountInString(name) > nameRunes+1 {
			t.Fatalf("%q: name of %d runes", content, utf8.RuneCountInString(name))
		}
		for _, c := range name {
			if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
				t.Fatalf("%q: name %q holds %U", content, name, c)
			}
		}
	})
}
