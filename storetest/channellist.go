package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// CW-25: ChannelsAfter pages through every channel in store order, each
// with the created_at of its newest message, and continues after the
// number it is given. Issue 29 item 8, RL-6: a deleted message is no
// last message, and neither are the deletion itself, a reaction or an
// edit that came later.
func testChannelsAfter(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	signer := testutil.NewSigner(t)
	chans := []string{"general", "random", "quiet"}
	newest := map[string]int64{"general": 1700000300, "random": 1700000100, "quiet": 1700000060}
	for _, ch := range chans {
		for _, at := range []int64{1700000040, newest[ch]} {
			ttIngest(t, s, signer.Event(t, 9, at, ch, ttH(ch)))
		}
	}
	gone := ttIngest(t, s, signer.Event(t, 9, 1700000500, "deleted", ttH("general")))
	ttIngest(t, s, signer.Event(t, 5, 1700000600, "", ttH("general"), ttE(gone.ID)))
	last := ttIngest(t, s, signer.Event(t, 9, 1700000090, "reacted to", ttH("random")))
	ttIngest(t, s, signer.Event(t, 7, 1700000700, "+", ttH("random"), ttE(last.ID)))
	ttIngest(t, s, signer.Event(t, 40003, 1700000800, "edited", ttH("random"), ttE(last.ID)))
	ctx := context.Background()
	var got []string
	var after int64
	for {
		page, err := s.ChannelsAfter(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, ch := range page {
			if ch.LastEventAt != newest[ch.H] {
				t.Errorf("channel %s: last event at %d, want %d", ch.H, ch.LastEventAt, newest[ch.H])
			}
			if ch.Seq <= after {
				t.Errorf("channel %s: number %d not after %d", ch.H, ch.Seq, after)
			}
			got = append(got, ch.H)
			after = ch.Seq
		}
	}
	if strings.Join(got, ",") != strings.Join(chans, ",") {
		t.Fatalf("listed %v, want %v in store order", got, chans)
	}
}
