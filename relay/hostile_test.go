package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-22 (NIP-45): COUNT filters of the HyperLogLog shape with a tag value
// too short for go-nostr's offset computation must neither crash the
// process nor go unanswered; a well-formed HLL-shaped COUNT still answers
// the exact number of stored reactions and followers (khatru would answer
// 0 without a CountEventsHLL hook: the workaround must route it to the
// exact count).
func TestHostileCount(t *testing.T) {
	s := startServer(t)
	c := s.raw(t)
	now := time.Now().Unix()
	author := testutil.NewSigner(t)
	target := author.Event(t, 1, now-100, "react to me")
	if ok, reason := c.publish(target); !ok {
		t.Fatalf("target: %s", reason)
	}
	const reactions = 3
	for i := range reactions {
		r := testutil.NewSigner(t).Event(t, 7, now-int64(i), "+",
			nostr.Tag{"e", target.ID}, nostr.Tag{"p", author.PK})
		if ok, reason := c.publish(r); !ok {
			t.Fatalf("reaction: %s", reason)
		}
	}
	// Two contact lists follow the author.
	for range 2 {
		f := testutil.NewSigner(t).Event(t, 3, now, "", nostr.Tag{"p", author.PK})
		if ok, reason := c.publish(f); !ok {
			t.Fatalf("contact list: %s", reason)
		}
	}

	for _, tc := range []struct{ id, filter string }{
		{"c1", `{"kinds":[7],"#e":["abc"]}`},
		{"c2", `{"kinds":[3],"#p":["x"]}`},
		{"c3", `{"kinds":[7],"#e":[""]}`},
		{"c4", `{"kinds":[3],"#p":[""]}`},
		{"c5", `{"kinds":[7],"#e":["` + strings.Repeat("a", 32) + `"]}`}, // 32 chars: [32:33] is out of range
		{"c6", `{"kinds":[7],"#e":["` + strings.Repeat("z", 64) + `"]}`}, // not hex
		{"c7", `{"kinds":[7],"#e":[]}`},
		{"c8", `{"kinds":[3],"#p":["` + author.PK[:33] + `"]}`},
	} {
		if n := c.count(tc.id, tc.filter); n != 0 {
			t.Errorf("COUNT %s %s: %d, want 0", tc.id, tc.filter, n)
		}
	}

	if n := c.count("exact-e", `{"kinds":[7],"#e":["`+target.ID+`"]}`); n != reactions {
		t.Errorf("COUNT reactions (HLL shape): %d, want %d", n, reactions)
	}
	if n := c.count("exact-p", `{"kinds":[3],"#p":["`+author.PK+`"]}`); n != 2 {
		t.Errorf("COUNT followers (HLL shape): %d, want 2", n)
	}
	if n := c.count("exact-e2", `{"kinds":[7],"#e":["`+target.ID+`"],"authors":[]}`); n != 0 {
		t.Errorf("COUNT with an empty authors list: %d, want 0", n)
	}
	if n := c.count("exact-e3", `{"#e":["`+target.ID+`"]}`); n != reactions {
		t.Errorf("COUNT without kinds: %d, want %d", n, reactions)
	}

	// The same shapes as REQ: no crash, and the exact matches.
	for i, f := range []string{`{"kinds":[7],"#e":["abc"]}`, `{"kinds":[3],"#p":["x"]}`, `{"kinds":[7],"#e":[""]}`} {
		if evs, closed := c.req(fmt.Sprintf("r%d", i), f); len(evs) != 0 || closed != "" {
			t.Errorf("REQ %s: %d events, closed %q", f, len(evs), closed)
		}
	}
	if evs, _ := c.req("r-exact", `{"kinds":[7],"#e":["`+target.ID+`"]}`); len(evs) != reactions {
		t.Errorf("REQ reactions: %d, want %d", len(evs), reactions)
	}

	// Live delivery to an HLL-shaped REQ still matches (the workaround's
	// extra nil tag must constrain nothing).
	if evs, _ := c.req("live-e", `{"kinds":[7],"#e":["`+target.ID+`"],"limit":0}`); len(evs) != 0 {
		t.Fatalf("limit 0 REQ returned %d stored events", len(evs))
	}
	pub := s.raw(t)
	r := testutil.NewSigner(t).Event(t, 7, now, "+", nostr.Tag{"e", target.ID})
	if ok, reason := pub.publish(r); !ok {
		t.Fatalf("reaction: %s", reason)
	}
	msg := c.await("live reaction", func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m, 1) == "live-e" })
	var got nostr.Event
	if json.Unmarshal(msg[2], &got); got.ID != r.ID {
		t.Fatalf("live: got %s, want %s", got.ID, r.ID)
	}
}

// RL-22, RL-9: a bare ["d"] tag on a kind khatru reads a d tag from
// (replaceable, addressable, and the "other" kinds such as 40003) would
// crash the connection's goroutine; it is refused and the server answers
// afterwards.
func TestBareDTag(t *testing.T) {
	s, c, a := startWithClient(t)
	now := time.Now().Unix()
	for _, kind := range []int{0, 3, 10002, 30023, 40003} {
		ev := a.Event(t, kind, now, "x", nostr.Tag{"d"})
		ok, reason := c.publish(ev)
		if ok || reason != "invalid: d tag must have a value" {
			t.Errorf("kind %d with a bare d tag: ok=%v %q", kind, ok, reason)
		}
		// The relay still answers, on this connection and a new one.
		if _, closed := c.req(fmt.Sprintf("after-%d", kind), `{"kinds":[1],"limit":1}`); closed != "" {
			t.Fatalf("REQ after kind %d: closed %q", kind, closed)
		}
	}
	fresh := s.raw(t)
	ev := a.Event(t, 30023, now, "ok", nostr.Tag{"d", "x"})
	if ok, reason := fresh.publish(ev); !ok {
		t.Fatalf("a normal addressable event after the bare d tags: %s", reason)
	}
	// An ephemeral event with a bare d tag is nothing khatru reads: either
	// answer is fine, as long as there is one.
	fresh.publish(a.Event(t, 20001, now, "", nostr.Tag{"d"}))
	if evs, closed := fresh.req("final", `{"ids":["`+ev.ID+`"]}`); len(evs) != 1 || closed != "" {
		t.Fatalf("final REQ: %d events, closed %q", len(evs), closed)
	}
}

// RL-22: malformed messages, garbage filters, hostile tags, huge limits and
// negative timestamps crash nothing; a normal REQ works afterwards.
func TestHostileMessages(t *testing.T) {
	s, c, a := startWithClient(t)
	now := time.Now().Unix()
	known := a.Event(t, 1, now-50, "known")
	if ok, reason := c.publish(known); !ok {
		t.Fatal(reason)
	}

	// Messages that are not valid NIP-01: each gets a NOTICE or nothing.
	// After each, a probe REQ on the same connection must be answered.
	garbage := []string{
		`not json`,
		``,
		`[]`,
		`{}`,
		`"REQ"`,
		`null`,
		`[null]`,
		`[1,2,3]`,
		`["REQ"]`,
		`["REQ","g"]`,
		`["REQ","g",42]`,
		`["REQ","g",null]`,
		`["REQ","g",[]]`,
		`["REQ",{},{}]`,
		`["REQ","g",{"kinds":"x"}]`,
		`["REQ","g",{"ids":[1,2]}]`,
		`["REQ","g",{"#e":"notalist"}]`,
		`["REQ","g",{"limit":99999999999999999999999}]`,
		`["REQ","g",{"limit":1e400}]`,
		`["REQ","g",{"since":"yesterday"}]`,
		`["REQ","g",{"kinds":[1]`,
		`["COUNT"]`,
		`["COUNT","c"]`,
		`["COUNT","c",7]`,
		`["EVENT"]`,
		`["EVENT",{}]`,
		`["EVENT",{"id":"x","kind":1}]`,
		`["EVENT",null]`,
		`["EVENT",{"id":"` + known.ID + `","pubkey":"` + a.PK + `","sig":"00","kind":1,"tags":[[]],"content":"","created_at":1}]`,
		`["CLOSE"]`,
		`["CLOSE",5]`,
		`["CLOSE","never-opened"]`,
		`["AUTH"]`,
		`["AUTH",{}]`,
		`["AUTH","challenge"]`,
		`["NEG-OPEN","n",{},"00"]`,
		`["NEG-MSG","n","zz"]`,
		`["NEG-CLOSE","n"]`,
		`["UNKNOWN","x"]`,
		`["REQ","` + strings.Repeat("s", 10000) + `",{}]`,
	}
	for i, m := range garbage {
		c.sendText(m)
		if _, closed := c.req(fmt.Sprintf("probe-%d", i), `{"ids":["`+known.ID+`"]}`); closed != "" {
			t.Fatalf("probe after %q: closed %q", m, closed)
		}
		c.send("CLOSE", fmt.Sprintf("probe-%d", i)) // under the cap of open subscriptions (RL-27)
	}

	// Filters that parse but are hostile: each REQ ends with EOSE or
	// CLOSED, never a dead connection.
	filters := []string{
		`{}`,
		`{"limit":2147483647}`,
		`{"limit":9223372036854775807}`,
		`{"limit":-1}`,
		`{"limit":0}`,
		`{"since":-1000}`,
		`{"until":-1}`,
		`{"since":-9223372036854775808}`,
		`{"since":9223372036854775807}`,
		`{"since":100,"until":10}`,
		`{"ids":[]}`,
		`{"ids":["zz"]}`,
		`{"ids":[""]}`,
		`{"authors":[""]}`,
		`{"authors":["` + strings.ToUpper(a.PK) + `"]}`,
		`{"kinds":[-1,99999999999]}`,
		`{"kinds":[]}`,
		`{"#e":[]}`,
		`{"#e":[""]}`,
		`{"#e":["abc"]}`,
		`{"#":["x"]}`,
		`{"#zz":["a"]}`,
		`{"#h":[""]}`,
		`{"#h":["` + strings.Repeat("x", 5000) + `"]}`,
		`{"#d":[""]}`,
		`{"search":"hello"}`,
		`{"unknown_key":{"nested":[1,2,{"x":null}]}}`,
		`{"top_level":true,"#h":["` + testChannel + `"],"kinds":[9]}`,
		`{"depth_limit":-3,"#e":["abc"]}`,
		`{"kinds":[1],"#e":["` + strings.Repeat("e", 64) + `"],"#p":["` + a.PK + `"]}`,
	}
	for i, f := range filters {
		c.req(fmt.Sprintf("f-%d", i), f) // EOSE or CLOSED, either is an answer
		c.send("CLOSE", fmt.Sprintf("f-%d", i))
		id := fmt.Sprintf("fc-%d", i)
		c.sendText(`["COUNT",` + strconvQuote(id) + `,` + f + `]`)
		msg := c.await("COUNT "+id, func(m []json.RawMessage) bool { // COUNT or CLOSED
			return (label(m) == "COUNT" || label(m) == "CLOSED") && str(m, 1) == id
		})
		if label(msg) != "COUNT" {
			continue
		}
		var res struct {
			Count *int64 `json:"count"`
		}
		if len(msg) < 3 || json.Unmarshal(msg[2], &res) != nil || res.Count == nil || *res.Count < 0 {
			t.Errorf("COUNT %s: %s", f, joinRaw(msg))
		}
	}
	// Many filters in one REQ.
	many := make([]string, 50)
	for i := range many {
		many[i] = `{"#e":["` + fmt.Sprint(i) + `"]}`
	}
	c.req("many", many...)

	// Signed events with hostile tags: each gets an OK, true or false.
	hostileTags := [][]nostr.Tag{
		{{}},
		{{}, {"t"}},
		{{"e"}},
		{{"e", ""}},
		{{"e", "", "", "reply"}},
		{{"e", strings.Repeat("f", 64), "", "reply"}}, // no h tag: not a channel reply
		{{"h"}},
		{{"h", ""}},
		{{"h", testChannel}, {"h", "other"}},
		{{"h", testChannel}, {"e"}, {"e", "zz", "", "reply"}, {"e", "", "", "root"}},
		{{"p", ""}},
		{{"a"}},
		{{"expiration"}},
		{{"expiration", "soon"}},
		{{"expiration", "-1"}},
		{{"-"}},
		{{"", ""}},
		{{"broadcast"}},
	}
	for _, kind := range []int{1, 5, 7, 9, 40003, 9005, 20001} {
		for _, tags := range hostileTags {
			ev := a.Event(t, kind, now, "hostile", tags...)
			c.publish(ev) // an OK either way
		}
	}
	// A deletion with hostile references.
	c.publish(a.Event(t, 5, now, "", nostr.Tag{"a"}, nostr.Tag{"a", "x"}, nostr.Tag{"a", "30023:zz:d"},
		nostr.Tag{"a", "abc:" + a.PK + ":"}, nostr.Tag{"e", "zz"}, nostr.Tag{"a", "1:" + a.PK}))

	// Still alive: a new connection sees the known event, and so does the
	// hostile one.
	fresh := s.client(t)
	if got := fetch(t, fresh, nostr.Filter{IDs: []string{known.ID}}); len(got) != 1 {
		t.Fatalf("after hostile input: REQ by id got %d events", len(got))
	}
	if evs, closed := c.req("final", `{"ids":["`+known.ID+`"]}`); len(evs) != 1 || closed != "" {
		t.Fatalf("final REQ on the hostile connection: %d events, closed %q", len(evs), closed)
	}
	if n := countFilter(t, fresh, nostr.Filter{IDs: []string{known.ID}}); n != 1 {
		t.Fatalf("final COUNT: %d, want 1", n)
	}
}
