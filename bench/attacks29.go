package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// The attacks of issue 29 on what one client may hold: NIP-77 sync
// sessions, the read slots and `/query` rate through the addresses of one
// IPv6 /64, and the answers' memory budget. What they take is not what
// the innocent client's publishes and REQs use, or not only, so the
// innocent client also syncs or POSTs /query meanwhile, and the attack
// notes what it got.

// Sizes of the attacks of issue 29.
const (
	syncSockets           = 31   // the attacker's sync connections, under the 32 per client
	syncSessionsPerSocket = 4    // the default sync_sessions
	syncSessionItems      = 4000 // events of each attacker session
	innocentSyncItems     = 500  // events of each innocent sync
	unreadClients         = 16   // connections that leave their answers unread
	unreadLarge           = 48   // large events of each unread answer, about 6 MB
	innocentProbeEvery    = 250 * time.Millisecond
	probeWait             = 10 * time.Second
	// trustedProxy is the attacker's address as the /64 attack's relay
	// trusts it; forwardedNet is the /64 the attacker names.
	trustedProxy = "127.0.0.1"
	forwardedNet = "2001:db8:29:1::"
)

// probes are what the innocent client saw of one kind of request during
// an attack.
type probes struct {
	mu      sync.Mutex
	lat     []time.Duration
	refused map[string]int
}

// innocentProbe makes what the innocent client sees of what the result
// of the attack, judged as its publishes and REQs are.
func (e *env) innocentProbe(what string) *probes {
	e.probeName, e.probes = what, &probes{refused: map[string]int{}}
	return e.probes
}

func (p *probes) answered(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lat = append(p.lat, d)
}

func (p *probes) refuse(how string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused[how]++
}

// latency is what p saw; nil for no probes.
func (p *probes) latency() *Latency {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := &Latency{Ops: len(p.lat)}
	if len(p.refused) > 0 {
		l.Failed = maps.Clone(p.refused)
	}
	l.P50, l.P95, l.P99 = percentiles(slices.Clone(p.lat))
	return l
}

// negStart is the first negentropy message of a client that holds
// nothing.
func negStart() string {
	empty := vector.New()
	empty.Seal()
	return negentropy.New(empty, 0).Start()
}

// syncHoard: issue 29 item 1. One client opens sessions on as many
// sockets as it may, each holding its set for the session's idle time,
// so that the relay's sync memory is the attacker's; meanwhile the
// innocent client syncs a channel, and should not be refused busy.
func syncHoard(ctx context.Context, e *env) (func(context.Context), error) {
	start := negStart()
	innocent := e.innocentProbe(fmt.Sprintf("syncs of %d events", innocentSyncItems))
	return func(ctx context.Context) {
		var accepted atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() { e.innocentSyncs(ctx, start, innocent) })
		for i := range syncSockets {
			wg.Go(func() {
				s := &sock{e: e}
				defer s.close()
				open := 0
				for n := 0; !over(ctx); n++ {
					if open == syncSessionsPerSocket {
						<-ctx.Done()
						return
					}
					id := fmt.Sprintf("hoard%d-%d", i, n)
					msg, err := json.Marshal([]any{"NEG-OPEN", id, nostr.Filter{Kinds: []int{9}, Limit: syncSessionItems}, start})
					if err != nil {
						e.note("stopped: %v", err)
						return
					}
					a, ok := s.ask(ctx, msg, id, false)
					switch {
					case !ok:
						open = 0 // the connection, and its sessions, are gone
						pause(ctx, backoff)
					case a.ok:
						open++
						accepted.Add(1)
					default:
						pause(ctx, backoff)
					}
				}
			})
		}
		wg.Wait()
		e.note("%d sessions of %d events accepted, held until the end", accepted.Load(), syncSessionItems)
	}, nil
}

// innocentSyncs opens a sync of the channel's newest messages every
// innocentProbeEvery from the innocent address, times its first answer
// and closes it, until ctx ends.
func (e *env) innocentSyncs(ctx context.Context, start string, p *probes) {
	c, _, err := e.innocentWS.dial(ctx, e.t)
	if err != nil {
		p.refuse("connection " + netFailure(err))
		return
	}
	defer c.Close()
	f := nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {e.channel}}, Limit: innocentSyncItems}
	for n := 0; !over(ctx); n++ {
		id := fmt.Sprintf("innocent%d", n)
		msg, err := json.Marshal([]any{"NEG-OPEN", id, f, start})
		if err != nil {
			p.refuse(err.Error())
			return
		}
		began := time.Now()
		c.SetWriteDeadline(began.Add(probeWait))
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			p.refuse("connection " + netFailure(err))
			return
		}
		a, err := readNeg(c, id, began.Add(probeWait))
		switch {
		case err != nil:
			p.refuse("connection " + netFailure(err))
			return
		case a.ok:
			p.answered(time.Since(began))
		default:
			p.refuse(a.refusal())
		}
		closeMsg, _ := json.Marshal([]any{"NEG-CLOSE", id})
		if err := c.WriteMessage(websocket.TextMessage, closeMsg); err != nil {
			p.refuse("connection " + netFailure(err))
			return
		}
		pause(ctx, innocentProbeEvery)
	}
}

// readNeg reads c until the relay's NEG-MSG or NEG-ERR of session id.
func readNeg(c *websocket.Conn, id string, deadline time.Time) (answer, error) {
	c.SetReadDeadline(deadline)
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			return answer{}, err
		}
		if a := parseAnswer(m); (a.label == "NEG-MSG" || a.label == "NEG-ERR") && a.key == id {
			return a, nil
		}
	}
}

// prefixQueryFlood: issue 29 item 2. The /query flood, each of its
// clients naming another address of one IPv6 /64 through a proxy the
// relay trusts: counted per address, each would have its own read slots
// and rate.
func prefixQueryFlood(ctx context.Context, e *env) (func(context.Context), error) {
	if e.o.Attacker != trustedProxy {
		return nil, fmt.Errorf("the relay trusts %s as a proxy, and the attacker dials from %s", trustedProxy, e.o.Attacker)
	}
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
	innocent := e.innocentProbe(innocentQueryName)
	return func(ctx context.Context) {
		var answered, read atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() { e.innocentQueries(ctx, innocent) })
		for i := range queryClients {
			wg.Go(func() {
				forwarded := fmt.Sprintf("%s%x", forwardedNet, i+1)
				for ctx.Err() == nil {
					if n, ok := e.queryAs(ctx, body, forwarded); ok {
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

// innocentQueryName names the innocent client's POST /query.
const innocentQueryName = "POST /query of 50 messages"

// innocentQueries POSTs /query for the channel's 50 newest messages every
// innocentProbeEvery from the innocent address, and times each answer
// read whole, until ctx ends.
func (e *env) innocentQueries(ctx context.Context, p *probes) {
	client := httpFrom(e.o.Innocent)
	defer client.CloseIdleConnections()
	body, err := json.Marshal([]nostr.Filter{{Kinds: []int{9}, Tags: nostr.TagMap{"h": {e.channel}}, Limit: 50}})
	if err != nil {
		p.refuse(err.Error())
		return
	}
	for !over(ctx) {
		began := time.Now()
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeWait)
		status, err := postRead(qctx, client, e.t.HTTP+"/query", body)
		cancel()
		switch {
		case err != nil:
			p.refuse("HTTP " + netFailure(err))
		case status != http.StatusOK:
			p.refuse(fmt.Sprintf("HTTP %d", status))
		default:
			p.answered(time.Since(began))
		}
		pause(ctx, innocentProbeEvery)
	}
}

// postRead POSTs body to url and reads the answer whole; its status.
func postRead(ctx context.Context, client *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// unreadQueries: issue 29 item 5. Connections of one client POST /query
// for large answers and read only their headers: every answer waits to be
// written, holding the answers' memory, and each connection asks again
// once refused. Meanwhile the innocent client POSTs /query.
func unreadQueries(ctx context.Context, e *env) (func(context.Context), error) {
	if err := e.ensureLarge(ctx); err != nil {
		return nil, err
	}
	f := e.largeFilter()
	f.Limit = min(unreadLarge, e.o.LargeEvents)
	body, err := json.Marshal([]nostr.Filter{f})
	if err != nil {
		return nil, err
	}
	innocent := e.innocentProbe(innocentQueryName)
	return func(ctx context.Context) {
		var held atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() { e.innocentQueries(ctx, innocent) })
		for range unreadClients {
			wg.Go(func() {
				for !over(ctx) {
					conn, ok := e.unreadQuery(ctx, body)
					if ok {
						held.Add(1)
						<-ctx.Done()
						conn.Close()
						return
					}
					pause(ctx, backoff)
				}
			})
		}
		wg.Wait()
		e.note("%d answers left unread at once", held.Load())
	}, nil
}

// unreadQuery POSTs body to /query from the attacker's address and reads
// the answer's headers only: true, with the connection to keep open, when
// it is 200 OK; anything else is counted, and the connection closed.
func (e *env) unreadQuery(ctx context.Context, body []byte) (net.Conn, bool) {
	d := localDialer(e.o.Attacker)
	d.Control = smallRecvBuffer
	conn, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(e.t.HTTP, "http://"))
	if err != nil {
		e.failed(ctx, err, "connection ")
		return nil, false
	}
	req, err := http.NewRequest(http.MethodPost, e.t.HTTP+"/query", bytes.NewReader(body))
	if err != nil {
		conn.Close()
		e.note("stopped: %v", err)
		return nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	e.act()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := req.Write(conn); err != nil {
		conn.Close()
		e.failed(ctx, err, "HTTP request ")
		return nil, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		e.failed(ctx, err, "answer ")
		return nil, false
	}
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		e.refuse(fmt.Sprintf("HTTP %d", resp.StatusCode))
		return nil, false
	}
	return conn, true
}
