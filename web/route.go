package web

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

type routeKind int

const (
	routeIndex routeKind = iota
	routeCSS
	routeScript
	routeChannel
	routeThread
)

// route is a parsed web view path.
type route struct {
	kind    routeKind
	channel string // canonical channel id
	event   string // lowercase hex event id
	script  string // an embedded script's name
}

// parsePath reads `/`, `/web.css`, `/web/<script>.js`, `/c/<channel id>` and
// `/c/<channel id>/t/<event id>`, and `/c/` with the channel in the query
// (`h`, and `t` for a thread's event: see pageLink); false for anything
// else.
func parsePath(path string, q url.Values) (route, bool) {
	switch path {
	case "/":
		return route{kind: routeIndex}, true
	case CSSPath:
		return route{kind: routeCSS}, true
	}
	if name, ok := strings.CutPrefix(path, ScriptPrefix); ok {
		name, ok = strings.CutSuffix(name, ".js")
		if _, embedded := scripts[name]; !ok || !embedded {
			return route{}, false
		}
		return route{kind: routeScript, script: name}, true
	}
	rest, ok := strings.CutPrefix(path, "/c/")
	if !ok {
		return route{}, false
	}
	chPart, eventPart, isThread := strings.Cut(rest, "/t/")
	if rest == "" {
		chPart, eventPart, isThread = q.Get("h"), q.Get("t"), q.Has("t")
	}
	ch, ok := nipcw.ParseChannelID(chPart)
	if !ok {
		return route{}, false
	}
	if !isThread {
		return route{kind: routeChannel, channel: ch}, true
	}
	if !nipcw.IsHex64(eventPart) {
		return route{}, false
	}
	return route{kind: routeThread, channel: ch, event: strings.ToLower(eventPart)}, true
}

// pageLink is the address of the window page of channel ch, or with an
// event that of its thread page, continuing after p when p is not nil.
// The channel goes in the path, percent-encoded (a NIP-29 group id never
// needs it: its characters are all unreserved, CW-2), except the group ids
// `.` and `..`: as a path segment, even percent-encoded, a browser takes
// them for the current and the parent directory (RFC 3986 5.2.4, the URL
// Standard) and would ask for another page, so they go in the query, as
// `h`, with the thread's event as `t`.
func pageLink(ch, event string, p *buzz.Position) string {
	q := url.Values{}
	path := "/c/" + url.PathEscape(ch)
	switch {
	case ch == "." || ch == "..":
		path = "/c/"
		q.Set("h", ch)
		if event != "" {
			q.Set("t", event)
		}
	case event != "":
		path += "/t/" + event
	}
	if p != nil {
		q.Set("at", strconv.FormatInt(p.CreatedAt, 10))
		q.Set("id", p.ID)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// parseCursor reads the `at` and `id` query parameters: a position in an
// event order, both or neither. nil, nil for neither.
func parseCursor(q url.Values) (*buzz.Position, error) {
	at, id := q.Get("at"), q.Get("id")
	if at == "" && id == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil || n < 0 || !nipcw.IsHex64(id) {
		return nil, errBadCursor
	}
	return &buzz.Position{CreatedAt: n, ID: strings.ToLower(id)}, nil
}
