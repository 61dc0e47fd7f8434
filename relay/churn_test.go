package relay

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-22, RL-13: while other clients open and close subscriptions, an open
// subscription receives every new matching event exactly once, and nothing
// crashes. (khatru v0.19.1 reads its listener list without the lock its
// REQ, CLOSE and disconnect handlers write it under: -race reports it here,
// and a swap-delete during a broadcast can skip or repeat a listener.)
func TestLiveDeliveryUnderSubscriptionChurn(t *testing.T) {
	s := startServer(t)
	a := testutil.NewSigner(t)
	filter := `{"kinds":[1],"authors":["` + a.PK + `"],"limit":0}`

	hold := s.raw(t)
	if _, closed := hold.req("hold", filter); closed != "" {
		t.Fatal(closed)
	}
	stable := s.raw(t)
	if _, closed := stable.req("stable", filter); closed != "" {
		t.Fatal(closed)
	}

	// The churner opens and closes subscriptions that match the same events
	// as fast as it can, and reopens "hold" now and then, which moves other
	// listeners around in khatru's list. Its reader drains whatever comes.
	churn := s.raw(t)
	stop := make(chan struct{})
	churned := make(chan error, 1)
	go func() {
		for {
			churn.conn.SetReadDeadline(time.Now().Add(waitTimeout))
			if _, _, err := churn.conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	go func() {
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msgs := []string{
				`["REQ","c` + fmt.Sprint(i%4) + `",` + filter + `]`,
				`["CLOSE","c` + fmt.Sprint((i+2)%4) + `"]`,
			}
			for _, m := range msgs {
				churn.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
				if err := churn.conn.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
					churned <- err
					return
				}
			}
			if i%10 == 0 {
				hold.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
				hold.conn.WriteMessage(websocket.TextMessage, []byte(`["CLOSE","hold"]`))
				hold.conn.WriteMessage(websocket.TextMessage, []byte(`["REQ","hold",`+filter+`]`))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	go func() {
		for {
			hold.conn.SetReadDeadline(time.Now().Add(waitTimeout))
			if _, _, err := hold.conn.ReadMessage(); err != nil {
				return
			}
		}
	}()

	pub := s.raw(t)
	const n = 150
	want := make(map[string]bool, n)
	now := time.Now().Unix()
	for i := range n {
		ev := a.Event(t, 1, now-int64(i), "churn")
		want[ev.ID] = true
		mustPublish(t, pub, ev)
	}
	close(stop)
	if err := <-churned; err != nil {
		t.Fatalf("churner: %v", err)
	}

	got := make(map[string]int, n)
	for len(got) < n {
		msg, err := stable.read()
		if err != nil {
			t.Fatalf("stable subscriber: %d of %d events, then %v", len(got), n, err)
		}
		if label(msg) != "EVENT" || str(msg, 1) != "stable" {
			continue
		}
		var ev nostr.Event
		if err := json.Unmarshal(msg[2], &ev); err != nil || !want[ev.ID] {
			t.Fatalf("unexpected EVENT %s", joinRaw(msg))
		}
		got[ev.ID]++
		if got[ev.ID] > 1 {
			t.Fatalf("event %s delivered %d times to one subscription", ev.ID, got[ev.ID])
		}
	}
	// Nothing more may come: a probe REQ's EOSE arrives with no EVENT for
	// "stable" before it.
	stable.sendText(`["REQ","probe",{"ids":["` + nostr.GeneratePrivateKey() + `"]}]`)
	stable.await("probe EOSE", func(m []json.RawMessage) bool {
		if label(m) == "EVENT" && str(m, 1) == "stable" {
			t.Fatalf("extra EVENT %s", joinRaw(m))
		}
		return label(m) == "EOSE" && str(m, 1) == "probe"
	})
}
