package sqlite

// NIP-40 expiration: the purge's batching, a matter of this store; the
// behaviour every store shows is storetest's (expire.go).

import (
	"context"
	"strconv"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

func exTag(unix int64) nostr.Tag { return nostr.Tag{"expiration", strconv.FormatInt(unix, 10)} }

// exStart is where the store clock of every test here starts.
const exStart = qtT0 + 1000

// exOpen opens a fresh store whose clock starts at exStart.
func exOpen(t testing.TB) (*Store, *testutil.Clock) {
	t.Helper()
	clock := testutil.NewClock(exStart)
	return qtOpen(t, clock), clock
}

// NIP-40: PurgeExpired works through more expired events than one batch
// holds, and leaves the others alone.
func TestExpirePurgeManyBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := exOpen(t)
	a := testutil.NewSigner(t)
	expiring := purgeBatch + 37
	evs := testutil.SignMany(t, expiring+10, func(i int) (testutil.Signer, *nostr.Event) {
		exp := exStart + 10 + int64(i%50)
		if i >= expiring {
			exp = exStart + 10_000 // stays
		}
		return a, &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(qtT0 + int64(i)), Content: "x",
			Tags: nostr.Tags{exTag(exp), {"t", "bulk"}}}
	})
	qtIngestConcurrently(t, s, evs)
	clock.Set(exStart + 100)
	if n := qtCountF(t, s, nostr.Filter{Tags: nostr.TagMap{"t": {"bulk"}}}); n != 10 {
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
