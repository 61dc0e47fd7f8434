package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
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
