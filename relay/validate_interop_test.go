package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// CL-1, CL-2, CL-3: what the relay serves passes the reference client's
// validator, page after page along the cursor chain, with every overlay
// checked against the relay's key: the validator and the relay agree on
// the contract.
func TestRelayPagesPassTheValidator(t *testing.T) {
	s, c, a := startWithClient(t)
	b := testutil.NewSigner(t)
	base := time.Now().Unix() - 1000
	for i := range 12 {
		row := a.Event(t, 9, base+int64(i/3), fmt.Sprint("row ", i), nostr.Tag{"h", testChannel})
		mustPublish(t, c, row)
		if i%2 == 0 {
			mustPublish(t, c, b.Event(t, 9, base+int64(i)+100, "reply", nostr.Tag{"h", testChannel}, nostr.Tag{"e", row.ID, "", "reply"}))
			mustPublish(t, c, b.Event(t, 7, base+int64(i)+200, "+", nostr.Tag{"h", testChannel}, nostr.Tag{"e", row.ID}))
		}
	}
	var cursor *nipcw.Cursor
	rows := 0
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("the cursor chain does not end")
		}
		f := map[string]any{"kinds": []int{9}, "#h": []string{testChannel}, "limit": 5,
			"top_level": true, "include_summaries": true, "include_aux": true}
		if cursor != nil {
			f["until"], f["before_id"] = cursor.CreatedAt, cursor.ID
		}
		body, _ := json.Marshal([]any{f})
		resp, err := http.Post(s.httpURL+"/query", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var evs []*nostr.Event
		err = json.NewDecoder(resp.Body).Decode(&evs)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		page, err := nipcw.ValidatePage(evs, testChannel, cursor, s.relay.PubKey())
		if err != nil {
			t.Fatalf("page %d refused by the validator: %v", pages, err)
		}
		if _, err := nipcw.ValidatePage(evs, testChannel, cursor, nostr.GeneratePrivateKey()[:64]); err == nil {
			t.Fatal("a page passed as signed by another key")
		}
		rows += len(page.Rows)
		if cursor = page.Next(); cursor == nil {
			break
		}
	}
	if rows != 12 {
		t.Fatalf("%d rows along the chain, want 12", rows)
	}
}
