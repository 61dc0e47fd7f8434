package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Issue 18 (RL-33): two `serve` processes on one PostgreSQL database, as
// behind a load balancer, driven by real clients over real sockets.

// relayWait bounds every wait for a relay's answer: past it the test fails
// saying what it waited for, instead of hanging.
const relayWait = 10 * time.Second

// selfLine reads the relay's pubkey from its "buzz-lite serving" log line.
var selfLine = regexp.MustCompile(` self=([0-9a-f]{64})`)

// startTwoServes starts two `serve` processes on one fresh PostgreSQL
// database, sharing one data directory and so one relay key, and returns
// them with that key's pubkey.
func startTwoServes(t *testing.T) (a, b *serveProc, self string) {
	t.Helper()
	db := pgtest.FreshDatabase(t) // before clearEnv, which unsets its variable
	testutil.ClearEnv(t)
	// Eight writers on one address would meet the event rates (RL-27).
	t.Setenv("BUZZ_LITE_LIMITS_RATES", "false")
	wd := t.TempDir()
	a = startServe(t, wd, "data", "--postgres", db)
	b = startServe(t, wd, "data", "--postgres", db)
	for name, p := range map[string]*serveProc{"A": a, "B": b} {
		if p.addr == "" {
			t.Fatalf("serve %s on PostgreSQL did not start:\n%s", name, p.output())
		}
		// Under -race the processes are race-built too, and a race they
		// find is only in their log.
		t.Cleanup(func() {
			if out := p.output(); strings.Contains(out, "WARNING: DATA RACE") {
				t.Errorf("serve %s found a data race:\n%s", name, out)
			}
		})
	}
	selfA, selfB := selfLine.FindStringSubmatch(a.line), selfLine.FindStringSubmatch(b.line)
	if selfA == nil || selfB == nil || selfA[1] != selfB[1] {
		t.Fatalf("the two processes on one data directory serve with different keys:\n%s\n%s", a.line, b.line)
	}
	return a, b, selfA[1]
}

// relayConn is a client's WebSocket to one serve process.
type relayConn struct {
	t    *testing.T
	name string // which client on which process, for failures
	url  string // the URL NIP-42 AUTH events name (RL-28)
	conn *websocket.Conn
	// challenge is the NIP-42 challenge the relay sent first.
	challenge string
}

// dialRelay connects to p and reads the AUTH challenge the relay sends
// first.
func dialRelay(t *testing.T, p *serveProc, name string) *relayConn {
	t.Helper()
	c := &relayConn{t: t, name: name, url: "ws://" + p.addr}
	conn, _, err := websocket.DefaultDialer.Dial(c.url, nil)
	if err != nil {
		t.Fatalf("%s: dial: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	c.conn = conn
	msg := c.await("the AUTH challenge", func(m []json.RawMessage) bool { return envLabel(m) == "AUTH" })
	c.challenge = envString(msg, 1)
	return c
}

// envLabel is the first element of a relay message.
func envLabel(m []json.RawMessage) string { return envString(m, 0) }

// envString decodes element i of a relay message as a string ("" when
// absent or not one).
func envString(m []json.RawMessage, i int) string {
	var s string
	if i < len(m) {
		json.Unmarshal(m[i], &s)
	}
	return s
}

// envEvent decodes the event of an EVENT message.
func envEvent(m []json.RawMessage) (*nostr.Event, error) {
	if envLabel(m) != "EVENT" || len(m) < 3 {
		return nil, fmt.Errorf("not an EVENT message: %s", m)
	}
	var ev nostr.Event
	if err := json.Unmarshal(m[2], &ev); err != nil {
		return nil, fmt.Errorf("EVENT message: %w", err)
	}
	return &ev, nil
}

// send writes v as one JSON message; it does not fail the test, so that
// writers on goroutines of their own may use it.
func (c *relayConn) send(v ...any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: encode %s: %w", c.name, v[0], err)
	}
	c.conn.SetWriteDeadline(time.Now().Add(relayWait))
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("%s: send %s: %w", c.name, v[0], err)
	}
	return nil
}

// next reads messages until one matches, within relayWait.
func (c *relayConn) next(what string, match func([]json.RawMessage) bool) ([]json.RawMessage, error) {
	deadline := time.Now().Add(relayWait)
	for {
		c.conn.SetReadDeadline(deadline)
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			return nil, fmt.Errorf("%s: waiting for %s: %w", c.name, what, err)
		}
		var m []json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil || len(m) == 0 {
			return nil, fmt.Errorf("%s: waiting for %s, the relay sent %s", c.name, what, b)
		}
		if match(m) {
			return m, nil
		}
	}
}

// await is next that fails the test.
func (c *relayConn) await(what string, match func([]json.RawMessage) bool) []json.RawMessage {
	c.t.Helper()
	m, err := c.next(what, match)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// publish sends ev and returns the relay's OK: accepted, and its message.
func (c *relayConn) publish(ev *nostr.Event) (bool, string, error) {
	if err := c.send("EVENT", ev); err != nil {
		return false, "", err
	}
	m, err := c.next("the OK of "+ev.ID, func(m []json.RawMessage) bool {
		return envLabel(m) == "OK" && envString(m, 1) == ev.ID && len(m) >= 3
	})
	if err != nil {
		return false, "", err
	}
	var ok bool
	if err := json.Unmarshal(m[2], &ok); err != nil {
		return false, "", fmt.Errorf("%s: OK of %s: %s", c.name, ev.ID, m)
	}
	return ok, envString(m, 3), nil
}

// mustPublish publishes ev and fails the test unless the relay accepts it.
func (c *relayConn) mustPublish(ev *nostr.Event) *nostr.Event {
	c.t.Helper()
	ok, reason, err := c.publish(ev)
	if err != nil {
		c.t.Fatal(err)
	}
	if !ok {
		c.t.Fatalf("%s refused kind %d: %s", c.name, ev.Kind, reason)
	}
	return ev
}

// authenticate answers the relay's challenge as who (NIP-42), naming the
// URL the relay derives from its loopback address (RL-28), and waits for
// the relay to accept it.
func (c *relayConn) authenticate(who testutil.Signer) {
	c.t.Helper()
	ev := who.Event(c.t, nostr.KindClientAuthentication, time.Now().Unix(), "",
		nostr.Tag{"relay", c.url}, nostr.Tag{"challenge", c.challenge})
	if err := c.send("AUTH", ev); err != nil {
		c.t.Fatal(err)
	}
	m := c.await("the OK of AUTH", func(m []json.RawMessage) bool { return envLabel(m) == "OK" && envString(m, 1) == ev.ID })
	if len(m) < 3 || string(m[2]) != "true" {
		c.t.Fatalf("%s: AUTH refused: %s", c.name, m)
	}
}

// subscribe opens subscription id for f and waits for its EOSE; it fails
// the test on CLOSED or on stored events (every filter here is live only).
func (c *relayConn) subscribe(id string, f nostr.Filter) {
	c.t.Helper()
	if err := c.send("REQ", id, f); err != nil {
		c.t.Fatal(err)
	}
	m := c.await("the EOSE of "+id, func(m []json.RawMessage) bool { return envString(m, 1) == id })
	if envLabel(m) != "EOSE" {
		c.t.Fatalf("%s: REQ %s: %s, want EOSE", c.name, id, m)
	}
}

// storedIDs asks by REQ for the stored events of f and returns their ids;
// a CLOSED fails the test.
func (c *relayConn) storedIDs(id string, f nostr.Filter) []string {
	c.t.Helper()
	if err := c.send("REQ", id, f); err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for {
		m := c.await("the EOSE of "+id, func(m []json.RawMessage) bool { return envString(m, 1) == id })
		switch envLabel(m) {
		case "EOSE":
			if err := c.send("CLOSE", id); err != nil {
				c.t.Fatal(err)
			}
			return ids
		case "EVENT":
			ev, err := envEvent(m)
			if err != nil {
				c.t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		default:
			c.t.Fatalf("%s: REQ %s: %s, want EOSE", c.name, id, m)
		}
	}
}

// awaitEvent reads until the event id arrives, on any subscription.
func (c *relayConn) awaitEvent(what, id string) {
	c.t.Helper()
	c.await(what, func(m []json.RawMessage) bool {
		ev, err := envEvent(m)
		return err == nil && ev.ID == id
	})
}

// drainUntil reads until the event barrier arrives and returns the ids of
// the events that arrived before it, by subscription. Live events reach
// one connection in the order the relay delivered them, and a process
// delivers another's events in the order they were committed, so an event
// committed before the barrier that did not arrive was not delivered.
func (c *relayConn) drainUntil(barrier *nostr.Event) map[string][]string {
	c.t.Helper()
	got := map[string][]string{}
	c.await("barrier "+barrier.Content, func(m []json.RawMessage) bool {
		ev, err := envEvent(m)
		if err != nil {
			return false
		}
		if ev.ID == barrier.ID {
			return true
		}
		got[envString(m, 1)] = append(got[envString(m, 1)], ev.ID)
		return false
	})
	return got
}

// hTag names channel h.
func hTag(h string) nostr.Tag { return nostr.Tag{"h", h} }

// replyTag marks parent as the event replied to (CW-10).
func replyTag(parent *nostr.Event) nostr.Tag { return nostr.Tag{"e", parent.ID, "", "reply"} }

const (
	twoProcOpen    = "33333333-3333-4333-8333-333333333301"
	twoProcPrivate = "33333333-3333-4333-8333-333333333302"
)

// RL-33, CW-21: an event published through either process is delivered
// live by the other, and the thread summary a reply through B changed is
// pushed by A, which holds the subscription, signed with the shared key.
func TestTwoProcessesDeliverLive(t *testing.T) {
	a, b, self := startTwoServes(t)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	now := time.Now().Unix()
	ownerA := dialRelay(t, a, "owner on A")
	ownerB := dialRelay(t, b, "owner on B")
	ownerA.mustPublish(owner.Event(t, buzz.KindCreateChannel, now, "", hTag(twoProcOpen), nostr.Tag{"name", "open"}))
	readers := map[string]*relayConn{"A": dialRelay(t, a, "reader on A"), "B": dialRelay(t, b, "reader on B")}
	for _, c := range readers {
		// By #h right after A created the channel: B judges the REQ by
		// the access state the database has (TestTwoProcessesSeeNewChannelsAtOnce).
		c.subscribe("chat", nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {twoProcOpen}}, LimitZero: true})
	}
	readers["A"].subscribe("sum", nostr.Filter{Kinds: []int{buzz.KindThreadSummary}, Tags: nostr.TagMap{"h": {twoProcOpen}}, LimitZero: true})

	throughA := ownerA.mustPublish(owner.Event(t, 9, now, "through A", hTag(twoProcOpen)))
	readers["B"].awaitEvent("the message published through A", throughA.ID)
	throughB := ownerB.mustPublish(owner.Event(t, 9, now, "through B", hTag(twoProcOpen)))
	readers["A"].awaitEvent("the message published through B", throughB.ID)

	reply := ownerB.mustPublish(member.Event(t, 9, now+1, "a reply through B", hTag(twoProcOpen), replyTag(throughA)))
	m := readers["A"].await("the summary A pushes for the reply through B", func(m []json.RawMessage) bool {
		return envLabel(m) == "EVENT" && envString(m, 1) == "sum"
	})
	sum, err := envEvent(m)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := sum.CheckSignature(); !ok || sum.PubKey != self || sum.Tags.GetD() != throughA.ID {
		t.Fatalf("A pushed %v, want the summary of %s signed by the shared key %s", sum, throughA.ID, self)
	}
	var got nipcw.Summary
	if err := json.Unmarshal([]byte(sum.Content), &got); err != nil {
		t.Fatalf("summary content %q: %v", sum.Content, err)
	}
	last := int64(reply.CreatedAt)
	want := nipcw.Summary{ReplyCount: 1, DescendantCount: 1, LastReplyAt: &last, Participants: []string{member.PK}}
	if sumString(got) != sumString(want) {
		t.Errorf("A pushed the summary %s, want %s", sumString(got), sumString(want))
	}
}

// RL-33, RL-8, RL-13: in a private channel, a member subscribed on B
// receives what the owner publishes through A, an authenticated outsider
// does not. Once the owner removes the member through A, the member
// receives nothing from the next message on and B serves them none of
// the channel's history, while a member who stays still receives.
func TestTwoProcessesRemovalHoldsOnTheOther(t *testing.T) {
	a, b, _ := startTwoServes(t)
	owner, member, stays, outsider := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	now := time.Now().Unix()
	ownerA := dialRelay(t, a, "owner on A")
	ownerA.mustPublish(owner.Event(t, buzz.KindCreateChannel, now, "", hTag(twoProcPrivate), nostr.Tag{"name", "private"}, nostr.Tag{"private"}))
	ownerA.mustPublish(owner.Event(t, buzz.KindPutUser, now, "", hTag(twoProcPrivate), nostr.Tag{"p", member.PK}))
	ownerA.mustPublish(owner.Event(t, buzz.KindPutUser, now, "", hTag(twoProcPrivate), nostr.Tag{"p", stays.PK}))
	barrierTag := "twoproc-barrier"
	barrier := func(content string) *nostr.Event {
		return ownerA.mustPublish(owner.Event(t, 1, now, content, nostr.Tag{"t", barrierTag}))
	}
	subscribers := map[string]testutil.Signer{"member": member, "stays": stays, "outsider": outsider}
	on := map[string]*relayConn{}
	for name, who := range subscribers {
		c := dialRelay(t, b, name+" on B")
		c.authenticate(who)
		// By kind only: the private channel's messages match every
		// subscriber's filter, and the read rule alone decides who
		// receives them.
		c.subscribe("chat", nostr.Filter{Kinds: []int{9}, LimitZero: true})
		c.subscribe("barrier", nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {barrierTag}}, LimitZero: true})
		on[name] = c
	}

	before := ownerA.mustPublish(owner.Event(t, 9, now, "before the removal", hTag(twoProcPrivate)))
	first := barrier("barrier 1")
	for name, c := range on {
		got := c.drainUntil(first)["chat"]
		want := []string{before.ID}
		if name == "outsider" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s on B, before the removal: received %v, want %v", name, got, want)
		}
	}

	ownerA.mustPublish(owner.Event(t, buzz.KindRemoveUser, now, "", hTag(twoProcPrivate), nostr.Tag{"p", member.PK}))
	after := ownerA.mustPublish(owner.Event(t, 9, now, "after the removal", hTag(twoProcPrivate)))
	second := barrier("barrier 2")
	for name, c := range on {
		got := c.drainUntil(second)["chat"]
		want := []string{after.ID}
		if name != "stays" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s on B, after the removal through A: received %v, want %v", name, got, want)
		}
	}
	history := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {twoProcPrivate}}}
	if got := on["member"].storedIDs("history", history); len(got) != 0 {
		t.Errorf("the removed member on B reads the private channel's history: %v", got)
	}
	if got := on["stays"].storedIDs("history", history); !testutil.SameSet(got, []string{before.ID, after.ID}) {
		t.Errorf("the member who stays reads %v on B, want %v", got, []string{before.ID, after.ID})
	}
}

// sumString is a summary as JSON, to compare and print.
func sumString(s nipcw.Summary) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// threadModel is what the writers of a channel's threads had acknowledged:
// the model the relay's summaries must equal.
type threadModel struct {
	mu       sync.Mutex
	events   []*nostr.Event            // acknowledged, roots and replies
	depth    map[string]int            // id -> depth; roots 0
	children map[string][]*nostr.Event // id -> direct replies
	rows     []string                  // roots and broadcast depth-1 replies
	// doomed are the replies a deletion was sent for, deleted those whose
	// deletion was acknowledged.
	doomed, deleted map[string]bool
}

func newThreadModel() *threadModel {
	return &threadModel{depth: map[string]int{}, children: map[string][]*nostr.Event{},
		doomed: map[string]bool{}, deleted: map[string]bool{}}
}

// add records an acknowledged event.
func (m *threadModel) add(ev *nostr.Event, parent *nostr.Event, broadcast bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, ev)
	if parent == nil {
		m.rows = append(m.rows, ev.ID)
		return
	}
	m.depth[ev.ID] = m.depth[parent.ID] + 1
	m.children[parent.ID] = append(m.children[parent.ID], ev)
	if broadcast && m.depth[ev.ID] == 1 {
		m.rows = append(m.rows, ev.ID)
	}
}

// pick chooses a parent for the next reply among the acknowledged events
// no deletion was sent for, shallower than depth 4: the threads reach
// depth 4 and stop there.
func (m *threadModel) pick(rng *rand.Rand) *nostr.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		ev := m.events[rng.IntN(len(m.events))]
		if m.depth[ev.ID] < 4 && !m.doomed[ev.ID] {
			return ev
		}
	}
}

// doom chooses an acknowledged reply no deletion was sent for yet, to
// delete, and records that its deletion is sent; nil when there is none.
func (m *threadModel) doom(rng *rand.Rand) *nostr.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var candidates []*nostr.Event
	for _, ev := range m.events {
		if m.depth[ev.ID] > 0 && !m.doomed[ev.ID] {
			candidates = append(candidates, ev)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	ev := candidates[rng.IntN(len(candidates))]
	m.doomed[ev.ID] = true
	return ev
}

// wasDoomed reports whether a deletion was sent for id.
func (m *threadModel) wasDoomed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.doomed[id]
}

// deleteAcked records that the deletion of id was acknowledged.
func (m *threadModel) deleteAcked(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleted[id] = true
}

// liveRows are the rows of the window: the roots and the broadcast depth-1
// replies not deleted (CW-9, CW-11, CW-14).
func (m *threadModel) liveRows() []string {
	return slices.DeleteFunc(slices.Clone(m.rows), func(id string) bool { return m.deleted[id] })
}

// below is every event under id that is not deleted: a deleted reply's
// own replies stay (RL-6).
func (m *threadModel) below(id string) []*nostr.Event {
	var out []*nostr.Event
	for _, c := range m.children[id] {
		if !m.deleted[c.ID] {
			out = append(out, c)
		}
		out = append(out, m.below(c.ID)...)
	}
	return out
}

// summary is the thread summary of id as CW-19 defines it, or false when
// nothing is below it.
func (m *threadModel) summary(id string) (nipcw.Summary, bool) {
	below := m.below(id)
	if len(below) == 0 {
		return nipcw.Summary{}, false
	}
	s := nipcw.Summary{DescendantCount: int64(len(below))}
	for _, c := range m.children[id] {
		if !m.deleted[c.ID] {
			s.ReplyCount++
		}
	}
	newest := map[string]int64{} // author -> created_at of their newest event below
	var last int64
	for _, ev := range below {
		at := int64(ev.CreatedAt)
		last = max(last, at)
		newest[ev.PubKey] = max(newest[ev.PubKey], at)
	}
	s.LastReplyAt = &last
	for pk := range newest {
		s.Participants = append(s.Participants, pk)
	}
	slices.SortFunc(s.Participants, func(x, y string) int {
		return cmp.Or(cmp.Compare(newest[y], newest[x]), strings.Compare(x, y))
	})
	if len(s.Participants) > nipcw.MaxParticipants {
		s.Participants = s.Participants[:nipcw.MaxParticipants]
	}
	return s, true
}

// queryPage posts body to p's /query and returns the events it answers.
func queryPage(t *testing.T, p *serveProc, body string) []*nostr.Event {
	t.Helper()
	client := &http.Client{Timeout: relayWait}
	resp, err := client.Post("http://"+p.addr+"/query", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("/query: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("/query: read the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/query %s: %s %s", body, resp.Status, b)
	}
	var evs []*nostr.Event
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatalf("/query answered %s: %v", b, err)
	}
	return evs
}

// RL-33, RL-5, RL-6, CW-19: eight writers, four through each process,
// reply at once into the threads of an open channel, at every depth down
// to 4 and some as broadcast depth-1 replies, by several authors with
// created_at out of order, and now and then delete a reply. Afterwards
// both processes serve, for every row of the window, the summary computed
// from what the relay acknowledged, and every thread page holds exactly
// the acknowledged replies not deleted.
func TestTwoProcessesConcurrentWritersKeepSummaries(t *testing.T) {
	const (
		channel          = twoProcOpen
		roots            = 4
		writers          = 8
		repliesPerWriter = 25
	)
	a, b, self := startTwoServes(t)
	procs := []*serveProc{a, b}
	authors := testutil.SortedSigners(t, 12) // more than MaxParticipants
	signers := map[string]testutil.Signer{}
	for _, s := range authors {
		signers[s.PK] = s
	}
	base := time.Now().Unix() - 600
	setup := dialRelay(t, a, "owner on A")
	setup.mustPublish(authors[0].Event(t, buzz.KindCreateChannel, base, "", hTag(channel), nostr.Tag{"name", "threads"}))
	model := newThreadModel()
	for i := range roots {
		root := setup.mustPublish(authors[i].Event(t, 9, base+int64(i), fmt.Sprint("root ", i), hTag(channel)))
		model.add(root, nil, false)
	}

	conns := make([]*relayConn, writers)
	for i := range conns {
		conns[i] = dialRelay(t, procs[i%2], fmt.Sprintf("writer %d on %s", i, "AB"[i%2:i%2+1]))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 18))
			for n := range repliesPerWriter {
				if rng.IntN(6) == 0 {
					if err := deleteOne(c, model, rng, signers, base); err != nil {
						errs <- err
						return
					}
				}
				parent := model.pick(rng)
				broadcast := rng.IntN(4) == 0
				tags := []nostr.Tag{hTag(channel), replyTag(parent)}
				if broadcast {
					tags = append(tags, nostr.Tag{"broadcast", "1"})
				}
				// Seconds out of order and shared: the participants'
				// order and its pubkey tie-break are both exercised.
				at := base + 10 + int64(rng.IntN(60))
				ev := authors[rng.IntN(len(authors))].Event(t, 9, at, fmt.Sprintf("writer %d reply %d", i, n), tags...)
				ok, reason, err := c.publish(ev)
				switch {
				case err != nil:
					errs <- err
					return
				case !ok && reason == "invalid: reply parent not found" && model.wasDoomed(parent.ID):
					// Its parent's deletion, through the other process
					// perhaps, was committed first (RL-6).
				case !ok:
					errs <- fmt.Errorf("%s: reply %d refused: %s", c.name, n, reason)
					return
				default:
					model.add(ev, parent, broadcast)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	window := fmt.Sprintf(`[{"kinds":[9],"#h":[%q],"limit":200,"top_level":true,"include_summaries":true}]`, channel)
	for name, p := range map[string]*serveProc{"A": a, "B": b} {
		page, err := nipcw.ValidatePage(queryPage(t, p, window), channel, nil, self)
		if err != nil {
			t.Fatalf("%s: window page: %v", name, err)
		}
		if page.Bounds.HasMore {
			t.Fatalf("%s: the window has more than one page of %d rows", name, len(page.Rows))
		}
		rows := model.liveRows()
		if got := testutil.IDs(page.Rows...); !testutil.SameSet(got, rows) {
			t.Errorf("%s: window rows %v, want %v", name, got, rows)
		}
		for _, row := range rows {
			want, has := model.summary(row)
			got, served := page.Summaries[row]
			switch {
			case has != served:
				t.Errorf("%s: row %s: summary served %t, want %t", name, row[:8], served, has)
			case has && sumString(got) != sumString(want):
				t.Errorf("%s: row %s (depth %d):\n got %s\nwant %s", name, row[:8], model.depth[row], sumString(got), sumString(want))
			}
		}
		for _, root := range model.rows[:roots] {
			thread := fmt.Sprintf(`[{"#e":[%q],"depth_limit":10,"limit":500}]`, root)
			if got, want := testutil.IDs(queryPage(t, p, thread)...), testutil.IDs(model.below(root)...); !testutil.SameSet(got, want) {
				t.Errorf("%s: thread of %s: %d replies served, want the %d acknowledged", name, root[:8], len(got), len(want))
			}
		}
	}
	t.Logf("%d replies acknowledged, %d of them deleted since; %d rows", len(model.events)-roots, len(model.deleted), len(model.liveRows()))
}

// deleteOne has the author of a reply of model delete it (kind 5) through
// c, and records the deletion once acknowledged.
func deleteOne(c *relayConn, model *threadModel, rng *rand.Rand, signers map[string]testutil.Signer, base int64) error {
	victim := model.doom(rng)
	if victim == nil {
		return nil
	}
	del := signers[victim.PubKey].Event(c.t, buzz.KindDeletion, base+100, "", nostr.Tag{"e", victim.ID})
	ok, reason, err := c.publish(del)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s: the deletion of %s refused: %s", c.name, victim.ID, reason)
	}
	model.deleteAcked(victim.ID)
	return nil
}

// RL-33, RL-4: SIGKILL of process A while eight writers ingest, six
// through A and two through B, loses nothing A acknowledged: B serves
// every acknowledged event afterwards, and still takes writes.
func TestTwoProcessesKillLosesNothingAcknowledged(t *testing.T) {
	const ackedBeforeKill = 300
	a, b, _ := startTwoServes(t)
	w := newCrashWorkload(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for i := range 8 {
		target := a
		if i >= 6 {
			target = b
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.drive(ctx, t, "ws://"+target.addr) }()
	}
	// Mid-ingest by what was acknowledged, not by the clock.
	deadline := time.Now().Add(20 * time.Second)
	for w.ackedCount() < ackedBeforeKill {
		if time.Now().After(deadline) {
			t.Fatalf("only %d events acknowledged in 20 s, want %d before the kill", w.ackedCount(), ackedBeforeKill)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	if err := a.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("A after SIGKILL: %v, want killed", err)
	}
	stop()
	wg.Wait()
	t.Logf("%d events acknowledged through both processes", w.ackedCount())
	if lost := w.unserved(t, "ws://"+b.addr); len(lost) > 0 {
		t.Fatalf("B does not serve %d events acknowledged before A was killed, e.g. %s", len(lost), lost[0])
	}
	roundTrip(t, b.addr, testutil.NewSigner(t), "after A was killed")
}

// ackedCount is how many events the relay acknowledged so far.
func (w *crashWorkload) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// RL-33, RL-13, CW-3, CW-20: a channel created through A is a channel on
// B as soon as A acknowledged it. An anonymous REQ naming the open channel
// is answered EOSE, not CLOSED auth-required, and a window page of it
// carries its bounds, not the nothing of a channel that does not exist.
// Each is asked of twenty channels, right after each one's creation.
func TestTwoProcessesSeeNewChannelsAtOnce(t *testing.T) {
	const channels = 20
	a, b, _ := startTwoServes(t)
	owner := testutil.NewSigner(t)
	now := time.Now().Unix()
	ownerA := dialRelay(t, a, "owner on A")
	anonymous := dialRelay(t, b, "anonymous on B")
	var refused, unknown []string
	for i := range channels {
		h := fmt.Sprintf("33333333-3333-4333-8333-%012d", 100+i)
		ownerA.mustPublish(owner.Event(t, buzz.KindCreateChannel, now, "", hTag(h), nostr.Tag{"name", "open"}))
		sub := fmt.Sprint("new-", i)
		if err := anonymous.send("REQ", sub, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {h}}, LimitZero: true}); err != nil {
			t.Fatal(err)
		}
		if m := anonymous.await("the answer to "+sub, func(m []json.RawMessage) bool { return envString(m, 1) == sub }); envLabel(m) != "EOSE" {
			refused = append(refused, fmt.Sprintf("%s: %s", h, m))
		}

		h = fmt.Sprintf("33333333-3333-4333-8333-%012d", 200+i)
		ownerA.mustPublish(owner.Event(t, buzz.KindCreateChannel, now, "", hTag(h), nostr.Tag{"name", "open"}))
		window := fmt.Sprintf(`[{"kinds":[9],"#h":[%q],"top_level":true}]`, h)
		if evs := queryPage(t, b, window); !slices.ContainsFunc(evs, func(ev *nostr.Event) bool { return ev.Kind == nipcw.KindWindowBounds }) {
			unknown = append(unknown, h)
		}
	}
	if len(refused) > 0 {
		t.Errorf("B refused %d of %d anonymous REQs for an open channel A had just created, e.g. %s", len(refused), channels, refused[0])
	}
	if len(unknown) > 0 {
		t.Errorf("B answered %d of %d window pages of an open channel A had just created as if it did not exist (no bounds), e.g. %s", len(unknown), channels, unknown[0])
	}
}
