package khatru

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// buzz-lite patch 21: the id and signature are checked by internal/verify
// (one hash, parsed keys kept); each broken event gets upstream's answer
// and is never stored, twice over so that the second time the author's
// key comes from the cache.
func TestEventVerificationAnswers(t *testing.T) {
	signer := testutil.NewSigner(t)
	rl := NewRelay()
	stored := map[string]bool{}
	rl.SaveEvent = func(_ context.Context, ev *nostr.Event) (func(*WebSocket) bool, error) {
		stored[ev.ID] = true
		return nil, nil
	}
	c := dialRelay(t, rl)
	for round := range 2 {
		at := time.Now().Unix() + int64(round)
		badID := signer.Event(t, 1, at, "bad id")
		badID.ID = strings.Repeat("0", 64)
		badSig := signer.Event(t, 1, at, "bad sig")
		badSig.Sig = signer.Event(t, 1, at, "another").Sig
		offCurve := signer.Event(t, 1, at, "pubkey off the curve")
		offCurve.PubKey = strings.Repeat("f", 64)
		offCurve.ID = offCurve.GetID()
		good := signer.Event(t, 1, at, "good")
		for _, tc := range []struct {
			ev     *nostr.Event
			ok     bool
			reason string
		}{
			{badID, false, "invalid: id is computed incorrectly"},
			{badSig, false, "invalid: signature is invalid"},
			{offCurve, false, "error: failed to verify signature"},
			{good, true, ""},
		} {
			ok, reason := c.publish(tc.ev)
			if ok != tc.ok || reason != tc.reason {
				t.Errorf("round %d, %q: OK %v %q, want %v %q", round, tc.ev.Content, ok, reason, tc.ok, tc.reason)
			}
			if stored[tc.ev.ID] != tc.ok {
				t.Errorf("round %d, %q: stored %v", round, tc.ev.Content, stored[tc.ev.ID])
			}
		}
	}
}
