package web

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// contentPart is a piece of message content: text, or an http(s) URL
// that the page makes a link, Text then the URL as shown (linkText).
type contentPart struct {
	Text string
	URL  string
}

// linkify splits content into text and http(s) URLs, up to limit bytes
// of text shown; clipped says content goes on past them. A URL starts
// with http:// or https:// and runs to the next space or quote-like
// character, without trailing punctuation; anything else (javascript:,
// data:, ...) stays text. Linear in what it shows.
func linkify(content string, limit int) (parts []contentPart, clipped bool) {
	shown := 0
	// text appends s as text; false when the limit cut it.
	text := func(s string) bool {
		if shown+len(s) > limit {
			cut := limit - shown
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			if cut > 0 {
				parts = append(parts, contentPart{Text: s[:cut]})
			}
			shown = limit
			return false
		}
		if s != "" {
			parts = append(parts, contentPart{Text: s})
			shown += len(s)
		}
		return true
	}
	plain := 0
	for i := 0; i < len(content) && i-plain+shown <= limit; {
		j := nextURLStart(content[i:])
		if j < 0 {
			break
		}
		start := i + j
		end := start
		for end < len(content) && !endsURL(content[end]) {
			end++
		}
		for end > start && strings.IndexByte(".,;:!?)]}'", content[end-1]) >= 0 {
			end--
		}
		candidate := content[start:end]
		if u, err := url.Parse(candidate); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			if !text(content[plain:start]) {
				return parts, true
			}
			label := linkText(candidate)
			if shown+len(label) > limit {
				// A link cut short would lead elsewhere: the rest is text.
				return parts, !text(content[start:])
			}
			parts = append(parts, contentPart{Text: label, URL: u.String()})
			shown += len(label)
			plain = end
		}
		i = max(end, start+1)
	}
	return parts, !text(content[plain:])
}

// linkText is a URL as a link shows it: every control, formatting
// (bidi overrides and isolates, U+200E/F among them) and separator
// character, and every byte that is not UTF-8, percent-escaped, so that
// the text of a link reads as the address it leads to.
func linkText(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); {
		c, size := utf8.DecodeRuneInString(u[i:])
		if (c == utf8.RuneError && size == 1) || unicode.In(c, unicode.C, unicode.Z) {
			for _, x := range []byte(u[i : i+size]) {
				fmt.Fprintf(&b, "%%%02X", x)
			}
		} else {
			b.WriteString(u[i : i+size])
		}
		i += size
	}
	return b.String()
}

// nextURLStart is the index in s of the next "http://" or "https://", -1
// when there is none.
func nextURLStart(s string) int {
	for off := 0; ; {
		k := strings.Index(s[off:], "http")
		if k < 0 {
			return -1
		}
		at := off + k
		if strings.HasPrefix(s[at:], "http://") || strings.HasPrefix(s[at:], "https://") {
			return at
		}
		off = at + 4
	}
}

// endsURL reports whether c cannot be part of a URL in running text.
func endsURL(c byte) bool {
	return c <= ' ' || c == '"' || c == '<' || c == '>' || c == '`' || c == '\\' || c == 0x7f
}
