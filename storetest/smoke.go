package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-3, RL-19: a root and its reply are stored and served signed,
// newest first, by their channel and by the e tag of the reply.
func testSmoke(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a := testutil.NewSigner(t)
	ch := "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	now := time.Now().Unix()
	root := a.Event(t, 9, now, "hello", nostr.Tag{"h", ch})
	if err := ingest(s, context.Background(), root); err != nil {
		t.Fatal(err)
	}
	reply := a.Event(t, 9, now+1, "re", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	if err := ingest(s, context.Background(), reply); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"h": {ch}}}, buzz.Anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].ID != reply.ID {
		t.Fatalf("got %v", evs)
	}
	if ok, _ := evs[0].CheckSignature(); !ok {
		t.Fatal("bad sig")
	}
	evs, err = s.Query(context.Background(), nostr.Filter{Tags: nostr.TagMap{"e": {root.ID}}}, buzz.Anonymous)
	if err != nil || len(evs) != 1 {
		t.Fatal(err, evs)
	}
}
