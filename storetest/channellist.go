package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// CW-25: ChannelsAfter pages through every channel in store order, each
// with the created_at of its newest event, and continues after the number
// it is given.
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
