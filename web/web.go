// Package web is buzz-lite's web view (CW-25): HTML pages of the open
// channels for browsers, rendered on the server as an anonymous reader.
// It reads through the store calls, the access rule and the limits the
// relay hands it (Deps) and knows nothing of the relay that mounts it.
//
// Event content is untrusted text: html/template escapes it in its
// context, links are made only of http(s) URLs, and the
// Content-Security-Policy lets a page load nothing but the view's own
// stylesheet and scripts, and connect to nothing but the relay itself.
//
// The pages are also the community's chat client (CW-26): the embedded
// module assets/app.js, once a member signs in with their own signer,
// reads and writes through the relay's `/query` and WebSocket as any
// client does. Without JavaScript every page is the read-only view.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

//go:embed assets/*.html assets/web.css assets/*.js
var assets embed.FS

var (
	templates = template.Must(template.ParseFS(assets, "assets/*.html"))
	css       = mustReadAsset("assets/web.css")
	// cssURL names the stylesheet by its content, so that a browser may
	// keep it long and still gets a changed one at once.
	cssURL = assetURL(CSSPath, css)
	// scripts are the embedded modules by name (app for assets/app.js).
	scripts = readScripts()
)

// assetURL names an asset by its content, so that a browser may keep it
// long (immutable) and still gets a changed one at once.
func assetURL(path string, b []byte) string {
	return path + "?v=" + assetVersion(b)
}

func assetVersion(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func mustReadAsset(name string) []byte {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("embedded %s: %v", name, err))
	}
	return b
}

// StylesheetURL is the path, with its version, by which pages link the
// stylesheet.
func StylesheetURL() string { return cssURL }

const (
	// CSSPath is the stylesheet's path.
	CSSPath = "/web.css"
	// PageRows is the rows of a channel page and the replies of a thread
	// page.
	PageRows = 50
	// channelBatch is how many channels the index reads at a time, and
	// ChannelScan how many at most per page: a page costs the same however
	// many channels there are, hidden ones included.
	channelBatch = 50
	ChannelScan  = 200
	// profileBytes bounds the kind 0 profiles one page reads; authors past
	// it are shown by their short npub.
	profileBytes = 256 << 10
	// threadDepth is how deep below its root a thread page reads: deeper
	// replies are refused at ingest (RL-5).
	threadDepth = 100
	// RowTextBytes bounds the text a row shows of its content, and
	// RootTextBytes what a thread page shows of its own message; past them
	// the content is clipped, which bounds a page's HTML (PageMaxBytes)
	// whatever max_event_bytes is.
	RowTextBytes  = 8 << 10
	RootTextBytes = 64 << 10
	// nameRunes and aboutRunes bound what a page shows of a display name
	// and a channel's about.
	nameRunes  = 48
	aboutRunes = 280

	// ScriptPrefix is the path below which the embedded scripts are
	// served, each as <name>.js.
	ScriptPrefix = "/web/"
	// immutableCache is how long a browser keeps an asset asked for by
	// its versioned URL: its content never changes under that URL.
	immutableCache = "public, max-age=31536000, immutable"
	// assetCache is how long it keeps one asked for by another URL.
	assetCache = "public, max-age=86400"
	// CacheControl lets a proxy or browser keep a page briefly: pages
	// change with every message, and a reader reloads.
	CacheControl = "public, max-age=15"
)

// The lines of text of the answers that are not a page, in the words of
// the relay's `/query` (RL-27a).
const (
	msgBusy     = "rate-limited: the relay is busy, try again shortly"
	msgInternal = "internal server error"
)

// rowKinds are the kinds a channel page shows as rows: chat messages, as
// the reference client asks for.
var rowKinds = []int{9}

// The outcomes of a web request that are not a page.
var (
	errNotFound  = errors.New("not found")
	errBadCursor = errors.New("bad cursor")
)

// Store is the store's read calls a page makes, as an anonymous reader.
type Store interface {
	Community() *buzz.Community
	QueryBounded(ctx context.Context, f nostr.Filter, v buzz.Viewer, beforeID string, maxBytes int) (evs []buzz.RawEvent, truncated bool, err error)
	Window(ctx context.Context, q buzz.WindowQuery) (*buzz.WindowPage, error)
	Thread(ctx context.Context, q buzz.ThreadQuery) (*buzz.ThreadPage, error)
	Summaries(ctx context.Context, ids []string) ([]buzz.Summary, error)
	ChannelsByActivity(ctx context.Context, after *buzz.ChannelPosition, limit int) ([]buzz.ChannelActivity, error)
}

// Limits bound what a page costs, as the relay bounds a `/query`
// request (RL-27, RL-27a).
type Limits interface {
	// Admit admits a request by its client IP: its connection count and
	// its rate. A refusal is answered through refuse (the limits set
	// their own headers) and ok is false; otherwise leave must be called
	// once the request is done, and client is what its read slot and its
	// share of the memory budget count by.
	Admit(w http.ResponseWriter, req *http.Request, refuse func(status int, msg string)) (client netip.Prefix, leave func(), ok bool)
	// InSlot runs read in one of the relay's read slots, or refuses busy
	// when none comes free in time.
	InSlot(ctx context.Context, client netip.Prefix, read func() error) error
	// Memory is an empty reservation in client's share of the memory
	// budget the answers share.
	Memory(client netip.Prefix) Memory
	// Busy reports whether err refused a page for want of a read slot or
	// of memory.
	Busy(err error) bool
}

// Memory is what one page holds of the memory budget: what each of its
// reads holds, the events decoded from them and the rendered page, each
// reserved before it is held.
type Memory interface {
	// Reserve takes n more bytes, or refuses busy.
	Reserve(ctx context.Context, n int64) error
	// ReadBounded calls read with a byte bound it reserves first, larger
	// while the page read does not fit (buzz.ErrTooLarge); of the bound,
	// the size of what was read stays reserved.
	ReadBounded(ctx context.Context, read func(maxBytes int) (size int, err error)) error
	// Keep gives back what is reserved beyond n bytes.
	Keep(n int64)
	// Release gives the whole reservation back.
	Release()
}

// Metrics are the relay's metrics a page feeds.
type Metrics struct {
	// Read is told when a page's reads began, once they are done.
	Read func(start time.Time)
	// Busy counts a page refused for want of a read slot or of memory.
	Busy func()
}

// Deps is what the web view takes from the relay that mounts it.
type Deps struct {
	// Name and Description are the relay's, as its NIP-11 document gives
	// them.
	Name, Description string
	// Key is the relay's identity secret key (hex), from which the index
	// derives the key that seals its links.
	Key string
	// URL is the relay's public ws(s):// URL, as configured or derived
	// from its loopback listener (never from a request's headers): the
	// client connects to it, signs NIP-42 AUTH and NIP-98 tokens for it,
	// and the Content-Security-Policy lets pages connect to its origin.
	URL   func() string
	Store Store
	// Community is the access state a page reads by: the store's, or a
	// fresher one when admits refuses the store's (a shared store whose
	// copy may lag).
	Community func(ctx context.Context, admits func(*buzz.Community) bool) *buzz.Community
	Limits    Limits
	Metrics   Metrics
	// ConnectAllow are origins beyond its own a page may connect to
	// (CSPWith): server.web_connect_allow.
	ConnectAllow []string
	// ReadTimeout bounds the reads of one page, WriteTimeout the time a
	// client may take to read it.
	ReadTimeout, WriteTimeout time.Duration
	Now                       func() time.Time
	Log                       *slog.Logger
}

// View serves the web view's pages.
type View struct {
	d    Deps
	seal indexSeal
}

// New is the web view on d.
func New(d Deps) (*View, error) {
	seal, err := newIndexSeal(d.Key)
	if err != nil {
		return nil, err
	}
	return &View{d: d, seal: seal}, nil
}

// Wants reports whether req asks for one of the web view's pages: `/`
// only from a browser (`Accept: text/html`, CW-25), so that a client
// asking for anything (curl's `*/*`) still gets the relay's line of text.
func Wants(req *http.Request) bool {
	switch path := req.URL.Path; {
	case path == "/":
		return strings.Contains(strings.ToLower(req.Header.Get("Accept")), "text/html")
	default:
		return path == CSSPath || strings.HasPrefix(path, ScriptPrefix) || strings.HasPrefix(path, "/c/")
	}
}

// ServeHTTP answers a GET or HEAD of the web view. A page costs what a
// `/query` request costs and is limited the same way: it counts as a
// connection of its client IP, takes a token of the `/query` rate of that
// IP and a read slot, and holds what it reads within the memory budget
// the answers share (RL-27, RL-27a).
func (v *View) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSPWith(v.d.URL(), v.d.ConnectAllow))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		text(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	rt, ok := parsePath(req.URL.Path, req.URL.Query())
	if !ok {
		v.notFound(w)
		return
	}
	switch rt.kind {
	case routeCSS:
		v.asset(w, req, "text/css; charset=utf-8", css)
		return
	case routeScript:
		v.asset(w, req, "text/javascript; charset=utf-8", scripts[rt.script])
		return
	}
	client, leave, ok := v.d.Limits.Admit(w, req, func(status int, msg string) { text(w, status, msg) })
	if !ok {
		return
	}
	defer leave()
	ctx, cancel := context.WithTimeout(req.Context(), v.d.ReadTimeout)
	defer cancel()
	mem := v.d.Limits.Memory(client)
	defer mem.Release()
	body, err := v.render(ctx, client, rt, req.URL.Query(), mem)
	if err != nil {
		v.refuse(ctx, w, req, err)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", CacheControl)
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(v.d.WriteTimeout)); err != nil {
		v.d.Log.Warn("bounding the time to write a web page", "err", err)
	}
	if err := body.writeTo(w); err != nil {
		v.d.Log.Debug("writing web page", "err", err)
	}
}

// render reads what route shows, in one of the relay's read slots, and
// renders it within mem.
func (v *View) render(ctx context.Context, client netip.Prefix, rt route, q url.Values, mem Memory) (*pageWriter, error) {
	start := time.Now()
	var name string
	var page *view
	err := v.d.Limits.InSlot(ctx, client, func() error {
		var err error
		name, page, err = v.page(ctx, rt, q, mem)
		return err
	})
	v.d.Metrics.Read(start)
	body := &pageWriter{ctx: ctx, mem: mem}
	if err == nil {
		err = templates.ExecuteTemplate(body, name, page)
	}
	return body, err
}

// refuse answers a page that failed with err.
func (v *View) refuse(ctx context.Context, w http.ResponseWriter, req *http.Request, err error) {
	switch {
	case errors.Is(err, errNotFound):
		v.notFound(w)
	case errors.Is(err, errBadCursor):
		text(w, http.StatusBadRequest, "bad cursor: at and id must be a timestamp and a 64-hex event id, both or neither")
	case v.d.Limits.Busy(err) && ctx.Err() == nil:
		v.d.Metrics.Busy()
		w.Header().Set("Retry-After", "1")
		text(w, http.StatusTooManyRequests, msgBusy)
	default:
		if ctx.Err() == nil {
			v.d.Log.Error("web page failed", "path", req.URL.Path, "err", err)
		}
		text(w, http.StatusInternalServerError, msgInternal)
	}
}

// notFound is the one answer to a page that is not there: a private
// channel, a nonexistent one and a mistyped path alike (CW-25, RL-13).
func (v *View) notFound(w http.ResponseWriter) {
	var body bytes.Buffer
	if err := templates.ExecuteTemplate(&body, "notfound.html", v.newView()); err != nil {
		v.d.Log.Error("web page failed", "page", "not found", "err", err)
		text(w, http.StatusInternalServerError, msgInternal)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", CacheControl)
	w.WriteHeader(http.StatusNotFound)
	if _, err := w.Write(body.Bytes()); err != nil {
		v.d.Log.Debug("writing the web 404 page", "err", err)
	}
}

// asset answers the stylesheet or a script, b: for good when asked for
// by its versioned URL, for a day otherwise.
func (v *View) asset(w http.ResponseWriter, req *http.Request, contentType string, b []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	if req.URL.Query().Get("v") == assetVersion(b) {
		h.Set("Cache-Control", immutableCache)
	} else {
		h.Set("Cache-Control", assetCache)
	}
	if _, err := w.Write(b); err != nil {
		v.d.Log.Debug("writing a web asset", "path", req.URL.Path, "err", err)
	}
}

// text answers with a line of plain text.
func text(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// newView is a page with what every page carries: the relay's name, the
// stylesheet, and what the client script needs (CW-26).
func (v *View) newView() *view {
	return &view{Title: "Not found", Relay: v.d.Name, Description: v.d.Description, CSS: cssURL,
		Script: ScriptURL("app"), NIP46: ScriptURL("nip46"), RelayURL: v.d.URL()}
}

// page reads what route shows and names its template.
func (v *View) page(ctx context.Context, rt route, q url.Values, mem Memory) (string, *view, error) {
	p := v.newView()
	switch rt.kind {
	case routeIndex:
		p.Title = v.d.Name
		return "index.html", p, v.index(ctx, q, p)
	case routeChannel:
		return "channel.html", p, v.channel(ctx, rt, q, mem, p)
	default:
		return "thread.html", p, v.thread(ctx, rt, q, mem, p)
	}
}
