package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// The abuse run's side of the wire: clients that dial from a chosen
// loopback address, cope with every refusal the relay may give (a refused
// handshake, CLOSED, NOTICE, OK false, HTTP 429, a dropped connection) by
// counting it, and never wait without a deadline.

const (
	// dialWait bounds a TCP connect and a WebSocket handshake.
	dialWait = 10 * time.Second
	// writeWait bounds one message's write: a relay that stops reading
	// fails it instead of blocking the client.
	writeWait = 5 * time.Second
	// backoff is the pause before trying again after a refusal that asks
	// for one (a rate limit, a refused connection).
	backoff = 150 * time.Millisecond
	// refusalPause is the pause of a closed-loop attacker after a
	// refusal: the attacker runs on the relay's machine, and a client
	// spinning on refusals there takes CPU that an attacker elsewhere
	// would not.
	refusalPause = 10 * time.Millisecond
)

// dialer opens WebSockets from one local address.
type dialer struct{ d *websocket.Dialer }

func localDialer(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: dialWait}
}

func wsDialer(ip string) dialer {
	return dialer{&websocket.Dialer{NetDialContext: localDialer(ip).DialContext, HandshakeTimeout: dialWait}}
}

// dial opens a WebSocket to t; how names the refusal when it fails.
func (d dialer) dial(ctx context.Context, t Target) (c *websocket.Conn, how string, err error) {
	c, resp, err := d.d.DialContext(ctx, t.WS, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Sprintf("connection refused: HTTP %d", resp.StatusCode), err
		}
		return nil, "connection " + netFailure(err), err
	}
	return c, "", nil
}

// httpFrom is an HTTP client whose connections come from ip. It has no
// timeout of its own: every request carries the attack's deadline.
func httpFrom(ip string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: localDialer(ip).DialContext, MaxIdleConnsPerHost: 64}}
}

// netFailure names how a connection failed, in words that do not carry
// addresses or ports (they are counted by name).
func netFailure(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return "reset"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EMFILE):
		return "failed on the attacker's side (ports or files)"
	}
	return "failed"
}

// ended says whether a connection's error is the client's own doing: its
// deadline, the end of its context, its own close.
func ended(ctx context.Context, err error) bool {
	return over(ctx) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)
}

// over says whether ctx has ended or its deadline passed: a dial or read
// bound to ctx may fail by that deadline a moment before ctx says so.
func over(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(deadline)
}

// writeBy is the deadline of a write that starts now: writeWait from now,
// or ctx's deadline if sooner.
func writeBy(ctx context.Context) time.Time {
	t := time.Now().Add(writeWait)
	if deadline, ok := ctx.Deadline(); ok && deadline.Before(t) {
		return deadline
	}
	return t
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// relayInfo is what the attacker reads of the relay's NIP-11 document: the
// limits it announces.
type relayInfo struct {
	Limitation struct {
		MaxSubscriptions int `json:"max_subscriptions"`
		MaxFilters       int `json:"max_filters"`
		MaxContentLength int `json:"max_content_length"`
	} `json:"limitation"`
}

func fetchInfo(ctx context.Context, t Target) (relayInfo, error) {
	var info relayInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.HTTP, nil)
	if err != nil {
		return info, err
	}
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return info, fmt.Errorf("NIP-11: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("NIP-11: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return info, fmt.Errorf("NIP-11: %w", err)
	}
	return info, nil
}

// answer is one message from the relay as the abuse clients read it.
type answer struct {
	// label is OK, EOSE, CLOSED, COUNT, NOTICE or EVENT ("" when the
	// message is none of them); key is the event id of an OK or the
	// subscription id of the others.
	label, key string
	// ok is true for an accepted OK, an EOSE and a COUNT.
	ok     bool
	reason string
}

// parseAnswer reads msg. EVENTs are not decoded: the attackers only count
// them, and they may be large.
func parseAnswer(msg []byte) answer {
	if bytes.HasPrefix(msg, []byte(`["EVENT"`)) {
		return answer{label: "EVENT"}
	}
	var env []json.RawMessage
	var a answer
	if json.Unmarshal(msg, &env) != nil || len(env) < 2 || json.Unmarshal(env[0], &a.label) != nil {
		return answer{}
	}
	second := &a.key
	if a.label == "NOTICE" {
		second = &a.reason
	}
	if json.Unmarshal(env[1], second) != nil {
		return answer{}
	}
	switch {
	case a.label == "OK" && len(env) == 4:
		if json.Unmarshal(env[2], &a.ok) != nil || json.Unmarshal(env[3], &a.reason) != nil {
			return answer{}
		}
	case a.label == "CLOSED" && len(env) >= 3:
		if json.Unmarshal(env[2], &a.reason) != nil {
			return answer{}
		}
	case a.label == "NEG-ERR" && len(env) >= 3:
		if json.Unmarshal(env[2], &a.reason) != nil {
			return answer{}
		}
	case a.label == "EOSE", a.label == "COUNT", a.label == "NEG-MSG":
		a.ok = true
	case a.label != "NOTICE":
		return answer{}
	}
	return a
}

// terminal says whether a ends what a message asked: an OK, EOSE, CLOSED
// or COUNT, or a NOTICE, which is taken to answer the message it follows.
func (a answer) terminal() bool { return a.label != "" && a.label != "EVENT" }

// refusal names a refused answer by its label and its reason's prefix.
func (a answer) refusal() string { return a.label + " " + reasonPrefix(a.reason) }

// reasonPrefix is the NIP-01 machine-readable prefix of a reason
// ("rate-limited:"), or "(no prefix)".
func reasonPrefix(reason string) string {
	p, _, ok := strings.Cut(reason, ":")
	if ok && p != "" && len(p) <= 20 && strings.Trim(p, "abcdefghijklmnopqrstuvwxyz-") == "" {
		return p + ":"
	}
	return "(no prefix)"
}

// rateLimited says whether a asks the client to slow down.
func (a answer) rateLimited() bool { return strings.HasPrefix(a.reason, "rate-limited:") }

// refusals prints counts by how, the most first.
func refusals[N int | int64](by map[string]N) string {
	hows := make([]string, 0, len(by))
	for how := range by {
		hows = append(hows, how)
	}
	slices.SortFunc(hows, func(a, b string) int {
		if by[a] != by[b] {
			return int(by[b] - by[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(hows))
	for i, how := range hows {
		parts[i] = fmt.Sprintf("%d x %q", by[how], how)
	}
	return strings.Join(parts, ", ")
}

// sock is one attacker connection used in turns: a message, then its
// answer. It dials again when the relay dropped it.
type sock struct {
	e *env
	c *websocket.Conn
}

// connect dials unless connected; false, the refusal counted and waited
// out, when the relay refused or ctx ended.
func (s *sock) connect(ctx context.Context) bool {
	if s.c != nil {
		return true
	}
	c, how, err := s.e.attacker.dial(ctx, s.e.t)
	if err != nil {
		if !over(ctx) {
			s.e.refuse(how)
			pause(ctx, backoff)
		}
		return false
	}
	s.c = c
	return true
}

// close drops the TCP connection, without a CLOSE or a close frame.
func (s *sock) close() {
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
}

// ask sends msg, one action, and reads up to its answer: the terminal
// answer for key, a NOTICE, or with firstEvent an EVENT of subscription
// key. A refused answer is counted. false when there is no answer: the
// connection failed (counted) or ctx ended (unanswered); the connection
// is gone then.
func (s *sock) ask(ctx context.Context, msg []byte, key string, firstEvent bool) (answer, bool) {
	if over(ctx) || !s.connect(ctx) {
		return answer{}, false
	}
	s.e.act()
	c := s.c
	deadline, _ := ctx.Deadline()
	c.SetReadDeadline(deadline)
	c.SetWriteDeadline(writeBy(ctx))
	stop := context.AfterFunc(ctx, func() { c.NetConn().SetDeadline(time.Now()) })
	defer stop()
	if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
		s.lost(ctx, err)
		return answer{}, false
	}
	event := []byte(`["EVENT",` + strQuote(key))
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			s.lost(ctx, err)
			return answer{}, false
		}
		if firstEvent && bytes.HasPrefix(m, event) {
			return answer{label: "EVENT", key: key, ok: true}, true
		}
		a := parseAnswer(m)
		if a.label == "NOTICE" || a.terminal() && a.key == key {
			if !a.ok {
				s.e.refuse(a.refusal())
			}
			return a, true
		}
	}
}

// lost closes a connection that failed with err: dropped by the relay
// unless it was the client's own doing, and then unanswered.
func (s *sock) lost(ctx context.Context, err error) {
	if ended(ctx, err) {
		s.e.unanswered.Add(1)
	} else {
		s.e.refuse("connection dropped by the relay")
	}
	s.close()
}

// publish sends ev until the relay accepts it, waiting out rate limits
// and dropped connections; an error when ctx ends first or the relay
// refuses it for another reason.
func (s *sock) publish(ctx context.Context, ev *nostr.Event) error {
	msg, err := json.Marshal([]any{"EVENT", ev})
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		a, ok := s.ask(ctx, msg, ev.ID, false)
		switch {
		case ok && a.ok:
			return nil
		case ok && a.label == "OK" && !a.rateLimited():
			return fmt.Errorf("event %s refused: %s", ev.ID, a.reason)
		}
		pause(ctx, backoff)
	}
	return ctx.Err()
}

func strQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// flood keeps up to window messages from next unanswered on an attacker
// socket until ctx ends, dialling again when the relay drops it. Each
// accepted answer goes to accepted (nil: none); with closeSubs each EOSE
// is followed by a CLOSE of its subscription. An error of next ends it,
// noted.
func (e *env) flood(ctx context.Context, window int, next func() ([]byte, error), closeSubs bool, accepted func(answer)) {
	s := &sock{e: e}
	for ctx.Err() == nil {
		if !s.connect(ctx) {
			continue
		}
		err := e.pump(ctx, s.c, window, next, closeSubs, accepted)
		s.close()
		if err != nil {
			e.note("stopped: %v", err)
			return
		}
	}
}

// pump is flood on one connection, until ctx ends or the connection fails.
func (e *env) pump(ctx context.Context, c *websocket.Conn, window int, next func() ([]byte, error), closeSubs bool,
	accepted func(answer)) error {
	slots := make(chan struct{}, window)
	var wmu sync.Mutex
	write := func(msg []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		c.SetWriteDeadline(writeBy(ctx))
		return c.WriteMessage(websocket.TextMessage, msg)
	}
	var drop sync.Once
	lost := func(err error) {
		if !ended(ctx, err) {
			drop.Do(func() { e.refuse("connection dropped by the relay") })
		}
	}
	deadline, _ := ctx.Deadline()
	c.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.NetConn().SetDeadline(time.Now()) })
	defer stop()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				lost(err)
				return
			}
			a := parseAnswer(msg)
			if !a.terminal() {
				continue
			}
			switch {
			case !a.ok:
				e.refuse(a.refusal())
			case accepted != nil:
				accepted(a)
			}
			if a.label == "EOSE" && closeSubs {
				if err := write([]byte(`["CLOSE",` + strQuote(a.key) + `]`)); err != nil {
					lost(err)
					return
				}
			}
			select {
			case <-slots:
			default:
			}
		}
	}()
	var failed error
sending:
	for {
		select {
		case slots <- struct{}{}:
		case <-read:
			break sending
		case <-ctx.Done():
			break sending
		}
		msg, err := next()
		if err != nil {
			<-slots // nothing went out
			failed = err
			break
		}
		if err := write(msg); err != nil {
			<-slots
			lost(err)
			break
		}
		e.act()
	}
	c.Close()
	<-read
	e.unanswered.Add(int64(len(slots)))
	return failed
}
