package storetest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// CW-25, issue 29 items 8 and 13: ChannelsByActivity pages through the
// open channels by their last message, newest first (a channel without
// one last, the newest channel first among ties), continuing after the
// position it is given; private and deleted channels are not listed. A
// message's replies are messages; a deleted message is none (RL-6), and
// neither are the deletion itself, a reaction or an edit that came later:
// deleting a channel's last message moves the channel down.
func testChannelsByActivity(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	signer := testutil.NewSigner(t)
	ctx := context.Background()
	for _, tags := range []nostr.Tags{
		{ttH("empty")},
		{ttH("secret"), {"private"}},
		{ttH("gone")},
	} {
		ttIngest(t, s, signer.Event(t, 9007, 1700000001, "", tags...))
	}
	chans := []string{"general", "random", "quiet"}
	newest := map[string]int64{"general": 1700000300, "random": 1700000100, "quiet": 1700000060}
	for _, ch := range chans {
		for _, at := range []int64{1700000040, newest[ch]} {
			ttIngest(t, s, signer.Event(t, 9, at, ch, ttH(ch)))
		}
	}
	ttIngest(t, s, signer.Event(t, 9, 1700000900, "members only", ttH("secret")))
	ttIngest(t, s, signer.Event(t, 9, 1700000900, "soon gone", ttH("gone")))
	ttIngest(t, s, signer.Event(t, 9008, 1700000901, "", ttH("gone")))
	gone := ttIngest(t, s, signer.Event(t, 9, 1700000500, "deleted", ttH("general")))
	ttIngest(t, s, signer.Event(t, 5, 1700000600, "", ttH("general"), ttE(gone.ID)))
	last := ttIngest(t, s, signer.Event(t, 9, 1700000090, "reacted to", ttH("random")))
	ttIngest(t, s, signer.Event(t, 7, 1700000700, "+", ttH("random"), ttE(last.ID)))
	ttIngest(t, s, signer.Event(t, 40003, 1700000800, "edited", ttH("random"), ttE(last.ID)))
	quiet, err := s.Query(ctx, nostr.Filter{Tags: nostr.TagMap{"h": {"quiet"}}, Limit: 1}, buzz.Anonymous)
	if err != nil || len(quiet) != 1 {
		t.Fatalf("quiet's newest: %v, %v", quiet, err)
	}
	reply := ttIngest(t, s, signer.Event(t, 9, 1700000400, "a reply", ttH("quiet"), ttRootTag(quiet[0].ID)))

	list := func() string {
		var got []string
		var after *buzz.ChannelPosition
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("the listing does not end")
			}
			page, err := s.ChannelsByActivity(ctx, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				return strings.Join(got, ",")
			}
			for _, ch := range page {
				got = append(got, ch.H+"@"+strconv.FormatInt(ch.LastMessageAt, 10))
				p := ch.Position()
				after = &p
			}
		}
	}
	if got, want := list(), "quiet@1700000400,general@1700000300,random@1700000100,empty@0"; got != want {
		t.Fatalf("listed %s, want %s", got, want)
	}
	ttIngest(t, s, signer.Event(t, 5, 1700001000, "", ttH("quiet"), ttE(reply.ID)))
	if got, want := list(), "general@1700000300,random@1700000100,quiet@1700000060,empty@0"; got != want {
		t.Fatalf("after the reply's deletion listed %s, want %s", got, want)
	}
}
