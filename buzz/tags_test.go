package buzz

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

var (
	idA = strings.Repeat("a1", 32)
	idB = strings.Repeat("b2", 32)
)

// CW-10, CW-11
func TestParseThreadTags(t *testing.T) {
	for _, c := range []struct {
		name string
		tags nostr.Tags
		want ThreadTags
	}{
		{"no tags", nil, ThreadTags{}},
		{"reply marker", nostr.Tags{{"e", idA, "", "reply"}}, ThreadTags{Parent: idA}},
		{"uppercase id is lowered", nostr.Tags{{"e", strings.ToUpper(idA), "", "reply"}}, ThreadTags{Parent: idA}},
		{"root only is a direct reply to the root", nostr.Tags{{"e", idA, "", "root"}}, ThreadTags{Parent: idA, Root: idA}},
		{"root only, uppercase, with a relay", nostr.Tags{{"e", strings.ToUpper(idA), "wss://r", "root"}}, ThreadTags{Parent: idA, Root: idA}},
		{"reply and root in either order", nostr.Tags{{"e", idB, "", "reply"}, {"e", idA, "", "root"}}, ThreadTags{Parent: idB, Root: idA}},
		{"malformed reply leaves the root as parent", nostr.Tags{{"e", idA, "", "root"}, {"e", "bad", "", "reply"}}, ThreadTags{Parent: idA, Root: idA}},
		{"malformed root ignored", nostr.Tags{{"e", idA[:63], "", "root"}}, ThreadTags{}},
		{"last valid root wins", nostr.Tags{{"e", idA, "", "root"}, {"e", idB, "", "root"}, {"e", "zz", "", "root"}}, ThreadTags{Parent: idB, Root: idB}},
		{"positional e beside a root marker", nostr.Tags{{"e", idB}, {"e", idA, "", "root"}}, ThreadTags{Parent: idA, Root: idA}},
		{"q tag is no reply", nostr.Tags{{"q", idA, "wss://r", idB}}, ThreadTags{}},
		{"q tag with a root marker is no reply", nostr.Tags{{"q", idA, "", "root"}}, ThreadTags{}},
		{"root and reply", nostr.Tags{{"e", idA, "", "root"}, {"e", idB, "", "reply"}}, ThreadTags{Parent: idB, Root: idA}},
		{"unmarked e tags are positional, not replies", nostr.Tags{{"e", idA}, {"e", idB, "wss://r"}}, ThreadTags{}},
		{"three elements carry no marker", nostr.Tags{{"e", idA, "reply"}}, ThreadTags{}},
		{"short id ignored", nostr.Tags{{"e", idA[:63], "", "reply"}}, ThreadTags{}},
		{"non-hex id ignored", nostr.Tags{{"e", "zz" + idA[2:], "", "reply"}}, ThreadTags{}},
		{"marker on another tag name ignored", nostr.Tags{{"q", idA, "", "reply"}}, ThreadTags{}},
		{"last valid reply wins", nostr.Tags{{"e", idA, "", "reply"}, {"e", idB, "", "reply"}, {"e", "bad", "", "reply"}}, ThreadTags{Parent: idB}},
		{"extra elements allowed", nostr.Tags{{"e", idA, "", "reply", idB}}, ThreadTags{Parent: idA}},
		{"broadcast exact", nostr.Tags{{"broadcast", "1"}}, ThreadTags{Broadcast: true}},
		{"broadcast other value", nostr.Tags{{"broadcast", "true"}}, ThreadTags{}},
		{"broadcast extra element", nostr.Tags{{"broadcast", "1", "x"}}, ThreadTags{}},
		{"empty tags", nostr.Tags{{}, {"e"}}, ThreadTags{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseThreadTags(c.tags); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestChannel(t *testing.T) {
	for _, c := range []struct {
		name string
		tags nostr.Tags
		want string
		err  error
	}{
		{"none", nostr.Tags{{"e", idA}}, "", nil},
		{"one", nostr.Tags{{"h", "c1"}}, "c1", nil},
		{"repeated identical", nostr.Tags{{"h", "c1"}, {"h", "c1", "x"}}, "c1", nil},
		{"two channels", nostr.Tags{{"h", "c1"}, {"h", "c2"}}, "", ErrSeveralChannels},
		// CW-2: an h tag names a channel id, or the event is refused.
		{"empty value", nostr.Tags{{"h", ""}}, "", ErrNotChannelID},
		{"NIP-29 group id", nostr.Tags{{"h", "abc123"}}, "abc123", nil},
		{"UUID", nostr.Tags{{"h", "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
		// CW-2, RL-36: a group id is case-sensitive, 1 to 128 of A-Za-z0-9-_.~.
		{"NDK's mixed-case id", nostr.Tags{{"h", "p0ZPf6Xc6Ngx7TZFdJHcWRxY"}}, "p0ZPf6Xc6Ngx7TZFdJHcWRxY", nil},
		{"dot and tilde", nostr.Tags{{"h", "a.b~c"}}, "a.b~c", nil},
		{"128 characters", nostr.Tags{{"h", strings.Repeat("a", 128)}}, strings.Repeat("a", 128), nil},
		{"two cases, two channels", nostr.Tags{{"h", "c1"}, {"h", "C1"}}, "", ErrSeveralChannels},
		{"space", nostr.Tags{{"h", "a b"}}, "", ErrNotChannelID},
		{"129 characters", nostr.Tags{{"h", strings.Repeat("a", 129)}}, "", ErrNotChannelID},
		{"second value not a channel id", nostr.Tags{{"h", "c1"}, {"h", "c/1"}}, "", ErrNotChannelID},
		{"bare h ignored", nostr.Tags{{"h"}}, "", nil},
		// CW-2: a UUID in any spelling is the channel of its canonical
		// form, the one its window is read by; spellings of one UUID are
		// one channel.
		{"UUID upper case", nostr.Tags{{"h", "3F1C2F6E-1D7A-4C3E-9A59-4C2B1A0E7B11"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
		{"UUID bare hex", nostr.Tags{{"h", "3f1c2f6e1d7a4c3e9a594c2b1a0e7b11"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
		{"UUID braced", nostr.Tags{{"h", "{3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11}"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
		{"UUID urn", nostr.Tags{{"h", "urn:uuid:3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
		{"UUID in two spellings, one channel", nostr.Tags{{"h", "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"},
			{"h", "3F1C2F6E1D7A4C3E9A594C2B1A0E7B11"}}, "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChannelOf(c.tags)
			if got != c.want || !errors.Is(err, c.err) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}

// RL-9, CW-22
func TestCheckSubmission(t *testing.T) {
	now := time.Unix(1_750_000_000, 0)
	ev := func(kind int, at time.Time, tags ...nostr.Tag) *nostr.Event {
		return &nostr.Event{ID: idA, PubKey: idB, Sig: idA + idB, Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Tags: tags}
	}
	spelled := func(id, pubkey, sig string) *nostr.Event {
		e := ev(9, now)
		e.ID, e.PubKey, e.Sig = id, pubkey, sig
		return e
	}
	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"plain", ev(9, now), nil},
		{"uppercase id", spelled(strings.ToUpper(idA), idB, idA+idB), ErrNotLowerHex},
		{"uppercase pubkey", spelled(idA, strings.ToUpper(idB), idA+idB), ErrNotLowerHex},
		{"uppercase sig", spelled(idA, idB, idA+strings.ToUpper(idB)), ErrNotLowerHex},
		{"short sig", spelled(idA, idB, idA), ErrNotLowerHex},
		{"old events are accepted", ev(9, now.Add(-10*365*24*time.Hour)), nil},
		{"14 minutes ahead", ev(9, now.Add(14*time.Minute)), nil},
		{"16 minutes ahead", ev(9, now.Add(16*time.Minute)), ErrTooFarInFuture},
		{"39000", ev(39000, now), ErrRelayOnlyKind},
		{"39001", ev(39001, now), ErrRelayOnlyKind},
		{"39002", ev(39002, now), ErrRelayOnlyKind},
		{"39003", ev(39003, now), ErrRelayOnlyKind},
		{"39004 is not relay-only", ev(39004, now, nostr.Tag{"d", "x"}), nil},
		{"39005", ev(39005, now), ErrRelayOnlyKind},
		{"39006", ev(39006, now), ErrRelayOnlyKind},
		{"two channels", ev(9, now, nostr.Tag{"h", "a"}, nostr.Tag{"h", "b"}), ErrSeveralChannels},
		{"bare d on addressable", ev(30023, now, nostr.Tag{"d"}), ErrMalformedDTag},
		{"bare d on kind 40003", ev(40003, now, nostr.Tag{"d"}), ErrMalformedDTag},
		{"bare d on replaceable", ev(10002, now, nostr.Tag{"d"}), ErrMalformedDTag},
		{"bare d on a regular kind is harmless", ev(1, now, nostr.Tag{"d"}), nil},
		{"bare d on ephemeral is harmless", ev(20001, now, nostr.Tag{"d"}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckSubmission(c.ev, now); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// RL-5: the exact wire messages.
func TestRejectionMessages(t *testing.T) {
	for err, want := range map[error]string{
		ErrParentNotFound:     "invalid: reply parent not found",
		ErrParentNoChannel:    "invalid: parent event has no channel association",
		ErrParentOtherChannel: "invalid: parent event belongs to a different channel",
		ErrRootMismatch:       "invalid: root tag does not match thread ancestry",
		ErrDepthExceeded:      "invalid: thread depth limit exceeded",
		ErrNotAuthor:          "invalid: must be event author",
		ErrDeletionTargets:    "invalid: deletion events must reference exactly one target via e or a tag",
		ErrMissingH:           "invalid: missing h tag",
		ErrTargetNotFound:     "invalid: target event not found",
		ErrTargetOtherChannel: "invalid: target event belongs to a different channel",
		ErrTooFarInFuture:     "invalid: event creation date is too far off from the current time",
		ErrRelayOnlyKind:      "restricted: relay-only kind",
	} {
		if err.Error() != want {
			t.Errorf("got %q, want %q", err.Error(), want)
		}
	}
}

// FuzzParseThreadTags: tags come from untrusted clients; parsing never
// panics and only ever yields valid lowercase ids.
func FuzzParseThreadTags(f *testing.F) {
	f.Add("e", idA, "", "reply", "broadcast", "1")
	f.Add("e", idB, "wss://x", "root", "e", "")
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g string) {
		tags := nostr.Tags{{a, b, c, d}, {e, g}, {a}, {}, {e, g, a, d}}
		tt := ParseThreadTags(tags)
		for _, id := range []string{tt.Parent, tt.Root} {
			if id != "" && !nipcw.IsLowerHex64(id) {
				t.Fatalf("parsed id %q is not 64 lowercase hex", id)
			}
		}
		// CW-10: a root marker alone makes a direct reply to the root.
		if tt.Root != "" && tt.Parent == "" {
			t.Fatalf("root %s without a parent", tt.Root)
		}
		if _, err := ChannelOf(tags); err != nil {
			if _, ok := AsRejection(err); !ok {
				t.Fatalf("Channel error %v is not a rejection", err)
			}
		}
	})
}
