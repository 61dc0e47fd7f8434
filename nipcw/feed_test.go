package nipcw

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// RL-35, RL-18: a filter with `feed_types` whose array has a string member
// takes the feed path, after the window and before the thread path; an
// array with no string member, or no array, is no feed filter.
func TestFeedPath(t *testing.T) {
	thread := `"depth_limit":1,"#e":["` + testID + `"]`
	for _, c := range []struct {
		body, path string
	}{
		{`{"feed_types":["mentions"]}`, "feed"},
		{`{"feed_types":["nonsense"]}`, "feed"},
		{`{"feed_types":[""]}`, "feed"},
		{`{"feed_types":[1, null, "activity", {}]}`, "feed"},
		{`{"feed_types":["activity"],` + thread + `}`, "feed"},
		{`{"feed_types":["activity"],"top_level":true,"#h":["` + testChannel + `"]}`, "window"},
		{`{"feed_types":[]}`, "generic"},
		{`{"feed_types":[1, null, true]}`, "generic"},
		{`{"feed_types":"mentions"}`, "generic"},
		{`{"feed_types":null}`, "generic"},
		{`{"feed_types":[],` + thread + `}`, "thread"},
	} {
		if got := pathOf(parseOne(t, "["+c.body+"]")); got != c.path {
			t.Errorf("%s: %s path, want %s", c.body, got, c.path)
		}
	}
}

// RL-35: types in the order given, each once, the alias as its type,
// unknown ones skipped; since; limit default 20, at most 100, 0 allowed.
func TestParseFeed(t *testing.T) {
	for _, c := range []struct {
		body  string
		types []string
		since *int64
		limit int
	}{
		{`{"feed_types":["mentions"]}`, []string{"mentions"}, nil, 20},
		{`{"feed_types":["activity","mentions","needs_action"]}`, []string{"activity", "mentions", "needs_action"}, nil, 20},
		{`{"feed_types":["agent_activity","mentions","activity"]}`, []string{"activity", "mentions"}, nil, 20},
		{`{"feed_types":["mentions","mentions","bogus","Mentions"]}`, []string{"mentions"}, nil, 20},
		{`{"feed_types":["bogus"]}`, nil, nil, 20},
		{`{"feed_types":["needs_action"],"limit":5,"since":1700000000}`, []string{"needs_action"}, ptr(1700000000), 5},
		{`{"feed_types":["mentions"],"limit":1000}`, []string{"mentions"}, nil, 100},
		{`{"feed_types":["mentions"],"limit":0}`, []string{"mentions"}, nil, 0},
		{`{"feed_types":["mentions"],"limit":-3,"since":null}`, []string{"mentions"}, nil, 20},
		{`{"feed_types":["mentions"],"kinds":[7],"#h":["x"],"authors":["y"]}`, []string{"mentions"}, nil, 20},
	} {
		f := parseOne(t, "["+c.body+"]").Feed
		if f == nil {
			t.Fatalf("%s: not a feed filter", c.body)
		}
		if !slices.Equal(f.Types, c.types) || f.Limit != c.limit || (f.Since == nil) != (c.since == nil) ||
			(f.Since != nil && *f.Since != *c.since) {
			t.Errorf("%s: types %q since %v limit %d, want %q %v %d", c.body, f.Types, f.Since, f.Limit, c.types, c.since, c.limit)
		}
	}
}

func ptr(n int64) *int64 { return &n }

// RL-35 (settled on 2026-12-04), RL-19: until alone, and until with
// before_id (lowercased), page a feed filter back; null is absent.
func TestParseFeedCursor(t *testing.T) {
	for _, c := range []struct {
		body string
		want *Cursor
	}{
		{`{"feed_types":["mentions"]}`, nil},
		{`{"feed_types":["mentions"],"until":null,"before_id":null}`, nil},
		{`{"feed_types":["mentions"],"until":1700000000}`, &Cursor{CreatedAt: 1700000000}},
		{`{"feed_types":["activity"],"until":1700000000,"before_id":"` + strings.ToUpper(testID) + `"}`,
			&Cursor{CreatedAt: 1700000000, ID: strings.ToLower(testID)}},
	} {
		f := parseOne(t, "["+c.body+"]").Feed
		if f == nil {
			t.Fatalf("%s: not a feed filter", c.body)
		}
		if (f.Before == nil) != (c.want == nil) || (f.Before != nil && *f.Before != *c.want) {
			t.Errorf("%s: before %+v, want %+v", c.body, f.Before, c.want)
		}
	}
}

// RL-35, RL-16: a malformed since or limit refuses the request.
func TestParseFeedErrors(t *testing.T) {
	for body, want := range map[string]string{
		`[{"feed_types":["mentions"],"since":"yesterday"}]`: "invalid filters: since must be an integer",
		`[{"feed_types":["mentions"],"since":1.5}]`:         "invalid filters: since must be an integer",
		`[{"feed_types":["mentions"],"limit":"5"}]`:         "invalid filters: limit must be an integer",
		// RL-35 settled, RL-19: the cursor's 400s, before_id first.
		`[{"feed_types":["mentions"],"until":"now"}]`:                           "invalid filters: until must be an integer",
		`[{"feed_types":["mentions"],"before_id":"` + testID + `"}]`:            ErrBeforeIDNeedUntil.Message,
		`[{"feed_types":["mentions"],"before_id":"abc","until":5}]`:             ErrBeforeID.Message,
		`[{"feed_types":["mentions"],"before_id":"abc"}]`:                       ErrBeforeID.Message,
		`[{"feed_types":["mentions"],"before_id":"abc","until":"now"}]`:         ErrBeforeID.Message,
		`[{"feed_types":["activity"],"before_id":7,"until":5}]`:                 ErrBeforeID.Message,
		`[{"feed_types":["activity"],"before_id":"` + testID + `x","until":5}]`: ErrBeforeID.Message,
	} {
		_, err := ParseBody([]byte(body))
		var re *RequestError
		if !errors.As(err, &re) || re.Message != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// RL-17: AuthHeader is a signed kind 27235 naming the URL, POST and the
// body's SHA-256, and two headers for the same request differ (the relay
// refuses a signature twice).
func TestAuthHeader(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	body := []byte(`[{"feed_types":["mentions"]}]`)
	decode := func() nostr.Event {
		h, err := AuthHeader(sk, "http://127.0.0.1:7777/query", body)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Nostr "))
		if err != nil {
			t.Fatal(err)
		}
		var ev nostr.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	a, b := decode(), decode()
	sum := sha256.Sum256(body)
	if ok, err := a.CheckSignature(); !ok || err != nil || a.Kind != 27235 || a.Tags.GetFirst([]string{"u", "http://127.0.0.1:7777/query"}) == nil ||
		a.Tags.GetFirst([]string{"method", "POST"}) == nil || a.Tags.GetFirst([]string{"payload", hex.EncodeToString(sum[:])}) == nil {
		t.Fatalf("token %v", a)
	}
	if a.Sig == b.Sig {
		t.Fatal("two tokens share a signature")
	}
}

// checkFeed fails unless f holds only known types, each once, and a limit
// within 0..100, and a cursor whose id is a lowercase 64-hex id or none,
// whatever body it was parsed from (RL-35; FuzzParseBody).
func checkFeed(t *testing.T, f *FeedRequest) {
	t.Helper()
	seen := map[string]bool{}
	for _, ty := range f.Types {
		if feedAliases[ty] != ty || seen[ty] {
			t.Fatalf("types %q", f.Types)
		}
		seen[ty] = true
	}
	if f.Limit < 0 || f.Limit > MaxFeedLimit {
		t.Fatalf("limit %d", f.Limit)
	}
	if f.Before != nil && f.Before.ID != "" && (!IsHex64(f.Before.ID) || strings.ToLower(f.Before.ID) != f.Before.ID) {
		t.Fatalf("before_id %q", f.Before.ID)
	}
}
