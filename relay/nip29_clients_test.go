package relay

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// nip29Result is what testdata/clients/nip29.mjs prints.
type nip29Result struct {
	Libraries map[string]string `json:"libraries"`
	Form      string            `json:"form"`
	Part      string            `json:"part"`
	IDs       map[string]string `json:"ids"`
	Checks    []struct {
		ID     string `json:"id"`
		Piece  string `json:"piece"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

// nip29IDForms are the group ids the script makes, by form: a canonical
// UUID, and NDKSimpleGroup's default id, 24 random mixed-case letters and
// digits (CW-2).
var nip29IDForms = map[string]*regexp.Regexp{
	"uuid": regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`),
	"ndk":  regexp.MustCompile(`^[A-Za-z0-9]{24}$`),
}

// nip29AllowedKinds are the kinds the limited relay accepts from anyone
// but its admins.
var nip29AllowedKinds = []int{7, 9, 11}

// RL-36, CW-2: NIP-29 as its clients do it, with nostr-tools' nip29
// helpers and NDK's NDKSimpleGroup against a live relay, for group ids of
// both forms. The main part, on a relay with default settings: create and
// edit (picture included), the group loaded with every flag, admins,
// members and roles, a join and the relay's 9000, a duplicate join, a post
// read back, a leave (with `previous`) and the relay's 9001, a private
// group (hidden, closed until an invite code is live) joined with a code
// and the code revoked, and the subgroup tree built from `parent` tags as
// NIP-29 tells clients to build it. The limited part, on a relay with open
// writes off and allowed kinds: `restricted` and `supported_kinds`. The
// script checks what the relay sends; each check names its piece of the
// contract and fails here on its own.
func TestClientsNIP29(t *testing.T) {
	jsClientsRequire(t)
	kinds := make([]string, len(nip29AllowedKinds))
	policyKinds := map[int]bool{}
	for i, k := range nip29AllowedKinds {
		kinds[i], policyKinds[k] = strconv.Itoa(k), true
	}
	for _, form := range []string{"uuid", "ndk"} {
		t.Run(form, func(t *testing.T) {
			owner := testutil.NewSigner(t)
			s := startServer(t)
			runNIP29(t, s, owner, form, "main")
		})
		t.Run(form+"/limited", func(t *testing.T) {
			owner := testutil.NewSigner(t)
			p := buzz.DefaultPolicy()
			p.OpenWrite, p.Kinds = false, policyKinds
			s := startWithPolicy(t, p, owner.PK)
			runNIP29(t, s, owner, form, "limited", "BUZZ_NIP29_KINDS="+strings.Join(kinds, ","))
		})
	}
}

// runNIP29 runs part of nip29.mjs against s as owner with ids of form,
// and fails on each failed check.
func runNIP29(t *testing.T, s *testServer, owner testutil.Signer, form, part string, env ...string) {
	t.Helper()
	var got nip29Result
	runNode(t, "nip29.mjs", []string{s.wsURL, owner.SK, form, part}, env, &got)
	if got.Libraries["nostr-tools"] != "2.25.2" || got.Libraries["@nostr-dev-kit/ndk"] != "3.0.3" {
		t.Fatalf("ran %v, want nostr-tools 2.25.2 and @nostr-dev-kit/ndk 3.0.3", got.Libraries)
	}
	if got.Form != form || got.Part != part || len(got.Checks) == 0 {
		t.Fatalf("ran form %q part %q with %d checks, want form %q part %q", got.Form, got.Part, len(got.Checks), form, part)
	}
	for name, id := range got.IDs {
		if !nip29IDForms[form].MatchString(id) {
			t.Errorf("group %s has id %q, not of the %s form", name, id, form)
		}
	}
	for _, c := range got.Checks {
		if !c.OK {
			t.Errorf("%s (%s): %s", c.ID, c.Piece, c.Detail)
		}
	}
}
