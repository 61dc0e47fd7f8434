package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pagecache"
	"github.com/buzz-lite/buzz-lite/internal/sign"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ovSummaries asks for the head window of ch and returns its 39005 and
// 39006 events.
func ovSummaries(t *testing.T, s *testServer, ch string) (sums []*nostr.Event, bounds *nostr.Event) {
	t.Helper()
	body := `[{"top_level":true,"#h":["` + ch + `"],"include_summaries":true}]`
	resp, err := http.Post(s.httpURL+"/query", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []*nostr.Event
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		switch ev.Kind {
		case 39005:
			sums = append(sums, ev)
		case 39006:
			bounds = ev
		}
	}
	return sums, bounds
}

// Issue 4, CW-19, CW-21: a thread summary keeps its id and signature while
// its thread does not change, however much later it is served (so that a
// busy page does not pay fresh signatures), and is dated anew once it does.
func TestSummaryStableUntilThreadChanges(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().Unix())
	s, c, a := startWithClient(t, func(cfg *Config) { cfg.Now = func() time.Time { return time.Unix(now.Load(), 0) } })
	root := a.Event(t, 9, time.Now().Unix()-100, "root", nostr.Tag{"h", testChannel})
	mustPublish(t, c, root)
	mustPublish(t, c, a.Event(t, 9, time.Now().Unix()-90, "reply", nostr.Tag{"h", testChannel}, nostr.Tag{"e", root.ID, "", "reply"}))

	first, b1 := ovSummaries(t, s, testChannel)
	now.Add(3600)
	second, b2 := ovSummaries(t, s, testChannel)
	if len(first) != 1 || len(second) != 1 || first[0].ID != second[0].ID || first[0].Sig != second[0].Sig {
		t.Fatalf("an unchanged thread's summary changed an hour later: %v / %v", first, second)
	}
	if b1.ID == b2.ID || int64(b2.CreatedAt) != now.Load() {
		t.Fatalf("the bounds are dated when served: %d then %d", b1.CreatedAt, b2.CreatedAt)
	}

	mustPublish(t, c, testutil.NewSigner(t).Event(t, 9, time.Now().Unix()-80, "another", nostr.Tag{"h", testChannel}, nostr.Tag{"e", root.ID, "", "reply"}))
	third, _ := ovSummaries(t, s, testChannel)
	if len(third) != 1 || third[0].ID == first[0].ID || third[0].CreatedAt < first[0].CreatedAt {
		t.Fatalf("after a new reply: %v, before: %v", third, first)
	}
	for _, ev := range append(first, third...) {
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("summary signature: %v", err)
		}
	}
}

// Issue 15, CW-19: a window page's summaries are kept signed and encoded
// by their row, and served from there while the row's summary is what they
// were made of: the same bytes as building, signing and encoding it anew.
// Any change to what a summary says (its counters, last reply,
// participants, channel or date) makes a fresh one.
func TestSummaryJSONKeptWhileUnchanged(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	key, err := sign.NewKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	o := newOverlaySigner(key)
	last := int64(1_700_000_100)
	base := buzz.Summary{ID: strings.Repeat("ab", 32), UpdatedAt: 1_700_000_200,
		Summary: nipcw.Summary{ReplyCount: 2, DescendantCount: 3, LastReplyAt: &last, Participants: []string{pk, strings.Repeat("cd", 32)}}}
	const now = 1_800_000_000
	fresh := func(channel string, sm buzz.Summary) []byte {
		t.Helper()
		ev, err := summaryEvent(channel, sm, now)
		if err != nil {
			t.Fatal(err)
		}
		ev.PubKey = pk
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		j, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	get := func(channel string, sm buzz.Summary) []byte {
		t.Helper()
		j := o.summaryJSON(channel, sm, now)
		var ev nostr.Event
		if err := json.Unmarshal(j, &ev); err != nil {
			t.Fatal(err)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("summary does not verify: %v", err)
		}
		return j
	}
	first := get("general", base)
	// Signatures are random (BIP-340 aux randomness): compare all but sig.
	withoutSig := func(j []byte) string {
		var ev nostr.Event
		if err := json.Unmarshal(j, &ev); err != nil {
			t.Fatal(err)
		}
		ev.Sig = ""
		out, _ := ev.MarshalJSON()
		return string(out)
	}
	if withoutSig(first) != withoutSig(fresh("general", base)) {
		t.Fatalf("kept summary %s differs from one built anew %s", first, fresh("general", base))
	}
	again := base
	again.Participants = slices.Clone(base.Participants)
	if j := get("general", again); &j[0] != &first[0] {
		t.Fatal("an unchanged summary was built again")
	}

	// What a summary is kept as is its own: a caller that changes the
	// participants or last reply it was made from, and then asks for the
	// summary they now say, gets a fresh one.
	other := base
	other.ID = strings.Repeat("12", 32)
	participants := slices.Clone(base.Participants)
	lastAt := last
	other.Participants, other.LastReplyAt = participants, &lastAt
	kept := get("general", other)
	participants[0] = strings.Repeat("ef", 32)
	changed := get("general", other)
	if &changed[0] == &kept[0] || !strings.Contains(string(changed), strings.Repeat("ef", 32)) {
		t.Fatalf("the kept summary shares the caller's participants: %s", changed)
	}
	lastAt++
	later := get("general", other)
	if &later[0] == &changed[0] || !strings.Contains(string(later), fmt.Sprint(lastAt)) {
		t.Fatalf("the kept summary shares the caller's last reply: %s", later)
	}

	newer := int64(1_700_000_150)
	changes := []struct {
		name    string
		channel string
		edit    func(*buzz.Summary)
	}{
		{"reply count", "general", func(s *buzz.Summary) { s.ReplyCount++ }},
		{"descendant count", "general", func(s *buzz.Summary) { s.DescendantCount++ }},
		{"last reply", "general", func(s *buzz.Summary) { s.LastReplyAt = &newer }},
		{"no last reply", "general", func(s *buzz.Summary) { s.LastReplyAt = nil }},
		{"participants", "general", func(s *buzz.Summary) { s.Participants = []string{s.Participants[1], s.Participants[0]} }},
		{"fewer participants", "general", func(s *buzz.Summary) { s.Participants = s.Participants[:1] }},
		{"date", "general", func(s *buzz.Summary) { s.UpdatedAt++ }},
		{"date unknown", "general", func(s *buzz.Summary) { s.UpdatedAt = 0 }},
		{"channel", "random", func(*buzz.Summary) {}},
	}
	for _, c := range changes {
		sm := base
		sm.Participants = slices.Clone(base.Participants)
		c.edit(&sm)
		j := get(c.channel, sm)
		if withoutSig(j) != withoutSig(fresh(c.channel, sm)) || withoutSig(j) == withoutSig(first) {
			t.Errorf("%s: got %s, want %s", c.name, j, fresh(c.channel, sm))
		}
		get("general", base) // back to the first, for the next change
	}

	// A summary asked for again moves to the newer generation: the
	// pages asked for all the time stay kept however many others pass.
	fill := func(from, n int) {
		t.Helper()
		for i := range n {
			sm := base
			sm.ID = fmt.Sprintf("%064x", from+i)
			o.summaryJSON("general", sm, now)
		}
	}
	hot := get("general", base)
	fill(1_000_000, maxCachedSummaries)
	if j := get("general", base); &j[0] != &hot[0] {
		t.Fatal("a summary one generation old was built again")
	}
	fill(2_000_000, maxCachedSummaries)
	if j := get("general", base); &j[0] != &hot[0] {
		t.Fatal("a summary asked for in every generation was dropped")
	}

	for i := range 2*maxCachedSummaries + 1 {
		sm := base
		sm.ID = fmt.Sprintf("%064x", i+1)
		o.summaryJSON("general", sm, now)
	}
	if n := len(o.summaries) + len(o.oldSummaries); n > 2*maxCachedSummaries {
		t.Fatalf("%d summaries kept, bound %d", n, 2*maxCachedSummaries)
	}
}

// Issue 15, CW-19: a summary written straight from its parts
// (encodeSummary) is the event summaryEvent builds, signed and encoded by
// go-nostr: the same id (so the same NIP-01 serialization), signature,
// tags and content, and for a channel and participants that JSON writes
// without escapes (every channel id the relay accepts), the same bytes.
// The signature is checked against the relay's key; both paths share one
// cache of signatures by id, so its equality says only that the ids are.
func FuzzEncodeSummary(f *testing.F) {
	f.Add("general", int64(2), int64(3), true, int64(1_700_000_100), int64(1_700_000_200), 2)
	f.Add("1b4e28ba-2fa1-41d2-883f-0016d3cca427", int64(0), int64(0), false, int64(0), int64(0), 0)
	f.Add("we\"ird\\ <chan>&\u2028\x01\x7f é", int64(-1), int64(1<<62), true, int64(-5), int64(-1), 11)
	key, err := sign.NewKey(strings.Repeat("01", 32))
	if err != nil {
		f.Fatal(err)
	}
	o := newOverlaySigner(key)
	f.Fuzz(func(t *testing.T, channel string, replies, descendants int64, hasLast bool, last, at int64, participants int) {
		if !utf8.ValidString(channel) {
			t.Skip("channel ids are UUIDs or NIP-29 group ids long before a summary is made")
		}
		sm := buzz.Summary{ID: fmt.Sprintf("%064x", uint64(replies)^uint64(at)), UpdatedAt: at,
			Summary: nipcw.Summary{ReplyCount: replies, DescendantCount: descendants}}
		if hasLast {
			sm.LastReplyAt = &last
		}
		for i := range min(max(participants, 0), 12) {
			sm.Participants = append(sm.Participants, fmt.Sprintf("%064x", i*7919+int(descendants)))
		}
		got := o.encodeSummary(channel, sm, at)
		ev, err := summaryEvent(channel, sm, at)
		if err != nil {
			t.Fatal(err)
		}
		o.sign(ev)
		want, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var decoded nostr.Event
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if !decoded.CheckID() {
			t.Fatalf("id of %s is not its hash", got)
		}
		if ok, err := decoded.CheckSignature(); !ok || err != nil {
			t.Fatalf("%s does not verify: %v", got, err)
		}
		if decoded.ID != ev.ID || decoded.Sig != ev.Sig || decoded.PubKey != ev.PubKey || decoded.Kind != ev.Kind ||
			decoded.CreatedAt != ev.CreatedAt || decoded.Content != ev.Content || !slices.EqualFunc(decoded.Tags, ev.Tags, slices.Equal) {
			t.Fatalf("encoded %s, event %s", got, want)
		}
		if plainJSON(channel) && !bytes.Equal(got, want) {
			t.Fatalf("encoded %s, event %s", got, want)
		}
	})
}

// plainJSON reports whether both JSON writers write s as it is: printable
// ASCII without quotes or backslashes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\' {
			return false
		}
	}
	return true
}

// Issue 15, CW-19: a participant that is not a plain hex key (the stores
// give only those) is escaped twice, as a string in the content and as part
// of the content in the event: the summary still decodes, its id is its
// hash, its signature verifies and its content gives the participants back.
func TestEncodeSummaryEscapedParticipants(t *testing.T) {
	key, err := sign.NewKey(strings.Repeat("02", 32))
	if err != nil {
		t.Fatal(err)
	}
	o := newOverlaySigner(key)
	for _, p := range []string{`quo"te`, `back\slash`, "line\nbreak", "tab\tand\x01", "é \u2028 <&>", strings.Repeat("ab", 32)} {
		sm := buzz.Summary{ID: strings.Repeat("cd", 32), UpdatedAt: 1_700_000_000,
			Summary: nipcw.Summary{ReplyCount: 1, DescendantCount: 1, Participants: []string{strings.Repeat("ef", 32), p}}}
		got := o.encodeSummary("general", sm, sm.UpdatedAt)
		var ev nostr.Event
		if err := json.Unmarshal(got, &ev); err != nil {
			t.Fatalf("%q: %s: %v", p, got, err)
		}
		if !ev.CheckID() {
			t.Errorf("%q: id of %s is not its hash", p, got)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Errorf("%q: %s does not verify: %v", p, got, err)
		}
		var content nipcw.Summary
		if err := json.Unmarshal([]byte(ev.Content), &content); err != nil {
			t.Fatalf("%q: content %q: %v", p, ev.Content, err)
		}
		if !slices.Equal(content.Participants, sm.Participants) {
			t.Errorf("participants %q, want %q", content.Participants, sm.Participants)
		}
	}
}

// BenchmarkEncodeSummary is one summary overlay of a row with four
// participants written from its parts, its signature kept (issue 15: a
// deep page encodes fifty).
func BenchmarkEncodeSummary(b *testing.B) {
	key, err := sign.NewKey(strings.Repeat("01", 32))
	if err != nil {
		b.Fatal(err)
	}
	o := newOverlaySigner(key)
	last := int64(1_700_000_200)
	sm := buzz.Summary{ID: fmt.Sprintf("%064x", 12345), UpdatedAt: 1_700_000_300,
		Summary: nipcw.Summary{ReplyCount: 7, DescendantCount: 12, LastReplyAt: &last}}
	for i := range 4 {
		sm.Participants = append(sm.Participants, fmt.Sprintf("%064x", i*7919))
	}
	const channel = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
	o.encodeSummary(channel, sm, sm.UpdatedAt)
	b.ReportAllocs()
	for b.Loop() {
		o.encodeSummary(channel, sm, sm.UpdatedAt)
	}
}

// summaryEvent is the thread summary overlay of a row (CW-19) built as a
// go-nostr event, content by encoding/json: the reference the one encoder,
// encodeSummary, is held to byte for byte.
func summaryEvent(channel string, sm buzz.Summary, now int64) (*nostr.Event, error) {
	at := summaryDate(sm, now)
	content := sm.Summary
	if content.Participants == nil {
		content.Participants = []string{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("thread summary: %w", err)
	}
	return &nostr.Event{
		Kind:      nipcw.KindThreadSummary,
		CreatedAt: nostr.Timestamp(at),
		Tags:      summaryTags(sm.ID, channel),
		Content:   string(b),
	}, nil
}

// Issue 32, CW-19, CW-20: the overlays of a page are kept with it, so that
// a page served from the store's cache is not encoded again: its
// summaries when every one is dated by its thread, its bounds for answers
// within the same second and to the same cursor. A page with a summary
// dated by now has it made for each answer. What is kept stays within
// what the page cache counts for it (pagecache.KeptSummaryBytes), for the
// longest channel id and participants that need escapes.
func TestWindowOverlaysKeptWithThePage(t *testing.T) {
	key, err := sign.NewKey(strings.Repeat("01", 32))
	if err != nil {
		t.Fatal(err)
	}
	o := newOverlaySigner(key)
	channel := strings.Repeat("g.~-_", 128/5) + "abc"
	last := int64(1_700_000_100)
	summary := func(i int, updated int64) buzz.Summary {
		sm := buzz.Summary{ID: fmt.Sprintf("%064x", i), UpdatedAt: updated,
			Summary: nipcw.Summary{ReplyCount: math.MaxInt64, DescendantCount: math.MaxInt64, LastReplyAt: &last}}
		for p := range 10 {
			sm.Participants = append(sm.Participants, fmt.Sprintf("%064x", p))
		}
		sm.Participants[9] = strings.Repeat(`"\`, 32)
		return sm
	}
	const now = 1_800_000_000
	next := &nipcw.Cursor{CreatedAt: 1_700_000_000, ID: strings.Repeat("ef", 32)}
	b := nipcw.Bounds{HasMore: true, NextCursor: next}
	overlays := func(page *buzz.WindowPage, cursor *nipcw.Cursor, at int64) ([][]byte, []byte) {
		t.Helper()
		sums, bounds, err := o.windowOverlays(channel, cursor, page, b, at)
		if err != nil {
			t.Fatal(err)
		}
		return sums, bounds
	}
	boundsOf := func(j []byte) nostr.Event {
		t.Helper()
		var ev nostr.Event
		if err := json.Unmarshal(j, &ev); err != nil {
			t.Fatal(err)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("%s does not verify: %v", j, err)
		}
		return ev
	}

	dated := &buzz.WindowPage{Summaries: []buzz.Summary{summary(1, 1_700_000_200), summary(2, 1_700_000_300)}}
	first, firstBounds := overlays(dated, nil, now)
	again, againBounds := overlays(dated, nil, now)
	later, laterBounds := overlays(dated, nil, now+5)
	if kept, ok := dated.Kept().(*pageOverlays); !ok || kept.summaries.Load() == nil {
		t.Fatal("a page of summaries dated by their threads kept none")
	}
	for i, sm := range dated.Summaries {
		if want := o.encodeSummary(channel, sm, sm.UpdatedAt); !bytes.Equal(first[i], want) {
			t.Errorf("summary %d: %s, want %s", i, first[i], want)
		}
		if &again[i][0] != &first[i][0] || &later[i][0] != &first[i][0] {
			t.Errorf("summary %d encoded again for a page served again", i)
		}
		if n := int64(len(first[i])) + 24; n > pagecache.KeptSummaryBytes(sm, channel) {
			t.Errorf("summary %d keeps %d bytes with its slice header, the cache counts %d", i, n, pagecache.KeptSummaryBytes(sm, channel))
		}
	}
	if &againBounds[0] != &firstBounds[0] {
		t.Error("bounds made again within the same second")
	}
	if ev := boundsOf(laterBounds); ev.CreatedAt != now+5 {
		t.Errorf("bounds served later dated %d, want %d", ev.CreatedAt, now+5)
	}
	cursor := &nipcw.Cursor{CreatedAt: 1_700_000_400, ID: strings.Repeat("ab", 32)}
	_, otherBounds := overlays(dated, cursor, now+5)
	if ev := boundsOf(otherBounds); ev.Tags.GetD() != nipcw.BoundsD(channel, cursor) {
		t.Errorf("bounds to another cursor tagged %q, want %q", ev.Tags.GetD(), nipcw.BoundsD(channel, cursor))
	}

	undated := &buzz.WindowPage{Summaries: []buzz.Summary{summary(3, 1_700_000_200), summary(4, 0)}}
	overlays(undated, nil, now)
	undatedLater, _ := overlays(undated, nil, now+5)
	if kept, ok := undated.Kept().(*pageOverlays); !ok || kept.summaries.Load() != nil {
		t.Error("a page with a summary dated by now kept its summaries")
	}
	if ev := boundsOf(undatedLater[1]); ev.CreatedAt != now+5 {
		t.Errorf("undated summary served again dated %d, want %d", ev.CreatedAt, now+5)
	}
}
