package nipcw

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// CW-2: an h value names a channel; a UUID in any spelling is one channel,
// a NIP-29 group id is itself, case and all.
func TestSameChannel(t *testing.T) {
	up := strings.ToUpper(testChannel)
	for _, c := range []struct {
		name, a, b string
		want       bool
	}{
		{"the same UUID", testChannel, testChannel, true},
		{"uppercase UUID", testChannel, up, true},
		{"braced UUID", "{" + up + "}", testChannel, true},
		{"bare hex UUID", strings.ReplaceAll(testChannel, "-", ""), "urn:uuid:" + testChannel, true},
		{"another UUID", testChannel, "0d9e8f7a-6b5c-4d3e-a2f1-0a9b8c7d6e5f", false},
		{"the same group id", "General", "General", true},
		{"a group id in another case", "General", "general", false},
		{"not a channel id", "a b", "a b", false},
		{"empty", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := SameChannel(c.a, c.b); got != c.want {
				t.Errorf("SameChannel(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
			}
		})
	}
}

// CW-2: a client keeps the events the relay sends for an #h filter, as
// the relay matches them.
func TestMatchesFilter(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	event := func(kind int, tags nostr.Tags) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: 1_751_500_000, Tags: tags, Content: "hi"}
		if err := ev.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	braced := event(9, nostr.Tags{{"h", "{" + strings.ToUpper(testChannel) + "}"}})
	group := event(9, nostr.Tags{{"h", "General"}, {"e", strings.Repeat("ab", 32)}})
	for _, c := range []struct {
		name string
		f    nostr.Filter
		ev   *nostr.Event
		want bool
	}{
		{"braced uppercase h for a canonical filter", nostr.Filter{Tags: nostr.TagMap{"h": {testChannel}}}, braced, true},
		{"canonical filter value among others", nostr.Filter{Tags: nostr.TagMap{"h": {"x", testChannel}}}, braced, true},
		{"the other fields still apply", nostr.Filter{Kinds: []int{11}, Tags: nostr.TagMap{"h": {testChannel}}}, braced, false},
		{"group id, same case", nostr.Filter{Tags: nostr.TagMap{"h": {"General"}}}, group, true},
		{"group id, another case", nostr.Filter{Tags: nostr.TagMap{"h": {"general"}}}, group, false},
		{"other tags still apply", nostr.Filter{Tags: nostr.TagMap{"h": {"General"}, "e": {strings.Repeat("cd", 32)}}}, group, false},
		{"other tags match too", nostr.Filter{Tags: nostr.TagMap{"h": {"General"}, "e": {strings.Repeat("ab", 32)}}}, group, true},
		{"no h in the filter", nostr.Filter{Kinds: []int{9}}, braced, true},
		{"no h on the event", nostr.Filter{Tags: nostr.TagMap{"h": {testChannel}}}, event(9, nil), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := MatchesFilter(c.f, c.ev); got != c.want {
				t.Errorf("MatchesFilter = %v, want %v", got, c.want)
			}
		})
	}
}
