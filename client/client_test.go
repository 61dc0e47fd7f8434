package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/khatru"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
	"github.com/buzz-lite/buzz-lite/relay"
	"github.com/buzz-lite/buzz-lite/sqlite"
)

const testChannel = "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"

const wait = 10 * time.Second

// startBuzz starts a real buzz-lite relay on a loopback port with an SQLite
// store in a temporary directory and returns its ws:// URL.
func startBuzz(t *testing.T, admins ...string) string {
	t.Helper()
	key := nostr.GeneratePrivateKey()
	store, err := sqlite.Open(context.Background(), sqlite.Options{
		Path: filepath.Join(t.TempDir(), "buzz-lite.db"), Schema: testutil.Schema(t), RelayKey: key, Admins: admins,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Key: key, Info: relay.Info{Name: "client test"}}, store)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(wait):
			t.Error("Serve did not return")
		}
		store.Close()
	})
	return "ws://" + ln.Addr().String()
}

// plainRelay is a khatru relay that knows nothing of the window: events in
// a slice, no /query, no nip-cw in NIP-11. query, when set, answers
// POST /query instead (a relay whose window is broken), advertising nip-cw
// and a self key.
type plainRelay struct {
	mu  sync.Mutex
	evs []*nostr.Event
}

func startPlain(t *testing.T, query http.HandlerFunc) string {
	t.Helper()
	p := &plainRelay{}
	kh := khatru.NewRelay()
	kh.StoreEvent = append(kh.StoreEvent, func(_ context.Context, ev *nostr.Event) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.evs = append(p.evs, ev)
		return nil
	})
	kh.QueryEvents = append(kh.QueryEvents, func(_ context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		p.mu.Lock()
		var out []*nostr.Event
		for _, ev := range p.evs {
			if f.Matches(ev) {
				out = append(out, ev)
			}
		}
		p.mu.Unlock()
		slices.SortFunc(out, func(a, b *nostr.Event) int {
			if a.CreatedAt != b.CreatedAt {
				return int(b.CreatedAt - a.CreatedAt)
			}
			return strings.Compare(a.ID, b.ID)
		})
		if f.LimitZero {
			out = nil
		} else if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		ch := make(chan *nostr.Event, len(out))
		for _, ev := range out {
			ch <- ev
		}
		close(ch)
		return ch, nil
	})
	var h http.Handler = kh
	if query != nil {
		self := testutil.NewSigner(t).PK
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/query":
				query(w, r)
			case r.Header.Get("Accept") == "application/nostr+json":
				w.Header().Set("Content-Type", "application/nostr+json")
				fmt.Fprintf(w, `{"name":"broken window","self":%q,"supported_extensions":["nip-cw"]}`, self)
			default:
				kh.ServeHTTP(w, r)
			}
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// data is the channel of the tests: the events to publish, in an order a
// relay accepts (parents first), and the rows a window must show.
type data struct {
	evs  []*nostr.Event
	rows []string // ids in window order
}

// channelData: top-level messages at distinct seconds, a dense burst of 7
// in one second, quiet replies at depth 1 and 2, a broadcast depth-1 reply
// (a row, CW-11), a broadcast depth-2 reply (not a row), a deleted message
// with its author's kind 5 (CW-14), and a message of another channel.
// 14 rows: limits 2 and 7 end on an exact-multiple final page.
func channelData(t *testing.T) data {
	alice, bob := testutil.NewSigner(t), testutil.NewSigner(t)
	base := time.Now().Unix() - 3600
	n := 0
	msg := func(who testutil.Signer, at int64, tags ...nostr.Tag) *nostr.Event {
		n++
		return who.Event(t, 9, at, fmt.Sprintf("m%d", n), append([]nostr.Tag{{"h", testChannel}}, tags...)...)
	}
	reply := func(who testutil.Signer, at int64, parent, root *nostr.Event, tags ...nostr.Tag) *nostr.Event {
		return msg(who, at, append([]nostr.Tag{{"e", root.ID, "", "root"}, {"e", parent.ID, "", "reply"}}, tags...)...)
	}
	var d data
	var top []*nostr.Event
	for i := range 6 {
		top = append(top, msg([]testutil.Signer{alice, bob}[i%2], base+int64(i*10)))
	}
	for i := range 7 { // CW-15: a same-second burst
		top = append(top, msg([]testutil.Signer{alice, bob}[i%2], base+100))
	}
	d.evs = append(d.evs, top...)
	r1 := reply(bob, base+200, top[0], top[0])                                // quiet, depth 1
	r2 := reply(alice, base+201, r1, top[0])                                  // quiet, depth 2
	b1 := reply(alice, base+100, top[1], top[1], nostr.Tag{"broadcast", "1"}) // a row, in the burst second
	b2 := reply(bob, base+202, r1, top[0], nostr.Tag{"broadcast", "1"})       // depth 2: not a row
	gone := msg(bob, base+150)
	del := bob.Event(t, 5, base+300, "", nostr.Tag{"e", gone.ID})
	other := alice.Event(t, 9, base+160, "elsewhere", nostr.Tag{"h", "5e0d8a4b-5f4e-4c2a-8d3b-1c2b3a4d5e6f"})
	d.evs = append(d.evs, r1, r2, b1, b2, gone, del, other)

	rows := append(append([]*nostr.Event{}, top...), b1)
	slices.SortFunc(rows, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, ev := range rows {
		d.rows = append(d.rows, ev.ID)
	}
	return d
}

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// timeline runs Timeline over every page and returns the pages.
func timeline(t *testing.T, c *Client, limit int) ([]*nipcw.Page, Path) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var ps []*nipcw.Page
	path, err := c.Timeline(ctx, testChannel, limit, true, func(p *nipcw.Page) error {
		if p.Request == nil {
			ps = nil // CL-5: a head page starts a lineage
		}
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		t.Fatalf("limit %d: %v (path %+v)", limit, err, path)
	}
	return ps, path
}

// checkPages checks that pages of limit hold exactly want, in order, no row
// lost or repeated, each page full but the last, the chain ending on
// has_more=false only (CL-1, CW-16, CW-17).
func checkPages(t *testing.T, what string, ps []*nipcw.Page, limit int, want []string) {
	t.Helper()
	var got []string
	for i, p := range ps {
		for _, ev := range p.Rows {
			got = append(got, ev.ID)
		}
		last := i == len(ps)-1
		if p.Bounds.HasMore == last {
			t.Errorf("%s limit %d: page %d has_more=%v", what, limit, i, p.Bounds.HasMore)
		}
		if !last && len(p.Rows) != limit {
			t.Errorf("%s limit %d: page %d holds %d rows", what, limit, i, len(p.Rows))
		}
		if i == 0 && p.Request != nil || i > 0 && *p.Request != *ps[i-1].Next() {
			t.Errorf("%s limit %d: page %d answers cursor %v", what, limit, i, p.Request)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s limit %d: rows\n got %v\nwant %v", what, limit, short(got), short(want))
	}
	// CL-1: an exact-multiple final page is full and ends the chain.
	if len(want)%limit == 0 && len(ps) != len(want)/limit {
		t.Errorf("%s limit %d: %d pages for %d rows", what, limit, len(ps), len(want))
	}
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:8]
	}
	return out
}

// CW-24, CL-1, CW-9..CW-11, CW-14, CW-15: the window of buzz-lite and the
// fallback on a relay that does not know the window show the same rows in
// the same order, at every page size; Timeline says which way it went.
func TestWindowAndFallbackAgree(t *testing.T) {
	d := channelData(t)
	if len(d.rows) != 14 {
		t.Fatalf("test data: %d rows", len(d.rows))
	}
	buzzURL, plainURL := startBuzz(t), startPlain(t, nil)
	testutil.Publish(t, buzzURL, d.evs...)
	testutil.Publish(t, plainURL, d.evs...)

	reader := testutil.NewSigner(t)
	win := newClient(t, Options{Relay: buzzURL, Key: reader.SK}) // RL-17: NIP-98 on every /query
	if !win.SupportsWindow() || win.RelayKey() == "" {
		t.Fatalf("buzz-lite: window %v, relay key %q", win.SupportsWindow(), win.RelayKey())
	}
	plain := newClient(t, Options{Relay: plainURL})
	if plain.SupportsWindow() {
		t.Fatal("the plain relay advertises nip-cw")
	}
	plain.batch = 2 // page the fallback by until through the 7-event burst

	// The fallback on buzz-lite itself (its REQ path is plain, CW-23).
	forced := newClient(t, Options{Relay: buzzURL})
	forced.window = false
	forced.batch = 3

	for _, limit := range []int{1, 2, 3, 7, 50} {
		ps, path := timeline(t, win, limit)
		if path.Kind != PathWindow || path.Reason != "" || path.WindowPages != len(ps) || path.FallbackPages != 0 {
			t.Errorf("buzz-lite limit %d: path %+v", limit, path)
		}
		checkPages(t, "window", ps, limit, d.rows)
		for _, p := range ps {
			if len(p.Overlays) == 0 {
				t.Errorf("window page without its 39006")
			}
		}

		ps, path = timeline(t, plain, limit)
		if path.Kind != PathFallback || !strings.Contains(path.Reason, "nip-cw") || path.FallbackPages != len(ps) {
			t.Errorf("plain limit %d: path %+v", limit, path)
		}
		checkPages(t, "fallback", ps, limit, d.rows)

		ps, path = timeline(t, forced, limit)
		if path.Kind != PathFallback {
			t.Errorf("forced limit %d: path %+v", limit, path)
		}
		checkPages(t, "fallback on buzz-lite", ps, limit, d.rows)
	}
}

// CL-1: Page alone: the head, then the cursor chain, with the relay's
// signed bounds (CL-3) and a summary for the row with replies (CW-19).
func TestPageChain(t *testing.T) {
	d := channelData(t)
	url := startBuzz(t)
	testutil.Publish(t, url, d.evs...)
	c := newClient(t, Options{Relay: url})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var got []string
	var cursor *nipcw.Cursor
	summaries := 0
	for range len(d.rows) + 1 {
		p, err := c.Page(ctx, testChannel, cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		summaries += len(p.Summaries)
		for _, ev := range p.Rows {
			got = append(got, ev.ID)
		}
		if cursor = p.Next(); cursor == nil {
			break
		}
	}
	if !slices.Equal(got, d.rows) {
		t.Fatalf("rows\n got %v\nwant %v", short(got), short(d.rows))
	}
	if summaries != 2 { // top[0] (quiet replies) and top[1] (broadcast reply)
		t.Errorf("%d summaries, want 2", summaries)
	}
	// CL-3: a configured relay key that is not the signer's makes every
	// page unusable; Page fails with the validator's reason after retries.
	wrong := newClient(t, Options{Relay: url, RelayPubKey: testutil.NewSigner(t).PK})
	if _, err := wrong.Page(ctx, testChannel, nil, 5); err == nil || !strings.Contains(err.Error(), "overlay signed by another key") {
		t.Fatalf("wrong relay key: %v", err)
	}
}

// CW-24, CL-2: a relay that advertises the window but serves no valid
// 39006, or errors on /query, is read through the fallback, with the
// reason in the path.
func TestFallbackOnBrokenWindow(t *testing.T) {
	d := channelData(t)
	for _, tc := range []struct {
		name, reason string
		query        http.HandlerFunc
	}{
		{"no bounds", "no valid 39006 page: no bounds overlay", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("[]"))
		}},
		{"error", "/query errored: HTTP 500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startPlain(t, tc.query)
			testutil.Publish(t, url, d.evs...)
			c := newClient(t, Options{Relay: url})
			if !c.SupportsWindow() {
				t.Fatal("want nip-cw advertised")
			}
			ps, path := timeline(t, c, 4)
			if path.Kind != PathFallback || !strings.HasPrefix(path.Reason, tc.reason) || path.WindowPages != 0 {
				t.Fatalf("path %+v, want reason %q", path, tc.reason)
			}
			checkPages(t, tc.name, ps, 4, d.rows)
		})
	}
}

// CL-5: when thread_replies_in_channel changes between pages, Timeline
// refetches from the head once and serves only the new lineage (CW-13:
// every non-deleted message is then a row).
func TestLineageChangeRestartsFromHead(t *testing.T) {
	d := channelData(t)
	admin := testutil.NewSigner(t)
	url := startBuzz(t, admin.PK)
	testutil.Publish(t, url, d.evs...)
	c := newClient(t, Options{Relay: url})

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var got []string
	heads := 0
	path, err := c.Timeline(ctx, testChannel, 3, true, func(p *nipcw.Page) error {
		if p.Request == nil {
			heads++
			got = nil
			if heads == 1 {
				testutil.Publish(t, url, admin.Event(t, 9033, time.Now().Unix(), "", nostr.Tag{"thread_replies_in_channel", "true"}))
			}
		}
		if !p.Bounds.ThreadRepliesInChannel && heads > 1 {
			t.Errorf("page of the old lineage after the restart")
		}
		for _, ev := range p.Rows {
			got = append(got, ev.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if path.Kind != PathWindow || path.Restarts != 1 || heads != 2 {
		t.Fatalf("path %+v, %d heads", path, heads)
	}
	// Projection: the 13 top-level messages and all 4 replies; not the
	// deleted one, not the other channel's.
	if len(got) != 17 {
		t.Fatalf("%d rows in projection mode, want 17", len(got))
	}
}

// CW-10..CW-12: the client-side row rule on its own.
func TestAssembleRowRule(t *testing.T) {
	a := testutil.NewSigner(t)
	h := nostr.Tag{"h", testChannel}
	top := a.Event(t, 9, 100, "top", h)
	missing := strings.Repeat("ab", 32)
	orphan := a.Event(t, 9, 99, "orphan", h, nostr.Tag{"e", missing, "", "reply"})                                        // CW-12: fail-open
	badRoot := a.Event(t, 9, 98, "bad root", h, nostr.Tag{"e", missing, "", "root"}, nostr.Tag{"e", top.ID, "", "reply"}) // root names another thread
	quiet := a.Event(t, 9, 97, "quiet", h, nostr.Tag{"e", top.ID, "", "reply"})
	positional := a.Event(t, 9, 96, "positional", h, nostr.Tag{"e", top.ID}) // unmarked: not a reply
	short := a.Event(t, 9, 95, "short", h, nostr.Tag{"e", top.ID, "reply"})  // malformed marker: ignored
	evs := map[string]*nostr.Event{}
	for _, ev := range []*nostr.Event{top, orphan, badRoot, quiet, positional, short} {
		evs[ev.ID] = ev
	}
	got := assemble(testChannel, evs, evs, nil, false)
	want := []*nostr.Event{top, orphan, badRoot, positional, short}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d: %s, want %s", i, got[i].Content, want[i].Content)
		}
	}
}

// CW-10 (changed on 2026-12-03), CW-11, CW-12: a root-only reply is a
// direct reply to its root in the client's own row rule, as on buzz-lite:
// quiet, a row with broadcast, a row when its root cannot be fetched; a q
// tag quotes and does not reply.
func TestRootOnlyReplyRowRule(t *testing.T) {
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	h := nostr.Tag{"h", testChannel}
	base := time.Now().Unix() - 3600
	top := a.Event(t, 9, base, "top", h)
	top2 := a.Event(t, 9, base+1, "top2", h)
	quiet := b.Event(t, 9, base+2, "root-only reply", h, nostr.Tag{"e", top.ID, "", "root"})
	loud := b.Event(t, 9, base+3, "root-only broadcast", h, nostr.Tag{"e", top2.ID, "", "root"}, nostr.Tag{"broadcast", "1"})
	quote := b.Event(t, 9, base+4, "quote", h, nostr.Tag{"q", top.ID, "", a.PK})
	both := a.Event(t, 9, base+5, "both markers", h, nostr.Tag{"e", top.ID, "", "root"}, nostr.Tag{"e", quiet.ID, "", "reply"})
	evs := []*nostr.Event{top, top2, quiet, loud, quote, both}
	want := []string{quote.ID, loud.ID, top2.ID, top.ID}

	all := map[string]*nostr.Event{}
	for _, ev := range evs {
		all[ev.ID] = ev
	}
	rows := assemble(testChannel, all, all, nil, false)
	got := make([]string, len(rows))
	for i, ev := range rows {
		got[i] = ev.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("assemble: rows %v, want %v", short(got), short(want))
	}
	// CW-12: the root not fetched leaves the reply unclassified, a row.
	alone := map[string]*nostr.Event{quiet.ID: quiet}
	if rows := assemble(testChannel, alone, alone, nil, false); len(rows) != 1 || rows[0] != quiet {
		t.Fatalf("root-only reply without its root: %d rows", len(rows))
	}

	// The window of buzz-lite and the fallback on a plain relay agree.
	buzzURL, plainURL := startBuzz(t), startPlain(t, nil)
	testutil.Publish(t, buzzURL, evs...)
	testutil.Publish(t, plainURL, evs...)
	ps, path := timeline(t, newClient(t, Options{Relay: buzzURL}), 10)
	if path.Kind != PathWindow {
		t.Fatalf("buzz-lite path %+v", path)
	}
	checkPages(t, "window", ps, 10, want)
	ps, path = timeline(t, newClient(t, Options{Relay: plainURL}), 10)
	if path.Kind != PathFallback {
		t.Fatalf("plain path %+v", path)
	}
	checkPages(t, "fallback", ps, 10, want)
}
