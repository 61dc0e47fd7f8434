package relay

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-4, RL-24: an event whose sender closes the connection right after
// sending it is stored all the same: once verified, it does not depend on
// the socket.
func TestFireAndForgetEventsAreStored(t *testing.T) {
	s := startServer(t)
	a := testutil.NewSigner(t)
	now := time.Now().Unix()
	var ids []string
	for i := range 30 {
		conn, _, err := websocket.DefaultDialer.Dial(s.wsURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := a.Event(t, 1, now-int64(i), "fire and forget")
		ids = append(ids, ev.ID)
		b, _ := json.Marshal([]any{"EVENT", ev})
		if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
		conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		conn.Close()
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		evs, err := s.store.Query(t.Context(), nostr.Filter{IDs: ids}, buzz.Anonymous)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored %d of %d events whose senders hung up", len(evs), len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// RL-22: an event spelled with an uppercase pubkey verifies in go-nostr,
// but would be served back in lowercase, unverifiable: it is refused.
func TestUppercaseHexRefused(t *testing.T) {
	s := startServer(t)
	c := s.raw(t)
	skb, _ := hex.DecodeString(nostr.GeneratePrivateKey())
	sk, pk := btcec.PrivKeyFromBytes(skb)
	ev := nostr.Event{PubKey: strings.ToUpper(hex.EncodeToString(schnorr.SerializePubKey(pk))),
		CreatedAt: nostr.Now(), Kind: 1, Tags: nostr.Tags{}, Content: "upper"}
	ev.ID = ev.GetID()
	h, _ := hex.DecodeString(ev.ID)
	sig, err := schnorr.Sign(sk, h)
	if err != nil {
		t.Fatal(err)
	}
	ev.Sig = hex.EncodeToString(sig.Serialize())
	if ok, _ := ev.CheckSignature(); !ok {
		t.Fatal("test event does not verify")
	}
	if ok, reason := c.publish(&ev); ok || reason != "invalid: id, pubkey and sig must be lowercase hex" {
		t.Fatalf("publish: ok=%v %q", ok, reason)
	}
}

// Browsers get a page, not a 404; other paths and methods get 404, and no
// HTTP request but a WebSocket upgrade reaches khatru (its NIP-86 endpoint
// would read an unbounded body).
func TestPlainHTTP(t *testing.T) {
	s := startServer(t)
	httpURL := "http" + strings.TrimPrefix(s.wsURL, "ws")
	for _, c := range []struct {
		method, path, contentType string
		status                    int
	}{
		{"GET", "/", "", 200},
		{"HEAD", "/", "", 200},
		{"GET", "/nope", "", 404},
		{"POST", "/", "application/nostr+json+rpc", 404},
	} {
		req, err := http.NewRequest(c.method, httpURL+c.path, strings.NewReader(`{"method":"supportedmethods","params":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s (%s): %d, want %d", c.method, c.path, c.contentType, resp.StatusCode, c.status)
		}
	}
}

// RL-22, RL-27: a filter list longer than any client needs is refused with
// a clear reason (SQLite would refuse its thousands of bound values with an
// internal error), by REQ and COUNT alike: a COUNT of 0 would be a count
// that was not made.
func TestLongFilterListsRefused(t *testing.T) {
	s := startServer(t)
	c := s.raw(t)
	kinds := make([]string, maxFilterValues+1)
	for i := range kinds {
		kinds[i] = strconv.Itoa(i)
	}
	long := `{"kinds":[` + strings.Join(kinds, ",") + `]}`
	if _, closed := c.req("long", long); closed != "invalid: a filter list has more than 1000 values" {
		t.Fatalf("CLOSED %q", closed)
	}
	if closed := c.countClosed("long", long); closed != "invalid: a filter list has more than 1000 values" {
		t.Fatalf("COUNT: CLOSED %q", closed)
	}
	if _, closed := c.req("ok", `{"kinds":[`+strings.Join(kinds[:maxFilterValues], ",")+`]}`); closed != "" {
		t.Fatalf("a list of %d values: CLOSED %q", maxFilterValues, closed)
	}
}
