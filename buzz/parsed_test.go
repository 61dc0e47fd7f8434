package buzz

import (
	"errors"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// RL-4, CW-2, NIP-40: what the write path reads of an event before its
// transaction: its keys (a malformed one refuses it), its one channel,
// its thread tags and its expiration (one that is no whole number never
// expires).
func TestParseEvent(t *testing.T) {
	good := func() *nostr.Event {
		return &nostr.Event{ID: strings.Repeat("A", 64), PubKey: pkOwner, Sig: strings.Repeat("0", 128),
			Kind: 9, Tags: nostr.Tags{{"h", chanID}}}
	}
	cases := []struct {
		name        string
		edit        func(ev *nostr.Event)
		wantErr     error // nil: parsed
		wantExpires bool
		wantAt      int64
	}{
		{"sound", func(*nostr.Event) {}, nil, false, 0},
		{"short id", func(ev *nostr.Event) { ev.ID = ev.ID[1:] }, ErrMalformedEvent, false, 0},
		{"pubkey not hex", func(ev *nostr.Event) { ev.PubKey = strings.Repeat("g", 64) }, ErrMalformedEvent, false, 0},
		{"short sig", func(ev *nostr.Event) { ev.Sig = ev.Sig[:64] }, ErrMalformedEvent, false, 0},
		{"two channels", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"h", chanIDOther}) }, errAny, false, 0},
		{"expires", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "1700"}) }, nil, true, 1700},
		{"expiration not a number", func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "soon"}) }, nil, false, 0},
		{"expiration out of range", func(ev *nostr.Event) {
			ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "99999999999999999999"})
		}, nil, false, 0},
	}
	for _, tc := range cases {
		ev := good()
		tc.edit(ev)
		p, err := ParseEvent(ev)
		switch {
		case tc.wantErr == errAny && err == nil:
			t.Errorf("%s: parsed, want a refusal", tc.name)
			continue
		case tc.wantErr == errAny:
			continue
		case !errors.Is(err, tc.wantErr):
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.wantErr)
			continue
		case err != nil:
			continue
		}
		if p.Expires != tc.wantExpires || p.ExpiresAt != tc.wantAt {
			t.Errorf("%s: expires %v at %d, want %v at %d", tc.name, p.Expires, p.ExpiresAt, tc.wantExpires, tc.wantAt)
		}
		if len(p.ID) != 32 || len(p.PubKey) != 32 || len(p.Sig) != 64 || p.H != chanID || p.Event != ev {
			t.Errorf("%s: parsed %+v", tc.name, p)
		}
		in := p.Input(pkRelayAdmin, 1600, true)
		if in.H != p.H || in.Expires != p.Expires || in.ExpiresAt != p.ExpiresAt || in.Relay != pkRelayAdmin || in.Now != 1600 || !in.Importing {
			t.Errorf("%s: Input = %+v", tc.name, in)
		}
	}
}

// errAny stands for any refusal.
var errAny = errors.New("any refusal")
