package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "buzz.db"), Schema: testutil.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSmoke(t *testing.T) {
	s := openTest(t)
	a := testutil.NewSigner(t)
	ch := "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	now := time.Now().Unix()
	root := a.Event(t, 9, now, "hello", nostr.Tag{"h", ch})
	if err := s.Ingest(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	reply := a.Event(t, 9, now+1, "re", nostr.Tag{"h", ch}, nostr.Tag{"e", root.ID, "", "reply"})
	if err := s.Ingest(context.Background(), reply); err != nil {
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
