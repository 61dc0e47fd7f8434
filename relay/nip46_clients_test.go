package relay

import (
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// nip46Result is what testdata/clients/nip46.mjs prints.
type nip46Result struct {
	BunkerPubkey string `json:"bunkerPubkey"`
	Parsed       struct {
		Pubkey string   `json:"pubkey"`
		Relays []string `json:"relays"`
		Secret string   `json:"secret"`
	} `json:"parsed"`
	Relays      []string     `json:"relays"`
	Pubkey      string       `json:"pubkey"`
	Template    nostr.Event  `json:"template"`
	Event       nostr.Event  `json:"event"`
	Verified    bool         `json:"verified"`
	Methods     []string     `json:"methods"`
	AuthURLs    []string     `json:"authURLs"`
	WrongSecret string       `json:"wrongSecret"`
	Client      []connection `json:"client"`
}

type connection struct {
	URL  string `json:"url"`
	Wire jsWire `json:"wire"`
}

// CW-26, NIP-46: a member signs in to the web client with a remote signer
// whose bunker:// URL names this relay, so the page needs no third-party
// origin. The client is web/assets/nip46.js as a page loads it
// (nostr-tools' BunkerSigner); the bunker is NDK's NDKNip46Backend with
// its own key, on the relay. Through the relay alone, the client connects
// with the URL's secret, gets the bunker's public key and an event signed
// by it that verifies and that the relay accepts; a wrong secret is
// refused in the bunker's words. With public_read off the relay serves
// only authenticated readers: the module answers the challenge with its
// client key, and the same conversation goes through.
func TestClientsNIP46Bunker(t *testing.T) {
	jsClientsRequire(t)
	closedReads := buzz.Policy{PublicRead: false, OpenWrite: true, Create: buzz.CreateByAnyone}
	for _, tc := range []struct {
		name   string
		policy *buzz.Policy
	}{{"open relay", nil}, {"public_read off", &closedReads}} {
		t.Run(tc.name, func(t *testing.T) {
			var s *testServer
			if tc.policy == nil {
				s = startServer(t)
			} else {
				s = startWithPolicy(t, *tc.policy, testutil.NewSigner(t).PK)
			}
			bunker := testutil.NewSigner(t)
			const secret = "s3cr3t-Of-the-bunker"
			var got nip46Result
			runNode(t, "nip46.mjs", []string{s.wsURL, bunker.SK, secret}, nil, &got)

			if got.BunkerPubkey != bunker.PK || got.Parsed.Pubkey != bunker.PK || got.Parsed.Secret != secret {
				t.Errorf("bunker %s, parsed %+v; want pubkey %s and the secret", got.BunkerPubkey, got.Parsed, bunker.PK)
			}
			if !slices.Equal(got.Relays, []string{s.wsURL}) || !slices.Equal(got.Parsed.Relays, got.Relays) {
				t.Errorf("bunker relays %v (parsed %v), want [%s]", got.Relays, got.Parsed.Relays, s.wsURL)
			}
			if got.Pubkey != bunker.PK {
				t.Errorf("getPublicKey() = %q, want the bunker's key %s", got.Pubkey, bunker.PK)
			}
			ev := got.Event
			if ok, err := ev.CheckSignature(); !ok || err != nil || !got.Verified {
				t.Fatalf("signed event does not verify (go-nostr %v %v, nostr-tools %v): %+v", ok, err, got.Verified, ev)
			}
			if ev.PubKey != bunker.PK || ev.Kind != got.Template.Kind || ev.Content != got.Template.Content || ev.CreatedAt != got.Template.CreatedAt {
				t.Errorf("signed event %+v is not the template %+v signed by %s", ev, got.Template, bunker.PK)
			}
			mustPublish(t, s.client(t), &ev)
			// NDK's backend asks its permit callback for every method but
			// get_public_key, which it answers outright.
			if want := []string{"connect", "sign_event"}; !slices.Equal(got.Methods[:min(2, len(got.Methods))], want) {
				t.Errorf("the bunker was asked %v, want %v first", got.Methods, want)
			}
			if !strings.Contains(got.WrongSecret, "wrong secret") {
				t.Errorf("connecting with a wrong secret: %q, want the bunker's refusal", got.WrongSecret)
			}
			if len(got.AuthURLs) != 0 {
				t.Errorf("auth URLs %v from a bunker that sends none", got.AuthURLs)
			}
			// The page connected to this relay only, and with reads
			// closed to anonymous readers it authenticated.
			if len(got.Client) == 0 {
				t.Fatal("the client opened no connection")
			}
			for _, c := range got.Client {
				if strings.TrimSuffix(c.URL, "/") != s.wsURL {
					t.Errorf("the client connected to %s, want only %s", c.URL, s.wsURL)
				}
				if tc.policy != nil && c.Wire.find(0, ">", "AUTH") < 0 {
					t.Errorf("public_read off: the client did not authenticate:%s", c.Wire)
				}
			}
		})
	}
}
