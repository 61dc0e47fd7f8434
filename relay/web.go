package relay

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
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
	// webRowTextBytes bounds the text a row shows of its content, and
	// webRootTextBytes what a thread page shows of its own message; past
	// them the content is clipped, which bounds a page's HTML
	// (webPageMaxBytes) whatever max_event_bytes is.
	webRowTextBytes  = 8 << 10
	webRootTextBytes = 64 << 10
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

// isWebRequest reports whether req asks for one of the web view's pages:
// `/` only from a browser (`Accept: text/html`, CW-25), so that a client
// asking for anything (curl's `*/*`) still gets the line of text.
func isWebRequest(req *http.Request) bool {
	switch path := req.URL.Path; {
	case path == "/":
		return strings.Contains(strings.ToLower(req.Header.Get("Accept")), "text/html")
	default:
		return path == webCSSPath || strings.HasPrefix(path, "/c/")
	}
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
	if !nipcw.IsHex64(eventPart) {
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
	if err != nil || n < 0 || !nipcw.IsHex64(id) {
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
	mem := &webMemory{budget: r.queryMemory, client: limited}
	defer mem.release()
	start := time.Now()
	name, page, err := r.webPageInSlot(ctx, limited, route, req.URL.Query(), mem)
	since(r.metrics.queryHTTP, start)
	body := &webPageWriter{ctx: ctx, mem: mem}
	if err == nil {
		err = webTemplates.ExecuteTemplate(body, name, page)
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
	if err := body.writeTo(w); err != nil {
		r.log.Debug("writing web page", "err", err)
	}
}

// webMemory is what one page holds of the memory budget the answers
// share, in its client's share (RL-27a): what each of its reads holds,
// the events decoded from them and the rendered page, each reserved
// before it is held. What the reads and the events hold is given back
// once the page is rendered, the page's own chunks as they are written.
// It is a response that never settles: a page writes nothing to its
// buffer, and settling would give back all it holds.
type webMemory = response

// webRead is readBounded for a page: the read is bounded by a response of
// its own, whose settling after a page too large gives back only that
// read's own bound, never what the page's earlier reads hold. Once read,
// the reservation is made what the read holds (size) and stays with the
// page.
func webRead[T any](ctx context.Context, mem *webMemory, read func(maxBytes int) (T, error), size func(T) int) (T, error) {
	one := &response{budget: mem.budget, client: mem.client}
	defer func() { mem.reserved += one.reserved }()
	page, err := readBounded(ctx, one, read)
	if err != nil {
		return page, err
	}
	// The store read no more than the bound: what it read is at most
	// what is reserved.
	if spare := one.reserved - int64(size(page)); spare > 0 {
		mem.budget.give(mem.client, spare)
		one.reserved -= spare
	}
	return page, nil
}

// rawSize is the bytes of the JSON of evs.
func rawSize(evs ...[]buzz.RawEvent) int {
	n := 0
	for _, list := range evs {
		for _, ev := range list {
			n += len(ev.JSON)
		}
	}
	return n
}

const (
	// webPageChunk is the unit in which a rendered page is reserved and
	// held: a page is not copied as it grows.
	webPageChunk = 32 << 10
	// webPageMaxBytes bounds a rendered page. Content is clipped
	// (webRowTextBytes, webRootTextBytes) and html/template writes a byte
	// of it as at most 5 (&amp; &#34; ...), twice for a URL (its text and
	// its href), so the largest thread page, 50 replies and a root, is
	// under 5 MiB (TestWebPageBounded builds it).
	webPageMaxBytes = 6 << 20
)

var errWebPageTooLarge = errors.New("web page: rendered page exceeds its bound")

// webPageWriter is the rendered page, held in chunks of webPageChunk
// bytes, each reserved from the page's memory before it is filled.
type webPageWriter struct {
	ctx    context.Context
	mem    *webMemory
	chunks [][]byte
}

func (p *webPageWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		last := len(p.chunks) - 1
		if last < 0 || len(p.chunks[last]) == webPageChunk {
			if (last+2)*webPageChunk > webPageMaxBytes {
				return written, errWebPageTooLarge
			}
			if err := p.mem.reserve(p.ctx, webPageChunk); err != nil {
				return written, err
			}
			p.chunks = append(p.chunks, make([]byte, 0, webPageChunk))
			last++
		}
		n := min(len(b), webPageChunk-len(p.chunks[last]))
		p.chunks[last] = append(p.chunks[last], b[:n]...)
		b = b[n:]
		written += n
	}
	return written, nil
}

// writeTo writes the page to w. The page is rendered: what its reads and
// their events held is garbage, and is given back first; each chunk is
// given back once written, so that a reader slow to take a page holds no
// more than what it has not read yet.
func (p *webPageWriter) writeTo(w io.Writer) error {
	for len(p.chunks) > 0 {
		p.mem.keep(int64(len(p.chunks)) * webPageChunk)
		if _, err := w.Write(p.chunks[0]); err != nil {
			return fmt.Errorf("write web page: %w", err)
		}
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
	}
	p.mem.keep(0)
	return nil
}

// webPageInSlot is webPage in one of the relay's read slots, shared with
// REQ, COUNT and `/query`; errQueryBusy when none comes free in time
// (RL-27a).
func (r *Relay) webPageInSlot(ctx context.Context, ip netip.Prefix, route webRoute, q url.Values, mem *webMemory) (string, *webView, error) {
	if !r.reads.acquire(ctx, ip) {
		return "", nil, errQueryBusy
	}
	defer r.reads.release(ip)
	return r.webPage(ctx, route, q, mem)
}

// webPage reads what route shows and names its template.
func (r *Relay) webPage(ctx context.Context, route webRoute, q url.Values, mem *webMemory) (string, *webView, error) {
	v := &webView{Relay: r.cfg.Info.Name, Description: r.cfg.Info.Description, CSS: webCSSURL}
	switch route.kind {
	case routeIndex:
		v.Title = r.cfg.Info.Name
		return "index.html", v, r.webIndex(ctx, q, v)
	case routeChannel:
		return "channel.html", v, r.webChannel(ctx, route, q, mem, v)
	default:
		return "thread.html", v, r.webThread(ctx, route, q, mem, v)
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
	ID      string
	Author  webAuthor
	At      webTime
	Content []contentPart
	// Clipped says Content is the start of a longer content, and Whole
	// links to the page that shows more of it, the row's thread page
	// ("" on that page).
	Clipped bool
	Whole   string
	// Deleted stands for a thread's deleted root, of which nothing is
	// shown but the place.
	Deleted   bool
	Edited    bool
	Reactions int
	// Replies is the whole thread below the row (descendant_count), as
	// chat clients badge a thread, not its direct replies only.
	Replies int64
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

// webIndex lists the channels an anonymous reader can read by their last
// message, newest first, as chat clients list them, from where the link
// of the page before ended (`after`). The store lists open channels only;
// it reads one channel past a full page, so that a page links on only
// when something follows; when webChannelScan ends the page first (the
// relay's reads need authentication, say), it links on from the last
// channel examined. The link's position is sealed (webIndexSeal), so that
// no link shows a channel's store number, whose gaps would count the
// private channels.
func (r *Relay) webIndex(ctx context.Context, q url.Values, v *webView) error {
	seal, err := r.indexSeal()
	if err != nil {
		return err
	}
	var after *buzz.ChannelPosition
	if s := q.Get("after"); s != "" {
		p, err := seal.open(s)
		if err != nil {
			return err
		}
		after = &p
	}
	c := r.store.Community()
	now := r.now()
	var lastShown buzz.ChannelPosition
	more, full := true, false
	for examined := 0; more && !full && examined < webChannelScan; {
		batch, err := r.store.ChannelsByActivity(ctx, after, webChannelBatch)
		if err != nil {
			return err
		}
		more = len(batch) == webChannelBatch
		for _, a := range batch {
			p := a.Position()
			after = &p
			examined++
			ch := c.ChannelBySeq(a.Seq)
			if !c.CanRead(buzz.Anonymous, ch) {
				continue
			}
			if len(v.Channels) == webPageRows {
				// One past the page: the page links on after its last.
				full, more, after = true, true, &lastShown
				break
			}
			item := webChannelItem{Name: webChannelName(ch), About: clip(ch.About, webAboutRunes), URL: "/c/" + ch.H}
			if a.LastMessageAt > 0 {
				t := newWebTime(a.LastMessageAt, now)
				item.LastActive = &t
			}
			v.Channels = append(v.Channels, item)
			lastShown = p
		}
	}
	if more && after != nil {
		v.More = "/?after=" + seal.seal(*after)
	}
	return nil
}

// webIndexSeal turns an index position into the `after` of a link and
// back: the position in a block of AES under a key derived from the
// relay's key, a quarter of it zeros that a forged or altered link fails
// to decrypt to. The same position gives the same link, which a cache may
// keep.
type webIndexSeal struct{ block cipher.Block }

// indexSeal is the relay's index seal.
func (r *Relay) indexSeal() (webIndexSeal, error) {
	mac := hmac.New(sha256.New, []byte(r.cfg.Key))
	mac.Write([]byte("buzz-lite web index cursor")) // a hash's Write never fails
	block, err := aes.NewCipher(mac.Sum(nil)[:16])
	if err != nil {
		return webIndexSeal{}, fmt.Errorf("web index cursor key: %w", err)
	}
	return webIndexSeal{block: block}, nil
}

// A sealed position is its last message's time and its channel's store
// number, 6 bytes each (any created_at the relay accepts, any store
// number), then 4 zero bytes.
const webSealField = 6

func (s webIndexSeal) seal(pos buzz.ChannelPosition) string {
	var plain, sealed [aes.BlockSize]byte
	put48(plain[:webSealField], pos.LastMessageAt)
	put48(plain[webSealField:2*webSealField], pos.Seq)
	s.block.Encrypt(sealed[:], plain[:])
	return base64.RawURLEncoding.EncodeToString(sealed[:])
}

// open is the position sealed in after; errWebBadCursor when after is
// not a link the relay made.
func (s webIndexSeal) open(after string) (buzz.ChannelPosition, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(after)
	if err != nil || len(sealed) != aes.BlockSize {
		return buzz.ChannelPosition{}, errWebBadCursor
	}
	var plain [aes.BlockSize]byte
	s.block.Decrypt(plain[:], sealed)
	if binary.BigEndian.Uint32(plain[2*webSealField:]) != 0 {
		return buzz.ChannelPosition{}, errWebBadCursor
	}
	return buzz.ChannelPosition{LastMessageAt: get48(plain[:webSealField]), Seq: get48(plain[webSealField : 2*webSealField])}, nil
}

// put48 writes the low 48 bits of v to b, big-endian.
func put48(b []byte, v int64) {
	for i := range webSealField {
		b[i] = byte(v >> (8 * (webSealField - 1 - i)))
	}
}

// get48 reads what put48 wrote.
func get48(b []byte) int64 {
	var v int64
	for i := range webSealField {
		v = v<<8 | int64(b[i])
	}
	return v
}

func webChannelName(ch *buzz.Channel) string {
	if name := clip(ch.Name, webNameRunes); name != "" {
		return name
	}
	return ch.H
}

// webReadable is the channel h when an anonymous reader may read it,
// errWebNotFound otherwise (RL-13).
func (r *Relay) webReadable(ctx context.Context, h string) (*webChannelItem, error) {
	c := r.communityFor(ctx, func(c *buzz.Community) bool { return c.CanReadChannel(buzz.Anonymous, h) })
	ch := c.Channel(h)
	if !c.CanRead(buzz.Anonymous, ch) {
		return nil, errWebNotFound
	}
	return &webChannelItem{Name: webChannelName(ch), About: clip(ch.About, webAboutRunes), URL: "/c/" + ch.H}, nil
}

// webChannel reads one window page as `/query` does (CW-9..CW-19): the
// same store call, through the page cache, within the same byte bounds.
func (r *Relay) webChannel(ctx context.Context, route webRoute, q url.Values, mem *webMemory, v *webView) error {
	ch, err := r.webReadable(ctx, route.channel)
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
	page, err := webRead(ctx, mem, func(maxBytes int) (*buzz.WindowPage, error) {
		wq.MaxBytes = maxBytes
		return r.store.Window(ctx, wq)
	}, func(p *buzz.WindowPage) int { return rawSize(p.Rows, p.Aux) })
	if err != nil {
		return err
	}
	if page.Unreadable {
		return errWebNotFound // access changed since webReadable
	}
	rows, err := decodeRaw(ctx, mem, page.Rows)
	if err != nil {
		return err
	}
	aux, err := decodeRaw(ctx, mem, page.Aux)
	if err != nil {
		return err
	}
	replies := make(map[string]int64, len(page.Summaries))
	for _, sm := range page.Summaries {
		replies[sm.ID] = sm.DescendantCount
	}
	names, err := r.webProfiles(ctx, rows, mem)
	if err != nil {
		return err
	}
	b := webRowBuilder{channel: route.channel, now: r.now(), names: names, aux: indexAux(aux), replies: replies}
	for _, ev := range rows {
		v.Rows = append(v.Rows, b.row(ev, webRowTextBytes))
	}
	if page.HasMore && page.Next != nil {
		v.Older = "/c/" + route.channel + webCursorQuery(page.Next)
	}
	return nil
}

// webThread reads a thread as `/query` does (RL-20): its root, then the
// replies below it oldest first, webPageRows a page, with their aux
// closure; the replies are nested under their parents. A deleted root's
// replies are still served (RL-20): they are shown under a "deleted
// message" in its place, as long as some reply of the page shows that the
// root was in the channel of the path; otherwise the page is not found.
func (r *Relay) webThread(ctx context.Context, route webRoute, q url.Values, mem *webMemory, v *webView) error {
	ch, err := r.webReadable(ctx, route.channel)
	if err != nil {
		return err
	}
	v.Channel = ch
	v.Title = "Thread in " + ch.Name + " · " + r.cfg.Info.Name
	after, err := parseWebCursor(q)
	if err != nil {
		return err
	}
	rawRoot, err := webRead(ctx, mem, func(maxBytes int) ([]buzz.RawEvent, error) {
		evs, truncated, err := r.store.QueryBounded(ctx, nostr.Filter{IDs: []string{route.event}, Limit: 1}, buzz.Anonymous, "", maxBytes)
		if err == nil && truncated {
			return nil, buzz.ErrTooLarge
		}
		return evs, err
	}, func(evs []buzz.RawEvent) int { return rawSize(evs) })
	if err != nil {
		return err
	}
	found, err := decodeRaw(ctx, mem, rawRoot)
	if err != nil {
		return err
	}
	var root *nostr.Event
	if len(found) == 1 {
		root = found[0]
		if h, err := buzz.ChannelOf(root.Tags); err != nil || h != route.channel {
			return errWebNotFound
		}
	}
	tq := buzz.ThreadQuery{Root: route.event, DepthLimit: webThreadDepth, Limit: webPageRows + 1, After: after, Aux: true, Viewer: buzz.Anonymous}
	page, err := webRead(ctx, mem, func(maxBytes int) (*buzz.ThreadPage, error) {
		tq.MaxBytes = maxBytes
		return r.store.Thread(ctx, tq)
	}, func(p *buzz.ThreadPage) int { return rawSize(p.Replies, p.Aux) })
	if err != nil {
		return err
	}
	replies, err := decodeRaw(ctx, mem, page.Replies)
	if err != nil {
		return err
	}
	if root == nil {
		// Deleted, or never here: the store served its replies only if an
		// anonymous reader may read its channel; each reply names it.
		if len(replies) == 0 {
			return errWebNotFound
		}
		for _, ev := range replies {
			if h, err := buzz.ChannelOf(ev.Tags); err != nil || h != route.channel {
				return errWebNotFound
			}
		}
	}
	if len(replies) > webPageRows {
		replies = replies[:webPageRows]
		last := replies[len(replies)-1]
		v.Later = "/c/" + route.channel + "/t/" + route.event + webCursorQuery(&buzz.Position{CreatedAt: int64(last.CreatedAt), ID: last.ID})
	}
	aux, err := decodeRaw(ctx, mem, page.Aux)
	if err != nil {
		return err
	}
	all := replies
	if root != nil {
		all = append([]*nostr.Event{root}, replies...)
	}
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
		counts[sm.ID] = sm.DescendantCount
	}
	names, err := r.webProfiles(ctx, all, mem)
	if err != nil {
		return err
	}
	b := webRowBuilder{channel: route.channel, now: r.now(), names: names, aux: indexAux(aux), replies: counts}
	if root != nil {
		v.Root = b.row(root, webRootTextBytes)
		v.Root.Whole = "" // this is its page
	} else {
		v.Root = &webRow{ID: route.event, Deleted: true, Thread: "/c/" + route.channel + "/t/" + route.event}
	}
	byID := map[string]*webRow{route.event: v.Root}
	for _, ev := range replies {
		row := b.row(ev, webRowTextBytes)
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

// decodeRaw decodes stored events for a page, reserving their JSON's
// bytes first: a decoded event holds no more text than its JSON.
func decodeRaw(ctx context.Context, mem *webMemory, raws []buzz.RawEvent) ([]*nostr.Event, error) {
	if err := mem.reserve(ctx, int64(rawSize(raws))); err != nil {
		return nil, err
	}
	return buzz.Decode(raws)
}

// webProfiles reads the display names of the authors of evs from their
// kind 0 profiles: one query for the page, bounded in bytes, as an
// anonymous reader.
func (r *Relay) webProfiles(ctx context.Context, evs []*nostr.Event, mem *webMemory) (map[string]string, error) {
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
	if err := mem.reserve(ctx, webProfileBytes); err != nil {
		return nil, err
	}
	f := nostr.Filter{Kinds: []int{0}, Authors: authors, Limit: len(authors)}
	raws, _, err := r.store.QueryBounded(ctx, f, buzz.Anonymous, "", webProfileBytes)
	if err != nil {
		return nil, err
	}
	profiles, err := decodeRaw(ctx, mem, raws)
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
	return buzz.ProfileName(content, func(s string) string { return clip(s, webNameRunes) })
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

// row is ev as a page shows it, its content clipped to limit bytes of
// text.
func (b webRowBuilder) row(ev *nostr.Event, limit int) *webRow {
	content := ev.Content
	edit := b.aux.edits[[2]string{ev.ID, ev.PubKey}]
	if edit != nil {
		content = edit.Content
	}
	parts, clipped := linkify(content, limit)
	row := &webRow{
		ID:        ev.ID,
		Author:    webAuthorOf(ev.PubKey, b.names),
		At:        newWebTime(int64(ev.CreatedAt), b.now),
		Content:   parts,
		Clipped:   clipped,
		Edited:    edit != nil,
		Reactions: b.aux.reactions[ev.ID],
		Replies:   b.replies[ev.ID],
		Thread:    "/c/" + b.channel + "/t/" + ev.ID,
	}
	if clipped {
		row.Whole = row.Thread
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
// that the page makes a link, Text then the URL as shown (webLinkText).
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
			label := webLinkText(candidate)
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

// webLinkText is a URL as a link shows it: every control, formatting
// (bidi overrides and isolates, U+200E/F among them) and separator
// character, and every byte that is not UTF-8, percent-escaped, so that
// the text of a link reads as the address it leads to.
func webLinkText(u string) string {
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
