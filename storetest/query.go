package storetest

// NIP-01 filter semantics of Store.Query and Store.Count (RL-3), their order
// (RL-19: created_at DESC, id ASC, ties included) and the visibility rules
// (RL-6 deleted, NIP-40 expired). Helpers start with "qt".

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// The channels of the query fixture.
const (
	qtCh1       = "5b1e9c3a-7f2d-4e6b-8a1c-2d3e4f5a6b01"
	qtCh2       = "5b1e9c3a-7f2d-4e6b-8a1c-2d3e4f5a6b02"
	qtChUnknown = "5b1e9c3a-7f2d-4e6b-8a1c-2d3e4f5a6b03"
)

// qtFixture is the event set of TestQueryFilters, by name.
type qtFixture struct {
	s       Store
	ev      map[string]*nostr.Event
	visible []string // names of the events every read may return
	A, B, C testutil.Signer
}

func qtBuildFixture(t *testing.T, open Opener) *qtFixture {
	t.Helper()
	clock := testutil.NewClock(qtT0 + 1000)
	fx := &qtFixture{
		s:  qtOpen(t, open, clock),
		ev: map[string]*nostr.Event{},
		A:  testutil.NewSigner(t), B: testutil.NewSigner(t), C: testutil.NewSigner(t),
	}
	A, B, C := fx.A, fx.B, fx.C
	add := func(name string, ev *nostr.Event) *nostr.Event {
		fx.ev[name] = ev
		qtIngest(t, fx.s, ev)
		return ev
	}
	a1 := add("a1", A.Event(t, 1, qtT0+10, "first", nostr.Tag{"t", "foo"}, nostr.Tag{"p", B.PK}))
	// "foo" only in content, inside other values, as a prefix of a value.
	add("a2", A.Event(t, 1, qtT0+20, "foo",
		nostr.Tag{"t", "foobar"}, nostr.Tag{"t", "xfoo"}, nostr.Tag{"t", "a foo b"}))
	add("a3", A.Event(t, 7, qtT0+20, "+", nostr.Tag{"e", a1.ID}, nostr.Tag{"p", A.PK}))
	add("b1", B.Event(t, 1, qtT0+20, "", nostr.Tag{"t", "foo"}, nostr.Tag{"t", "baz"}, nostr.Tag{"p", B.PK}))
	// "foo" under other tag names, in second position, under a two-letter
	// name; a1's id in content and under another tag name.
	add("b2", B.Event(t, 1, qtT0+30, "mentions "+a1.ID,
		nostr.Tag{"r", "foo"}, nostr.Tag{"T", "foo"}, nostr.Tag{"t", "bar", "foo"},
		nostr.Tag{"tt", "foo"}, nostr.Tag{"1", "foo"}, nostr.Tag{"p", a1.ID}))
	// a1's id in uppercase hex.
	add("b3", B.Event(t, 1, qtT0+30, "", nostr.Tag{"e", strings.ToUpper(a1.ID)}))
	add("c1", C.Event(t, 9, qtT0+40, "", nostr.Tag{"h", qtCh1}, nostr.Tag{"t", "foo"}))
	add("c2", C.Event(t, 9, qtT0+40, qtCh2, nostr.Tag{"h", qtCh1}))
	add("c3", C.Event(t, 9, qtT0+50, "", nostr.Tag{"h", qtCh2}, nostr.Tag{"p", A.PK}))
	// A channel id under another tag name is no channel.
	add("c4", C.Event(t, 1, qtT0+50, qtCh1, nostr.Tag{"H", qtCh1}, nostr.Tag{"t", qtCh1}))
	add("up", A.Event(t, 1, qtT0+60, "", nostr.Tag{"p", strings.ToUpper(B.PK)}))
	// Deleted (RL-6): d1 stays stored but must never be read.
	d1 := add("d1", A.Event(t, 1, qtT0+15, "", nostr.Tag{"t", "foo"}, nostr.Tag{"p", B.PK}, nostr.Tag{"h", qtCh1}))
	add("del", A.Event(t, 5, qtT0+70, "", nostr.Tag{"e", d1.ID}))
	// NIP-40: x1 expires once the clock moves past it, x2 much later.
	add("x1", B.Event(t, 1, qtT0+25, "", nostr.Tag{"t", "foo"}, nostr.Tag{"h", qtCh2},
		nostr.Tag{"expiration", strconv.FormatInt(qtT0+1100, 10)}))
	add("x2", B.Event(t, 1, qtT0+26, "", nostr.Tag{"t", "foo"},
		nostr.Tag{"expiration", strconv.FormatInt(qtT0+1_000_000, 10)}))
	clock.Set(qtT0 + 2000)

	fx.visible = []string{"a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3", "c4", "up", "del", "x2"}
	return fx
}

// RL-3: NIP-01 filters match exactly and are answered with the same result by
// Query and Count; RL-19: in created_at DESC, id ASC order; RL-6, NIP-40:
// deleted and expired events are never returned.
func testQueryFilters(t *testing.T, open Opener) {
	fx := qtBuildFixture(t, open)
	A, B := fx.A, fx.B
	id := func(name string) string { return fx.ev[name].ID }
	zeros := strings.Repeat("0", 64)

	cases := []qtFilterCase{
		{name: "empty filter returns every visible event", f: nostr.Filter{}, want: fx.visible},

		// ids
		{name: "ids lowercase", f: nostr.Filter{IDs: []string{id("a1")}}, want: []string{"a1"}},
		{name: "ids uppercase", f: nostr.Filter{IDs: []string{strings.ToUpper(id("a1"))}}, want: []string{"a1"}},
		{name: "ids mixed case", f: nostr.Filter{IDs: []string{qtMixedCase(id("b2"))}}, want: []string{"b2"}},
		{name: "ids several", f: nostr.Filter{IDs: []string{id("a1"), id("c3"), id("b1")}}, want: []string{"a1", "b1", "c3"}},
		{name: "ids invalid dropped", f: nostr.Filter{IDs: []string{
			"zz", id("a1")[:63], id("a1") + "0", strings.Repeat("g", 64), "", id("a2"),
		}}, want: []string{"a2"}},
		{name: "ids all invalid match nothing", f: nostr.Filter{IDs: []string{"zz", id("a1")[:63], strings.Repeat("g", 64)}}},
		{name: "ids empty list matches nothing", f: nostr.Filter{IDs: []string{}}},
		{name: "ids unknown", f: nostr.Filter{IDs: []string{zeros}}},
		{name: "ids same id twice, two cases, returned once", f: nostr.Filter{IDs: []string{
			id("b1"), strings.ToUpper(id("b1")), id("b1"),
		}}, want: []string{"b1"}},
		{name: "ids deleted and expired hidden", f: nostr.Filter{IDs: []string{id("d1"), id("a1"), id("x1")}}, want: []string{"a1"}},

		// authors
		{name: "authors", f: nostr.Filter{Authors: []string{A.PK}}, want: []string{"a1", "a2", "a3", "up", "del"}},
		{name: "authors uppercase", f: nostr.Filter{Authors: []string{strings.ToUpper(B.PK)}}, want: []string{"b1", "b2", "b3", "x2"}},
		{name: "authors two", f: nostr.Filter{Authors: []string{B.PK, fx.C.PK}}, want: []string{"b1", "b2", "b3", "x2", "c1", "c2", "c3", "c4"}},
		{name: "authors invalid dropped", f: nostr.Filter{Authors: []string{"nope", A.PK, B.PK[:63]}}, want: []string{"a1", "a2", "a3", "up", "del"}},
		{name: "authors all invalid match nothing", f: nostr.Filter{Authors: []string{"nope", B.PK[:63]}}},
		{name: "authors empty list matches nothing", f: nostr.Filter{Authors: []string{}}},
		{name: "authors unknown", f: nostr.Filter{Authors: []string{zeros}}},

		// kinds
		{name: "kinds 1", f: nostr.Filter{Kinds: []int{1}}, want: []string{"a1", "a2", "b1", "b2", "b3", "c4", "up", "x2"}},
		{name: "kinds 9", f: nostr.Filter{Kinds: []int{9}}, want: []string{"c1", "c2", "c3"}},
		{name: "kinds 7 and 5", f: nostr.Filter{Kinds: []int{7, 5}}, want: []string{"a3", "del"}},
		{name: "kinds empty list matches nothing", f: nostr.Filter{Kinds: []int{}}},
		{name: "kinds unknown", f: nostr.Filter{Kinds: []int{2}}},
		{name: "kinds and authors", f: nostr.Filter{Kinds: []int{1}, Authors: []string{A.PK}}, want: []string{"a1", "a2", "up"}},

		// #t: exact values only
		{name: "#t exact", f: nostr.Filter{Tags: nostr.TagMap{"t": {"foo"}}}, want: []string{"a1", "b1", "c1", "x2"}},
		{name: "#t prefix of a value matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"t": {"fo"}}}},
		{name: "#t inside a value matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"t": {"oob"}}}},
		{name: "#t whole longer value", f: nostr.Filter{Tags: nostr.TagMap{"t": {"foobar"}}}, want: []string{"a2"}},
		{name: "#t value with spaces", f: nostr.Filter{Tags: nostr.TagMap{"t": {"a foo b"}}}, want: []string{"a2"}},
		{name: "#t first value only", f: nostr.Filter{Tags: nostr.TagMap{"t": {"bar"}}}, want: []string{"b2"}},
		{name: "#t is case sensitive", f: nostr.Filter{Tags: nostr.TagMap{"t": {"FOO"}}}},
		{name: "#T is another tag than #t", f: nostr.Filter{Tags: nostr.TagMap{"T": {"foo"}}}, want: []string{"b2"}},
		{name: "#r", f: nostr.Filter{Tags: nostr.TagMap{"r": {"foo"}}}, want: []string{"b2"}},
		{name: "#t only in content matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"t": {"first"}}}},
		{name: "#t two values, event with both returned once", f: nostr.Filter{Tags: nostr.TagMap{"t": {"foo", "baz"}}}, want: []string{"a1", "b1", "c1", "x2"}},
		{name: "#t value repeated", f: nostr.Filter{Tags: nostr.TagMap{"t": {"baz", "baz"}}}, want: []string{"b1"}},
		{name: "multi-letter tag name matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"tt": {"foo"}}}},
		{name: "multi-letter tag name with kinds matches nothing", f: nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"tt": {"foo"}}}},
		{name: "digit tag name matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"1": {"foo"}}}},
		{name: "nil tag list constrains nothing", f: nostr.Filter{Tags: nostr.TagMap{"t": nil}}, want: fx.visible},
		{name: "nil tag list with kinds", f: nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"t": nil, "zz": nil}}, want: []string{"c1", "c2", "c3"}},
		{name: "empty tag list matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"t": {}}}},
		{name: "empty tag list next to a matching one", f: nostr.Filter{Tags: nostr.TagMap{"t": {"foo"}, "p": {}}}},

		// #e / #p: hex values
		{name: "#e", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("a1")}}}, want: []string{"a3"}},
		{name: "#e uppercase matches only the uppercase tag", f: nostr.Filter{Tags: nostr.TagMap{"e": {strings.ToUpper(id("a1"))}}}, want: []string{"b3"}},
		{name: "#e prefix matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("a1")[:32]}}}},
		{name: "#e 63 chars matches nothing", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("a1")[:63]}}}},
		{name: "#e of a deleted event's deletion", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("d1")}}}, want: []string{"del"}},
		{name: "#p", f: nostr.Filter{Tags: nostr.TagMap{"p": {B.PK}}}, want: []string{"a1", "b1"}},
		{name: "#p uppercase matches only the uppercase tag", f: nostr.Filter{Tags: nostr.TagMap{"p": {strings.ToUpper(B.PK)}}}, want: []string{"up"}},
		{name: "#p with an event id value", f: nostr.Filter{Tags: nostr.TagMap{"p": {id("a1")}}}, want: []string{"b2"}},
		{name: "#p two values", f: nostr.Filter{Tags: nostr.TagMap{"p": {A.PK, B.PK}}}, want: []string{"a1", "a3", "b1", "c3"}},

		// #h: channels
		{name: "#h", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh1}}}, want: []string{"c1", "c2"}},
		{name: "#h other channel", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh2}}}, want: []string{"c3"}},
		{name: "#h two channels", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh2, qtCh1}}}, want: []string{"c1", "c2", "c3"}},
		{name: "#h same channel twice", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh1, qtCh1}}}, want: []string{"c1", "c2"}},
		{name: "#h unknown channel", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtChUnknown}}}},
		{name: "#h unknown and known", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtChUnknown, qtCh2}}}, want: []string{"c3"}},
		{name: "#h prefix of a channel", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh1[:8]}}}},
		{name: "#H is not the channel", f: nostr.Filter{Tags: nostr.TagMap{"H": {qtCh1}}}, want: []string{"c4"}},
		{name: "#h and kinds", f: nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {qtCh1}}}, want: []string{"c1", "c2"}},
		{name: "#h and other kinds", f: nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"h": {qtCh1}}}},
		{name: "#h and #t", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh1}, "t": {"foo"}}}, want: []string{"c1"}},
		{name: "#h two channels and #p", f: nostr.Filter{Tags: nostr.TagMap{"h": {qtCh1, qtCh2}, "p": {A.PK}}}, want: []string{"c3"}},

		// several conditions at once
		{name: "#t and #p", f: nostr.Filter{Tags: nostr.TagMap{"t": {"foo"}, "p": {B.PK}}}, want: []string{"a1", "b1"}},
		{name: "#t, #p, kinds and authors", f: nostr.Filter{
			Kinds: []int{1}, Authors: []string{A.PK}, Tags: nostr.TagMap{"t": {"foo", "baz"}, "p": {B.PK, A.PK}},
		}, want: []string{"a1"}},
		{name: "#e and #p", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("a1")}, "p": {A.PK}}}, want: []string{"a3"}},
		{name: "#e and #t disjoint", f: nostr.Filter{Tags: nostr.TagMap{"e": {id("a1")}, "t": {"foo"}}}},
		{name: "ids and #t", f: nostr.Filter{IDs: []string{id("a1"), id("a2")}, Tags: nostr.TagMap{"t": {"foo"}}}, want: []string{"a1"}},
		{name: "ids and authors disjoint", f: nostr.Filter{IDs: []string{id("a1")}, Authors: []string{B.PK}}},

		// since / until, inclusive
		{name: "since inclusive", f: nostr.Filter{Since: qtTS(qtT0 + 40)}, want: []string{"c1", "c2", "c3", "c4", "up", "del"}},
		{name: "until inclusive", f: nostr.Filter{Until: qtTS(qtT0 + 20)}, want: []string{"a1", "a2", "a3", "b1"}},
		{name: "since = until", f: nostr.Filter{Since: qtTS(qtT0 + 20), Until: qtTS(qtT0 + 20)}, want: []string{"a2", "a3", "b1"}},
		{name: "empty window", f: nostr.Filter{Since: qtTS(qtT0 + 41), Until: qtTS(qtT0 + 49)}},
		{name: "since after until", f: nostr.Filter{Since: qtTS(qtT0 + 50), Until: qtTS(qtT0 + 40)}},
		{name: "#t and since", f: nostr.Filter{Since: qtTS(qtT0 + 20), Tags: nostr.TagMap{"t": {"foo"}}}, want: []string{"b1", "c1", "x2"}},
		{name: "#t and until", f: nostr.Filter{Until: qtTS(qtT0 + 10), Tags: nostr.TagMap{"t": {"foo"}}}, want: []string{"a1"}},
		{name: "#h and since/until", f: nostr.Filter{Since: qtTS(qtT0 + 40), Until: qtTS(qtT0 + 40), Tags: nostr.TagMap{"h": {qtCh1, qtCh2}}}, want: []string{"c1", "c2"}},

		// limit: the first events of the full order
		{name: "limit", f: nostr.Filter{Limit: 3}, want: fx.visible, limit: 3},
		{name: "limit 1 with tags", f: nostr.Filter{Limit: 1, Tags: nostr.TagMap{"t": {"foo"}}}, want: []string{"a1", "b1", "c1", "x2"}, limit: 1},
		{name: "limit above the match count", f: nostr.Filter{Limit: 50, Kinds: []int{9}}, want: []string{"c1", "c2", "c3"}, limit: 3},

		// unsupported
		{name: "search matches nothing", f: nostr.Filter{Search: "foo"}},
		{name: "search with kinds matches nothing", f: nostr.Filter{Kinds: []int{1}, Search: "foo"}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { fx.checkFilter(t, tc) })
	}
}

// qtFilterCase is a filter of testQueryFilters and what it matches.
type qtFilterCase struct {
	name  string
	f     nostr.Filter
	want  []string // names of the matching events, in any order
	limit int      // expected length of Query when the filter has a limit
}

// checkFilter checks that Query answers tc's filter with its events in
// order, and Count with their number.
func (fx *qtFixture) checkFilter(t *testing.T, tc qtFilterCase) {
	evs := make([]*nostr.Event, 0, len(tc.want))
	for _, name := range tc.want {
		ev, ok := fx.ev[name]
		if !ok {
			t.Fatalf("bad case: no event %q", name)
		}
		evs = append(evs, ev)
	}
	want := Ordered(evs)
	if tc.limit > 0 {
		want = want[:tc.limit]
	}
	got := QueryIDs(t, fx.s, tc.f, buzz.Anonymous)
	if !slices.Equal(got, want) {
		t.Errorf("Query(%v)\n got %s\nwant %s", tc.f, fx.names(got), fx.names(want))
	}
	if n := Count(t, fx.s, tc.f, buzz.Anonymous); n != int64(len(tc.want)) {
		t.Errorf("Count(%v) = %d, want %d", tc.f, n, len(tc.want))
	}
}

// names turns ids back into fixture names for readable failures.
func (fx *qtFixture) names(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:8]
		for name, ev := range fx.ev {
			if ev.ID == id {
				out[i] = name
			}
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// RL-3: tag values are compared as the exact strings they are. Values that
// SQLite would read as numbers ("1e3", "01", " 7 ", "1.0", 30-digit
// integers) must neither match their numeric equals nor each other.
func testQueryTagValuesExactNotNumeric(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a := testutil.NewSigner(t)
	values := []string{
		"1000", "1e3", "1", "01", "1.0", "+1", "7", " 7 ",
		"123456789012345678901234567890", "123456789012345678901234567891",
		"-0", "0", "0.0",
	}
	byValue := map[string]string{}
	for i, v := range values {
		ev := a.Event(t, 1, qtT0+int64(i), "v", nostr.Tag{"t", v})
		qtIngest(t, s, ev)
		byValue[v] = ev.ID
	}
	for _, v := range values {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			f := nostr.Filter{Tags: nostr.TagMap{"t": {v}}}
			got := QueryIDs(t, s, f, buzz.Anonymous)
			if want := []string{byValue[v]}; !slices.Equal(got, want) {
				var gotValues []string
				for _, id := range got {
					for val, vid := range byValue {
						if vid == id {
							gotValues = append(gotValues, strconv.Quote(val))
						}
					}
				}
				t.Errorf("#t %q matched the events tagged %v, want only its own", v, gotValues)
			}
			if n := Count(t, s, f, buzz.Anonymous); n != 1 {
				t.Errorf("Count(#t %q) = %d, want 1", v, n)
			}
		})
	}
}

// RL-19: order is created_at DESC, then id ASC among events of the same
// second, whatever the insertion order.
func testQueryOrderSameSecond(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	signers := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	var evs []*nostr.Event
	for i := 0; i < 30; i++ {
		// Ten events in each of three seconds, inserted oldest second last.
		sec := qtT0 + int64(2-i/10)*10
		evs = append(evs, signers[i%3].Event(t, 1, sec, fmt.Sprintf("tie %d", i), nostr.Tag{"t", "tie"}))
	}
	qtIngest(t, s, evs...)
	want := Ordered(evs)

	for _, f := range []nostr.Filter{
		{},
		{Kinds: []int{1}},
		{Tags: nostr.TagMap{"t": {"tie"}}},
		{Authors: []string{signers[0].PK, signers[1].PK, signers[2].PK}},
		{IDs: want},
	} {
		got := QueryIDs(t, s, f, buzz.Anonymous)
		if !slices.Equal(got, want) {
			t.Errorf("Query(%v) order\n got %v\nwant %v", f, got, want)
		}
	}
	// The property itself, independently of Ordered.
	got, err := s.Query(context.Background(), nostr.Filter{}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(got); i++ {
		p, c := got[i-1], got[i]
		if p.CreatedAt < c.CreatedAt || (p.CreatedAt == c.CreatedAt && p.ID >= c.ID) {
			t.Fatalf("events %d and %d out of order: (%d, %s) before (%d, %s)", i-1, i, p.CreatedAt, p.ID, c.CreatedAt, c.ID)
		}
	}
	// A limit cuts inside a second: the first n of the same order.
	for _, n := range []int{1, 5, 10, 11, 29} {
		if got := QueryIDs(t, s, nostr.Filter{Limit: n}, buzz.Anonymous); !slices.Equal(got, want[:n]) {
			t.Errorf("limit %d: got %v, want %v", n, got, want[:n])
		}
	}
}

// defaultLimit is what a filter without a limit gets: "limit default and
// max 1000" (relay.md), a number of the contract, not of a store.
const defaultLimit = 1000

// RL-27, RL-19: a filter without a limit gets defaultLimit events, the
// newest of the full order; a larger limit is the caller's bound to clamp,
// and Count is never limited.
func testQueryDefaultLimit(t *testing.T, open Opener) {
	t.Parallel()
	s := qtOpen(t, open, nil)
	signers := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t)}
	total := defaultLimit + 5
	evs := testutil.SignMany(t, total, func(i int) (testutil.Signer, *nostr.Event) {
		// Three events per second, so the limit cuts through ties.
		return signers[i%2], &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(qtT0 + int64(i/3)), Content: strconv.Itoa(i)}
	})
	IngestConcurrently(t, s, evs)
	want := Ordered(evs)

	if got := QueryIDs(t, s, nostr.Filter{}, buzz.Anonymous); !slices.Equal(got, want[:defaultLimit]) {
		t.Errorf("no limit: got %d events, want the first %d of the order", len(got), defaultLimit)
	}
	if got := QueryIDs(t, s, nostr.Filter{Kinds: []int{1}, Limit: 0}, buzz.Anonymous); len(got) != defaultLimit {
		t.Errorf("limit 0: got %d events, want %d", len(got), defaultLimit)
	}
	if got := QueryIDs(t, s, nostr.Filter{Limit: defaultLimit + 3}, buzz.Anonymous); !slices.Equal(got, want[:defaultLimit+3]) {
		t.Errorf("limit %d: got %d events, want the first %d of the order", defaultLimit+3, len(got), defaultLimit+3)
	}
	if got := QueryIDs(t, s, nostr.Filter{Limit: 7}, buzz.Anonymous); !slices.Equal(got, want[:7]) {
		t.Errorf("limit 7: got %v, want %v", got, want[:7])
	}
	if n := Count(t, s, nostr.Filter{}, buzz.Anonymous); n != int64(total) {
		t.Errorf("Count = %d, want %d", n, total)
	}
	if n := Count(t, s, nostr.Filter{Limit: 7}, buzz.Anonymous); n != int64(total) {
		t.Errorf("Count with limit 7 = %d, want %d (Count has no limit)", n, total)
	}
}

// RL-27a: QueryBounded stops reading once the events' JSON would pass its
// byte bound and says so; without a bound, or under it, it returns
// everything, each event as JSON that decodes to the event signed.
func testQueryBounded(t *testing.T, open Opener) {
	s := qtOpen(t, open, nil)
	a := testutil.NewSigner(t)
	var evs []*nostr.Event
	for i := range 5 {
		evs = append(evs, a.Event(t, 1, qtT0+int64(i), strings.Repeat("x", 1000)))
	}
	qtIngest(t, s, evs...)
	signed, err := evs[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	one := len(signed) // every event's JSON is as long: same fields, same digits
	ctx := context.Background()
	f := nostr.Filter{Authors: []string{a.PK}}
	for _, tc := range []struct {
		max, want int
		truncated bool
	}{{0, 5, false}, {5 * one, 5, false}, {5*one - 1, 4, true}, {2*one + one/2, 2, true}, {one - 1, 0, true}} {
		got, truncated, err := s.QueryBounded(ctx, f, buzz.Anonymous, "", tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want || truncated != tc.truncated {
			t.Errorf("bound %d: %d events, truncated %v; want %d, %v", tc.max, len(got), truncated, tc.want, tc.truncated)
		}
		if len(got) > 0 && got[0].ID != evs[4].ID {
			t.Errorf("bound %d: first %s, want the newest", tc.max, got[0].ID)
		}
		for i, raw := range got {
			var ev nostr.Event
			want := evs[4-i]
			if err := ev.UnmarshalJSON(raw.JSON); err != nil || ev.ID != want.ID || ev.Sig != want.Sig || !bytes.Equal(ev.Serialize(), want.Serialize()) {
				t.Errorf("bound %d: event %d is %s (%v), not the event signed", tc.max, i, raw.JSON, err)
			}
		}
	}
}

// RL-3: a channel id no channel can have (NUL, invalid UTF-8) matches
// nothing, on every store: not an error.
func testQueryImpossibleChannel(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	ctx := context.Background()
	for _, h := range []string{"a\x00b", "a\xffb"} {
		f := nostr.Filter{Tags: nostr.TagMap{"h": {h}}}
		if evs, err := s.Query(ctx, f, buzz.Anonymous); err != nil || len(evs) != 0 {
			t.Errorf("query #h %q: %d events, %v", h, len(evs), err)
		}
		if n, err := s.Count(ctx, f, buzz.Anonymous); err != nil || n != 0 {
			t.Errorf("count #h %q: %d, %v", h, n, err)
		}
	}
}
