package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// negResult is what one NIP-77 reconciliation found: the ids only the
// relay has (haveNots), only the client has (haves), or the NEG-ERR
// reason that ended it.
type negResult struct {
	haves, haveNots []string
	refused         string
}

// negSync reconciles local against the relay over c for filter f, with
// go-nostr's negentropy as the client, as NIP-77 runs it: NEG-OPEN with
// the client's first message, NEG-MSG rounds until the client has nothing
// more to say, then NEG-CLOSE.
func negSync(t *testing.T, c *rawClient, id string, f nostr.Filter, local []*nostr.Event) negResult {
	t.Helper()
	vec := vector.New()
	for _, ev := range local {
		vec.Insert(ev.CreatedAt, ev.ID)
	}
	vec.Seal()
	neg := negentropy.New(vec, 0)
	var res negResult
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for id := range neg.Haves {
			res.haves = append(res.haves, id)
		}
	}()
	go func() {
		defer wg.Done()
		for id := range neg.HaveNots {
			res.haveNots = append(res.haveNots, id)
		}
	}()
	c.send("NEG-OPEN", id, f, neg.Start())
	for {
		msg := c.await("NEG-MSG or NEG-ERR", func(m []json.RawMessage) bool {
			return (label(m) == "NEG-MSG" || label(m) == "NEG-ERR") && str(m, 1) == id
		})
		if label(msg) == "NEG-ERR" {
			res.refused = str(msg, 2)
			return res // the drainers stay blocked on channels nobody closes: the test ends
		}
		out, err := neg.Reconcile(str(msg, 2))
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if out == "" {
			break
		}
		c.send("NEG-MSG", id, out)
	}
	c.send("NEG-CLOSE", id)
	wg.Wait()
	slices.Sort(res.haves)
	slices.Sort(res.haveNots)
	return res
}

// RL-34: each requester reconciles exactly the set its REQ of the same
// filter answers, with the private channel in the filter: anonymous is
// told auth-required as its REQ is, a non-member reconciles nothing of the
// private channel, a member all of it. The client holds one event of the
// set and one the relay never had, so that the reconciliation has both
// directions to find.
func TestNegentropyReadRule(t *testing.T) {
	f := newAccessFixture(t)
	s := f.s
	stranger := f.outsider.Event(t, 9, now(), "never published", hTag(f.open.h))
	filters := map[string]nostr.Filter{
		"everything":      {},
		"private channel": {Tags: nostr.TagMap{"h": {f.private.h}}},
		"both channels":   {Tags: nostr.TagMap{"h": {f.open.h, f.private.h}}},
		"chat kinds":      {Kinds: []int{9, 7}},
	}
	for _, rq := range f.requesters() {
		for name, filter := range filters {
			t.Run(rq.name+"/"+name, func(t *testing.T) {
				c := s.connectAs(t, rq.who)
				want, closed := subscribe(t, c.rawClient, "req", filter)
				local := []*nostr.Event{stranger}
				if len(want) > 0 {
					local = append(local, want[0])
				}
				got := negSync(t, c.rawClient, "neg", filter, local)
				if got.refused != closed {
					t.Fatalf("NEG-ERR %q, the REQ's CLOSED %q", got.refused, closed)
				}
				if closed != "" {
					if !strings.HasPrefix(closed, "auth-required: ") || rq.who != nil {
						t.Fatalf("REQ closed %q for %s", closed, rq.name)
					}
					return
				}
				wantMissing := sorted(ids(want))
				if len(want) > 0 {
					wantMissing = slices.DeleteFunc(wantMissing, func(id string) bool { return id == want[0].ID })
				}
				if !slices.Equal(got.haveNots, wantMissing) {
					t.Fatalf("relay has %d events the client lacks, want the %d of REQ:\n got %v\nwant %v",
						len(got.haveNots), len(wantMissing), got.haveNots, wantMissing)
				}
				if !slices.Equal(got.haves, []string{stranger.ID}) {
					t.Fatalf("client has %v the relay lacks, want only %s", got.haves, stranger.ID)
				}
				if !rq.readPrivate && slices.Contains(got.haveNots, f.private.msg.ID) {
					t.Fatalf("%s reconciled the private channel's message", rq.name)
				}
				if rq.readPrivate && name != "chat kinds" && !slices.Contains(got.haveNots, f.private.msg.ID) && want[0].ID != f.private.msg.ID {
					t.Fatalf("%s did not reconcile the private channel's message", rq.name)
				}
			})
		}
	}
}

// RL-34: the bounds of what a sync makes the relay hold: a set larger than
// sync_items is refused, a connection holds at most sync_sessions sessions
// (a closed one frees its place, a reopened one takes its own), and
// malformed or unknown sessions are answered NEG-ERR.
func TestNegentropyBounds(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Limits.MaxSyncItems = 3
		c.Limits.MaxSyncSessions = 2
	})
	start := publishNotes(t, s, 4)
	c := s.client(t)
	negErr := func(id string) string {
		t.Helper()
		got := negAnswer(c, id)
		if label(got) != "NEG-ERR" {
			t.Fatalf("%s: %s, want NEG-ERR", id, joinRaw(got))
		}
		return str(got, 2)
	}
	negMsg := func(id string) {
		t.Helper()
		if got := negAnswer(c, id); label(got) != "NEG-MSG" {
			t.Fatalf("%s: %s, want NEG-MSG", id, joinRaw(got))
		}
	}

	c.send("NEG-OPEN", "big", nostr.Filter{Kinds: []int{1}}, start)
	if got, want := negErr("big"), "blocked: too many events to sync (limit 3), narrow the filter"; got != want {
		t.Fatalf("4 events, limit 3: %q, want %q", got, want)
	}
	// A limit within the cap is honoured, as REQ honours it.
	c.send("NEG-OPEN", "a", nostr.Filter{Kinds: []int{1}, Limit: 3}, start)
	negMsg("a")
	c.send("NEG-OPEN", "b", nostr.Filter{Kinds: []int{1}, Limit: 1}, start)
	negMsg("b")
	c.send("NEG-OPEN", "c", nostr.Filter{Kinds: []int{1}, Limit: 1}, start)
	if got, want := negErr("c"), "rate-limited: too many open sync sessions (limit 2)"; got != want {
		t.Fatalf("third session: %q, want %q", got, want)
	}
	c.send("NEG-CLOSE", "a")
	c.send("NEG-OPEN", "c", nostr.Filter{Kinds: []int{1}, Limit: 1}, start)
	negMsg("c")
	// A NEG-OPEN of an open id replaces that session, as NIP-77 says: it
	// is not counted twice.
	c.send("NEG-OPEN", "b", nostr.Filter{Kinds: []int{1}, Limit: 2}, start)
	negMsg("b")

	c.send("NEG-MSG", "nosuch", "61")
	if got := negErr("nosuch"); got != "closed: no open sync session with this id" {
		t.Fatalf("NEG-MSG of no session: %q", got)
	}
	c.sendText(`["NEG-MSG","b","61000002ffffffff7f"]`)
	if got := negErr("b"); !strings.HasPrefix(got, "invalid: ") {
		t.Fatalf("an id list claiming more ids than it holds: %q", got)
	}
	c.sendText(`["NEG-OPEN","d",{"kinds":[1]}]`)
	if got := negErr("d"); got != "invalid: NEG-OPEN: want 4 elements, got 3" {
		t.Fatalf("NEG-OPEN without a message: %q", got)
	}
}

// FuzzNegEnvelope feeds the NIP-77 envelope parser, and the
// reconciliation of what it accepts, untrusted bytes: neither may panic,
// and what the parser accepts must have a label and a subscription id.
func FuzzNegEnvelope(f *testing.F) {
	empty := vector.New()
	empty.Seal()
	start := negentropy.New(empty, 0).Start()
	f.Add(`["NEG-OPEN","s",{"kinds":[1]},"` + start + `"]`)
	f.Add(`["NEG-MSG","s","6100020102"]`)
	f.Add(`["NEG-MSG","s","61000002ffffffff7f"]`)
	f.Add(`["NEG-MSG","s","61ffffffffffffffffff7f00"]`)
	f.Add(`["NEG-CLOSE","s"]`)
	f.Add(`["NEG-OPEN",1,{},""]`)
	f.Add(`["REQ","s",{}]`)
	items := vector.New()
	for i := range 40 {
		items.Insert(nostr.Timestamp(1700000000+i), strings.Repeat(string("0123456789abcdef"[i%16]), 63)+"a")
	}
	items.Seal()
	f.Fuzz(func(t *testing.T, message string) {
		env, err := parseNegEnvelope(message)
		if err != nil {
			return
		}
		if env.label == "" || env.id == "" {
			t.Fatalf("accepted %q without a label or id", message)
		}
		if env.label != "NEG-CLOSE" {
			// An error is a fine answer to garbage; a panic is not.
			_, _ = negentropy.New(items, syncFrameBytes).Reconcile(env.message)
		}
	})
}

// RL-34: what sync sessions hold is bounded in bytes across the relay:
// with every connection's share held, a set on another connection is
// refused busy, and a session's memory is given back when its connection
// closes, so that the other connection's session then fits.
func TestNegentropyMemory(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.SyncMemoryBytes = syncClientShare * 3 * syncItemBytes })
	start := publishNotes(t, s, 4)

	// Each holder is a client of its own, which may hold a quarter.
	var holders []*rawClient
	for i := range syncClientShare {
		holder := s.dialFrom(t, fmt.Sprintf("127.0.0.%d", 10+i))
		holder.send("NEG-OPEN", "held", nostr.Filter{Kinds: []int{1}, Limit: 3}, start)
		if got := negAnswer(holder, "held"); label(got) != "NEG-MSG" {
			t.Fatalf("holder %d, 3 events: %s", i, joinRaw(got))
		}
		holders = append(holders, holder)
	}
	c := s.client(t)
	c.send("NEG-OPEN", "one", nostr.Filter{Kinds: []int{1}, Limit: 1}, start)
	if got := negAnswer(c, "one"); label(got) != "NEG-ERR" || str(got, 2) != errBusy {
		t.Fatalf("1 more event while the whole budget is held: %s, want NEG-ERR %q", joinRaw(got), errBusy)
	}
	holders[0].conn.Close()
	// The relay hears of the hang-up in its own time; the budget's wait
	// (2 s) covers it.
	c.send("NEG-OPEN", "after", nostr.Filter{Kinds: []int{1}, Limit: 3}, start)
	if got := negAnswer(c, "after"); label(got) != "NEG-MSG" {
		t.Fatalf("after a holder hung up: %s, want its memory given back", joinRaw(got))
	}
}

// RL-34: a session without a NEG-MSG for the idle time is closed with
// NEG-ERR, and its id is then unknown.
func TestNegentropyIdleSessionClosed(t *testing.T) {
	s := startServer(t)
	s.relay.syncIdle = 50 * time.Millisecond // before any connection reads it
	start := publishNotes(t, s, 2)
	c := s.client(t)
	c.send("NEG-OPEN", "idle", nostr.Filter{Kinds: []int{1}}, start)
	if got := negAnswer(c, "idle"); label(got) != "NEG-MSG" {
		t.Fatalf("NEG-OPEN: %s", joinRaw(got))
	}
	if got := negAnswer(c, "idle"); label(got) != "NEG-ERR" || str(got, 2) != "closed: sync session idle for 50ms" {
		t.Fatalf("an idle session: %s, want NEG-ERR closed", joinRaw(got))
	}
	c.send("NEG-MSG", "idle", start)
	if got := negAnswer(c, "idle"); label(got) != "NEG-ERR" || str(got, 2) != "closed: no open sync session with this id" {
		t.Fatalf("NEG-MSG after the idle close: %s", joinRaw(got))
	}
}

// publishNotes stores n kind 1 notes on s and returns the first message
// of a client holding nothing.
func publishNotes(t *testing.T, s *testServer, n int) string {
	t.Helper()
	author := testutil.NewSigner(t)
	c := s.client(t)
	// One base time: two events of the same second would share an id.
	base := now()
	for i := range n {
		mustPublish(t, c, author.Event(t, 1, base-int64(i), "note"))
	}
	empty := vector.New()
	empty.Seal()
	return negentropy.New(empty, 0).Start()
}

// negAnswer waits for the relay's next NEG-MSG or NEG-ERR on session id.
func negAnswer(c *rawClient, id string) []json.RawMessage {
	c.t.Helper()
	return c.await("answer to "+id, func(m []json.RawMessage) bool {
		return (label(m) == "NEG-MSG" || label(m) == "NEG-ERR") && str(m, 1) == id
	})
}

// BenchmarkNegentropySync measures one whole NIP-77 session over a real
// WebSocket against the benchmark community's first channel, the client
// missing one event in a hundred: the relay reads the set as a REQ would,
// then the rounds find the missing ids.
func BenchmarkNegentropySync(b *testing.B) {
	s, channel, _ := benchCommunity(b, true)
	t := &testing.T{}
	c := s.client(t)
	f := nostr.Filter{Tags: nostr.TagMap{"h": {channel}}}
	all, err := s.store.Query(context.Background(), nostr.Filter{Tags: f.Tags, Limit: 1 << 20}, "")
	if err != nil {
		b.Fatal(err)
	}
	var local []*nostr.Event
	missing := 0
	for i, ev := range all {
		if i%100 == 0 {
			missing++
			continue
		}
		local = append(local, ev)
	}
	b.Logf("a channel of %d events, %d missing", len(all), missing)
	b.ResetTimer()
	for i := range b.N {
		got := negSync(t, c, fmt.Sprint("bench", i), f, local)
		if got.refused != "" || len(got.haveNots) != missing {
			b.Fatalf("refused %q, %d missing found, want %d", got.refused, len(got.haveNots), missing)
		}
	}
}

// negExpect sends msg, a NIP-77 message of session id, and checks the
// relay's answer: a NEG-MSG when want is "NEG-MSG", else a NEG-ERR of
// reason want.
func negExpect(c *rawClient, id, want string, msg ...any) {
	c.t.Helper()
	c.send(msg...)
	got := negAnswer(c, id)
	if label(got) == want && want == "NEG-MSG" || label(got) == "NEG-ERR" && str(got, 2) == want {
		return
	}
	c.t.Fatalf("%v of %s: answered %s, want %s", msg[0], id, joinRaw(got), want)
}

// noSession answers a NEG-MSG of a session the relay does not hold.
const noSession = "closed: no open sync session with this id"

// RL-27, RL-34: each NEG-MSG takes a token of the connection's request
// rate, as NEG-OPEN, REQ and COUNT do; past it the session is answered
// NEG-ERR with the rate message and closed. The client's first message
// sent again asks for the whole set again: a round that does not finish
// the reconciliation.
func TestNegentropyMessageRate(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Limits.Rates = &Rates{ReqsPerConnection: Rate{PerSecond: never, Burst: 2}}
	})
	start := publishNotes(t, s, 2)
	c := s.client(t)
	negExpect(c, "rate", "NEG-MSG", "NEG-OPEN", "rate", nostr.Filter{Kinds: []int{1}}, start)
	negExpect(c, "rate", "NEG-MSG", "NEG-MSG", "rate", start)
	negExpect(c, "rate", tooManyRequests, "NEG-MSG", "rate", start)
	negExpect(c, "rate", noSession, "NEG-MSG", "rate", start)
}

// RL-34, RL-27a: a session reconciles at most maxSyncRounds messages, and
// each round runs in the relay's read slots: with the client IP's slots
// taken, a NEG-MSG is refused busy rather than run beside them.
func TestNegentropyRoundsBounded(t *testing.T) {
	if got := maxSyncRounds(DefaultLimits.MaxSyncItems); got != 66 {
		t.Fatalf("rounds of a default session: %d, want 66 (2 x 25 frames of ids + 16)", got)
	}
	s := startServer(t, func(c *Config) { c.Limits.MaxConcurrentQueriesPerIP = 1 })
	s.relay.maxSyncRounds = 2 // before any connection reads it
	start := publishNotes(t, s, 2)
	c := s.client(t)
	negExpect(c, "rounds", "NEG-MSG", "NEG-OPEN", "rounds", nostr.Filter{Kinds: []int{1}}, start)
	negExpect(c, "rounds", "NEG-MSG", "NEG-MSG", "rounds", start)
	negExpect(c, "rounds", "blocked: too many sync rounds (limit 2)", "NEG-MSG", "rounds", start)

	negExpect(c, "busy", "NEG-MSG", "NEG-OPEN", "busy", nostr.Filter{Kinds: []int{1}}, start)
	ip := netip.MustParsePrefix("127.0.0.1/32")
	if !s.relay.reads.acquire(context.Background(), ip) {
		t.Fatal("the client IP's one read slot was not free")
	}
	defer s.relay.reads.release(ip)
	negExpect(c, "busy", errBusy, "NEG-MSG", "busy", start)
}

// RL-34, Issue 29 item 1: the sessions of one client, over all its
// connections, hold at most its share of sync_memory_bytes (a quarter),
// while another client still syncs; and a finished reconciliation frees
// its memory at once, without NEG-CLOSE.
func TestNegentropyClientShare(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.SyncMemoryBytes = syncClientShare * 2 * syncItemBytes })
	start := publishNotes(t, s, 3)
	all, err := s.store.Query(context.Background(), nostr.Filter{Kinds: []int{1}}, "")
	if err != nil {
		t.Fatal(err)
	}
	two, one := nostr.Filter{Kinds: []int{1}, Limit: 2}, nostr.Filter{Kinds: []int{1}, Limit: 1}
	c, sibling, other := s.dialFrom(t, "127.0.0.1"), s.dialFrom(t, "127.0.0.1"), s.dialFrom(t, "127.0.0.2")
	full := fmt.Sprintf(errSyncShare, 2)
	negExpect(c, "two", "NEG-MSG", "NEG-OPEN", "two", two, start)
	negExpect(c, "one", full, "NEG-OPEN", "one", one, start)
	negExpect(sibling, "one", full, "NEG-OPEN", "one", one, start)
	negExpect(other, "two", "NEG-MSG", "NEG-OPEN", "two", two, start)
	c.send("NEG-CLOSE", "two")

	// A client holding the whole set finishes in one round: the relay's
	// answer is the bare version byte, and the session is gone.
	if got := negSync(t, c, "done", two, all[:2]); got.refused != "" || len(got.haves)+len(got.haveNots) != 0 {
		t.Fatalf("a sync of an equal set: %+v", got)
	}
	negExpect(c, "done", noSession, "NEG-MSG", "done", start)
	negExpect(sibling, "again", "NEG-MSG", "NEG-OPEN", "again", two, start)
}

// RL-34, Issue 29 item 1: sync_sessions counts the open sessions of a
// client over all its connections; another client has sessions of its
// own, and a closed session, or a closed connection, gives its place back.
func TestNegentropySessionsPerClient(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.MaxSyncSessions = 2 })
	start := publishNotes(t, s, 1)
	f := nostr.Filter{Kinds: []int{1}}
	a, b, other := s.dialFrom(t, "127.0.0.1"), s.dialFrom(t, "127.0.0.1"), s.dialFrom(t, "127.0.0.2")
	negExpect(a, "x", "NEG-MSG", "NEG-OPEN", "x", f, start)
	negExpect(b, "y", "NEG-MSG", "NEG-OPEN", "y", f, start)
	full := "rate-limited: too many open sync sessions (limit 2)"
	negExpect(b, "z", full, "NEG-OPEN", "z", f, start)
	negExpect(other, "x", "NEG-MSG", "NEG-OPEN", "x", f, start)
	negExpect(other, "y", "NEG-MSG", "NEG-OPEN", "y", f, start)
	a.send("NEG-CLOSE", "x")
	negExpect(a, "x", noSession, "NEG-MSG", "x", start) // a's messages are handled in order
	negExpect(b, "z", "NEG-MSG", "NEG-OPEN", "z", f, start)
	negExpect(a, "w", full, "NEG-OPEN", "w", f, start)

	// The relay hears of a hang-up in its own time.
	b.conn.Close()
	deadline := time.Now().Add(waitTimeout)
	for id := 0; ; id++ {
		sid := fmt.Sprintf("after%d", id)
		a.send("NEG-OPEN", sid, f, start)
		got := negAnswer(a, sid)
		if label(got) == "NEG-MSG" {
			break
		}
		if str(got, 2) != full || time.Now().After(deadline) {
			t.Fatalf("after the other connection closed: %s", joinRaw(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// RL-34, Issue 29 item 1: one client opening many connections of several
// sessions each holds no more than its share of the sync memory, and
// another client's sync is not refused busy. (5 sockets x 4 sessions of
// one address held all 64 MiB, and every other sync was refused.)
func TestNegentropyOneClientCannotHoldAll(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.SyncMemoryBytes = syncClientShare * 3 * syncItemBytes })
	start := publishNotes(t, s, 3)
	f := nostr.Filter{Kinds: []int{1}}
	held := 0
	for i := range syncClientShare + 1 {
		c := s.dialFrom(t, "127.0.0.1")
		for j := range DefaultLimits.MaxSyncSessions {
			id := fmt.Sprintf("s%d-%d", i, j)
			c.send("NEG-OPEN", id, f, start)
			if got := negAnswer(c, id); label(got) == "NEG-MSG" {
				held++
			}
		}
	}
	if held != 1 {
		t.Errorf("one client holds %d sessions of 3 events, want 1 (its quarter)", held)
	}
	negExpect(s.dialFrom(t, "127.0.0.2"), "innocent", "NEG-MSG", "NEG-OPEN", "innocent", f, start)
}

// RL-34: a session kept busy is still closed syncLifetime after it opened.
func TestNegentropyLifetime(t *testing.T) {
	s := startServer(t)
	s.relay.syncLifetime = 200 * time.Millisecond // before any connection reads them
	s.relay.maxSyncRounds = 1 << 30
	start := publishNotes(t, s, 2)
	c := s.client(t)
	c.send("NEG-OPEN", "long", nostr.Filter{Kinds: []int{1}}, start)
	for {
		got := negAnswer(c, "long")
		switch {
		case label(got) == "NEG-MSG":
			c.send("NEG-MSG", "long", start)
		case str(got, 2) == "closed: sync session open for 200ms":
			return
		case str(got, 2) != noSession:
			// That one answers a NEG-MSG that crossed the close.
			t.Fatalf("a session past its lifetime: %s", joinRaw(got))
		}
	}
}

// RL-34, RL-27: a NEG-OPEN reads its set in chunks of max_limit ids, each
// past the first taking a token of the connection's request rate as a REQ
// would: the set is whole across chunks, and a set of more chunks than
// RL-34, RL-27: a NEG-OPEN takes one token of the connection's request
// rate however many chunks its set is read in (the chunks wait for the
// connection's turn and the read slots, as a REQ's do), so an honest sync
// of a large set is not refused for its size in chunks.
func TestNegentropyOpenTakesOneToken(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Limits.MaxLimit = 2
		c.Limits.Rates = &Rates{ReqsPerConnection: Rate{PerSecond: never, Burst: 3}}
	})
	publishNotes(t, s, 5)
	all, err := s.store.Query(context.Background(), nostr.Filter{Kinds: []int{1}}, "")
	if err != nil {
		t.Fatal(err)
	}
	c := s.client(t)
	for i := range 3 { // sets of 3 chunks of 2, 2 and 1 ids, a token each
		got := negSync(t, c, fmt.Sprint("sync", i), nostr.Filter{Kinds: []int{1}}, nil)
		if got.refused != "" || !slices.Equal(got.haveNots, sorted(ids(all))) {
			t.Fatalf("sync %d of a set of 3 chunks: %+v, want the 5 ids", i, got)
		}
	}
	if got := negSync(t, c, "past", nostr.Filter{Kinds: []int{1}}, nil); got.refused != tooManyRequests {
		t.Fatalf("a fourth NEG-OPEN with the tokens spent: %+v, want NEG-ERR %q", got, tooManyRequests)
	}
}

// RL-34, RL-27a: a NEG-MSG sent right after its NEG-OPEN, before the set
// is read, waits for the set and is answered; it does not hold the
// connection's turn the set's chunks wait for (which left the session and
// a read slot stuck until the session's lifetime ended).
func TestNegentropyMessageRightAfterOpen(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Limits.MaxLimit = 2 })
	start := publishNotes(t, s, 9)
	c := s.client(t)
	c.send("NEG-OPEN", "eager", nostr.Filter{Kinds: []int{1}}, start)
	c.send("NEG-MSG", "eager", start)
	for range 2 {
		c.await("an answer to the NEG-OPEN and to the NEG-MSG", func(m []json.RawMessage) bool {
			return (label(m) == "NEG-MSG" || label(m) == "NEG-ERR") && str(m, 1) == "eager"
		})
	}
	// The connection's turn is free: a REQ is answered (max_limit 2).
	if got := fetch(t, c, nostr.Filter{Kinds: []int{1}}); len(got) != 2 {
		t.Errorf("a REQ after: %d events, want 2", len(got))
	}
}
