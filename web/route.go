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
	routeChannel
	routeThread
)

// route is a parsed web view path.
type route struct {
	kind    routeKind
	channel string // canonical channel id
	event   string // lowercase hex event id
}

// parsePath reads `/`, `/web.css`, `/c/<channel id>` and
// `/c/<channel id>/t/<event id>`; false for anything else.
func parsePath(path string) (route, bool) {
	switch path {
	case "/":
		return route{kind: routeIndex}, true
	case CSSPath:
		return route{kind: routeCSS}, true
	}
	rest, ok := strings.CutPrefix(path, "/c/")
	if !ok {
		return route{}, false
	}
	chPart, eventPart, isThread := strings.Cut(rest, "/t/")
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

// cursorQuery is the query string of a link to the page at p.
func cursorQuery(p *buzz.Position) string {
	return "?at=" + strconv.FormatInt(p.CreatedAt, 10) + "&id=" + p.ID
}
