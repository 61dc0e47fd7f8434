package cmd

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-35: `buzz-lite feed` prints the home feed of --key, the types in the
// order --types gives, each event marked with what it is to the reader
// and its channel; without a key, the activity of open channels only.
func TestFeedCommand(t *testing.T) {
	url, store := wnServe(t)
	me, other := testutil.NewSigner(t), testutil.NewSigner(t)
	const priv, open = "1b7e2a4c-3d5f-4a6b-8c9d-0e1f2a3b4c5d", "2c8f3b5d-4e6a-4b7c-9d0e-1f2a3b4c5d6e"
	base := time.Now().Unix() - 100
	evs := []*nostr.Event{
		other.Event(t, 9007, base, "", nostr.Tag{"h", priv}, nostr.Tag{"private"}),
		other.Event(t, 9000, base, "", nostr.Tag{"h", priv}, nostr.Tag{"p", me.PK}),
		other.Event(t, 9, base+1, "open talk", nostr.Tag{"h", open}),
		other.Event(t, 9, base+2, "private, to me", nostr.Tag{"h", priv}, nostr.Tag{"p", me.PK}),
		other.Event(t, 46010, base+3, "approve?", nostr.Tag{"p", me.PK}),
	}
	for _, ev := range evs {
		if err := store.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	keyFile := testutil.WriteFile(t, "me.key", me.SK)
	type line struct {
		Type, Content, Channel string
	}
	feed := func(args ...string) []line {
		t.Helper()
		out, err := runApp(append([]string{"feed", "--relay", url, "--json"}, args...)...)
		if err != nil {
			t.Fatalf("feed %v: %v", args, err)
		}
		var lines []line
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var row feedRow
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			lines = append(lines, line{row.Type, row.Content, row.Channel})
		}
		return lines
	}
	for _, c := range []struct {
		args []string
		want []line
	}{
		{[]string{"--key", keyFile}, []line{
			{"mentions", "private, to me", priv}, {"needs_action", "approve?", ""}, {"activity", "open talk", open}}},
		// RL-35: activity asked first serves the mention in a channel as
		// activity, and it is marked so.
		{[]string{"--key", keyFile, "--types", "agent_activity,mentions", "--limit", "2"}, []line{
			{"activity", "private, to me", priv}, {"activity", "open talk", open}}},
		{[]string{"--key", keyFile, "--types", "needs_action"}, []line{{"needs_action", "approve?", ""}}},
		{nil, []line{{"activity", "open talk", open}}},
	} {
		if got := feed(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("feed %v:\n got %v\nwant %v", c.args, got, c.want)
		}
	}
	out, err := runApp("feed", "--relay", url, "--key", keyFile, "--types", "mentions")
	if err != nil || !strings.HasPrefix(out, "mentions     1b7e2a4c  ") || !strings.Contains(out, "private, to me") {
		t.Errorf("text: %q, %v", out, err)
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "101"}, {"--types", " , "}, {"--types", "mentions,mention"}} {
		if _, err := runApp(append([]string{"feed", "--relay", url}, bad...)...); err == nil {
			t.Errorf("feed %v: accepted", bad)
		}
	}
}
