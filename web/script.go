package web

import (
	"io/fs"
	"net/url"
	"path"
	"strings"
)

// readScripts is every embedded assets/*.js by its name without ".js".
func readScripts() map[string][]byte {
	names, err := fs.Glob(assets, "assets/*.js")
	if err != nil {
		panic("embedded scripts: " + err.Error())
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		out[strings.TrimSuffix(path.Base(name), ".js")] = mustReadAsset(name)
	}
	return out
}

// ScriptURL is the path by which pages load the embedded script
// assets/<name>.js, versioned by its content; the bare path when no such
// script is embedded, which a browser asking for it is answered 404.
func ScriptURL(name string) string {
	p := ScriptPrefix + name + ".js"
	if b, ok := scripts[name]; ok {
		return assetURL(p, b)
	}
	return p
}

// ScriptBytes is the total size of the embedded scripts and the
// stylesheet: what the client costs a browser (CW-26 bounds it).
func ScriptBytes() int {
	n := len(css)
	for _, b := range scripts {
		n += len(b)
	}
	return n
}

// CSP is the Content-Security-Policy of every answer of the web view of
// the relay whose public URL is relayURL: nothing but the relay's own
// stylesheet and scripts, no inline script and no eval, and connections
// only to the page's origin and the relay's WebSocket origin (CW-26),
// which 'self' does not cover when the page is loaded by another name
// than the relay's configured URL.
func CSP(relayURL string) string {
	connect := "'self'"
	if origin := wsOrigin(relayURL); origin != "" {
		connect += " " + origin
	}
	return "default-src 'none'; script-src 'self'; connect-src " + connect +
		"; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// wsOrigin is the ws(s)://host[:port] of u, "" when u is not a ws(s) URL
// with a host.
func wsOrigin(u string) string {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "ws" && p.Scheme != "wss") || p.Host == "" || strings.ContainsAny(p.Host, " ;,'\"") {
		return ""
	}
	return p.Scheme + "://" + p.Host
}
