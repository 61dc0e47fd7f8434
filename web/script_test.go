package web

import (
	"strings"
	"testing"
)

// CW-26: the client's JavaScript and CSS together, every embedded
// script (the NIP-46 module among them) and the stylesheet, stay within
// 150 KB uncompressed.
func TestClientBudget(t *testing.T) {
	const budget = 150 << 10
	if n := ScriptBytes(); n > budget {
		t.Fatalf("JavaScript and CSS are %d bytes, over the budget of %d", n, budget)
	}
	if _, ok := scripts["app"]; !ok {
		t.Fatal("assets/app.js is not embedded")
	}
}

// CW-26: an embedded script is linked by a URL versioned by its content
// and served at /web/<name>.js; a name not embedded is its bare path,
// which no route serves.
func TestScriptURL(t *testing.T) {
	u := ScriptURL("app")
	if !strings.HasPrefix(u, "/web/app.js?v=") || strings.TrimPrefix(u, "/web/app.js?v=") != assetVersion(scripts["app"]) {
		t.Errorf("ScriptURL(app) = %q", u)
	}
	if rt, ok := parsePath("/web/app.js", nil); !ok || rt.kind != routeScript || rt.script != "app" {
		t.Errorf("/web/app.js routes to %+v, %v", rt, ok)
	}
	if got := ScriptURL("none-such"); got != "/web/none-such.js" {
		t.Errorf("ScriptURL(none-such) = %q", got)
	}
	for _, p := range []string{"/web/none-such.js", "/web/app", "/web/../web.css", "/web/"} {
		if _, ok := parsePath(p, nil); ok {
			t.Errorf("%s routes", p)
		}
	}
}

// CW-26: the policy lets pages run only their own scripts and connect
// only to themselves and the relay's WebSocket origin; a URL that is not
// a ws(s) URL adds nothing.
func TestCSP(t *testing.T) {
	for url, want := range map[string]string{
		"ws://127.0.0.1:7777":           "connect-src 'self' ws://127.0.0.1:7777;",
		"wss://chat.example.org/relay/": "connect-src 'self' wss://chat.example.org;",
		"":                              "connect-src 'self';",
		"https://x.example; script-src": "connect-src 'self';",
	} {
		got := CSP(url)
		if !strings.Contains(got, want) || !strings.Contains(got, "script-src 'self';") || !strings.HasPrefix(got, "default-src 'none';") {
			t.Errorf("CSP(%q) = %q", url, got)
		}
	}
}
