package sqlite

import (
	"context"
	"reflect"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// pcEnv is a community of three channels whose window pages are cached:
// A (open) holds rowA, a reaction of private channel B naming it, and a
// row that expires; B (private, member m) holds rowB; C (open) rowC.
type pcEnv struct {
	s                *Store
	clock            *testutil.Clock
	owner, m, x      testutil.Signer
	rowA, rowB, rowC *nostr.Event
	// foreign is m's reaction, posted in B, to rowA; bare is x's reaction
	// without an h tag to rowA.
	foreign, bare *nostr.Event
	at            int64
	chans         map[string]string
}

const (
	pcA = "0f8e2d1c-6b5a-4e3d-9c2b-1a0f9e8d7c6b"
	pcB = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
	pcC = "2b3c4d5e-6f7a-4b2c-9d3e-4f5a6b7c8d9e"
	// pcExpires is when A's expiring row expires.
	pcExpires = ttBase + 1000
)

func pcSetup(t *testing.T) *pcEnv {
	t.Helper()
	sg := testutil.SortedSigners(t, 3)
	e := &pcEnv{clock: testutil.NewClock(ttBase + 100), owner: sg[0], m: sg[1], x: sg[2], at: ttBase,
		chans: map[string]string{"A": pcA, "B": pcB, "C": pcC}}
	e.s = qtOpenWith(t, Options{Now: e.clock.Now, Admins: []string{e.owner.PK}})
	e.post(t, e.owner, 9007, "", ttH(pcA))
	e.post(t, e.owner, 9007, "", ttH(pcB), nostr.Tag{"private"})
	e.post(t, e.owner, 9007, "", ttH(pcC))
	e.post(t, e.owner, 9000, "", ttH(pcB), nostr.Tag{"p", e.m.PK})
	e.rowA = e.post(t, e.m, 9, "row A", ttH(pcA))
	e.rowB = e.post(t, e.m, 9, "row B", ttH(pcB))
	e.rowC = e.post(t, e.x, 9, "row C", ttH(pcC))
	e.post(t, e.x, 9, "expiring", ttH(pcA), nostr.Tag{"expiration", strconv.FormatInt(pcExpires, 10)})
	e.foreign = e.post(t, e.m, 7, "+", ttH(pcB), ttE(e.rowA.ID))
	e.bare = e.post(t, e.x, 7, "!", ttE(e.rowA.ID))
	return e
}

// post stores an event of sg one second after the last.
func (e *pcEnv) post(t *testing.T, sg testutil.Signer, kind int, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	e.at++
	return ttIngest(t, e.s, sg.Event(t, kind, e.at, content, tags...))
}

// pcQuery is the page every test reads: m's, with summaries and aux.
func (e *pcEnv) query(name string) buzz.WindowQuery {
	return buzz.WindowQuery{Channel: e.chans[name], Limit: 10, Summaries: true, Aux: true, Viewer: buzz.Viewer(e.m.PK)}
}

// pages reads the page of every channel.
func (e *pcEnv) pages(t *testing.T) map[string]*buzz.WindowPage {
	t.Helper()
	out := map[string]*buzz.WindowPage{}
	for name := range e.chans {
		out[name] = pcWindow(t, e.s, e.query(name))
	}
	return out
}

// truth reads the page of every channel from the database, past any
// cache: through a store of its own on the same file.
func (e *pcEnv) truth(t *testing.T) map[string]*buzz.WindowPage {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: e.s.path, Schema: testutil.Schema(t), PageCacheBytes: -1,
		Now: e.clock.Now, Admins: []string{e.owner.PK}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]*buzz.WindowPage{}
	for name := range e.chans {
		out[name] = pcWindow(t, s, e.query(name))
	}
	return out
}

// Issue 15: the window page cache is kept per channel. A write leaves the
// cached pages of every channel it cannot change valid, and makes stale
// every page it can change: pages served afterwards, cached or not, are
// always what the database gives (CW-9 rows, CW-14 deletions, CW-18 aux
// closure, CW-19 summaries, CW-3 access, NIP-40 expiry).
func TestWindowPageCachePerChannel(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		write func(t *testing.T, e *pcEnv)
		// stale are the channels whose cached page must not be served.
		stale []string
	}{
		// CW-9: a new row of A.
		{"message in A", func(t *testing.T, e *pcEnv) { e.post(t, e.x, 9, "new", ttH(pcA)) }, []string{"A"}},
		// CW-19: a reply changes rowA's summary.
		{"reply in A", func(t *testing.T, e *pcEnv) {
			e.post(t, e.x, 9, "re", ttH(pcA), ttRootTag(e.rowA.ID))
		}, []string{"A"}},
		// CW-18: a reaction of A.
		{"reaction in A", func(t *testing.T, e *pcEnv) { e.post(t, e.x, 7, "+", ttH(pcA), ttE(e.rowA.ID)) }, []string{"A"}},
		// CW-18: a kind 7 of no channel naming rowA is an aux event of A.
		{"channel-less reaction to A", func(t *testing.T, e *pcEnv) { e.post(t, e.owner, 7, "-", ttE(e.rowA.ID)) }, []string{"A"}},
		// CW-18: a reaction posted in C naming rowA is served in A's page.
		{"reaction in C naming A", func(t *testing.T, e *pcEnv) {
			e.post(t, e.x, 7, "?", ttH(pcC), ttE(e.rowA.ID))
		}, []string{"A", "C"}},
		// CW-18 hop 2: the deletion of a channel-less aux event of A.
		{"deletion of a channel-less reaction", func(t *testing.T, e *pcEnv) {
			e.post(t, e.x, 5, "", ttE(e.bare.ID))
		}, []string{"A"}},
		// CW-18 hop 2: a deletion without an h tag of a reaction of B
		// naming rowA is scoped to B, and served in A's page.
		{"deletion of a reaction of B", func(t *testing.T, e *pcEnv) {
			e.post(t, e.m, 5, "", ttE(e.foreign.ID))
		}, []string{"A", "B"}},
		// CW-18 hop 2: a deletion that deletes nothing (its author may not
		// know of the reaction of private B it names) is still served in
		// A's page, beside the reaction: it changes no stored event.
		{"stray deletion of a reaction of B", func(t *testing.T, e *pcEnv) {
			e.post(t, e.x, 5, "", ttE(e.foreign.ID))
		}, []string{"A", "B"}},
		// CW-14: rowA deleted by its author.
		{"deletion of a row", func(t *testing.T, e *pcEnv) { e.post(t, e.m, 5, "", ttE(e.rowA.ID)) }, []string{"A"}},
		// CW-3: m leaves B: B's page is refused, and A's page, which
		// served m's reaction of B, no longer may.
		{"member removed from B", func(t *testing.T, e *pcEnv) {
			e.post(t, e.owner, 9001, "", ttH(pcB), nostr.Tag{"p", e.m.PK})
		}, []string{"A", "B"}},
		// CW-3: A deleted: its page is refused; the others stay.
		{"channel A deleted", func(t *testing.T, e *pcEnv) { e.post(t, e.owner, 9008, "", ttH(pcA)) }, []string{"A"}},
		// A community setting changes the access state: only pages that
		// were judged by another channel's access (A's) are read again.
		{"setting changed", func(t *testing.T, e *pcEnv) {
			e.post(t, e.owner, 9033, "", nostr.Tag{"thread_replies_in_channel", "true"})
		}, []string{"A"}},
		// NIP-40: A's expiring row is hidden once it expires, before the
		// purge; the purge itself leaves the other channels' pages.
		{"expiry in A", func(t *testing.T, e *pcEnv) {
			e.clock.Set(pcExpires)
			if _, err := e.s.PurgeExpired(ctx); err != nil {
				t.Fatal(err)
			}
		}, []string{"A"}},
		// A write by another process on the same file.
		{"another process writes to C", func(t *testing.T, e *pcEnv) {
			other, err := Open(ctx, Options{Path: e.s.path, Schema: testutil.Schema(t), Now: e.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			e.at++
			if err := other.Ingest(ctx, e.x.Event(t, 9, e.at, "elsewhere", ttH(pcC))); err != nil {
				t.Fatal(err)
			}
			if err := other.Close(); err != nil {
				t.Fatal(err)
			}
		}, []string{"C"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := pcSetup(t)
			cached := e.pages(t)
			again := e.pages(t)
			for name := range e.chans {
				if again[name] != cached[name] {
					t.Fatalf("%s: the same page, asked twice with no write between, was built twice", name)
				}
			}
			tc.write(t, e)
			after, truth := e.pages(t), e.truth(t)
			for name := range e.chans {
				stale := false
				for _, s := range tc.stale {
					stale = stale || s == name
				}
				if served := after[name] == cached[name]; served == stale {
					t.Errorf("%s: served from the cache: %v, want %v", name, served, !stale)
				}
				if want := truth[name]; !reflect.DeepEqual(after[name], want) {
					t.Errorf("%s: page %v (unreadable %v), the database gives %v (unreadable %v)",
						name, pcIDs(after[name]), after[name].Unreadable, pcIDs(want), want.Unreadable)
				}
			}
		})
	}
}
