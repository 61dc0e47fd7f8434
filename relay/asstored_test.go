package relay

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-22, RL-19 (issue 15): REQ and a /query filter serve a stored event as
// the JSON the store writes from its columns (FuzzRawEvent tests that
// writer on its own): whatever its content and tags hold, what a client
// receives decodes to the event that was signed, and it verifies.
func TestEventsServedAsSigned(t *testing.T) {
	s, c, a := startWithClient(t)
	now := time.Now().Unix()
	hostile := []string{
		"plain",
		"quote \" backslash \\ slash / tab \t newline \n nul \x00 del \x7f",
		"<script>&amp;</script> \u2028 \u2029 é 🐝 \ufeff",
		strings.Repeat("long ", 2000),
	}
	want := map[string]*nostr.Event{}
	for i, content := range hostile {
		ev := a.Event(t, 1, now-int64(i), content, nostr.Tag{"t", content}, nostr.Tag{"e", randomID(t), "", "root"}, nostr.Tag{"x"})
		if err := s.ingest(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		want[ev.ID] = ev
	}
	f := nostr.Filter{Authors: []string{a.PK}}
	check := func(how string, got []*nostr.Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", how, len(got), len(want))
		}
		for _, ev := range got {
			signed, ok := want[ev.ID]
			if !ok || ev.Sig != signed.Sig || !bytes.Equal(ev.Serialize(), signed.Serialize()) {
				t.Fatalf("%s: served %s\nnot as signed: %s", how, ev, signed)
			}
			if ok, err := ev.CheckSignature(); !ok || err != nil {
				t.Fatalf("%s: %s does not verify: %v", how, ev.ID, err)
			}
		}
	}
	check("REQ", fetch(t, c, f))
	check("/query", qyPost(t, s, `[{"authors":["`+a.PK+`"]}]`, "").events(t))
}

// RL-19, RL-27a: answers written at once, each built in a buffer another
// answer used before (responseBuffers), are each whole and their own: a
// buffer goes back to the pool only once its answer is written.
func TestConcurrentAnswersKeepTheirOwnBytes(t *testing.T) {
	s := startServer(t)
	now := time.Now().Unix()
	var bodies []string
	for i := range 6 {
		a := testutil.NewSigner(t)
		for j := range 20 + 40*i { // answers of different lengths
			if err := s.ingest(t.Context(), a.Event(t, 1, now-int64(j), strings.Repeat("abcdefgh", 50*(i+1)))); err != nil {
				t.Fatal(err)
			}
		}
		bodies = append(bodies, `[{"authors":["`+a.PK+`"]}]`)
	}
	want := make([][]byte, len(bodies))
	for i, body := range bodies {
		r := qyPost(t, s, body, "")
		r.events(t) // a 200 with a JSON array of events
		want[i] = r.body
	}
	post := func(body string) (int, []byte, error) {
		resp, err := qyClient.Post(s.httpURL+"/query", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		return resp.StatusCode, answer, err
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 15 {
				i := (g + k) % len(bodies)
				status, got, err := post(bodies[i])
				if err != nil || status != http.StatusOK || !bytes.Equal(got, want[i]) {
					t.Errorf("answer %d read at once with others: status %d, %d bytes (%v); want 200, %d bytes as read alone",
						i, status, len(got), err, len(want[i]))
					return
				}
			}
		})
	}
	wg.Wait()
}
