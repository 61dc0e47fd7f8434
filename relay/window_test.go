package relay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// This file is the conformance suite of the channel window
// (shared/spec/channel-window.md, CW-1..CW-23) against a real relay on a
// loopback port: real signed events published over WebSocket (or, for bulk,
// through the store), real `POST /query` requests, anonymous or with a
// signed NIP-98 token. Every test names the requirement it proves.

// ---------------------------------------------------------------------------
// Events

var cwSeq atomic.Int64

// cwBroadcast is the tag that admits a depth-1 reply to the timeline (CW-11).
var cwBroadcast = nostr.Tag{"broadcast", "1"}

// cwEvent is a signed event of kind with a unique content (two events of
// one author in one second must not collide).
func cwEvent(t testing.TB, who testutil.Signer, kind int, at int64, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	return who.Event(t, kind, at, fmt.Sprintf("cw %d", cwSeq.Add(1)), tags...)
}

// cwMsg is a kind 9 chat message in channel ch.
func cwMsg(t testing.TB, who testutil.Signer, ch string, at int64, extra ...nostr.Tag) *nostr.Event {
	t.Helper()
	return cwEvent(t, who, 9, at, append([]nostr.Tag{{"h", ch}}, extra...)...)
}

// cwReply is a kind 9 reply to parent (NIP-10 marked `reply` tag).
func cwReply(t testing.TB, who testutil.Signer, ch string, at int64, parent *nostr.Event, extra ...nostr.Tag) *nostr.Event {
	t.Helper()
	return cwMsg(t, who, ch, at, append([]nostr.Tag{{"e", parent.ID, "", "reply"}}, extra...)...)
}

// cwReaction is a kind 7 reaction to target, without an h tag unless extra
// gives one.
func cwReaction(t testing.TB, who testutil.Signer, at int64, target *nostr.Event, extra ...nostr.Tag) *nostr.Event {
	t.Helper()
	tags := append([]nostr.Tag{{"e", target.ID}, {"p", target.PubKey}}, extra...)
	return who.Event(t, buzz.KindReaction, at, "+", append(tags, nostr.Tag{"nonce", strconv.FormatInt(cwSeq.Add(1), 10)})...)
}

// cwDeletion is who's NIP-09 deletion of targets.
func cwDeletion(t testing.TB, who testutil.Signer, targets ...*nostr.Event) *nostr.Event {
	t.Helper()
	tags := make([]nostr.Tag, 0, len(targets))
	for _, ev := range targets {
		tags = append(tags, nostr.Tag{"e", ev.ID})
	}
	return cwEvent(t, who, buzz.KindDeletion, now(), tags...)
}

// cwSignAll signs evs, event i by signers[i%len(signers)], on every CPU:
// for the bulk data of one test, whose signing would otherwise take most
// of its time under -race. go-nostr's Sign derives the public key again
// for every event; this derives it once per signer.
func cwSignAll(t testing.TB, signers []testutil.Signer, evs []*nostr.Event) {
	t.Helper()
	keys := make([]*btcec.PrivateKey, len(signers))
	for i, sg := range signers {
		b, err := hex.DecodeString(sg.SK)
		if err != nil {
			t.Fatal(err)
		}
		keys[i], _ = btcec.PrivKeyFromBytes(b)
	}
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				ev := evs[i]
				ev.PubKey = signers[i%len(signers)].PK
				h := sha256.Sum256(ev.Serialize())
				sig, err := schnorr.Sign(keys[i%len(signers)], h[:], schnorr.FastSign())
				if err != nil {
					errs[w] = err
					return
				}
				ev.ID, ev.Sig = hex.EncodeToString(h[:]), hex.EncodeToString(sig.Serialize())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, len(evs) - 1} {
		if ok, err := evs[i].CheckSignature(); !ok {
			t.Fatalf("event %d: signature does not verify: %v", i, err)
		}
	}
}

// cwCreate publishes owner's kind 9007 creating channel ch.
func cwCreate(t *testing.T, c *rawClient, owner testutil.Signer, ch string, private bool) *nostr.Event {
	t.Helper()
	tags := []nostr.Tag{{"h", ch}, {"name", "cw " + ch[:8]}}
	if private {
		tags = append(tags, nostr.Tag{"private"})
	}
	ev := cwEvent(t, owner, buzz.KindCreateChannel, now(), tags...)
	mustPublish(t, c, ev)
	return ev
}

// cwAddMember publishes by's kind 9000 making pk a member of ch.
func cwAddMember(t *testing.T, c *rawClient, by testutil.Signer, ch, pk string) {
	t.Helper()
	mustPublish(t, c, cwEvent(t, by, buzz.KindPutUser, now(), nostr.Tag{"h", ch}, nostr.Tag{"p", pk}))
}

// cwPublish publishes every event and fails on the first refusal.
func cwPublish(t *testing.T, c *rawClient, evs ...*nostr.Event) {
	t.Helper()
	for _, ev := range evs {
		mustPublish(t, c, ev)
	}
}

// cwIngest stores events through the store directly: for bulk data whose
// publishing over WebSocket would only slow the suite down.
func cwIngest(t *testing.T, s *testServer, evs ...*nostr.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ev := range evs {
		if err := s.ingest(ctx, ev); err != nil {
			t.Fatalf("ingest kind %d: %v", ev.Kind, err)
		}
	}
}

// cwSetProjection publishes admin's kind 9033 setting thread_replies_in_channel.
func cwSetProjection(t *testing.T, c *rawClient, admin testutil.Signer, v string) {
	t.Helper()
	mustPublish(t, c, cwEvent(t, admin, buzz.KindCommunityAdmin, now(), nostr.Tag{"thread_replies_in_channel", v}))
}

// cwLess is the window order: created_at DESC, id ASC (CW-15).
func cwLess(a, b *nostr.Event) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.ID < b.ID
}

// cwOrder returns evs sorted in window order.
func cwOrder(evs ...*nostr.Event) []*nostr.Event {
	out := slices.Clone(evs)
	slices.SortFunc(out, func(a, b *nostr.Event) int {
		switch {
		case a.ID == b.ID:
			return 0
		case cwLess(a, b):
			return -1
		}
		return 1
	})
	return out
}

// cwShort abbreviates ids for messages.
func cwShort(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:min(8, len(id))]
	}
	return "[" + strings.Join(out, " ") + "]"
}

// cwSameIDs fails unless got holds exactly the ids of want, in order.
func cwSameIDs(t *testing.T, what string, got, want []*nostr.Event) {
	t.Helper()
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Errorf("%s: got %d %s, want %d %s", what, len(g), cwShort(g), len(w), cwShort(w))
	}
}

// cwSameSet fails unless got holds exactly the ids of want, in any order,
// each once.
func cwSameSet(t *testing.T, what string, got, want []*nostr.Event) {
	t.Helper()
	g, w := ids(got), ids(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s: got %d %s, want %d %s", what, len(g), cwShort(g), len(w), cwShort(w))
	}
}

// ---------------------------------------------------------------------------
// POST /query

// cwToken is a NIP-98 Authorization header of who for a POST of body to s.
// go-nostr signs deterministically, so a random content keeps two tokens of
// one second for one body distinct (each token is accepted once, RL-17).
func cwToken(t testing.TB, s *testServer, who testutil.Signer, body []byte) string {
	t.Helper()
	sum := sha256.Sum256(body)
	ev := who.Event(t, 27235, now(), randomID(t),
		nostr.Tag{"u", s.httpURL + "/query"}, nostr.Tag{"method", "POST"},
		nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	j, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return "Nostr " + base64.StdEncoding.EncodeToString(j)
}

var cwHTTP = &http.Client{Timeout: 4 * waitTimeout}

// cwDo posts body to /query as who (nil: anonymous) and returns the status
// and the body.
func cwDo(t testing.TB, s *testServer, who *testutil.Signer, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.httpURL+"/query", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if who != nil {
		req.Header.Set("Authorization", cwToken(t, s, *who, body))
	}
	resp, err := cwHTTP.Do(req)
	if err != nil {
		t.Fatalf("POST /query: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST /query: reading body: %v", err)
	}
	return resp.StatusCode, b
}

// cwQuery posts filters and returns the events of the 200 answer.
func cwQuery(t testing.TB, s *testServer, who *testutil.Signer, filters ...any) []*nostr.Event {
	t.Helper()
	body, err := json.Marshal(filters)
	if err != nil {
		t.Fatal(err)
	}
	status, out := cwDo(t, s, who, body)
	if status != http.StatusOK {
		t.Fatalf("POST /query %s: status %d %s", body, status, out)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(out, &evs); err != nil {
		t.Fatalf("POST /query %s: not a JSON array of events: %v: %s", body, err, out)
	}
	return evs
}

// cwWantError posts the raw body and fails unless the answer is status
// with exactly the body {"error":msg}.
func cwWantError(t *testing.T, s *testServer, who *testutil.Signer, body string, status int, msg string) {
	t.Helper()
	got, out := cwDo(t, s, who, []byte(body))
	want, _ := json.Marshal(map[string]string{"error": msg})
	if got != status || string(bytes.TrimSpace(out)) != string(want) {
		t.Errorf("POST %s: got %d %s, want %d %s", body, got, bytes.TrimSpace(out), status, want)
	}
}

// cwWantEmpty posts the raw body and fails unless the answer is 200 with
// exactly an empty array.
func cwWantEmpty(t *testing.T, s *testServer, who *testutil.Signer, body string) {
	t.Helper()
	got, out := cwDo(t, s, who, []byte(body))
	if got != http.StatusOK || string(bytes.TrimSpace(out)) != "[]" {
		t.Errorf("POST %s: got %d %s, want 200 []", body, got, bytes.TrimSpace(out))
	}
}

// cwF is a window filter of channel ch: top_level true, #h [ch], then the
// key/value pairs kv.
func cwF(ch string, kv ...any) map[string]any {
	f := map[string]any{"top_level": true, "#h": []string{ch}}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i].(string)] = kv[i+1]
	}
	return f
}

// cwJSON is v as JSON.
func cwJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// Window pages

// cwCursor is a next_cursor.
type cwCursor struct {
	CreatedAt int64
	ID        string
}

// cwSummary is the content of a 39005.
type cwSummary struct {
	Reply, Desc int64
	Last        *int64
	Parts       []string
}

func (s cwSummary) String() string {
	last := "null"
	if s.Last != nil {
		last = strconv.FormatInt(*s.Last, 10)
	}
	return fmt.Sprintf("{reply %d, desc %d, last %s, parts %s}", s.Reply, s.Desc, last, cwShort(s.Parts))
}

func (s cwSummary) equal(o cwSummary) bool {
	if s.Reply != o.Reply || s.Desc != o.Desc || (s.Last == nil) != (o.Last == nil) ||
		(s.Last != nil && *s.Last != *o.Last) {
		return false
	}
	return slices.Equal(s.Parts, o.Parts)
}

// cwPage is one window answer, split into its sections.
type cwPage struct {
	all, rows, aux, sums []*nostr.Event
	bounds               *nostr.Event
	// summary is the parsed content of each 39005, by row id.
	summary map[string]cwSummary
	// HasMore, Next and Projection are the content of the 39006.
	HasMore, Projection bool
	Next                *cwCursor
}

var cwSelfKeys sync.Map // *testServer -> NIP-11 self

// cwSelf is the relay identity advertised as NIP-11 `self`.
func cwSelf(t testing.TB, s *testServer) string {
	t.Helper()
	if v, ok := cwSelfKeys.Load(s); ok {
		return v.(string)
	}
	req, err := http.NewRequest(http.MethodGet, s.httpURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := cwHTTP.Do(req)
	if err != nil {
		t.Fatalf("NIP-11: %v", err)
	}
	defer resp.Body.Close()
	var doc struct {
		Self string `json:"self"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || !nipcw.IsLowerHex64(doc.Self) {
		t.Fatalf("NIP-11: no self (%v)", err)
	}
	cwSelfKeys.Store(s, doc.Self)
	return doc.Self
}

// cwIsAux reports whether k is an aux kind (CW-18).
func cwIsAux(k int) bool { return k == 5 || k == 7 || k == 9005 || k == 40003 }

// cwWindow posts one window filter f of channel ch (canonical) as who and
// checks what every page must be (cwSplit).
func cwWindow(t *testing.T, s *testServer, who *testutil.Signer, ch string, f map[string]any) *cwPage {
	t.Helper()
	d := ch + ":head"
	if u, ok := f["until"]; ok {
		d = fmt.Sprintf("%s:%v:%s", ch, u, strings.ToLower(f["before_id"].(string)))
	}
	return cwSplit(t, s, cwQuery(t, s, who, f), ch, d)
}

// cwSplit partitions the answer to one window filter and checks the shape
// every page has: rows, aux, summaries, bounds in that order; rows of the
// channel in window order, each once (CW-15); exactly one 39006, last,
// tags exactly d and h (CW-20); 39005 tags exactly e, d, h naming a row,
// at most one per row (CW-19); every overlay signed by NIP-11 `self`
// (CW-21); content fields of the right types.
func cwSplit(t *testing.T, s *testServer, evs []*nostr.Event, ch, d string) *cwPage {
	t.Helper()
	p := &cwPage{all: evs, summary: map[string]cwSummary{}}
	phase := 0
	for i, ev := range evs {
		ph := 0
		switch {
		case ev.Kind == buzz.KindWindowBounds:
			ph = 3
		case ev.Kind == buzz.KindThreadSummary:
			ph = 2
		case cwIsAux(ev.Kind):
			ph = 1
		}
		if ph < phase {
			t.Fatalf("event %d of %d (kind %d) out of order: want rows, aux, summaries, bounds", i, len(evs), ev.Kind)
		}
		phase = ph
		switch ph {
		case 0:
			p.rows = append(p.rows, ev)
		case 1:
			p.aux = append(p.aux, ev)
		case 2:
			p.sums = append(p.sums, ev)
		case 3:
			if p.bounds != nil {
				t.Fatalf("more than one 39006 in one window answer")
			}
			p.bounds = ev
		}
	}
	if p.bounds == nil {
		t.Fatalf("window answer of %d events has no 39006 (CW-20)", len(evs))
	}

	self := cwSelf(t, s)
	for _, ev := range append(slices.Clone(p.sums), p.bounds) {
		if ev.PubKey != self {
			t.Errorf("kind %d signed by %s, want NIP-11 self %s (CW-21)", ev.Kind, ev.PubKey, self)
		}
		if ev.GetID() != ev.ID {
			t.Errorf("kind %d: id does not match its content", ev.Kind)
		}
		if ok, err := ev.CheckSignature(); !ok {
			t.Errorf("kind %d: signature does not verify: %v", ev.Kind, err)
		}
		if d := time.Since(time.Unix(int64(ev.CreatedAt), 0)); d > time.Minute || d < -time.Minute {
			t.Errorf("kind %d: created_at %d is not the time it was served", ev.Kind, ev.CreatedAt)
		}
	}

	rowIDs := map[string]bool{}
	for i, ev := range p.rows {
		if rowIDs[ev.ID] {
			t.Errorf("row %s served twice in one page", ev.ID[:8])
		}
		rowIDs[ev.ID] = true
		if i > 0 && !cwLess(p.rows[i-1], ev) {
			t.Errorf("rows %d and %d not in created_at DESC, id ASC order", i-1, i)
		}
		if h := ev.Tags.Find("h"); h == nil || h[1] != ch {
			t.Errorf("row %s (kind %d) is not of channel %s", ev.ID[:8], ev.Kind, ch)
		}
	}

	for _, ev := range p.sums {
		if len(ev.Tags) != 3 || len(ev.Tags[0]) != 2 || ev.Tags[0][0] != "e" ||
			!slices.Equal(ev.Tags[1], nostr.Tag{"d", ev.Tags[0][1]}) || !slices.Equal(ev.Tags[2], nostr.Tag{"h", ch}) {
			t.Fatalf("39005 tags %v, want exactly [[e,<row>],[d,<row>],[h,%s]] (CW-19)", ev.Tags, ch)
		}
		id := ev.Tags[0][1]
		if !rowIDs[id] {
			t.Errorf("39005 for %s, which is not a row of this page", id[:8])
		}
		if _, dup := p.summary[id]; dup {
			t.Errorf("two 39005 for row %s", id[:8])
		}
		p.summary[id] = cwParseSummary(t, ev.Content)
	}

	want := nostr.Tags{{"d", d}, {"h", ch}}
	if len(p.bounds.Tags) != 2 || !slices.Equal(p.bounds.Tags[0], want[0]) || !slices.Equal(p.bounds.Tags[1], want[1]) {
		t.Errorf("39006 tags %v, want exactly %v (CW-20)", p.bounds.Tags, want)
	}
	p.HasMore, p.Next, p.Projection = cwParseBounds(t, p.bounds.Content)
	return p
}

// cwField decodes the JSON of one content field, failing on a type error.
func cwField(t testing.TB, obj map[string]json.RawMessage, key string, v any) {
	t.Helper()
	raw, ok := obj[key]
	if !ok {
		t.Fatalf("content has no %q", key)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("content field %q = %s: %v", key, raw, err)
	}
}

// cwInteger decodes a JSON integer (not a float, not a string).
func cwInteger(t testing.TB, raw json.RawMessage, what string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatalf("%s = %s, want a JSON integer", what, raw)
	}
	return n
}

// cwParseSummary reads a 39005 content, checking its field types (CW-19).
func cwParseSummary(t testing.TB, content string) cwSummary {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("39005 content %q is not a JSON object", content)
	}
	var s cwSummary
	for _, k := range []string{"reply_count", "descendant_count", "last_reply_at", "participants"} {
		if _, ok := obj[k]; !ok {
			t.Fatalf("39005 content %s lacks %q", content, k)
		}
	}
	s.Reply = cwInteger(t, obj["reply_count"], "reply_count")
	s.Desc = cwInteger(t, obj["descendant_count"], "descendant_count")
	if string(obj["last_reply_at"]) != "null" {
		n := cwInteger(t, obj["last_reply_at"], "last_reply_at")
		s.Last = &n
	}
	cwField(t, obj, "participants", &s.Parts)
	if s.Parts == nil {
		t.Fatalf("39005 participants = %s, want a list", obj["participants"])
	}
	for _, pk := range s.Parts {
		if !nipcw.IsLowerHex64(pk) {
			t.Fatalf("39005 participant %q is not a hex pubkey", pk)
		}
	}
	return s
}

// cwParseBounds reads a 39006 content, checking its field types and that
// has_more and next_cursor agree (CW-17, CW-20).
func cwParseBounds(t testing.TB, content string) (hasMore bool, next *cwCursor, projection bool) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("39006 content %q is not a JSON object", content)
	}
	for _, k := range []string{"has_more", "next_cursor", "thread_replies_in_channel"} {
		if _, ok := obj[k]; !ok {
			t.Fatalf("39006 content %s lacks %q", content, k)
		}
	}
	for _, k := range []string{"has_more", "thread_replies_in_channel"} {
		if v := string(obj[k]); v != "true" && v != "false" {
			t.Fatalf("39006 %s = %s, want a JSON boolean", k, v)
		}
	}
	hasMore = string(obj["has_more"]) == "true"
	projection = string(obj["thread_replies_in_channel"]) == "true"
	if string(obj["next_cursor"]) != "null" {
		var c map[string]json.RawMessage
		cwField(t, obj, "next_cursor", &c)
		next = &cwCursor{CreatedAt: cwInteger(t, c["created_at"], "next_cursor.created_at")}
		cwField(t, c, "id", &next.ID)
		if !nipcw.IsLowerHex64(next.ID) {
			t.Fatalf("next_cursor.id %q is not 64 lowercase hex", next.ID)
		}
	}
	if hasMore != (next != nil) {
		t.Fatalf("39006 %s: has_more and next_cursor disagree (CW-17)", content)
	}
	return hasMore, next, projection
}

// cwWalk pages a window from head with limit, following next_cursor until
// has_more is false (CL-1), and returns every row served, in order, and
// the pages. A page with has_more is full and its cursor is its last row.
func cwWalk(t *testing.T, s *testServer, who *testutil.Signer, ch string, base map[string]any, limit int) ([]*nostr.Event, []*cwPage) {
	t.Helper()
	var rows []*nostr.Event
	var pages []*cwPage
	var cur *cwCursor
	for {
		if len(pages) > 1000 {
			t.Fatal("window paging does not end")
		}
		f := maps.Clone(base)
		f["limit"] = limit
		if cur != nil {
			f["until"], f["before_id"] = cur.CreatedAt, cur.ID
		}
		p := cwWindow(t, s, who, ch, f)
		if len(p.rows) > limit {
			t.Fatalf("page of limit %d has %d rows (CW-4)", limit, len(p.rows))
		}
		if p.HasMore {
			if len(p.rows) != limit {
				t.Fatalf("page with has_more has %d rows, want the limit %d (CW-16)", len(p.rows), limit)
			}
			last := p.rows[len(p.rows)-1]
			if p.Next.CreatedAt != int64(last.CreatedAt) || p.Next.ID != last.ID {
				t.Fatalf("next_cursor %+v, want the last row (%d, %s) (CW-17)", *p.Next, last.CreatedAt, last.ID)
			}
		}
		rows = append(rows, p.rows...)
		pages = append(pages, p)
		if !p.HasMore {
			return rows, pages
		}
		cur = p.Next
	}
}

// ---------------------------------------------------------------------------
// Thread model: the summaries the contract asks for (CW-19), computed from
// what the test stored.

type cwModel struct {
	events   map[string]*nostr.Event
	parent   map[string]string
	children map[string][]string
	deleted  map[string]bool
}

func cwNewModel() *cwModel {
	return &cwModel{events: map[string]*nostr.Event{}, parent: map[string]string{},
		children: map[string][]string{}, deleted: map[string]bool{}}
}

// add records ev, a reply of parent when parent is not nil.
func (m *cwModel) add(ev, parent *nostr.Event) *nostr.Event {
	m.events[ev.ID] = ev
	if parent != nil {
		m.parent[ev.ID] = parent.ID
		m.children[parent.ID] = append(m.children[parent.ID], ev.ID)
	}
	return ev
}

// summary is the expected 39005 content of id and whether one is due.
func (m *cwModel) summary(id string) (cwSummary, bool) {
	var s cwSummary
	newest := map[string]int64{}
	var walk func(string)
	walk = func(at string) {
		for _, c := range m.children[at] {
			if !m.deleted[c] {
				ev := m.events[c]
				s.Desc++
				if at == id {
					s.Reply++
				}
				ts := int64(ev.CreatedAt)
				if s.Last == nil || ts > *s.Last {
					s.Last = &ts
				}
				if n, ok := newest[ev.PubKey]; !ok || ts > n {
					newest[ev.PubKey] = ts
				}
			}
			walk(c)
		}
	}
	walk(id)
	s.Parts = slices.Collect(maps.Keys(newest))
	slices.SortFunc(s.Parts, func(a, b string) int {
		if newest[a] != newest[b] {
			if newest[a] > newest[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(s.Parts) > 10 {
		s.Parts = s.Parts[:10]
	}
	if s.Parts == nil {
		s.Parts = []string{}
	}
	return s, s.Desc > 0
}

// checkSummaries fails unless page p carries exactly the summaries the
// model expects for its rows.
func (m *cwModel) checkSummaries(t *testing.T, p *cwPage) {
	t.Helper()
	for _, row := range p.rows {
		want, due := m.summary(row.ID)
		got, ok := p.summary[row.ID]
		switch {
		case due && !ok:
			t.Errorf("row %s: no 39005, want %v (CW-19)", row.ID[:8], want)
		case !due && ok:
			t.Errorf("row %s: 39005 %v, want none: no non-deleted reply below (CW-19)", row.ID[:8], got)
		case due && !got.equal(want):
			t.Errorf("row %s: 39005 %v, want %v (CW-19)", row.ID[:8], got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// WebSocket

// cwConnect dials s, reads the NIP-42 challenge and, unless who is nil,
// authenticates as who.
func cwConnect(t *testing.T, s *testServer, who *testutil.Signer) *rawClient {
	t.Helper()
	c := s.client(t)
	msg, err := c.read()
	if err != nil || label(msg) != "AUTH" {
		t.Fatalf("want the AUTH challenge first, got %v %v", msg, err)
	}
	if who != nil {
		ev := who.Event(t, nostr.KindClientAuthentication, now(), "",
			nostr.Tag{"relay", s.wsURL}, nostr.Tag{"challenge", str(msg, 1)})
		c.send("AUTH", ev)
		ok := c.await("OK of AUTH", func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == ev.ID })
		if string(ok[2]) != "true" {
			t.Fatalf("AUTH refused: %s", joinRaw(ok))
		}
	}
	return c
}

// cwSubscribe opens subscription id with the raw filter and returns the
// stored events up to EOSE; it fails on CLOSED.
func cwSubscribe(t *testing.T, c *rawClient, id, filter string) []*nostr.Event {
	t.Helper()
	evs, closed := c.req(id, filter)
	if closed != "" {
		t.Fatalf("REQ %s %s: CLOSED %q", id, filter, closed)
	}
	return evs
}

// cwLive reads c's live events until one matches stop (which is returned),
// collecting the events before it by subscription id.
func cwLive(t *testing.T, c *rawClient, what string, stop func(sub string, ev *nostr.Event) bool) (*nostr.Event, map[string][]*nostr.Event) {
	t.Helper()
	got := map[string][]*nostr.Event{}
	var hit *nostr.Event
	c.await(what, func(m []json.RawMessage) bool {
		if label(m) != "EVENT" || len(m) < 3 {
			return false
		}
		var ev nostr.Event
		if err := json.Unmarshal(m[2], &ev); err != nil {
			t.Fatalf("bad EVENT %s", joinRaw(m))
		}
		if stop(str(m, 1), &ev) {
			hit = &ev
			return true
		}
		got[str(m, 1)] = append(got[str(m, 1)], &ev)
		return false
	})
	return hit, got
}

// ---------------------------------------------------------------------------
// Request

// CW-1: top_level selects the window only when it is the JSON boolean true;
// absent, false, "true", 1 all mean an ordinary filter (the generic path:
// every kind-9 event of the channel, replies included, and no overlay). The
// same literal-true rule holds for include_summaries and include_aux.
func TestCWLiteralTrue(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 100
	m := cwMsg(t, a, ch, T)
	r := cwReply(t, a, ch, T+1, m)
	x := cwReaction(t, a, T+2, m)
	cwPublish(t, c, m, r, x)

	for _, v := range []any{nil, false, "true", 1, "yes", []bool{true}, map[string]bool{"true": true}} {
		f := map[string]any{"kinds": []int{9}, "#h": []string{ch}, "include_summaries": true, "include_aux": true, "limit": 50}
		if v != nil {
			f["top_level"] = v
		}
		evs := cwQuery(t, s, nil, f)
		cwSameIDs(t, fmt.Sprintf("top_level %s", cwJSON(t, v)), evs, cwOrder(m, r))
	}

	p := cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{9}, "include_summaries", true, "include_aux", true))
	cwSameIDs(t, "top_level true: rows", p.rows, []*nostr.Event{m})
	cwSameIDs(t, "top_level true: aux", p.aux, []*nostr.Event{x})
	if len(p.sums) != 1 {
		t.Errorf("include_summaries true: %d summaries, want 1", len(p.sums))
	}
	for _, v := range []any{"true", 1, false} {
		p := cwWindow(t, s, nil, ch, cwF(ch, "include_summaries", v, "include_aux", v))
		cwSameIDs(t, fmt.Sprintf("flags %s: rows", cwJSON(t, v)), p.rows, []*nostr.Event{m})
		if len(p.aux) != 0 || len(p.sums) != 0 {
			t.Errorf("include_summaries/include_aux %s: %d aux, %d summaries, want none", cwJSON(t, v), len(p.aux), len(p.sums))
		}
	}
	p = cwWindow(t, s, nil, ch, cwF(ch))
	if len(p.aux) != 0 || len(p.sums) != 0 {
		t.Errorf("flags absent: %d aux, %d summaries, want none", len(p.aux), len(p.sums))
	}
}

// CW-2: exactly one distinct #h value that is a channel id: a UUID, in any
// form a UUID parser accepts, echoed canonical, or a NIP-29 group id;
// anything else is a 400 with the exact body. The channel is checked before the cursor.
func TestCWChannelParam(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	m := cwMsg(t, a, ch, now()-10)
	mustPublish(t, c, m)
	bare := strings.ReplaceAll(ch, "-", "")
	up := strings.ToUpper(ch)

	for _, hs := range [][]string{
		{ch}, {up}, {bare}, {strings.ToUpper(bare)}, {"{" + ch + "}"}, {"{" + up + "}"},
		{"urn:uuid:" + ch}, {"URN:UUID:" + up}, {ch[:9] + up[9:]},
		{ch, up, bare, "{" + ch + "}", "urn:uuid:" + ch}, // one UUID, five spellings
	} {
		p := cwWindow(t, s, nil, ch, map[string]any{"top_level": true, "#h": hs})
		cwSameIDs(t, fmt.Sprintf("#h %v", hs), p.rows, []*nostr.Event{m})
	}

	const msg = "top_level requires exactly one #h channel"
	other := newChannelID(t)
	signer := testutil.NewSigner(t)
	for _, f := range []string{
		`{"top_level":true}`,
		`{"top_level":true,"#h":[]}`,
		`{"top_level":true,"#h":null}`,
		`{"top_level":true,"#h":"` + ch + `"}`,
		`{"top_level":true,"#h":[1]}`,
		`{"top_level":true,"#h":["` + ch + `","` + other + `"]}`,
		`{"top_level":true,"#h":["` + ch + `","general"]}`,
		`{"top_level":true,"#h":["general","random"]}`,
		`{"top_level":true,"#h":["General","general"]}`,
		`{"top_level":true,"#h":["a b"]}`,
		`{"top_level":true,"#h":["a/b"]}`,
		`{"top_level":true,"#h":["a%2Eb"]}`,
		`{"top_level":true,"#h":["` + strings.Repeat("a", 129) + `"]}`,
		`{"top_level":true,"#h":[""]}`,
		`{"top_level":true,"#h":["é"]}`,
		`{"top_level":true,"#h":["{` + ch + `"]}`,
		`{"top_level":true,"#h":["urn:` + ch + `"]}`,
		`{"top_level":true,"kinds":[9],"#h":["No pe"],"until":"x","before_id":"y"}`, // CW-2 before CW-5
	} {
		cwWantError(t, s, nil, "["+f+"]", http.StatusBadRequest, msg)
		cwWantError(t, s, &signer, "["+f+"]", http.StatusBadRequest, msg)
	}

	// CW-2 (widened 2026-12-04, RL-36): what is not a UUID form but is 1
	// to 128 of A-Za-z0-9-_.~ is a NIP-29 group id, a channel that does
	// not exist here: no rows (CW-3), not a 400.
	for _, h := range []string{
		"general", "General", "p0ZPf6Xc6Ngx7TZFdJHcWRxY", "a.b~c", ".", "..", strings.Repeat("Z", 128),
		ch[:35], ch + "0", "g" + ch[1:], "G" + up[1:], bare[:8] + "-" + bare[8:11] + "-" + bare[11:], bare + "--",
	} {
		if evs := cwQuery(t, s, nil, map[string]any{"top_level": true, "#h": []string{h}}); len(evs) != 0 {
			t.Errorf("#h %q: %d events, want none", h, len(evs))
		}
	}
}

// CW-3: access is checked right after the channel: a private channel the
// requester may not read, and a channel that does not exist, answer 200
// with no rows and no overlay, even with a malformed cursor. A readable
// empty channel answers exactly one 39006.
func TestCWAccessFirst(t *testing.T) {
	s, c, owner := startWithClient(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	priv, empty, emptyOpen, open, none := newChannelID(t), newChannelID(t), newChannelID(t), newChannelID(t), newChannelID(t)
	cwCreate(t, c, owner, priv, true)
	cwAddMember(t, c, owner, priv, member.PK)
	cwCreate(t, c, owner, empty, true)
	cwAddMember(t, c, owner, empty, member.PK)
	cwCreate(t, c, owner, emptyOpen, false)
	pm := cwMsg(t, member, priv, now()-5)
	om := cwMsg(t, outsider, open, now()-5)
	cwPublish(t, c, pm, om)

	hid := randomID(t)
	cursors := []string{
		``,
		`,"until":100,"before_id":"` + hid + `"`,
		`,"before_id":"nothex"`,
		`,"until":100`,
		`,"before_id":"` + hid + `"`,
		`,"until":-1,"before_id":"` + hid + `"`,
		`,"until":"soon","before_id":12`,
	}
	for _, who := range []*testutil.Signer{nil, &outsider} {
		for _, h := range []string{priv, empty, none} {
			for _, cur := range cursors {
				cwWantEmpty(t, s, who, `[{"top_level":true,"#h":["`+h+`"],"include_aux":true,"include_summaries":true`+cur+`}]`)
			}
		}
		// Nothing of the window, the rest of the request as usual.
		evs := cwQuery(t, s, who, cwF(priv, "before_id", "zz"), map[string]any{"ids": []string{om.ID}})
		cwSameIDs(t, "inaccessible window + generic", evs, []*nostr.Event{om})
	}

	// The same malformed cursor on a readable channel is the 400 of CW-5.
	cwWantError(t, s, &member, `[{"top_level":true,"#h":["`+priv+`"],"before_id":"nothex"}]`,
		http.StatusBadRequest, "top_level: before_id must be a 64-hex event id")
	p := cwWindow(t, s, &member, priv, cwF(priv))
	cwSameIDs(t, "member: rows", p.rows, []*nostr.Event{pm})

	// A readable channel without messages: exactly one 39006, exhausted.
	for _, tc := range []struct {
		who *testutil.Signer
		ch  string
	}{{&member, empty}, {&owner, empty}, {nil, emptyOpen}, {&outsider, emptyOpen}} {
		p := cwWindow(t, s, tc.who, tc.ch, cwF(tc.ch, "include_aux", true, "include_summaries", true))
		if len(p.all) != 1 || p.HasMore || p.Next != nil {
			t.Errorf("empty channel: %d events, has_more %v, want exactly one 39006 with has_more false", len(p.all), p.HasMore)
		}
	}
}

// CW-4: limit is the row budget, default 50, clamped to 1..200; summaries,
// aux events and the bounds never count against it.
func TestCWLimit(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 10000
	var all []*nostr.Event
	for i := range 205 {
		all = append(all, cwMsg(t, a, ch, T+int64(i)))
	}
	cwIngest(t, s, all...)
	all = cwOrder(all...)
	head := all[0]
	var extra []*nostr.Event
	for range 3 {
		extra = append(extra, cwReaction(t, a, T+300, head))
	}
	extra = append(extra, cwReply(t, a, ch, T+301, head), cwReply(t, a, ch, T+302, head))
	cwPublish(t, c, extra...)

	for _, tc := range []struct {
		limit any
		rows  int
	}{{nil, 50}, {0, 1}, {-7, 1}, {1, 1}, {2, 2}, {199, 199}, {200, 200}, {201, 200}, {100000, 200}} {
		f := cwF(ch)
		if tc.limit != nil {
			f["limit"] = tc.limit
		}
		p := cwWindow(t, s, nil, ch, f)
		cwSameIDs(t, fmt.Sprintf("limit %v", tc.limit), p.rows, all[:tc.rows])
		if !p.HasMore {
			t.Errorf("limit %v: has_more false with %d rows left", tc.limit, len(all)-tc.rows)
		}
	}
	p := cwWindow(t, s, nil, ch, cwF(ch, "limit", 1, "include_aux", true, "include_summaries", true))
	cwSameIDs(t, "limit 1 with aux: rows", p.rows, all[:1])
	if len(p.aux) != 3 || len(p.sums) != 1 || !p.HasMore {
		t.Errorf("limit 1: %d aux, %d summaries, has_more %v; want 3, 1, true", len(p.aux), len(p.sums), p.HasMore)
	}
}

// CW-5: until + before_id both or neither; the 400s in their order: a
// malformed before_id, then a half cursor, then until.
func TestCWCursorErrors(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 100
	m1, m2 := cwMsg(t, a, ch, T), cwMsg(t, a, ch, T+1)
	cwPublish(t, c, m1, m2)
	id := randomID(t)
	const (
		badID   = "top_level: before_id must be a 64-hex event id"
		half    = "top_level cursor requires both until and before_id, or neither"
		badTime = "top_level: until is out of range"
	)
	pre := `[{"top_level":true,"#h":["` + ch + `"]`
	for _, tc := range []struct{ cursor, msg string }{
		{`"until":100,"before_id":"abc"`, badID},
		{`"until":100,"before_id":"` + id[:63] + `"`, badID},
		{`"until":100,"before_id":"` + id + `0"`, badID},
		{`"until":100,"before_id":"` + id[:63] + `g"`, badID},
		{`"until":100,"before_id":""`, badID},
		{`"until":100,"before_id":123`, badID},
		{`"until":100,"before_id":true`, badID},
		{`"until":100,"before_id":["` + id + `"]`, badID},
		{`"before_id":"abc"`, badID},                // before the half cursor
		{`"until":-1,"before_id":"abc"`, badID},     // before until
		{`"until":"x","before_id":{"id":1}`, badID}, // before until
		{`"until":100`, half},
		{`"until":0`, half},
		{`"before_id":"` + id + `"`, half},
		{`"before_id":"` + strings.ToUpper(id) + `"`, half},
		{`"until":-1`, half},  // the half cursor before until
		{`"until":"x"`, half}, // the half cursor before until
		{`"until":-1,"before_id":"` + id + `"`, badTime},
		{`"until":"100","before_id":"` + id + `"`, badTime},
		{`"until":1.5,"before_id":"` + id + `"`, badTime},
		{`"until":true,"before_id":"` + id + `"`, badTime},
		{`"until":[100],"before_id":"` + id + `"`, badTime},
		{`"until":9223372036854775808,"before_id":"` + id + `"`, badTime},
		{`"until":-9223372036854775809,"before_id":"` + id + `"`, badTime},
		{`"until":99999999999999999999999,"before_id":"` + id + `"`, badTime},
	} {
		body := pre + "," + tc.cursor + "}]"
		cwWantError(t, s, nil, body, http.StatusBadRequest, tc.msg)
		// Any error refuses the whole request: nothing partial.
		cwWantError(t, s, &a, `[{"kinds":[9]},`+body[1:], http.StatusBadRequest, tc.msg)
	}

	// Valid cursors: the ends of the timestamp range, either case of hex.
	p := cwWindow(t, s, nil, ch, cwF(ch, "until", int64(9223372036854775807), "before_id", id))
	cwSameIDs(t, "until max", p.rows, []*nostr.Event{m2, m1})
	p = cwWindow(t, s, nil, ch, cwF(ch, "until", 0, "before_id", id))
	if len(p.rows) != 0 || p.HasMore {
		t.Errorf("until 0: %d rows, has_more %v", len(p.rows), p.HasMore)
	}
	p = cwWindow(t, s, nil, ch, cwF(ch, "until", int64(m2.CreatedAt), "before_id", strings.ToUpper(m2.ID)))
	cwSameIDs(t, "uppercase before_id", p.rows, []*nostr.Event{m1})
}

// CW-6: kinds restricts rows only, never aux or overlays; absent or empty:
// no restriction, except that aux kinds, NIP-29 kinds 9000-9030 and
// relay-only kinds are never rows.
func TestCWKinds(t *testing.T) {
	s, c, owner := startWithClient(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := newChannelID(t)
	cwCreate(t, c, owner, ch, false) // 9007 in the channel
	cwAddMember(t, c, owner, ch, a.PK)
	mustPublish(t, c, cwEvent(t, owner, buzz.KindEditMetadata, now(), nostr.Tag{"h", ch}, nostr.Tag{"name", "renamed"}))
	T := now() - 100
	m9 := cwMsg(t, a, ch, T)
	m1 := cwEvent(t, a, 1, T+1, nostr.Tag{"h", ch})
	m11 := cwEvent(t, b, 11, T+2, nostr.Tag{"h", ch})
	m30023 := cwEvent(t, b, 30023, T+3, nostr.Tag{"h", ch}, nostr.Tag{"d", "article"})
	cwPublish(t, c, m9, m1, m11, m30023)
	mustPublish(t, c, cwEvent(t, b, buzz.KindJoin, now(), nostr.Tag{"h", ch}, nostr.Tag{"e", m9.ID, "", "reply"}))
	// Aux events whose e tags carry a reply marker: targets, not parents
	// (CW-10).
	x := cwReaction(t, b, T+4, m9, nostr.Tag{"h", ch}, nostr.Tag{"e", m9.ID, "", "reply"})
	edit := cwEvent(t, a, buzz.KindEdit, T+5, nostr.Tag{"h", ch}, nostr.Tag{"e", m9.ID, "", "reply"})
	x2 := cwReaction(t, b, T+6, m9)
	x3 := cwReaction(t, a, T+7, m9, nostr.Tag{"h", ch})
	y := cwReaction(t, a, T+8, m1)
	cwPublish(t, c, x, edit, x2, x3, y)
	del := cwEvent(t, b, buzz.KindDeletion, now(), nostr.Tag{"h", ch}, nostr.Tag{"e", x2.ID})
	gdel := cwEvent(t, owner, buzz.KindGroupDelete, now(), nostr.Tag{"h", ch}, nostr.Tag{"e", x3.ID})
	cwPublish(t, c, del, gdel)

	everyRow := cwOrder(m9, m1, m11, m30023)
	for _, kinds := range []any{nil, []int{}} {
		f := cwF(ch, "include_aux", true)
		if kinds != nil {
			f["kinds"] = kinds
		}
		p := cwWindow(t, s, nil, ch, f)
		cwSameIDs(t, fmt.Sprintf("kinds %s: rows", cwJSON(t, kinds)), p.rows, everyRow)
	}
	// kinds [9]: one row; its whole aux closure, whatever the kinds.
	p := cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{9}, "include_aux", true, "include_summaries", true))
	cwSameIDs(t, "kinds [9]: rows", p.rows, []*nostr.Event{m9})
	cwSameSet(t, "kinds [9]: aux", p.aux, []*nostr.Event{x, edit, del, gdel})
	if len(p.sums) != 0 {
		t.Errorf("m9 has a 39005: an aux or NIP-29 event was counted as its reply (CW-10)")
	}
	p = cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{1, 11}, "include_aux", true))
	cwSameIDs(t, "kinds [1,11]: rows", p.rows, cwOrder(m1, m11))
	cwSameSet(t, "kinds [1,11]: aux", p.aux, []*nostr.Event{y})
	p = cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{9, 7, 5}))
	cwSameIDs(t, "kinds [9,7,5]: rows", p.rows, []*nostr.Event{m9})
	p = cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{5, 7, 9005, 40003, 9000, 9002, 9007, 9021, 39000, 39001, 39002, 39005, 39006}))
	if len(p.rows) != 0 || p.HasMore {
		t.Errorf("kinds of aux, NIP-29 and relay-only events: %d rows, want none", len(p.rows))
	}
	p = cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{42}))
	if len(p.all) != 1 {
		t.Errorf("kinds [42]: %d events, want only the 39006", len(p.all))
	}
}

// CW-7: on the window path only #h, kinds, limit, until, before_id and the
// three flags are read; since, authors, ids, other tags, page and offset
// change nothing.
func TestCWIgnoredKeys(t *testing.T) {
	s, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	ch := newChannelID(t)
	T := now() - 1000
	var rows []*nostr.Event
	for i := range 7 {
		who := a
		if i%2 == 1 {
			who = b
		}
		rows = append(rows, cwMsg(t, who, ch, T+int64(i)*10))
	}
	cwPublish(t, c, rows...)
	r := cwReply(t, b, ch, T+5, rows[0])
	mustPublish(t, c, r)
	rows = cwOrder(rows...)

	base := cwF(ch, "limit", 3, "kinds", []int{9})
	baseline := cwWindow(t, s, nil, ch, base)
	cwSameIDs(t, "baseline", baseline.rows, rows[:3])
	if !baseline.HasMore {
		t.Fatal("baseline: has_more false with 4 rows left")
	}
	cur := cwF(ch, "limit", 3, "kinds", []int{9}, "until", baseline.Next.CreatedAt, "before_id", baseline.Next.ID)
	second := cwWindow(t, s, nil, ch, cur)
	cwSameIDs(t, "baseline page 2", second.rows, rows[3:6])
	for _, kv := range [][]any{
		{"since", now() + 100000},
		{"since", int64(rows[1].CreatedAt)},
		{"authors", []string{b.PK}},
		{"authors", []string{randomID(t)}},
		{"ids", []string{rows[5].ID}},
		{"ids", []string{randomID(t)}},
		{"#e", []string{rows[0].ID}},
		{"#p", []string{randomID(t)}},
		{"#t", []string{"nothing"}},
		{"page", 2},
		{"offset", 3},
		{"search", "zzz"},
		{"depth_limit", 2},
	} {
		for i, f := range []map[string]any{base, cur} {
			f = maps.Clone(f)
			f[kv[0].(string)] = kv[1]
			p := cwWindow(t, s, nil, ch, f)
			want := []*cwPage{baseline, second}[i]
			cwSameIDs(t, fmt.Sprintf("%s %s, page %d", kv[0], cwJSON(t, kv[1]), i+1), p.rows, want.rows)
			if p.bounds.Content != want.bounds.Content {
				t.Errorf("%s: bounds %s, want %s", kv[0], p.bounds.Content, want.bounds.Content)
			}
		}
	}
}

// CW-8, RL-18: window filters are dispatched first and by the window path
// only: the output is every window's output, then the thread path's, then
// the generic path's, whatever the order of the filters.
func TestCWDispatchFirst(t *testing.T) {
	s, c, a := startWithClient(t)
	ch, ch2 := newChannelID(t), newChannelID(t)
	T := now() - 100
	m := cwMsg(t, a, ch, T)
	m2 := cwMsg(t, a, ch, T+1)
	r := cwReply(t, a, ch, T+2, m)
	o := cwMsg(t, a, ch2, T+3)
	cwPublish(t, c, m, m2, r, o)

	evs := cwQuery(t, s, nil,
		map[string]any{"ids": []string{m2.ID}},
		map[string]any{"depth_limit": 1, "#e": []string{m.ID}},
		cwF(ch, "kinds", []int{9}),
		cwF(ch2),
	)
	if len(evs) != 7 {
		t.Fatalf("got %d events %s, want 3+2 window events, 1 thread reply, 1 generic event", len(evs), cwShort(ids(evs)))
	}
	p := cwSplit(t, s, evs[:3], ch, ch+":head")
	cwSameIDs(t, "first window", p.rows, []*nostr.Event{m2, m})
	p = cwSplit(t, s, evs[3:5], ch2, ch2+":head")
	cwSameIDs(t, "second window", p.rows, []*nostr.Event{o})
	cwSameIDs(t, "thread, then generic", evs[5:], []*nostr.Event{r, m2})

	// A window filter that also looks like a thread or generic filter is a
	// window filter only.
	for _, kv := range [][]any{
		{"depth_limit", 1, "#e", []string{m.ID}},
		{"ids", []string{r.ID}},
	} {
		p := cwSplit(t, s, cwQuery(t, s, nil, cwF(ch, kv...)), ch, ch+":head")
		cwSameIDs(t, fmt.Sprintf("window with %v", kv[0]), p.rows, []*nostr.Event{m2, m})
	}
}

// ---------------------------------------------------------------------------
// Row set

// CW-9, CW-10, CW-11: in the default mode a row is a top-level event or a
// depth-1 broadcast reply. Replies are recognised by a valid `reply`
// marked e tag, or a valid `root` marked one alone (a NIP-10 direct reply,
// since 2026-12-03); depth-2 broadcast and quiet replies are not rows.
func TestCWDefaultRows(t *testing.T) {
	s, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	ch, other := newChannelID(t), newChannelID(t)
	model := cwNewModel()
	T := now() - 1000
	at := T
	next := func() int64 { at++; return at }
	m1 := model.add(cwMsg(t, a, ch, next()), nil)
	m2 := model.add(cwMsg(t, b, ch, next()), nil)
	cwPublish(t, c, m1, m2)
	q1 := model.add(cwReply(t, b, ch, next(), m1), m1)
	b1 := model.add(cwReply(t, b, ch, next(), m1, cwBroadcast), m1)
	cwPublish(t, c, q1, b1)
	b2 := model.add(cwReply(t, a, ch, next(), q1, cwBroadcast), q1)
	b3 := model.add(cwReply(t, a, ch, next(), b1, cwBroadcast, nostr.Tag{"e", m1.ID, "", "root"}), b1)
	q2 := model.add(cwReply(t, a, ch, next(), b1), b1)
	rootOnly := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", m1.ID, "", "root"}), m1) // CW-10: a NIP-10 direct reply
	positional := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", m1.ID}), nil)
	threeElems := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", m1.ID, "reply"}), nil)
	mention := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", m1.ID, "", "mention"}), nil)
	malformed := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", "zz", "", "reply"}, nostr.Tag{"e", m1.ID[:63], "", "reply"}), nil)
	upper := model.add(cwMsg(t, b, ch, next(), nostr.Tag{"e", strings.ToUpper(m2.ID), "", "reply"}), m2)
	lastWins := model.add(cwMsg(t, b, ch, next(), nostr.Tag{"e", m1.ID, "", "reply"}, nostr.Tag{"e", m2.ID, "", "reply"}), m2)
	malformedLast := model.add(cwMsg(t, a, ch, next(), nostr.Tag{"e", m2.ID, "", "reply"}, nostr.Tag{"e", "zz", "", "reply"}), m2)
	bcTrue := model.add(cwReply(t, b, ch, next(), m1, nostr.Tag{"broadcast", "true"}), m1)
	bcExtra := model.add(cwReply(t, b, ch, next(), m1, nostr.Tag{"broadcast", "1", "x"}), m1)
	bcRoot := model.add(cwReply(t, a, ch, next(), m2, cwBroadcast, nostr.Tag{"e", m2.ID, "", "root"}), m2)
	bcTop := model.add(cwMsg(t, a, ch, next(), cwBroadcast), nil)
	k1Reply := model.add(cwEvent(t, a, 1, next(), nostr.Tag{"h", ch}, nostr.Tag{"e", m1.ID, "", "reply"}), m1)
	cwPublish(t, c, b2, b3, q2, rootOnly, positional, threeElems, mention, malformed, upper, lastWins,
		malformedLast, bcTrue, bcExtra, bcRoot, bcTop, k1Reply)

	// Refused replies (RL-5): their parent or root is wrong.
	om := cwMsg(t, a, other, next())
	mustPublish(t, c, om)
	mustReject(t, c, cwReply(t, a, ch, next(), q1, nostr.Tag{"e", q1.ID, "", "root"}), "invalid: root tag does not match thread ancestry")
	mustReject(t, c, cwMsg(t, a, ch, next(), nostr.Tag{"e", randomID(t), "", "reply"}), "invalid: reply parent not found")
	mustReject(t, c, cwMsg(t, a, ch, next(), nostr.Tag{"e", randomID(t), "", "root"}), "invalid: reply parent not found")
	mustReject(t, c, cwReply(t, a, ch, next(), om), "invalid: parent event belongs to a different channel")

	want := cwOrder(m1, m2, b1, positional, threeElems, mention, malformed, bcRoot, bcTop)
	rows, pages := cwWalk(t, s, nil, ch, cwF(ch, "include_summaries", true), 4)
	cwSameIDs(t, "default rows", rows, want)
	for _, p := range pages {
		model.checkSummaries(t, p)
		if p.Projection {
			t.Error("thread_replies_in_channel true in the default mode")
		}
	}
	for _, ev := range []*nostr.Event{q1, b2, b3, q2, rootOnly, upper, lastWins, malformedLast, bcTrue, bcExtra, k1Reply} {
		if slices.Contains(ids(rows), ev.ID) {
			t.Errorf("reply %s is a row in the default mode", ev.ID[:8])
		}
	}
	// The thread path sees the replies where the contract puts them.
	got := cwQuery(t, s, nil, map[string]any{"depth_limit": 1, "#e": []string{m2.ID}})
	cwSameSet(t, "replies of m2", got, []*nostr.Event{upper, lastWins, malformedLast, bcRoot})
}

// CW-10, RL-5: replies nest down to depth 100; a reply at depth 101 is
// refused. Only the root of such a chain is a row, and its summary counts
// every level.
func TestCWDepthLimit(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 10000
	root := cwMsg(t, a, ch, T)
	chain := []*nostr.Event{root}
	for i := 1; i <= 100; i++ {
		chain = append(chain, cwReply(t, a, ch, T+int64(i), chain[i-1]))
	}
	cwIngest(t, s, chain...)
	mustReject(t, c, cwReply(t, a, ch, T+101, chain[100]), "invalid: thread depth limit exceeded")
	p := cwWindow(t, s, nil, ch, cwF(ch, "include_summaries", true))
	cwSameIDs(t, "rows", p.rows, []*nostr.Event{root})
	last := T + 100
	want := cwSummary{Reply: 1, Desc: 100, Last: &last, Parts: []string{a.PK}}
	if got := p.summary[root.ID]; !got.equal(want) {
		t.Errorf("summary %v, want %v", got, want)
	}
}

// CW-12: an event stored without thread metadata (imported while its
// parent was absent) has depth NULL and is a row, in both modes.
func TestCWLegacyRow(t *testing.T) {
	admin := testutil.NewSigner(t)
	s := startServerWith(t, func(o *testStoreOptions) { o.Admins = []string{admin.PK} })
	c := s.client(t)
	a := testutil.NewSigner(t)
	ch := newChannelID(t)
	T := now() - 5000
	top := cwMsg(t, a, ch, T)
	orphan := cwMsg(t, a, ch, T+1, nostr.Tag{"e", randomID(t), "", "reply"}, nostr.Tag{"e", randomID(t), "", "root"})
	child := cwReply(t, a, ch, T+2, top) // imported after its parent: classified
	outcomes, err := s.store.ImportBatch(context.Background(), []*nostr.Event{top, orphan, child})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if o != nil {
			t.Fatalf("import %d: %v", i, o)
		}
	}
	// Live ingest refuses what import kept.
	mustReject(t, c, cwMsg(t, a, ch, T+3, nostr.Tag{"e", randomID(t), "", "reply"}), "invalid: reply parent not found")
	late := cwMsg(t, a, ch, T+4)
	mustPublish(t, c, late)

	for _, kinds := range []any{nil, []int{9}} {
		f := cwF(ch, "include_summaries", true)
		if kinds != nil {
			f["kinds"] = kinds
		}
		rows, _ := cwWalk(t, s, nil, ch, f, 1)
		cwSameIDs(t, "default mode", rows, cwOrder(late, orphan, top))
	}
	cwSetProjection(t, c, admin, "true")
	rows, pages := cwWalk(t, s, nil, ch, cwF(ch), 2)
	cwSameIDs(t, "projection mode", rows, cwOrder(late, child, orphan, top))
	if !pages[0].Projection {
		t.Error("39006 does not echo thread_replies_in_channel true")
	}
}

// CW-13: projection mode (configured): every non-deleted event matching
// kinds is a row at its own position, replies at every depth included; a
// broadcast reply is one row.
func TestCWProjection(t *testing.T) {
	s := startServerWith(t, func(o *testStoreOptions) { v := true; o.ThreadRepliesInChannel = &v })
	c := s.client(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := newChannelID(t)
	model := cwNewModel()
	T := now() - 1000
	m1 := model.add(cwMsg(t, a, ch, T), nil)
	mustPublish(t, c, m1)
	q1 := model.add(cwReply(t, b, ch, T+1, m1), m1)
	mustPublish(t, c, q1)
	q2 := model.add(cwReply(t, a, ch, T+2, q1), q1)
	b1 := model.add(cwReply(t, b, ch, T+2, m1, cwBroadcast), m1)
	cwPublish(t, c, q2, b1)
	q3 := model.add(cwReply(t, a, ch, T+3, b1), b1)
	m2 := model.add(cwMsg(t, b, ch, T+4), nil)
	k1 := model.add(cwEvent(t, a, 1, T+5, nostr.Tag{"h", ch}, nostr.Tag{"e", q2.ID, "", "reply"}), q2)
	x := cwReaction(t, b, T+6, q1)
	cwPublish(t, c, q3, m2, k1, x)

	for _, limit := range []int{1, 3, 50} {
		rows, pages := cwWalk(t, s, nil, ch, cwF(ch, "include_summaries", true, "include_aux", true), limit)
		cwSameIDs(t, fmt.Sprintf("projection rows, limit %d", limit), rows, cwOrder(m1, q1, q2, b1, q3, m2, k1))
		for _, p := range pages {
			if !p.Projection {
				t.Error("39006 does not echo thread_replies_in_channel true")
			}
			model.checkSummaries(t, p)
			if slices.Contains(ids(p.rows), q1.ID) {
				cwSameIDs(t, "aux of the reply row q1", p.aux, []*nostr.Event{x})
			}
		}
	}
	p := cwWindow(t, s, nil, ch, cwF(ch, "kinds", []int{9}))
	cwSameIDs(t, "projection, kinds [9]", p.rows, cwOrder(m1, q1, q2, b1, q3, m2))

	// Deleted replies are excluded in projection mode too (CW-14).
	mustPublish(t, c, cwDeletion(t, a, q2))
	model.deleted[q2.ID] = true
	rows, pages := cwWalk(t, s, nil, ch, cwF(ch, "include_summaries", true), 2)
	cwSameIDs(t, "projection rows after deleting q2", rows, cwOrder(m1, q1, b1, q3, m2, k1))
	for _, p := range pages {
		model.checkSummaries(t, p)
	}
}

// CW-13, RL-15, CL-5: a runtime change of thread_replies_in_channel takes
// effect on the next page, and a cursor chain crossing it is detectable by
// the flag echoed in every 39006.
func TestCWModeChange(t *testing.T) {
	admin := testutil.NewSigner(t)
	s := startServerWith(t, func(o *testStoreOptions) { o.Admins = []string{admin.PK} })
	c := s.client(t)
	a := testutil.NewSigner(t)
	ch := newChannelID(t)
	T := now() - 1000
	m1 := cwMsg(t, a, ch, T)
	mustPublish(t, c, m1)
	q1 := cwReply(t, a, ch, T+1, m1)
	m2 := cwMsg(t, a, ch, T+2)
	mustPublish(t, c, q1)
	mustPublish(t, c, m2)
	q2 := cwReply(t, a, ch, T+3, m2)
	m3 := cwMsg(t, a, ch, T+4)
	cwPublish(t, c, q2, m3)

	p1 := cwWindow(t, s, nil, ch, cwF(ch, "limit", 2))
	cwSameIDs(t, "default head", p1.rows, []*nostr.Event{m3, m2})
	if p1.Projection || !p1.HasMore {
		t.Fatalf("default head: projection %v, has_more %v", p1.Projection, p1.HasMore)
	}
	mustReject(t, c, cwEvent(t, a, buzz.KindCommunityAdmin, now(), nostr.Tag{"thread_replies_in_channel", "true"}), "restricted: must be a relay admin")
	mustReject(t, c, cwEvent(t, admin, buzz.KindCommunityAdmin, now(), nostr.Tag{"thread_replies_in_channel", "maybe"}), "invalid: thread_replies_in_channel must be a boolean")
	cwSetProjection(t, c, admin, "TRUE")

	p2 := cwWindow(t, s, nil, ch, cwF(ch, "limit", 2, "until", p1.Next.CreatedAt, "before_id", p1.Next.ID))
	if !p2.Projection {
		t.Fatal("page after the change does not echo thread_replies_in_channel true: the lineage change is undetectable (CL-5)")
	}
	cwSameIDs(t, "continued page in projection mode", p2.rows, []*nostr.Event{q1, m1})
	head := cwWindow(t, s, nil, ch, cwF(ch, "limit", 2))
	cwSameIDs(t, "projection head", head.rows, []*nostr.Event{m3, q2})
	if !head.HasMore {
		t.Fatal("projection head: has_more false with 3 rows left")
	}

	cwSetProjection(t, c, admin, "off")
	p3 := cwWindow(t, s, nil, ch, cwF(ch, "limit", 2, "until", head.Next.CreatedAt, "before_id", head.Next.ID))
	if p3.Projection {
		t.Fatal("page after switching back echoes thread_replies_in_channel true")
	}
	cwSameIDs(t, "continued page in default mode", p3.rows, []*nostr.Event{m2, m1})
}

// CW-14: deleted events are excluded before the limit, in both modes, and
// has_more stays exact; deleting a row leaves its replies as they were.
func TestCWDeletedRows(t *testing.T) {
	admin := testutil.NewSigner(t)
	s := startServerWith(t, func(o *testStoreOptions) { o.Admins = []string{admin.PK} })
	c := s.client(t)
	owner, a := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := newChannelID(t)
	cwCreate(t, c, owner, ch, false)
	T := now() - 1000
	var r []*nostr.Event
	for i := range 7 {
		r = append(r, cwMsg(t, a, ch, T+int64(i)))
	}
	cwPublish(t, c, r...)
	// Newest, oldest and one in the middle by their author; one by the
	// channel owner (NIP-29).
	mustPublish(t, c, cwDeletion(t, a, r[6], r[0], r[3]))
	mustPublish(t, c, cwEvent(t, owner, buzz.KindGroupDelete, now(), nostr.Tag{"h", ch}, nostr.Tag{"e", r[4].ID}))
	live := cwOrder(r[5], r[2], r[1])

	p := cwWindow(t, s, nil, ch, cwF(ch, "limit", 3))
	cwSameIDs(t, "limit 3 over 7 rows, 4 deleted", p.rows, live)
	if p.HasMore || p.Next != nil {
		t.Errorf("has_more %v with no non-deleted row left (CW-16)", p.HasMore)
	}
	for _, limit := range []int{1, 2} {
		rows, _ := cwWalk(t, s, nil, ch, cwF(ch), limit)
		cwSameIDs(t, fmt.Sprintf("walk with limit %d", limit), rows, live)
	}

	// A deleted row's replies keep their own classification.
	m := cwMsg(t, a, ch, T+100)
	mustPublish(t, c, m)
	q := cwReply(t, a, ch, T+101, m)
	bc := cwReply(t, a, ch, T+102, m, cwBroadcast)
	cwPublish(t, c, q, bc)
	qq := cwReply(t, a, ch, T+103, q)
	mustPublish(t, c, qq)
	mustPublish(t, c, cwDeletion(t, a, m))
	rows, _ := cwWalk(t, s, nil, ch, cwF(ch), 2)
	cwSameIDs(t, "default rows after deleting a root", rows, cwOrder(append(live, bc)...))
	got := cwQuery(t, s, nil, map[string]any{"depth_limit": 2, "#e": []string{m.ID}})
	cwSameIDs(t, "thread of the deleted root", got, []*nostr.Event{q, bc, qq})

	cwSetProjection(t, c, admin, "true")
	rows, _ = cwWalk(t, s, nil, ch, cwF(ch), 2)
	cwSameIDs(t, "projection rows after deletions", rows, cwOrder(append(live, q, bc, qq)...))
}

// ---------------------------------------------------------------------------
// Order, cursor, exhaustion

// CW-15, CW-16, CW-17, CL-1: a dense same-second burst paged with limits 1,
// 2, 3 and 7 yields every row exactly once, in created_at DESC, id ASC
// order; the sentinel row never reaches a page's aux or summaries.
func TestCWDenseBurst(t *testing.T) {
	s, c, a := startWithClient(t)
	signers := []testutil.Signer{a, testutil.NewSigner(t), testutil.NewSigner(t)}
	ch := newChannelID(t)
	T := now() - 5000
	var rows []*nostr.Event
	add := func(n int, at int64) {
		for i := range n {
			ev := cwMsg(t, signers[i%3], ch, at)
			rows = append(rows, ev)
		}
	}
	add(23, T)
	add(5, T+1)
	add(2, T+3)
	add(4, T-1)
	add(3, T-7)
	cwPublish(t, c, rows...)
	// Same-second replies (not rows), a broadcast one (a row) in the
	// burst, and a reaction to every row.
	replied := map[string]bool{}
	var more []*nostr.Event
	for i, ev := range rows[:23] {
		if i%4 == 0 {
			more = append(more, cwReply(t, signers[1], ch, T, ev))
			replied[ev.ID] = true
		}
	}
	bc := cwReply(t, signers[2], ch, T, rows[22], cwBroadcast)
	replied[rows[22].ID] = true
	more = append(more, bc)
	cwPublish(t, c, more...)
	rows = append(rows, bc)
	reactionOf := map[string]string{}
	var reactions []*nostr.Event
	for _, ev := range rows {
		x := cwReaction(t, a, T+10, ev)
		reactions = append(reactions, x)
		reactionOf[x.ID] = ev.ID
	}
	cwIngest(t, s, reactions...)
	want := cwOrder(rows...)

	for _, limit := range []int{1, 2, 3, 7} {
		got, pages := cwWalk(t, s, nil, ch, cwF(ch, "kinds", []int{9}, "include_aux", true, "include_summaries", true), limit)
		cwSameIDs(t, fmt.Sprintf("limit %d", limit), got, want)
		if n := (len(want) + limit - 1) / limit; len(pages) != n {
			t.Errorf("limit %d: %d pages, want %d", limit, len(pages), n)
		}
		for i, p := range pages {
			onPage := map[string]bool{}
			for _, ev := range p.rows {
				onPage[ev.ID] = true
			}
			if len(p.aux) != len(p.rows) {
				t.Errorf("limit %d page %d: %d aux for %d rows", limit, i, len(p.aux), len(p.rows))
			}
			for _, x := range p.aux {
				if !onPage[reactionOf[x.ID]] {
					t.Errorf("limit %d page %d: aux %s is not of a row of the page (sentinel leak, CW-16)", limit, i, x.ID[:8])
				}
			}
			n := 0
			for id := range onPage {
				if replied[id] {
					n++
				}
			}
			if len(p.sums) != n {
				t.Errorf("limit %d page %d: %d summaries, want %d (sentinel leak, CW-16)", limit, i, len(p.sums), n)
			}
		}
	}

	// Keyset continuation from positions that are not rows (CW-15).
	burst := cwOrder(rows[:23]...)
	burst = append(burst, bc)
	burst = cwOrder(burst...)
	older := cwOrder(rows[30:37]...)
	for _, tc := range []struct {
		id   string
		want []*nostr.Event
	}{
		{strings.Repeat("0", 64), append(slices.Clone(burst), older...)},
		{strings.Repeat("f", 64), older},
		{burst[10].ID, append(slices.Clone(burst[11:]), older...)},
		{strings.ToUpper(burst[10].ID), append(slices.Clone(burst[11:]), older...)},
	} {
		p := cwWindow(t, s, nil, ch, cwF(ch, "limit", 200, "until", T, "before_id", tc.id))
		cwSameIDs(t, "from ("+strconv.FormatInt(T, 10)+", "+tc.id[:8]+")", p.rows, tc.want)
	}
}

// CW-16, CW-17, CL-1: an exact-multiple final page is full, has_more
// false, next_cursor null.
func TestCWExactMultiple(t *testing.T) {
	s, c, a := startWithClient(t)
	for _, sameSecond := range []bool{false, true} {
		ch := newChannelID(t)
		T := now() - 1000
		var rows []*nostr.Event
		for i := range 6 {
			at := T + int64(i)
			if sameSecond {
				at = T
			}
			rows = append(rows, cwMsg(t, a, ch, at))
		}
		cwPublish(t, c, rows...)
		rows = cwOrder(rows...)
		for _, limit := range []int{1, 2, 3, 6} {
			got, pages := cwWalk(t, s, nil, ch, cwF(ch), limit)
			cwSameIDs(t, fmt.Sprintf("limit %d", limit), got, rows)
			last := pages[len(pages)-1]
			if len(pages) != 6/limit || len(last.rows) != limit || last.HasMore || last.Next != nil {
				t.Errorf("limit %d: %d pages, last has %d rows, has_more %v, next %v; want %d pages, a full exhausted last page",
					limit, len(pages), len(last.rows), last.HasMore, last.Next, 6/limit)
			}
		}
		p := cwWindow(t, s, nil, ch, cwF(ch, "limit", 5))
		if !p.HasMore || len(p.rows) != 5 {
			t.Errorf("limit 5 of 6: %d rows, has_more %v", len(p.rows), p.HasMore)
		}
	}
}

// CW-17: a retained row that cannot be served is skipped, and the cursor
// still moves past it; nothing of it reaches aux or summaries.
func TestCWUnreadableRow(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 1000
	var r []*nostr.Event
	for i := range 5 {
		r = append(r, cwMsg(t, a, ch, T+int64(i)))
	}
	cwPublish(t, c, r...)
	cwPublish(t, c, cwReaction(t, a, T+10, r[2]), cwReply(t, a, ch, T+11, r[2]))

	db, err := sql.Open("sqlite", "file:"+s.sqlitePath(t)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id, _ := hex.DecodeString(r[2].ID)
	if res, err := db.Exec(`UPDATE events SET tags = 'not json' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("corrupted %d events", n)
	}

	p := cwWindow(t, s, nil, ch, cwF(ch, "limit", 3, "include_aux", true, "include_summaries", true))
	cwSameIDs(t, "page with an unreadable row", p.rows, []*nostr.Event{r[4], r[3]})
	if !p.HasMore || p.Next == nil || p.Next.ID != r[2].ID || p.Next.CreatedAt != int64(r[2].CreatedAt) {
		t.Fatalf("has_more %v, next %+v; want true and the unreadable row's position", p.HasMore, p.Next)
	}
	if len(p.aux) != 0 || len(p.sums) != 0 {
		t.Errorf("%d aux, %d summaries of a row that was not served", len(p.aux), len(p.sums))
	}
	p = cwWindow(t, s, nil, ch, cwF(ch, "limit", 3, "until", p.Next.CreatedAt, "before_id", p.Next.ID))
	cwSameIDs(t, "page after it", p.rows, []*nostr.Event{r[1], r[0]})
	if p.HasMore {
		t.Error("has_more after the last row")
	}
}

// ---------------------------------------------------------------------------
// Response

// CW-18: the aux closure is exactly hop 1 (5, 7, 9005, 40003 naming a row)
// and hop 2 (5, 9005 naming a hop-1 event), each event once; a deleted
// hop-1 event is not served but its deletion is; events of a channel the
// requester cannot read are dropped, channel-less ones pass on an open
// channel's rows (a private channel's: storetest AuxChannellessOpenOnly).
func TestCWAuxClosure(t *testing.T) {
	s, c, owner := startWithClient(t)
	a, b, d := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	ch, priv := newChannelID(t), newChannelID(t)
	cwCreate(t, c, owner, ch, false)
	cwCreate(t, c, owner, priv, true)
	cwAddMember(t, c, owner, priv, member.PK)
	T := now() - 1000
	m := cwMsg(t, a, ch, T)
	m2 := cwMsg(t, b, ch, T+1)
	cwPublish(t, c, m, m2)
	q := cwReply(t, b, ch, T+2, m)
	global := cwEvent(t, d, 1, T+2) // no channel
	cwPublish(t, c, q, global)

	x := cwReaction(t, b, T+3, m)
	y := cwReaction(t, d, T+4, m)
	e1 := cwEvent(t, a, buzz.KindEdit, T+5, nostr.Tag{"h", ch}, nostr.Tag{"e", m.ID})
	e2 := cwEvent(t, a, buzz.KindEdit, T+6, nostr.Tag{"h", ch}, nostr.Tag{"e", m.ID})
	both := d.Event(t, buzz.KindReaction, T+7, "+", nostr.Tag{"e", m.ID}, nostr.Tag{"e", m2.ID})
	chanless := d.Event(t, buzz.KindReaction, T+8, "+", nostr.Tag{"e", m.ID}, nostr.Tag{"e", global.ID})
	hidden := member.Event(t, buzz.KindReaction, T+9, "+", nostr.Tag{"h", priv}, nostr.Tag{"e", m.ID})
	hidden2 := member.Event(t, buzz.KindReaction, T+9, "-", nostr.Tag{"h", priv}, nostr.Tag{"e", m.ID})
	onReply := cwReaction(t, a, T+10, q)
	cwPublish(t, c, x, y, e1, e2, both, chanless, hidden, hidden2, onReply)
	onEdit := cwReaction(t, b, T+11, e1)                                                            // a hop-2 reaction: never aux
	dy := cwDeletion(t, d, y)                                                                       // hop 2
	g2 := cwEvent(t, owner, buzz.KindGroupDelete, now(), nostr.Tag{"h", ch}, nostr.Tag{"e", e2.ID}) // hop 2
	dh := cwEvent(t, member, buzz.KindDeletion, now(), nostr.Tag{"h", priv}, nostr.Tag{"e", hidden2.ID})
	cwPublish(t, c, onEdit, dy, g2, dh)
	z := cwDeletion(t, d, dy) // names a hop-2 event: hop 3, never aux
	mustPublish(t, c, z)

	public := []*nostr.Event{x, dy, e1, g2, both, chanless}
	for _, tc := range []struct {
		name string
		who  *testutil.Signer
		want []*nostr.Event
	}{
		{"anonymous", nil, public},
		{"outsider", &outsider, public},
		{"member of the private channel", &member, append(slices.Clone(public), hidden, dh)},
		{"owner", &owner, append(slices.Clone(public), hidden, dh)},
	} {
		p := cwWindow(t, s, tc.who, ch, cwF(ch, "include_aux", true))
		cwSameIDs(t, tc.name+": rows", p.rows, []*nostr.Event{m2, m})
		cwSameSet(t, tc.name+": aux", p.aux, tc.want)
		p = cwWindow(t, s, tc.who, ch, cwF(ch, "include_aux", true, "limit", 1))
		cwSameSet(t, tc.name+": aux of m2 alone", p.aux, []*nostr.Event{both})
	}
	p := cwWindow(t, s, nil, ch, cwF(ch))
	if len(p.aux) != 0 {
		t.Errorf("include_aux absent: %d aux", len(p.aux))
	}
}

// CW-18: a hop is drained completely: more than 2,000 reactions on one row
// are all served (never "the newest 1000"), and their deletions too.
func TestCWAuxManyReactions(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 100000
	m := cwMsg(t, a, ch, T)
	mustPublish(t, c, m)
	const n = 2100
	reactors := []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)}
	reactions := make([]*nostr.Event, n)
	for i := range n {
		reactions[i] = &nostr.Event{Kind: buzz.KindReaction, CreatedAt: nostr.Timestamp(T + 1 + int64(i)), Content: "+",
			Tags: nostr.Tags{{"e", m.ID}, {"p", m.PubKey}, {"nonce", strconv.Itoa(i)}}}
	}
	start := time.Now()
	cwSignAll(t, reactors, reactions)
	t.Logf("signed %d reactions in %v", n, time.Since(start))
	start = time.Now()
	for i := 0; i < n; i += 500 {
		batch := reactions[i:min(i+500, n)]
		outcomes, err := s.store.ImportBatch(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		for j, err := range outcomes {
			if err != nil {
				t.Fatalf("reaction %d: %v", i+j, err)
			}
		}
	}
	t.Logf("stored %d reactions in %v", n, time.Since(start))
	del := cwDeletion(t, reactors[0], reactions[0], reactions[3], reactions[6])
	mustPublish(t, c, del)

	start = time.Now()
	p := cwWindow(t, s, nil, ch, cwF(ch, "include_aux", true))
	t.Logf("window page in %v", time.Since(start))
	cwSameIDs(t, "rows", p.rows, []*nostr.Event{m})
	want := append(slices.Clone(reactions[1:3]), reactions[4:6]...)
	want = append(append(want, reactions[7:]...), del)
	if len(p.aux) != len(want) {
		t.Fatalf("aux has %d events, want %d", len(p.aux), len(want))
	}
	cwSameSet(t, "aux", p.aux, want)
}

// CW-19: one 39005 per row whose subtree holds a non-deleted reply, none
// for the others; counters, last_reply_at and participants (the 10 most
// recent distinct authors, created_at DESC then pubkey ASC) exact, through
// replies at several depths, ties and deletions.
func TestCWSummaries(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	model := cwNewModel()
	var us []testutil.Signer
	for range 13 {
		us = append(us, testutil.NewSigner(t))
	}
	T := now() - 5000
	m := model.add(cwMsg(t, a, ch, T), nil)     // the big thread
	n := model.add(cwMsg(t, a, ch, T+1), nil)   // no reply
	o := model.add(cwMsg(t, a, ch, T+2), nil)   // its only reply deleted
	p := model.add(cwMsg(t, a, ch, T+3), nil)   // its reply deleted, a grandchild left
	bcp := model.add(cwMsg(t, a, ch, T+4), nil) // with a broadcast reply that has replies
	cwPublish(t, c, m, n, o, p, bcp)

	var direct []*nostr.Event
	for i, u := range us[:12] {
		// Authors 8, 9, 10 and 11 tie at T+20.
		at := T + 10 + int64(i)
		if i >= 8 {
			at = T + 20
		}
		direct = append(direct, model.add(cwReply(t, u, ch, at, m), m))
	}
	cwPublish(t, c, direct...)
	deep := model.add(cwReply(t, us[3], ch, T+30, direct[0]), direct[0])
	mustPublish(t, c, deep)
	deeper := model.add(cwReply(t, a, ch, T+31, deep), deep)
	newest := model.add(cwReply(t, us[12], ch, T+40, deeper), deeper)
	or := model.add(cwReply(t, us[0], ch, T+50, o), o)
	pr := model.add(cwReply(t, us[1], ch, T+51, p), p)
	bc := model.add(cwReply(t, us[2], ch, T+52, bcp, cwBroadcast), bcp)
	cwPublish(t, c, deeper, newest, or, pr, bc)
	prr := model.add(cwReply(t, us[4], ch, T+53, pr), pr)
	bc1 := model.add(cwReply(t, us[5], ch, T+54, bc), bc)
	bc2 := model.add(cwReply(t, us[6], ch, T+55, bc), bc)
	x := cwReaction(t, us[0], T+60, m)
	cwPublish(t, c, prr, bc1, bc2, x)

	check := func(what string) {
		t.Helper()
		for _, limit := range []int{2, 50} {
			rows, pages := cwWalk(t, s, nil, ch, cwF(ch, "include_summaries", true, "include_aux", true), limit)
			cwSameIDs(t, what+": rows", rows, cwOrder(m, n, o, p, bcp, bc))
			for _, pg := range pages {
				model.checkSummaries(t, pg)
			}
		}
	}
	check("before deletions")

	// Deleting the newest event below m and bcp's broadcast reply's newest
	// reply: last_reply_at and participants recomputed, at a root and
	// at an inner row.
	for _, del := range []struct {
		who testutil.Signer
		ev  *nostr.Event
	}{{us[12], newest}, {us[0], or}, {us[1], pr}, {us[6], bc2}, {us[11], direct[11]}, {us[9], direct[9]}} {
		mustPublish(t, c, cwDeletion(t, del.who, del.ev))
		model.deleted[del.ev.ID] = true
	}
	check("after deletions")
	if _, due := model.summary(o.ID); due {
		t.Fatal("model: o still has a reply")
	}

	page := cwWindow(t, s, nil, ch, cwF(ch, "include_aux", true))
	if len(page.sums) != 0 {
		t.Errorf("include_summaries absent: %d summaries", len(page.sums))
	}
}

// CW-20: exactly one 39006 per served window, with the d tag naming the
// channel (canonical) and the request cursor (lowercase hex) or head.
func TestCWBounds(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 1000
	var rows []*nostr.Event
	for i := range 3 {
		rows = append(rows, cwMsg(t, a, ch, T+int64(i)))
	}
	cwPublish(t, c, rows...)
	rows = cwOrder(rows...)
	up := strings.ToUpper(rows[0].ID)

	for _, h := range []string{ch, strings.ToUpper(ch), "{" + ch + "}", strings.ReplaceAll(ch, "-", "")} {
		evs := cwQuery(t, s, &a, map[string]any{"top_level": true, "#h": []string{h}, "limit": 2})
		p := cwSplit(t, s, evs, ch, ch+":head")
		if !p.HasMore || p.Next.ID != rows[1].ID || p.Next.CreatedAt != int64(rows[1].CreatedAt) {
			t.Errorf("#h %s: has_more %v, next %+v", h, p.HasMore, p.Next)
		}
		evs = cwQuery(t, s, nil, map[string]any{"top_level": true, "#h": []string{h}, "until": rows[0].CreatedAt, "before_id": up})
		p = cwSplit(t, s, evs, ch, fmt.Sprintf("%s:%d:%s", ch, rows[0].CreatedAt, rows[0].ID))
		cwSameIDs(t, "after the first row", p.rows, rows[1:])
		if p.HasMore || p.Next != nil || p.Projection {
			t.Errorf("exhausted page: has_more %v, next %v, projection %v", p.HasMore, p.Next, p.Projection)
		}
	}
	// An empty page still has its bounds.
	p := cwWindow(t, s, nil, ch, cwF(ch, "until", 1, "before_id", strings.Repeat("0", 64)))
	if len(p.all) != 1 || p.HasMore {
		t.Errorf("empty page: %d events, has_more %v", len(p.all), p.HasMore)
	}
	// Two windows of one channel in one request: two bounds, one each.
	evs := cwQuery(t, s, nil, cwF(ch, "limit", 1), cwF(ch, "until", rows[0].CreatedAt, "before_id", rows[0].ID, "limit", 1))
	if len(evs) != 4 {
		t.Fatalf("two windows: %d events, want 2 rows and 2 bounds", len(evs))
	}
	cwSameIDs(t, "first window", cwSplit(t, s, evs[:2], ch, ch+":head").rows, rows[:1])
	cwSameIDs(t, "second window", cwSplit(t, s, evs[2:], ch, fmt.Sprintf("%s:%d:%s", ch, rows[0].CreatedAt, rows[0].ID)).rows, rows[1:2])
}

// CW-21, RL-21: overlays are signed by the relay identity advertised as
// NIP-11 self, and are never stored: no REQ or generic query returns one.
func TestCWOverlaysSignedNotStored(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	m := cwMsg(t, a, ch, now()-10)
	mustPublish(t, c, m)
	mustPublish(t, c, cwReply(t, a, ch, now()-9, m))
	self := cwSelf(t, s)
	if self != s.relay.PubKey() {
		t.Fatalf("NIP-11 self %s, relay identity %s", self, s.relay.PubKey())
	}
	p := cwWindow(t, s, nil, ch, cwF(ch, "include_summaries", true))
	if len(p.sums) != 1 {
		t.Fatalf("%d summaries, want 1", len(p.sums))
	}
	for _, ev := range []*nostr.Event{p.sums[0], p.bounds} {
		if ev.PubKey != self {
			t.Errorf("kind %d pubkey %s, want self %s", ev.Kind, ev.PubKey, self)
		}
		if ok, _ := ev.CheckSignature(); !ok {
			t.Errorf("kind %d: bad signature", ev.Kind)
		}
	}
	for _, f := range []string{
		`{"kinds":[39005,39006]}`,
		`{"kinds":[39005],"#h":["` + ch + `"]}`,
		`{"ids":["` + p.sums[0].ID + `","` + p.bounds.ID + `"]}`,
		`{"authors":["` + self + `"]}`,
	} {
		evs := cwSubscribe(t, c, fmt.Sprintf("stored-%d", cwSeq.Add(1)), f)
		for _, ev := range evs {
			if ev.Kind == buzz.KindThreadSummary || ev.Kind == buzz.KindWindowBounds {
				t.Errorf("REQ %s returned a kind %d", f, ev.Kind)
			}
		}
		var filter map[string]any
		json.Unmarshal([]byte(f), &filter)
		for _, ev := range cwQuery(t, s, nil, filter) {
			if ev.Kind == buzz.KindThreadSummary || ev.Kind == buzz.KindWindowBounds {
				t.Errorf("/query %s returned a kind %d", f, ev.Kind)
			}
		}
	}
}

// CW-21: the one live overlay. A member subscribed to the channel's 39005
// gets a fresh summary of the root (and of every other ancestor that is a
// row) whenever a reply is stored or deleted, down to zero; a non-member
// gets nothing, and 39006 is never pushed.
func TestCWLiveSummaryPush(t *testing.T) {
	s, pub, owner := startWithClient(t)
	member, outsider := testutil.NewSigner(t), testutil.NewSigner(t)
	priv, open := newChannelID(t), newChannelID(t)
	cwCreate(t, pub, owner, priv, true)
	cwAddMember(t, pub, owner, priv, member.PK)
	self := cwSelf(t, s)

	sumFilter := `{"kinds":[39005],"#h":["` + priv + `"]}`
	barrierFilter := `{"kinds":[9],"#h":["` + open + `"]}`
	cm := cwConnect(t, s, &member)
	cx := cwConnect(t, s, &outsider)
	for _, conn := range []*rawClient{cm, cx} {
		if evs := cwSubscribe(t, conn, "sum", sumFilter); len(evs) != 0 {
			t.Fatalf("REQ for 39005: %d stored events, want none (CW-23)", len(evs))
		}
		cwSubscribe(t, conn, "bounds", `{"kinds":[39006]}`)
		cwSubscribe(t, conn, "bar", barrierFilter)
	}

	model := cwNewModel()
	now := now()
	m := model.add(cwMsg(t, owner, priv, now), nil)
	mustPublish(t, pub, m)

	// expect waits on cm for one fresh 39005 of each of ids, in any order,
	// and checks each against the model; nothing else may arrive on the
	// overlay subscriptions meanwhile.
	expect := func(step string, ids ...string) {
		t.Helper()
		pending := slices.Clone(ids)
		for len(pending) > 0 {
			ev, before := cwLive(t, cm, step, func(sub string, ev *nostr.Event) bool { return sub == "sum" || sub == "bounds" })
			if len(before) != 0 || ev.Kind != buzz.KindThreadSummary {
				t.Fatalf("%s: unexpected events %v / kind %d", step, before, ev.Kind)
			}
			id := ev.Tags.GetD()
			i := slices.Index(pending, id)
			if i < 0 {
				t.Fatalf("%s: unexpected summary of %s, want %s", step, id, cwShort(pending))
			}
			pending = slices.Delete(pending, i, i+1)
			if ev.PubKey != self {
				t.Fatalf("%s: 39005 signed by %s", step, ev.PubKey)
			}
			if ok, _ := ev.CheckSignature(); !ok {
				t.Fatalf("%s: pushed summary signature does not verify", step)
			}
			if want := (nostr.Tags{{"e", id}, {"d", id}, {"h", priv}}); len(ev.Tags) != 3 ||
				!slices.Equal(ev.Tags[0], want[0]) || !slices.Equal(ev.Tags[1], want[1]) || !slices.Equal(ev.Tags[2], want[2]) {
				t.Fatalf("%s: tags %v, want %v", step, ev.Tags, want)
			}
			got := cwParseSummary(t, ev.Content)
			want, _ := model.summary(id)
			if !got.equal(want) {
				t.Fatalf("%s: pushed %v for %s, want %v", step, got, id[:8], want)
			}
		}
	}

	r := model.add(cwReply(t, member, priv, now, m), m)
	mustPublish(t, pub, r)
	expect("reply stored", m.ID)
	r2 := model.add(cwReply(t, owner, priv, now, r), r) // r is no row: only m's summary
	mustPublish(t, pub, r2)
	expect("depth-2 reply stored", m.ID)
	mustPublish(t, pub, cwDeletion(t, owner, r2))
	model.deleted[r2.ID] = true
	expect("depth-2 reply deleted", m.ID)
	mustPublish(t, pub, cwDeletion(t, member, r))
	model.deleted[r.ID] = true
	expect("last reply deleted", m.ID)
	if want, _ := model.summary(m.ID); want.Reply != 0 || want.Desc != 0 || want.Last != nil {
		t.Fatalf("model: %v", want)
	}
	b := model.add(cwReply(t, member, priv, now, m, cwBroadcast), m)
	mustPublish(t, pub, b)
	expect("broadcast reply stored", m.ID)
	bb := model.add(cwReply(t, owner, priv, now, b), b) // b is a row: its summary, then m's
	mustPublish(t, pub, bb)
	expect("reply to a row reply stored", b.ID, m.ID)

	barrier := cwMsg(t, owner, open, time.Now().Unix())
	mustPublish(t, pub, barrier)
	isBarrier := func(sub string, ev *nostr.Event) bool { return ev.ID == barrier.ID }
	if _, before := cwLive(t, cm, "barrier (member)", isBarrier); len(before["sum"])+len(before["bounds"]) != 0 {
		t.Errorf("member: %d more 39005, %d 39006 pushed", len(before["sum"]), len(before["bounds"]))
	}
	if _, before := cwLive(t, cx, "barrier (outsider)", isBarrier); len(before) != 0 {
		t.Errorf("non-member received %d 39005, %d 39006, %d others of a private channel", len(before["sum"]), len(before["bounds"]), len(before["bar"]))
	}
}

// CW-21: in projection mode every ancestor is a row, so a reply pushes a
// fresh summary of each of them; an anonymous subscriber
// of an open channel gets them.
func TestCWLiveSummaryPushProjection(t *testing.T) {
	s := startServerWith(t, func(o *testStoreOptions) { v := true; o.ThreadRepliesInChannel = &v })
	pub := s.client(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	ch := newChannelID(t)
	model := cwNewModel()
	now := now()
	m := model.add(cwMsg(t, a, ch, now), nil)
	mustPublish(t, pub, m) // the channel exists from now on
	sub := cwConnect(t, s, nil)
	cwSubscribe(t, sub, "sum", `{"kinds":[39005],"#h":["`+ch+`"]}`)
	next := func() *nostr.Event {
		t.Helper()
		ev, _ := cwLive(t, sub, "a pushed summary", func(string, *nostr.Event) bool { return true })
		want, _ := model.summary(ev.Tags.GetD())
		if sm := cwParseSummary(t, ev.Content); !sm.equal(want) {
			t.Errorf("pushed summary of %s: %v, want %v", ev.Tags.GetD()[:8], sm, want)
		}
		return ev
	}
	q := model.add(cwReply(t, b, ch, now, m), m)
	mustPublish(t, pub, q)
	if d := next().Tags.GetD(); d != m.ID {
		t.Fatalf("after a reply to m: summary of %s, want m", d[:8])
	}
	qq := model.add(cwReply(t, a, ch, now, q), q)
	mustPublish(t, pub, qq)
	// One summary each for q and m, in any order.
	got := []string{next().Tags.GetD(), next().Tags.GetD()}
	want := []string{q.ID, m.ID}
	slices.Sort(want)
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("after a reply to q: summaries of %s, want q and m", cwShort(got))
	}
}

// CW-22: 39005 and 39006 are relay-only: a client-submitted one is
// rejected, even one signed with the relay's own key.
func TestCWRelayOnlyKinds(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	m := cwMsg(t, a, ch, now())
	mustPublish(t, c, m)
	relayKey := testutil.Signer{SK: s.key, PK: s.relay.PubKey()}
	for _, who := range []testutil.Signer{a, relayKey} {
		for _, ev := range []*nostr.Event{
			cwEvent(t, who, buzz.KindThreadSummary, now(), nostr.Tag{"e", m.ID}, nostr.Tag{"d", m.ID}, nostr.Tag{"h", ch}),
			cwEvent(t, who, buzz.KindWindowBounds, now(), nostr.Tag{"d", ch + ":head"}, nostr.Tag{"h", ch}),
			cwEvent(t, who, buzz.KindThreadSummary, now()),
			cwEvent(t, who, buzz.KindWindowBounds, now(), nostr.Tag{"d", "x"}),
		} {
			mustReject(t, c, ev, "restricted: relay-only kind")
			mustNotServe(t, c, ev.ID, "a rejected relay-only event is served")
		}
	}
}

// CW-23: on WebSocket a window-shaped filter is a plain kinds + #h filter:
// every kind-9 event of the channel, replies included, and no overlay.
func TestCWWebSocketPlain(t *testing.T) {
	s, c, a := startWithClient(t)
	ch := newChannelID(t)
	T := now() - 100
	m := cwMsg(t, a, ch, T)
	mustPublish(t, c, m)
	r := cwReply(t, a, ch, T+1, m)
	mustPublish(t, c, r)
	rr := cwReply(t, a, ch, T+2, r, cwBroadcast)
	m2 := cwMsg(t, a, ch, T+3)
	x := cwReaction(t, a, T+4, m)
	cwPublish(t, c, rr, m2, x)
	all := []*nostr.Event{m, r, rr, m2}

	f := cwJSON(t, cwF(ch, "kinds", []int{9}, "limit", 50, "include_summaries", true, "include_aux", true))
	for _, who := range []*testutil.Signer{nil, &a} {
		conn := cwConnect(t, s, who)
		evs := cwSubscribe(t, conn, "w", f)
		cwSameSet(t, "REQ with a window-shaped filter", evs, all)
		conn.send("CLOSE", "w")
	}
}

// CW-21: whether a pushed summary reaches a subscription is decided by its
// whole filter, dates and author included, although the relay first asks,
// dates left out, whether anyone could listen at all (to skip the
// summary's read and signature when no one does). A filter whose until
// lies before the summary's date gets nothing, one whose since lies before
// it gets it, and so does one naming the relay's key as author.
func TestCWLiveSummaryPushDates(t *testing.T) {
	s, pub, owner := startWithClient(t)
	open := newChannelID(t)
	cwCreate(t, pub, owner, open, false)
	at := now()
	m := cwMsg(t, owner, open, at)
	mustPublish(t, pub, m)

	// Alone first: the one listener names the relay's key.
	byRelay := s.client(t)
	cwSubscribe(t, byRelay, "sum", fmt.Sprintf(`{"kinds":[39005],"authors":[%q]}`, cwSelf(t, s)))
	mustPublish(t, pub, cwReply(t, owner, open, at, m))
	isSummary := func(sub string, ev *nostr.Event) bool { return sub == "sum" }
	if ev, _ := cwLive(t, byRelay, "summary (authors)", isSummary); ev.Tags.GetD() != m.ID {
		t.Fatalf("pushed summary of %s, want %s", ev.Tags.GetD(), m.ID)
	}

	past := s.client(t)
	recent := s.client(t)
	cwSubscribe(t, past, "sum", fmt.Sprintf(`{"kinds":[39005],"#h":[%q],"until":%d}`, open, at-3600))
	cwSubscribe(t, recent, "sum", fmt.Sprintf(`{"kinds":[39005],"#h":[%q],"since":%d}`, open, at-3600))
	for _, c := range []*rawClient{past, recent} {
		cwSubscribe(t, c, "bar", fmt.Sprintf(`{"kinds":[9],"#h":[%q]}`, open))
	}
	mustPublish(t, pub, cwReply(t, owner, open, at, m))
	if ev, _ := cwLive(t, recent, "summary (since)", isSummary); ev.Tags.GetD() != m.ID {
		t.Fatalf("pushed summary of %s, want %s", ev.Tags.GetD(), m.ID)
	}
	barrier := cwMsg(t, owner, open, at)
	mustPublish(t, pub, barrier)
	isBarrier := func(sub string, ev *nostr.Event) bool { return ev.ID == barrier.ID }
	if _, before := cwLive(t, past, "barrier (until)", isBarrier); len(before["sum"]) != 0 {
		t.Errorf("a filter with until an hour ago received %d pushed summaries", len(before["sum"]))
	}
}
