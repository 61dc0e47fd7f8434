package relay

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"
)

// RL-27: configured limits are enforced with NIP-01 prefixes: tags per
// event, event size, the REQ limit clamp (which is also the default limit
// NIP-11 advertises), and the WebSocket message size.
func TestLimits(t *testing.T) {
	lim := Limits{MaxMessageBytes: 4000, MaxEventBytes: 1500, MaxEventTags: 3, MaxLimit: 2}
	s, c, a := startWithClient(t, func(c *Config) { c.Limits = lim })
	now := time.Now().Unix()

	mustPublish(t, c, a.Event(t, 1, now, "three tags", nostr.Tag{"t", "a"}, nostr.Tag{"t", "b"}, nostr.Tag{"t", "c"}))
	mustReject(t, c, a.Event(t, 1, now, "four tags", nostr.Tag{"t", "a"}, nostr.Tag{"t", "b"}, nostr.Tag{"t", "c"}, nostr.Tag{"t", "d"}),
		"invalid: too many tags (limit 3)")
	ok, reason := c.publish(a.Event(t, 1, now, strings.Repeat("x", 2000)))
	if ok || !strings.HasPrefix(reason, "invalid: event too large") {
		t.Errorf("2000-byte content: ok=%v %q, want invalid: event too large", ok, reason)
	}

	for i := range 4 {
		mustPublish(t, c, a.Event(t, 1, now-int64(i)-1, "n"))
	}
	if got := fetch(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}, Limit: 100}); len(got) != lim.MaxLimit {
		t.Errorf("REQ limit 100: %d events, want the clamp %d", len(got), lim.MaxLimit)
	}
	if got := fetch(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}}); len(got) != lim.MaxLimit {
		t.Errorf("REQ without limit: %d events, want the advertised default_limit %d", len(got), lim.MaxLimit)
	}
	if n := countFilter(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}}); n != 5 {
		t.Errorf("COUNT is not clamped: %d, want 5", n)
	}

	// A message over the size limit ends that connection, and only that one.
	// The relay may close while the message is still being written: then
	// the write fails, or the reset discards the close frame, and either
	// way the connection is over.
	big := s.raw(t)
	big.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	werr := big.conn.WriteMessage(websocket.TextMessage, []byte(`["REQ","big",{"#t":["`+strings.Repeat("y", 5000)+`"]}]`))
	msg, rerr := big.read()
	for rerr == nil && label(msg) == "AUTH" { // the challenge every connection gets first
		msg, rerr = big.read()
	}
	if werr == nil && !websocket.IsCloseError(rerr, websocket.CloseMessageTooBig) && !errors.Is(rerr, syscall.ECONNRESET) {
		t.Errorf("oversized message: %v, want close 1009", rerr)
	}
	if rerr == nil {
		t.Error("the connection outlived an oversized message")
	}
	if got := fetch(t, c, nostr.Filter{Kinds: []int{1}, Authors: []string{a.PK}, Limit: 1}); len(got) != 1 {
		t.Errorf("other connection after an oversized message: %d events", len(got))
	}
}
