package storetest

// NIP-98 tokens (RL-17, issue 29 item 3): a token is used once, across
// restarts and across the processes sharing a database; its record is kept
// until it expires and then purged.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// tokenKey is the i-th token key of a test: 16 bytes, as the relay's.
func tokenKey(i int) []byte {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	return sum[:16]
}

// spend is SpendToken failing the test on an error.
func spend(t testing.TB, s Store, key []byte, expires int64) bool {
	t.Helper()
	fresh, err := s.SpendToken(context.Background(), key, expires)
	if err != nil {
		t.Fatalf("SpendToken: %v", err)
	}
	return fresh
}

// RL-17: the first use of a token is accepted, every later one refused,
// whatever expiry it names, and still after a restart on the same
// database; another token is its own.
func testTokenSpentOnce(t *testing.T, open Opener) {
	clock := testutil.NewClock(exStart)
	s := qtOpen(t, open, clock)
	expires := exStart + 120
	if !spend(t, s, tokenKey(1), expires) {
		t.Fatal("first use of a token refused")
	}
	if spend(t, s, tokenKey(1), expires) {
		t.Fatal("second use of a token accepted")
	}
	if spend(t, s, tokenKey(1), expires+60) {
		t.Fatal("a token used again with a later expiry accepted")
	}
	if !spend(t, s, tokenKey(2), expires) {
		t.Fatal("another token refused")
	}
	s = s.Reopen(t, Config{Now: clock.Now})
	for _, i := range []int{1, 2} {
		if spend(t, s, tokenKey(i), expires) {
			t.Errorf("token %d accepted again after a restart", i)
		}
	}
	if !spend(t, s, tokenKey(3), expires) {
		t.Error("a new token refused after a restart")
	}
}

// RL-17, RL-33: callers racing with one token are told it is new once.
func testTokenRace(t *testing.T, open Opener) {
	s := qtOpen(t, open, testutil.NewClock(exStart))
	const racers = 16
	for round := range 4 {
		var fresh atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range racers {
			wg.Go(func() {
				<-start
				ok, err := s.SpendToken(context.Background(), tokenKey(round), exStart+120)
				if err != nil {
					t.Errorf("SpendToken: %v", err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := fresh.Load(); n != 1 {
			t.Errorf("round %d: %d of %d racers told the token is new, want 1", round, n, racers)
		}
	}
}

// RL-17: PurgeTokens deletes the tokens whose expiry passed, however many
// (more than one purge batch), and no other: a purged token is forgotten,
// a later one still refused.
func testTokenPurge(t *testing.T, open Opener) {
	clock := testutil.NewClock(exStart)
	s := qtOpen(t, open, clock)
	ctx := context.Background()
	const expiring = 2500
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < expiring; i += 10 {
				if ok, err := s.SpendToken(ctx, tokenKey(i), exStart+120); err != nil || !ok {
					t.Errorf("SpendToken %d: %v, %v", i, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	later := tokenKey(expiring)
	if !spend(t, s, later, exStart+300) {
		t.Fatal("the later token refused")
	}
	if n, err := s.PurgeTokens(ctx); err != nil || n != 0 {
		t.Fatalf("purge before any expiry: %d, %v; want 0", n, err)
	}
	clock.Set(exStart + 120)
	if n, err := s.PurgeTokens(ctx); err != nil || n != 0 {
		t.Fatalf("purge in the second of the expiry: %d, %v; want 0", n, err)
	}
	clock.Set(exStart + 121)
	if n, err := s.PurgeTokens(ctx); err != nil || n != expiring {
		t.Fatalf("purge past the expiry: %d, %v; want %d", n, err, expiring)
	}
	if spend(t, s, later, exStart+300) {
		t.Error("the token not yet expired was purged")
	}
	if !spend(t, s, tokenKey(0), exStart+241) {
		t.Error("a purged token is still remembered")
	}
	if n, err := s.PurgeTokens(ctx); err != nil || n != 0 {
		t.Fatalf("purge again: %d, %v; want 0", n, err)
	}
}
