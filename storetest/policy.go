package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-29: the store applies the write policy in its ingest transaction, so
// that an import sees the same rule as the relay: with writes closed,
// allowed kinds and a blocked pubkey, an import stores what a client could
// have sent and reports the rest with the client's messages. The relay's
// own group state (kinds 39000-39003, no allowed kind) is no submission:
// it is signed and stored whatever the policy, at the end of the import
// and on a later membership change alike.
func testImportAppliesWritePolicy(t *testing.T, open Opener) {
	owner, stranger, blocked := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	p := buzz.Policy{PublicRead: true, OpenWrite: false, Create: buzz.CreateByAnyone,
		Blocked: map[string]bool{blocked.PK: true},
		Kinds:   map[int]bool{1: true, 9: true, buzz.KindCreateChannel: true, buzz.KindPutUser: true}}
	s := open(t, Config{Policy: &p, RelayKey: nostr.GeneratePrivateKey()})
	const ch = "5a5a5a5a-0000-4000-8000-00000000000a"
	at := int64(1_700_000_000)
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, "", tags...)
	}
	batch := []*nostr.Event{
		ev(owner, buzz.KindCreateChannel, ttH(ch)),
		ev(owner, 1),
		ev(owner, 9, ttH(ch)),
		ev(stranger, 1),
		ev(stranger, 9, ttH(ch)),
		ev(owner, 4),
		ev(blocked, 1),
		ev(stranger, buzz.KindReaction, ttE(strings.Repeat("ab", 32))),
	}
	want := []string{"", "", "",
		"restricted: this relay accepts events from its members only",
		"restricted: not a channel member",
		"blocked: kind 4 is not accepted here",
		"blocked: this pubkey may not post here",
		"blocked: kind 7 is not accepted here",
	}
	outcomes, err := s.ImportBatch(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range outcomes {
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want[i] {
			t.Errorf("event %d (kind %d): %q, want %q", i, batch[i].Kind, got, want[i])
		}
	}
	if err := s.RenewGroupState(context.Background()); err != nil {
		t.Fatalf("group state under allowed_kinds: %v", err)
	}
	if n := chGroupStateRows(t, s, ch); n != 4 {
		t.Fatalf("%d group state events after the import, want 4", n)
	}
	ttIngest(t, s, ev(owner, buzz.KindPutUser, ttH(ch), nostr.Tag{"p", stranger.PK}))
	ttIngest(t, s, ev(stranger, 1))
}
