package relay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// The web view (CW-25): HTML pages of the open channels for browsers,
// rendered on the server from the same store calls, access rule, page
// cache and limits as `/query`, as an anonymous reader. Event content is
// untrusted text: html/template escapes it in its context, links are made
// only of http(s) URLs, and the Content-Security-Policy lets a page load
// nothing but the relay's own stylesheet.

//go:embed web/*.html web/web.css
var webFiles embed.FS

var (
	webTemplates = template.Must(template.ParseFS(webFiles, "web/*.html"))
	webCSS       = mustReadWeb("web/web.css")
	// webCSSURL names the stylesheet by its content, so that a browser
	// may keep it long and still gets a changed one at once.
	webCSSURL = func() string {
		sum := sha256.Sum256(webCSS)
		return webCSSPath + "?v=" + hex.EncodeToString(sum[:6])
	}()
)

func mustReadWeb(name string) []byte {
	b, err := webFiles.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("embedded %s: %v", name, err))
	}
	return b
}

const (
	webCSSPath = "/web.css"
	// webPageRows is the rows of a channel page and the replies of a
	// thread page.
	webPageRows = 50
	// webChannelBatch is how many channels the index reads at a time, and
	// webChannelScan how many at most per page: a page costs the same
	// however many channels there are, hidden ones included.
	webChannelBatch = 50
	webChannelScan  = 200
	// webProfileBytes bounds the kind 0 profiles one page reads; authors
	// past it are shown by their short npub.
	webProfileBytes = 256 << 10
	// webThreadDepth is how deep below its root a thread page reads:
	// deeper replies are refused at ingest (RL-5).
	webThreadDepth = 100
	// webNameRunes and webAboutRunes bound what a page shows of a display
	// name and a channel's about.
	webNameRunes  = 48
	webAboutRunes = 280

	webCSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	// webCacheControl lets a proxy or browser keep a page briefly: pages
	// change with every message, and a reader reloads.
	webCacheControl = "public, max-age=15"
)

// webRowKinds are the kinds a channel page shows as rows: chat messages,
// as the reference client asks for.
var webRowKinds = []int{9}

// The outcomes of a web request that are not a page.
var (
	errWebNotFound  = errors.New("not found")
	errWebBadCursor = errors.New("bad cursor")
)

// isWebPath reports whether path is one of the web view's.
func isWebPath(path string) bool {
	return path == "/" || path == webCSSPath || strings.HasPrefix(path, "/c/")
}

type webRouteKind int

const (
	routeIndex webRouteKind = iota
	routeCSS
	routeChannel
	routeThread
)

// webRoute is a parsed web view path.
type webRoute struct {
	kind    webRouteKind
	channel string // canonical channel id
	event   string // lowercase hex event id
}

// parseWebPath reads `/`, `/web.css`, `/c/<channel id>` and
// `/c/<channel id>/t/<event id>`; false for anything else.
func parseWebPath(path string) (webRoute, bool) {
	switch path {
	case "/":
		return webRoute{kind: routeIndex}, true
	case webCSSPath:
		return webRoute{kind: routeCSS}, true
	}
	rest, ok := strings.CutPrefix(path, "/c/")
	if !ok {
		return webRoute{}, false
	}
	chPart, eventPart, isThread := strings.Cut(rest, "/t/")
	ch, ok := nipcw.ParseChannelID(chPart)
	if !ok {
		return webRoute{}, false
	}
	if !isThread {
		return webRoute{kind: routeChannel, channel: ch}, true
	}
	if !buzz.IsHex64(eventPart) {
		return webRoute{}, false
	}
	return webRoute{kind: routeThread, channel: ch, event: strings.ToLower(eventPart)}, true
}

// parseWebCursor reads the `at` and `id` query parameters: a position in
// an event order, both or neither. nil, nil for neither.
func parseWebCursor(q url.Values) (*buzz.Position, error) {
	at, id := q.Get("at"), q.Get("id")
	if at == "" && id == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil || n < 0 || !buzz.IsHex64(id) {
		return nil, errWebBadCursor
	}
	return &buzz.Position{CreatedAt: n, ID: strings.ToLower(id)}, nil
}

// webCursorQuery is the query string of a link to the page at p.
func webCursorQuery(p *buzz.Position) string {
	return "?at=" + strconv.FormatInt(p.CreatedAt, 10) + "&id=" + p.ID
}

// serveWeb answers a GET or HEAD of the web view. A page costs what a
// `/query` request costs and is limited the same way: it counts as a
// connection of its client IP, takes a token of the `/query` rate of that
// IP and a read slot, and holds what it reads within the memory budget
// the answers share (RL-27, RL-27a).
func (r *Relay) serveWeb(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		webText(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	route, ok := parseWebPath(req.URL.Path)
	if !ok {
		r.webNotFound(w)
		return
	}
	if route.kind == routeCSS {
		h.Set("Content-Type", "text/css; charset=utf-8")
		h.Set("Cache-Control", "public, max-age=86400")
		if _, err := w.Write(webCSS); err != nil {
			r.log.Debug("writing the web stylesheet", "err", err)
		}
		return
	}
	limited, leave, ok := r.admitRequest(w, req, func(status int, msg string) { webText(w, status, msg) })
	if !ok {
		return
	}
	defer leave()
	ctx, cancel := context.WithTimeout(req.Context(), queryTimeout)
	defer cancel()
	out := &response{budget: r.queryMemory}
	defer out.release()
	start := time.Now()
	name, page, err := r.webPageInSlot(ctx, limited, route, req.URL.Query(), out)
	since(r.metrics.queryHTTP, start)
	var body bytes.Buffer
	if err == nil {
		err = webTemplates.ExecuteTemplate(&body, name, page)
	}
	switch {
	case err == nil:
	case errors.Is(err, errWebNotFound):
		r.webNotFound(w)
		return
	case errors.Is(err, errWebBadCursor):
		webText(w, http.StatusBadRequest, "bad cursor: at and id must be a timestamp and a 64-hex event id, both or neither")
		return
	case errors.Is(err, errQueryBusy) && ctx.Err() == nil:
		r.metrics.limited(limitBusy)
		h.Set("Retry-After", "1")
		webText(w, http.StatusTooManyRequests, errBusy)
		return
	default:
		if ctx.Err() == nil {
			r.log.Error("web page failed", "path", req.URL.Path, "err", err)
		}
		webText(w, http.StatusInternalServerError, errInternal)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", webCacheControl)
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(queryWriteTimeout)); err != nil {
		r.log.Warn("bounding the time to write a web page", "err", err)
	}
	if _, err := w.Write(body.Bytes()); err != nil {
		r.log.Debug("writing web page", "err", err)
	}
}

// webPageInSlot is webPage in one of the relay's read slots, shared with
// REQ, COUNT and `/query`; errQueryBusy when none comes free in time
// (RL-27a).
func (r *Relay) webPageInSlot(ctx context.Context, ip netip.Addr, route webRoute, q url.Values, out *response) (string, *webView, error) {
	if !r.reads.acquire(ctx, ip) {
		return "", nil, errQueryBusy
	}
	defer r.reads.release(ip)
	return r.webPage(ctx, route, q, out)
}

// webPage reads what route shows and names its template.
func (r *Relay) webPage(ctx context.Context, route webRoute, q url.Values, out *response) (string, *webView, error) {
	v := &webView{Relay: r.cfg.Info.Name, Description: r.cfg.Info.Description, CSS: webCSSURL}
	switch route.kind {
	case routeIndex:
		v.Title = r.cfg.Info.Name
		return "index.html", v, r.webIndex(ctx, q, v)
	case routeChannel:
		return "channel.html", v, r.webChannel(ctx, route, q, out, v)
	default:
		return "thread.html", v, r.webThread(ctx, route, q, out, v)
	}
}

// webNotFound is the one answer to a page that is not there: a private
// channel, a nonexistent one and a mistyped path alike (CW-25, RL-13).
func (r *Relay) webNotFound(w http.ResponseWriter) {
	var body bytes.Buffer
	if err := webTemplates.ExecuteTemplate(&body, "notfound.html", &webView{Title: "Not found", Relay: r.cfg.Info.Name, CSS: webCSSURL}); err != nil {
		r.log.Error("web page failed", "page", "not found", "err", err)
		webText(w, http.StatusInternalServerError, errInternal)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", webCacheControl)
	w.WriteHeader(http.StatusNotFound)
	if _, err := w.Write(body.Bytes()); err != nil {
		r.log.Debug("writing the web 404 page", "err", err)
	}
}

// webText answers with a line of plain text.
func webText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// webView is what a page template shows.
type webView struct {
	Title, Relay, Description string
	CSS                       string
	// Channels and More are the index: the channels an anonymous reader
	// can read, and the link to the next page of them.
	Channels []webChannelItem
	More     string
	// Channel is the channel of a channel or thread page.
	Channel *webChannelItem
	// Rows and Older are a channel page: its rows, newest first, and the
	// link to the page from its next_cursor.
	Rows  []*webRow
	Older string
	// Root is a thread page's root, its replies nested below it, and
	// Later the link to the replies that follow.
	Root  *webRow
	Later string
}

type webChannelItem struct {
	Name, About, URL string
	LastActive       *webTime
}

type webTime struct {
	// UTC is the time in UTC, ISO its machine form, Ago how long before
	// the page it was.
	UTC, ISO, Ago string
}

type webRow struct {
	ID        string
	Author    webAuthor
	At        webTime
	Content   []contentPart
	Edited    bool
	Reactions int
	Replies   int64
	// Thread links to the row's thread page.
	Thread string
	// ReplyTo is the short id of the parent of a reply whose parent is on
	// an earlier thread page.
	ReplyTo  string
	Depth    int
	Children []*webRow
}

type webAuthor struct {
	// Name is the kind 0 display name, or else the short npub.
	Name, NPub string
}

// webIndex lists the channels an anonymous reader can read, in store
// order, from where the link of the page before ended (`after`).
func (r *Relay) webIndex(ctx context.Context, q url.Values, v *webView) error {
	var after int64
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return errWebBadCursor
		}
		after = n
	}
	c := r.store.Community()
	now := r.now()
	more := true
	for examined := 0; more && examined < webChannelScan && len(v.Channels) < webPageRows; {
		batch, err := r.store.ChannelsAfter(ctx, after, webChannelBatch)
		if err != nil {
			return err
		}
		more = len(batch) == webChannelBatch
		for _, a := range batch {
			after = a.Seq
			examined++
			ch := c.ChannelBySeq(a.Seq)
			if !c.CanRead(buzz.Anonymous, ch) {
				continue
			}
			item := webChannelItem{Name: webChannelName(ch), About: clip(ch.About, webAboutRunes), URL: "/c/" + ch.H}
			if a.LastEventAt > 0 {
				t := newWebTime(a.LastEventAt, now)
				item.LastActive = &t
			}
			v.Channels = append(v.Channels, item)
			if len(v.Channels) == webPageRows {
				more = true
				break
			}
		}
	}
	if more {
		v.More = "/?after=" + strconv.FormatInt(after, 10)
	}
	return nil
}

func webChannelName(ch *buzz.Channel) string {
	if name := clip(ch.Name, webNameRunes); name != "" {
		return name
	}
	return ch.H
}

// webReadable is the channel h when an anonymous reader may read it,
// errWebNotFound otherwise (RL-13).
func (r *Relay) webReadable(h string) (*webChannelItem, error) {
	c := r.store.Community()
	ch := c.Channel(h)
	if !c.CanRead(buzz.Anonymous, ch) {
		return nil, errWebNotFound
	}
	return &webChannelItem{Name: webChannelName(ch), About: clip(ch.About, webAboutRunes), URL: "/c/" + ch.H}, nil
}

// webChannel reads one window page as `/query` does (CW-9..CW-19): the
// same store call, through the page cache, within the same byte bounds.
func (r *Relay) webChannel(ctx context.Context, route webRoute, q url.Values, out *response, v *webView) error {
	ch, err := r.webReadable(route.channel)
	if err != nil {
		return err
	}
	v.Channel = ch
	v.Title = ch.Name + " · " + r.cfg.Info.Name
	before, err := parseWebCursor(q)
	if err != nil {
		return err
	}
	wq := buzz.WindowQuery{
		Channel:    route.channel,
		Kinds:      webRowKinds,
		Limit:      webPageRows,
		Before:     before,
		Projection: r.store.Community().ThreadRepliesInChannel,
		Summaries:  true,
		Aux:        true,
		Viewer:     buzz.Anonymous,
	}
	page, err := readBounded(ctx, out, func(maxBytes int) (*buzz.WindowPage, error) {
		wq.MaxBytes = maxBytes
		return r.store.Window(ctx, wq)
	})
	if err != nil {
		return err
	}
	if page.Unreadable {
		return errWebNotFound // access changed since webReadable
	}
	rows, err := decodeRaw(page.Rows)
	if err != nil {
		return err
	}
	aux, err := decodeRaw(page.Aux)
	if err != nil {
		return err
	}
	replies := make(map[string]int64, len(page.Summaries))
	for _, sm := range page.Summaries {
		replies[sm.ID] = sm.ReplyCount
	}
	names, err := r.webProfiles(ctx, rows, out)
	if err != nil {
		return err
	}
	b := webRowBuilder{channel: route.channel, now: r.now(), names: names, aux: indexAux(aux), replies: replies}
	for _, ev := range rows {
		v.Rows = append(v.Rows, b.row(ev))
	}
	if page.HasMore && page.Next != nil {
		v.Older = "/c/" + route.channel + webCursorQuery(page.Next)
	}
	return nil
}

// webThread reads a thread as `/query` does (RL-20): its root, then the
// replies below it oldest first, webPageRows a page, with their aux
// closure; the replies are nested under their parents.
func (r *Relay) webThread(ctx context.Context, route webRoute, q url.Values, out *response, v *webView) error {
	ch, err := r.webReadable(route.channel)
	if err != nil {
		return err
	}
	v.Channel = ch
	v.Title = "Thread in " + ch.Name + " · " + r.cfg.Info.Name
	after, err := parseWebCursor(q)
	if err != nil {
		return err
	}
	if err := out.reserve(ctx, firstGrant); err != nil {
		return err
	}
	found, _, err := r.store.QueryBounded(ctx, nostr.Filter{IDs: []string{route.event}, Limit: 1}, buzz.Anonymous, "", firstGrant)
	if err != nil {
		return err
	}
	if len(found) != 1 {
		return errWebNotFound
	}
	root := found[0]
	if h, err := buzz.ChannelOf(root.Tags); err != nil || h != route.channel {
		return errWebNotFound
	}
	tq := buzz.ThreadQuery{Root: root.ID, DepthLimit: webThreadDepth, Limit: webPageRows + 1, After: after, Aux: true, Viewer: buzz.Anonymous}
	page, err := readBounded(ctx, out, func(maxBytes int) (*buzz.ThreadPage, error) {
		tq.MaxBytes = maxBytes
		return r.store.Thread(ctx, tq)
	})
	if err != nil {
		return err
	}
	replies, err := decodeRaw(page.Replies)
	if err != nil {
		return err
	}
	if len(replies) > webPageRows {
		replies = replies[:webPageRows]
		last := replies[len(replies)-1]
		v.Later = "/c/" + route.channel + "/t/" + root.ID + webCursorQuery(&buzz.Position{CreatedAt: int64(last.CreatedAt), ID: last.ID})
	}
	aux, err := decodeRaw(page.Aux)
	if err != nil {
		return err
	}
	all := append([]*nostr.Event{root}, replies...)
	ids := make([]string, len(all))
	for i, ev := range all {
		ids[i] = ev.ID
	}
	sums, err := r.store.Summaries(ctx, ids)
	if err != nil {
		return err
	}
	counts := make(map[string]int64, len(sums))
	for _, sm := range sums {
		counts[sm.ID] = sm.ReplyCount
	}
	names, err := r.webProfiles(ctx, all, out)
	if err != nil {
		return err
	}
	b := webRowBuilder{channel: route.channel, now: r.now(), names: names, aux: indexAux(aux), replies: counts}
	v.Root = b.row(root)
	byID := map[string]*webRow{root.ID: v.Root}
	for _, ev := range replies {
		row := b.row(ev)
		parent := byID[buzz.ParseThreadTags(ev.Tags).Parent]
		if parent == nil {
			// Its parent is on an earlier page: shown below the root.
			row.ReplyTo = shortID(buzz.ParseThreadTags(ev.Tags).Parent)
			parent = v.Root
		}
		row.Depth = parent.Depth + 1
		parent.Children = append(parent.Children, row)
		byID[ev.ID] = row
	}
	return nil
}

func decodeRaw(raws []buzz.RawEvent) ([]*nostr.Event, error) {
	out := make([]*nostr.Event, len(raws))
	for i, raw := range raws {
		ev := &nostr.Event{}
		if err := ev.UnmarshalJSON(raw.JSON); err != nil {
			return nil, fmt.Errorf("decode stored event %s: %w", raw.ID, err)
		}
		out[i] = ev
	}
	return out, nil
}

// webProfiles reads the display names of the authors of evs from their
// kind 0 profiles: one query for the page, bounded in bytes, as an
// anonymous reader.
func (r *Relay) webProfiles(ctx context.Context, evs []*nostr.Event, out *response) (map[string]string, error) {
	seen := make(map[string]bool, len(evs))
	authors := make([]string, 0, len(evs))
	for _, ev := range evs {
		if !seen[ev.PubKey] {
			seen[ev.PubKey] = true
			authors = append(authors, ev.PubKey)
		}
	}
	names := make(map[string]string, len(authors))
	if len(authors) == 0 {
		return names, nil
	}
	if err := out.reserve(ctx, webProfileBytes); err != nil {
		return nil, err
	}
	f := nostr.Filter{Kinds: []int{0}, Authors: authors, Limit: len(authors)}
	profiles, _, err := r.store.QueryBounded(ctx, f, buzz.Anonymous, "", webProfileBytes)
	if err != nil {
		return nil, err
	}
	for _, p := range profiles {
		if name := profileName(p.Content); name != "" {
			names[p.PubKey] = name
		}
	}
	return names, nil
}

// profileName is the name a kind 0 profile's content gives: display_name,
// else name, cleaned of control and formatting characters and clipped;
// "" when it gives none.
func profileName(content string) string {
	var p struct {
		DisplayName any `json:"display_name"`
		Name        any `json:"name"`
	}
	if json.Unmarshal([]byte(content), &p) != nil {
		return ""
	}
	for _, n := range []any{p.DisplayName, p.Name} {
		if s, ok := n.(string); ok {
			if s = clip(s, webNameRunes); s != "" {
				return s
			}
		}
	}
	return ""
}

// clip is s without control and formatting characters (bidi overrides
// among them, which would turn the text around it), without surrounding
// space, and at most n runes.
func clip(s string, n int) string {
	var b strings.Builder
	runes := 0
	for _, c := range s {
		if c == utf8.RuneError || unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			c = ' '
		}
		if runes == n {
			b.WriteString("…")
			break
		}
		b.WriteRune(c)
		runes++
	}
	return strings.TrimSpace(b.String())
}

// webAux is a page's aux closure by target: reactions counted, and the
// newest edit of each author.
type webAux struct {
	reactions map[string]int
	edits     map[[2]string]*nostr.Event // target id, author
}

func indexAux(aux []*nostr.Event) webAux {
	a := webAux{reactions: map[string]int{}, edits: map[[2]string]*nostr.Event{}}
	for _, ev := range aux {
		switch ev.Kind {
		case buzz.KindReaction:
			a.reactions[strings.ToLower(buzz.ScopeTarget(ev))]++
		case buzz.KindEdit:
			tag := ev.Tags.Find("e")
			if tag == nil {
				continue
			}
			k := [2]string{strings.ToLower(tag[1]), ev.PubKey}
			if old := a.edits[k]; old == nil || ev.CreatedAt > old.CreatedAt {
				a.edits[k] = ev
			}
		}
	}
	return a
}

// webRowBuilder makes the rows of one page.
type webRowBuilder struct {
	channel string
	now     time.Time
	names   map[string]string
	aux     webAux
	replies map[string]int64
}

func (b webRowBuilder) row(ev *nostr.Event) *webRow {
	content := ev.Content
	edit := b.aux.edits[[2]string{ev.ID, ev.PubKey}]
	if edit != nil {
		content = edit.Content
	}
	row := &webRow{
		ID:        ev.ID,
		Author:    webAuthorOf(ev.PubKey, b.names),
		At:        newWebTime(int64(ev.CreatedAt), b.now),
		Content:   linkify(content),
		Edited:    edit != nil,
		Reactions: b.aux.reactions[ev.ID],
		Replies:   b.replies[ev.ID],
		Thread:    "/c/" + b.channel + "/t/" + ev.ID,
	}
	return row
}

func webAuthorOf(pubkey string, names map[string]string) webAuthor {
	npub, err := nip19.EncodePublicKey(pubkey)
	if err != nil {
		npub = pubkey
	}
	short := npub
	if len(short) > 12 {
		short = short[:12] + "…"
	}
	if name := names[pubkey]; name != "" {
		return webAuthor{Name: name, NPub: npub}
	}
	return webAuthor{Name: short, NPub: npub}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func newWebTime(unix int64, now time.Time) webTime {
	t := time.Unix(unix, 0).UTC()
	return webTime{UTC: t.Format("2006-01-02 15:04 UTC"), ISO: t.Format(time.RFC3339), Ago: ago(now.Sub(t))}
}

// ago says how long d is, roughly, as a reader wants it next to a time.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 24*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	case d < 60*24*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " d ago"
	case d < 2*365*24*time.Hour:
		return strconv.Itoa(int(d/(30*24*time.Hour))) + " months ago"
	}
	return strconv.Itoa(int(d/(365*24*time.Hour))) + " years ago"
}

// contentPart is a piece of message content: text, or an http(s) URL
// that the page makes a link.
type contentPart struct {
	Text string
	URL  string
}

// linkify splits content into text and http(s) URLs. A URL starts with
// http:// or https:// and runs to the next space or quote-like
// character, without trailing punctuation; anything else (javascript:,
// data:, ...) stays text. Linear in the content.
func linkify(content string) []contentPart {
	var parts []contentPart
	text := 0
	for i := 0; i < len(content); {
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
			if start > text {
				parts = append(parts, contentPart{Text: content[text:start]})
			}
			parts = append(parts, contentPart{Text: candidate, URL: u.String()})
			text = end
		}
		i = max(end, start+1)
	}
	if text < len(content) {
		parts = append(parts, contentPart{Text: content[text:]})
	}
	return parts
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
