package cmd

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// Issue 16, RL-11, RL-12: channels lists, from the relay's group state, the
// channels a reader can read: the open ones to anyone, a private one only
// to its members, who authenticate with --key; sorted by id. A group id
// is listed as written, letter case and punctuation included (CW-2,
// RL-36).
func TestChannels(t *testing.T) {
	url, store := wnServe(t)
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	const open, private = "Lobby.1~x_-", "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
	now := time.Now().Unix()
	for _, ev := range []*nostr.Event{
		owner.Event(t, 9007, now-10, "", nostr.Tag{"h", open}, nostr.Tag{"name", "Lobby"}),
		owner.Event(t, 9007, now-9, "", nostr.Tag{"h", private}, nostr.Tag{"name", "Team"}, nostr.Tag{"private"}),
	} {
		if err := store.Ingest(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	openLine := open + "\tLobby\topen\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"anonymous", nil, openLine},
		{"a stranger", []string{"--key", stranger.SK}, openLine},
		{"the owner", []string{"--key", owner.SK}, private + "\tTeam\tprivate\n" + openLine},
	} {
		out, err := runApp(append([]string{"channels", "--relay", url}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, out, tc.want)
		}
	}
}
