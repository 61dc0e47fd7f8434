package buzz

import (
	"bytes"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// RL-21, RL-29: a store judges by the configured policy or the default
// one, with the relay admins of the policy and those given beside it, and
// holds the group state to the relay key's public key; a key that is not
// one is refused.
func TestNewStoreBasics(t *testing.T) {
	key := nostr.GeneratePrivateKey()
	pub, _ := nostr.GetPublicKey(key)
	closed := Policy{PublicRead: false, Admins: map[string]bool{"a": true}}
	for _, tc := range []struct {
		name   string
		policy *Policy
		admins []string
		key    string
		want   Policy
		admin  []string
		pubkey string
		err    bool
	}{
		{"defaults", nil, nil, "", DefaultPolicy(), nil, "", false},
		{"admins beside the default", nil, []string{"b", "c"}, key, DefaultPolicy(), []string{"b", "c"}, pub, false},
		{"configured with its admins and more", &closed, []string{"b", "a"}, "", closed, []string{"a", "b"}, "", false},
		{"not a key", nil, nil, "zz", DefaultPolicy(), nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewStoreBasics(nil, nil, tc.policy, tc.admins, tc.key)
			if (err != nil) != tc.err {
				t.Fatalf("error %v", err)
			}
			if tc.err {
				return
			}
			got := slices.Sorted(maps.Keys(b.Policy.Admins))
			if !slices.Equal(got, tc.admin) {
				t.Errorf("admins %v, want %v", got, tc.admin)
			}
			b.Policy.Admins, tc.want.Admins = nil, nil
			if !policiesEqual(b.Policy, tc.want) || b.RelayPubKey != tc.pubkey {
				t.Errorf("policy %+v, pubkey %q; want %+v, %q", b.Policy, b.RelayPubKey, tc.want, tc.pubkey)
			}
		})
	}
	if len(closed.Admins) != 1 {
		t.Errorf("the configured policy's admins changed: %v", closed.Admins)
	}
}

// policiesEqual compares the settings of two policies without admins.
func policiesEqual(a, b Policy) bool {
	return a.PublicRead == b.PublicRead && a.OpenWrite == b.OpenWrite && a.Create == b.Create
}

// RL-26: a store without a logger logs nowhere and one without a clock
// reads time.Now; given ones are kept.
func TestNewStoreBasicsLoggerAndClock(t *testing.T) {
	b, err := NewStoreBasics(nil, nil, nil, nil, "")
	if err != nil || b.Log == nil || time.Since(b.Now()) > time.Minute {
		t.Fatalf("defaults: %+v %v", b, err)
	}
	var out bytes.Buffer
	at := time.Unix(1_700_000_000, 0)
	b, err = NewStoreBasics(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return at }, nil, nil, "")
	if err != nil || !b.Now().Equal(at) {
		t.Fatalf("given clock: %v", err)
	}
	b.Log.Info("heard")
	if !bytes.Contains(out.Bytes(), []byte("heard")) {
		t.Error("the given logger was not kept")
	}
}
