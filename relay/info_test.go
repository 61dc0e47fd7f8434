package relay

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// nip11 fetches the NIP-11 document of s.
func nip11(t *testing.T, s *testServer) (map[string]any, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.httpURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/nostr+json")
	req.Header.Set("Origin", "https://client.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("NIP-11: status %d", resp.StatusCode)
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("NIP-11: not JSON: %v", err)
	}
	return doc, resp.Header
}

// RL-21, RL-22 (NIP-11): the document names the relay identity as `self`
// and, with no operator key configured, as `pubkey` too; it lists the
// supported NIPs, the software, its version and the limits; browsers may
// read it (CORS).
func TestNIP11(t *testing.T) {
	s := startServer(t)
	doc, h := nip11(t, s)

	self, err := nostr.GetPublicKey(s.key)
	if err != nil {
		t.Fatal(err)
	}
	if doc["self"] != self {
		t.Errorf("self = %v, want the relay key's pubkey %s", doc["self"], self)
	}
	if s.relay.PubKey() != self {
		t.Errorf("PubKey() = %s, want %s", s.relay.PubKey(), self)
	}
	if doc["pubkey"] != self {
		t.Errorf("pubkey = %v, want self %s when no operator key is configured", doc["pubkey"], self)
	}
	if doc["name"] != "buzz-lite test" || doc["description"] != "test relay" {
		t.Errorf("name/description = %v / %v", doc["name"], doc["description"])
	}
	if doc["software"] != Software {
		t.Errorf("software = %v, want %s", doc["software"], Software)
	}
	if doc["version"] != "test" {
		t.Errorf("version = %v, want test", doc["version"])
	}

	var nips []int
	list, _ := doc["supported_nips"].([]any)
	for _, n := range list {
		if f, ok := n.(float64); ok {
			nips = append(nips, int(f))
		}
	}
	for _, want := range []int{1, 9, 11, 40, 42, 45} {
		if !slices.Contains(nips, want) {
			t.Errorf("supported_nips %v lacks %d", nips, want)
		}
	}

	lim, ok := doc["limitation"].(map[string]any)
	if !ok {
		t.Fatalf("limitation = %v", doc["limitation"])
	}
	for key, want := range map[string]float64{
		"max_message_length":     float64(DefaultLimits.MaxMessageBytes),
		"max_content_length":     float64(DefaultLimits.MaxEventBytes),
		"max_event_tags":         float64(DefaultLimits.MaxEventTags),
		"max_limit":              float64(DefaultLimits.MaxLimit),
		"created_at_upper_limit": buzz.MaxFuture.Seconds(),
	} {
		if lim[key] != want {
			t.Errorf("limitation.%s = %v, want %v", key, lim[key], want)
		}
	}
	for _, key := range []string{"auth_required", "payment_required"} {
		if lim[key] != false {
			t.Errorf("limitation.%s = %v, want false", key, lim[key])
		}
	}

	if got := h.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q, want *", got)
	}
	if got := h.Get("Content-Type"); got != "application/nostr+json" {
		t.Errorf("Content-Type = %q", got)
	}
}

// RL-21: with an operator pubkey configured, NIP-11 `pubkey` is the
// operator's and `self` stays the relay identity.
func TestNIP11OperatorPubKey(t *testing.T) {
	operator := testutil.NewSigner(t).PK
	s := startServer(t, func(c *Config) { c.Info.PubKey = operator })
	doc, _ := nip11(t, s)
	self, _ := nostr.GetPublicKey(s.key)
	if doc["pubkey"] != operator {
		t.Errorf("pubkey = %v, want the operator's %s", doc["pubkey"], operator)
	}
	if doc["self"] != self {
		t.Errorf("self = %v, want %s", doc["self"], self)
	}
}

// RL-27: configured limits are the ones advertised.
func TestNIP11ConfiguredLimits(t *testing.T) {
	lim := Limits{MaxMessageBytes: 1000, MaxEventBytes: 900, MaxEventTags: 7, MaxLimit: 50}
	s := startServer(t, func(c *Config) { c.Limits = lim })
	doc, _ := nip11(t, s)
	got := doc["limitation"].(map[string]any)
	for key, want := range map[string]float64{
		"max_message_length": 1000, "max_content_length": 900, "max_event_tags": 7, "max_limit": 50,
	} {
		if got[key] != want {
			t.Errorf("limitation.%s = %v, want %v", key, got[key], want)
		}
	}
}

// RL-21: New refuses a key that is no secret key.
func TestNewRejectsBadKey(t *testing.T) {
	for _, key := range []string{"", "zz", "00"} {
		if _, err := New(Config{Key: key}, nil); err == nil {
			t.Errorf("New with key %q: no error", key)
		}
	}
}
