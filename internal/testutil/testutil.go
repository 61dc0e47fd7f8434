// Package testutil gives the tests of every package the same schema, keys,
// signed events and fixtures, a clock they move, and temporary files.
// Test-only: nothing in the binary imports it.
package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// Schema returns the text of the module root's schema.sql, the file the
// relay binary embeds.
func Schema(t testing.TB) string {
	t.Helper()
	s, err := SchemaText()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SchemaText is Schema for a TestMain, which has no testing.TB.
func SchemaText() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate testutil source")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "schema.sql"))
	return string(b), err
}

// Signer is a test identity.
type Signer struct {
	SK, PK string
}

// NewSigner makes a fresh key pair.
func NewSigner(t testing.TB) Signer {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return Signer{SK: sk, PK: pk}
}

// Event returns a signed event of this signer.
func (s Signer) Event(t testing.TB, kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{
		PubKey:    s.PK,
		CreatedAt: nostr.Timestamp(createdAt),
		Kind:      kind,
		Tags:      nostr.Tags(tags),
		Content:   content,
	}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	if err := ev.Sign(s.SK); err != nil {
		t.Fatal(err)
	}
	return ev
}

// EventInBand returns a signed event of this signer whose id's first
// byte is in band `band` of `bands` equal bands, band 0 the highest: its
// content is content with a counter appended, counted up until it is.
// Events of one second whose ids sort against the order they depend on
// each other in (a reply in a lower band than its parent) are what an
// order by id alone gets wrong.
func (s Signer) EventInBand(t testing.TB, band, bands int, kind int, createdAt int64, content string, tags ...nostr.Tag) *nostr.Event {
	t.Helper()
	if band < 0 || band >= bands || bands > 256 {
		t.Fatalf("no band %d of %d", band, bands)
	}
	lo, hi := (bands-1-band)*256/bands, (bands-band)*256/bands
	ev := &nostr.Event{PubKey: s.PK, CreatedAt: nostr.Timestamp(createdAt), Kind: kind, Tags: nostr.Tags(tags)}
	if ev.Tags == nil {
		ev.Tags = nostr.Tags{}
	}
	for n := 0; ; n++ {
		ev.Content = fmt.Sprint(content, " ", n)
		sum := ev.GetID()
		var first int
		if _, err := fmt.Sscanf(sum[:2], "%02x", &first); err != nil {
			t.Fatal(err)
		}
		if lo <= first && first < hi {
			break
		}
	}
	if err := ev.Sign(s.SK); err != nil {
		t.Fatal(err)
	}
	return ev
}

// NewPubKey makes the public key of a fresh key pair, in hex and as an npub
// (NIP-19).
func NewPubKey(t testing.TB) (hex, npub string) {
	t.Helper()
	pk := NewSigner(t).PK
	npub, err := nip19.EncodePublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	return pk, npub
}

// WriteFile writes content to a file called name in a fresh t.TempDir() and
// returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Signers counts by signer the events that query answers to f.
func Signers(t testing.TB, query func(nostr.Filter) ([]*nostr.Event, error), f nostr.Filter) map[string]int {
	t.Helper()
	evs, err := query(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range evs {
		out[ev.PubKey]++
	}
	return out
}

// SameSecondThreads returns events of channel h, all made in the second
// at, that depend on each other, in an order a live relay takes them:
// owner's creation of the channel and member's membership; chains threads
// of depth replies each and one thread of deep replies, each reply by the
// author its parent does not have; member's reaction to the deepest reply
// of the first thread and owner's 9005 deleting it; an edit of the first
// reply of the second thread by its author; and a kind 5 by its author of
// the first reply of the first thread, below which replies hang. Every
// event's id sorts before the ids of the events it depends on: ordered by
// id, each would come before what it needs.
func SameSecondThreads(t testing.TB, owner, member Signer, h string, at int64, chains, depth, deep int) []*nostr.Event {
	t.Helper()
	if chains < 2 || depth < 2 {
		t.Fatal("SameSecondThreads needs two threads of two replies at least")
	}
	// Band 0 (the highest ids) the creation, 1 the membership, 2 the
	// roots, 2+d the replies at depth d, the aux events a band below
	// their targets.
	bands := 3 + max(deep, depth+2)
	ht := nostr.Tag{"h", h}
	create := owner.EventInBand(t, 0, bands, 9007, at, "", ht, nostr.Tag{"name", "same second"})
	put := owner.EventInBand(t, 1, bands, 9000, at, "", ht, nostr.Tag{"p", member.PK})
	out := []*nostr.Event{create, put}
	var threads [][]*nostr.Event
	for c := range chains + 1 {
		n := depth
		if c == chains {
			n = deep
		}
		root := member.EventInBand(t, 2, bands, 9, at, fmt.Sprint("thread ", c), ht)
		thread := []*nostr.Event{root}
		for d := 1; d <= n; d++ {
			author := owner
			if d%2 == 0 {
				author = member
			}
			tags := []nostr.Tag{ht, {"e", root.ID, "", "root"}}
			if d > 1 {
				tags = append(tags, nostr.Tag{"e", thread[d-1].ID, "", "reply"})
			}
			thread = append(thread, author.EventInBand(t, 2+d, bands, 9, at, fmt.Sprint("reply ", c, ".", d), tags...))
		}
		threads = append(threads, thread)
		out = append(out, thread...)
	}
	deepest := threads[0][depth]
	reaction := member.EventInBand(t, 3+depth, bands, 7, at, "+", ht, nostr.Tag{"e", deepest.ID}, nostr.Tag{"p", deepest.PubKey})
	groupDelete := owner.EventInBand(t, 4+depth, bands, 9005, at, "", ht, nostr.Tag{"e", reaction.ID})
	edited := threads[1][1]
	edit := owner.EventInBand(t, 4, bands, 40003, at, "edited", ht, nostr.Tag{"e", edited.ID})
	anchor := threads[0][1]
	deletion := owner.EventInBand(t, 4, bands, 5, at, "", nostr.Tag{"e", anchor.ID})
	return append(out, reaction, groupDelete, edit, deletion)
}

// ReplayedInOrder fails t unless evs, in their order, put every event
// after what it depends on among them: after each event its `e` tags name
// (a reply's parent and root, an aux event's targets) and, in a channel,
// after the channel's creation and, for a message, its membership grants.
func ReplayedInOrder(t testing.TB, evs []*nostr.Event) {
	t.Helper()
	at := map[string]int{}
	created, granted := map[string]int{}, map[string]int{}
	for i, ev := range evs {
		at[ev.ID] = i
		h := ev.Tags.GetFirst([]string{"h", ""})
		switch {
		case h == nil:
		case ev.Kind == 9007:
			created[(*h)[1]] = i
		case ev.Kind == 9000:
			granted[(*h)[1]] = max(granted[(*h)[1]], i)
		}
	}
	for i, ev := range evs {
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "e" {
				if j, ok := at[tag[1]]; ok && j > i {
					t.Fatalf("event %d (kind %d, %q) comes before event %d (kind %d, %q), which it names", i, ev.Kind, ev.Content, j, evs[j].Kind, evs[j].Content)
				}
			}
		}
		if h := ev.Tags.GetFirst([]string{"h", ""}); h != nil {
			if j, ok := created[(*h)[1]]; ok && j > i {
				t.Fatalf("event %d (kind %d, %q) comes before its channel's creation", i, ev.Kind, ev.Content)
			}
			if j, ok := granted[(*h)[1]]; ok && j > i && ev.Kind == 9 {
				t.Fatalf("message %d (%q) comes before its channel's membership grants", i, ev.Content)
			}
		}
	}
}
