package relay

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// RL-22, RL-19 (issue 15): REQ and a /query filter serve a stored event as
// the JSON the store writes from its columns, not re-encoded from a decoded
// event: whatever its content and tags hold, what a client receives is the
// event that was signed, and it verifies.
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
