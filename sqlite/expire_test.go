package sqlite

// NIP-40 expiration: the purge's batching, a matter of this store; the
// behaviour every store shows is storetest's (expire.go).

import (
	"context"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// exStart is where the store clock of the test starts.
const exStart = qtT0 + 1000

// NIP-40: PurgeExpired works through more expired events than one batch
// holds, and leaves the others alone.
func TestExpirePurgeManyBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testutil.NewClock(exStart)
	s := qtOpen(t, clock)
	a := testutil.NewSigner(t)
	expiring := buzz.ExpiredBatch + 37
	evs := testutil.SignMany(t, expiring+10, func(i int) (testutil.Signer, *nostr.Event) {
		exp := exStart + 10 + int64(i%50)
		if i >= expiring {
			exp = exStart + 10_000 // stays
		}
		return a, &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(qtT0 + int64(i)), Content: "x",
			Tags: nostr.Tags{{"expiration", strconv.FormatInt(exp, 10)}, {"t", "bulk"}}}
	})
	storetest.IngestConcurrently(t, s, evs)
	clock.Set(exStart + 100)
	if n := storetest.Count(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"bulk"}}}, buzz.Anonymous); n != 10 {
		t.Errorf("Count before purge = %d, want 10", n)
	}
	n, err := s.PurgeExpired(ctx)
	if err != nil || n != expiring {
		t.Fatalf("purge: %d, %v; want %d", n, err, expiring)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events`); n != 10 {
		t.Errorf("%d events left, want 10", n)
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM tags`); n != 10 {
		t.Errorf("%d tag rows left, want 10", n)
	}
}
