package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-36: what a NIP-29 client fetches over the wire with go-nostr's own
// client: a 39000 with picture, the flags of the configuration
// (open_write off: restricted; allowed_kinds: supported_kinds) and parent
// of a subgroup; a 39003 with the three roles, each relay-signed; a
// private channel's 39000 hidden from a stranger; a 9008 of the parent
// makes the child a root, its 39000 renewed without the parent.
//
// Skipped under -race, as TestGoNostrClientInterop is (go-nostr's client
// races with itself on close).
func TestNIP29GroupMetadataGoNostr(t *testing.T) {
	if raceEnabled {
		t.Skip("go-nostr v0.51.8's client has a data race on close")
	}
	owner := testutil.NewSigner(t)
	s := startServerWith(t, func(o *testStoreOptions) {
		o.Policy = &buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAnyone,
			Kinds: map[int]bool{9: true, 11: true, buzz.KindCreateChannel: true, buzz.KindEditMetadata: true, buzz.KindDeleteChannel: true}}
	})
	relayPK, err := nostr.GetPublicKey(s.key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := nostr.RelayConnect(ctx, s.wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	at := time.Now().Unix() - 100
	publish := func(kind int, tags ...nostr.Tag) {
		t.Helper()
		at++
		if err := c.Publish(ctx, *owner.Event(t, kind, at, "", tags...)); err != nil {
			t.Fatalf("kind %d %v: %v", kind, tags, err)
		}
	}
	const pic = "https://example.com/tech.png"
	tech, sub, secret := newChannelID(t), "nostr_dev", newChannelID(t)
	publish(buzz.KindCreateChannel, nostr.Tag{"h", tech}, nostr.Tag{"name", "Tech"}, nostr.Tag{"picture", pic})
	publish(buzz.KindCreateChannel, nostr.Tag{"h", sub}, nostr.Tag{"name", "Nostr"})
	publish(buzz.KindEditMetadata, nostr.Tag{"h", sub}, nostr.Tag{"parent", tech})
	publish(buzz.KindCreateChannel, nostr.Tag{"h", secret}, nostr.Tag{"private"})

	state := func(kind int, h string) *nostr.Event {
		t.Helper()
		evs, err := c.QuerySync(ctx, nostr.Filter{Kinds: []int{kind}, Tags: nostr.TagMap{"d": {h}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 {
			return nil
		}
		if ok, err := evs[0].CheckSignature(); !ok || err != nil || evs[0].PubKey != relayPK {
			t.Fatalf("kind %d of %s: not signed by the relay key (%v)", kind, h, err)
		}
		return evs[0]
	}
	kinds := nostr.Tag{"supported_kinds", "9", "11", "9002", "9007", "9008"}
	wantTags := func(ev *nostr.Event, h string, want ...nostr.Tag) {
		t.Helper()
		if ev == nil {
			t.Fatalf("no 39000 of %s", h)
		}
		if got, want := fmt.Sprint(ev.Tags), fmt.Sprint(append(nostr.Tags{{"d", h}}, want...)); got != want {
			t.Fatalf("39000 of %s\n got  %s\n want %s", h, got, want)
		}
	}
	wantTags(state(buzz.KindGroupMetadata, tech), tech, nostr.Tag{"name", "Tech"}, nostr.Tag{"picture", pic},
		nostr.Tag{"about", ""}, nostr.Tag{"public"}, nostr.Tag{"restricted"}, kinds)
	wantTags(state(buzz.KindGroupMetadata, sub), sub, nostr.Tag{"name", "Nostr"}, nostr.Tag{"about", ""},
		nostr.Tag{"public"}, nostr.Tag{"restricted"}, kinds, nostr.Tag{"parent", tech})
	roles := state(buzz.KindGroupRoles, tech)
	if roles == nil || len(roles.Tags) != 4 {
		t.Fatalf("39003 of %s: %v", tech, roles)
	}
	for i, name := range []string{"owner", "admin", "member"} {
		if tag := roles.Tags[i+1]; len(tag) != 3 || tag[0] != "role" || tag[1] != name || tag[2] == "" {
			t.Errorf("39003 role %d: %v, want %s with a description", i, tag, name)
		}
	}
	// Hidden: the unauthenticated client fetches nothing of the private
	// channel.
	if ev := state(buzz.KindGroupMetadata, secret); ev != nil {
		t.Fatalf("a stranger fetched the 39000 of a private channel: %v", ev.Tags)
	}

	publish(buzz.KindDeleteChannel, nostr.Tag{"h", tech})
	wantTags(state(buzz.KindGroupMetadata, sub), sub, nostr.Tag{"name", "Nostr"}, nostr.Tag{"about", ""},
		nostr.Tag{"public"}, nostr.Tag{"restricted"}, kinds)
}
