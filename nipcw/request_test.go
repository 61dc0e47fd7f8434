package nipcw

import (
	"errors"
	"strings"
	"testing"
)

const (
	testChannel = "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	testID      = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	// groupIDAlphabet is every character a NIP-29 group id may hold (CW-2),
	// written out apart from the parser's own test of them.
	groupIDAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
)

func parseOne(t *testing.T, body string) Filter {
	t.Helper()
	fs, err := ParseBody([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if len(fs) != 1 {
		t.Fatalf("%s: %d filters", body, len(fs))
	}
	return fs[0]
}

// RL-16, RL-18, RL-19, RL-20, CW-1, CW-2: the path each filter takes and
// every 400 of the body, with its exact message.
func TestParseBodyErrors(t *testing.T) {
	many := "[" + strings.Repeat(`{},`, MaxFilters) + `{}]`
	var hs []string
	for range MaxChannels + 1 {
		hs = append(hs, `"`+testChannel+`"`)
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"bare object", `{"kinds":[1]}`, "invalid filters: want a JSON array of filter objects"},
		{"invalid JSON", `[{"kinds":[1]`, "invalid filters: want a JSON array of filter objects"},
		{"null", `null`, "invalid filters: want a JSON array of filter objects"},
		{"not an object", `[1]`, "invalid filters: filter 0 is not a JSON object"},
		{"null filter", `[null]`, "invalid filters: filter 0 is not a JSON object"},
		{"too many filters", many, "too many filters"},
		{"too many channels", `[{"#h":[` + strings.Join(hs, ",") + `]}]`, "too many explicit channels"},
		{"window without #h", `[{"top_level":true}]`, "top_level requires exactly one #h channel"},
		{"window two channels", `[{"top_level":true,"#h":["` + testChannel + `","4f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"]}]`, "top_level requires exactly one #h channel"},
		{"window not a channel id", `[{"top_level":true,"#h":["Gen eral"]}]`, "top_level requires exactly one #h channel"}, // CW-2
		{"window 129 characters", `[{"top_level":true,"#h":["` + strings.Repeat("a", 129) + `"]}]`, "top_level requires exactly one #h channel"},
		{"window two cases of one group id", `[{"top_level":true,"#h":["General","general"]}]`, "top_level requires exactly one #h channel"},
		{"window group and UUID", `[{"top_level":true,"#h":["general","` + testChannel + `"]}]`, "top_level requires exactly one #h channel"},
		{"window two groups", `[{"top_level":true,"#h":["general","random"]}]`, "top_level requires exactly one #h channel"},
		{"window empty #h", `[{"top_level":true,"#h":[]}]`, "top_level requires exactly one #h channel"},
		{"generic malformed before_id", `[{"before_id":"xyz","until":5}]`, "before_id must be a 64-char hex event id"},
		{"generic before_id checked first", `[{"before_id":"xyz"}]`, "before_id must be a 64-char hex event id"},
		{"generic before_id without until", `[{"before_id":"` + testID + `"}]`, "before_id requires until to be set"},
		{"thread cursor id malformed", `[{"#e":["` + testID + `"],"depth_limit":2,"thread_cursor":5,"thread_cursor_id":"zz"}]`, "thread_cursor_id must be a 64-char hex event id"},
		{"thread cursor id alone", `[{"#e":["` + testID + `"],"depth_limit":2,"thread_cursor_id":"` + testID + `"}]`, "thread_cursor_id requires thread_cursor"},
		{"thread cursor id alone, camelCase", `[{"#e":["` + testID + `"],"depth_limit":2,"threadCursorId":"` + testID + `"}]`, "thread_cursor_id requires thread_cursor"},
		{"generic kinds not a list", `[{"kinds":"x"}]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseBody([]byte(c.body))
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a RequestError", err)
			}
			if c.want != "" && re.Message != c.want {
				t.Fatalf("message %q, want %q", re.Message, c.want)
			}
			if c.want == "" && !strings.HasPrefix(re.Message, "invalid filters: ") {
				t.Fatalf("message %q, want invalid filters: ...", re.Message)
			}
		})
	}
}

// CW-1, CW-8, RL-18, RL-20: only the literal true selects the window; a
// thread filter needs an integer depth_limit and exactly one 64-hex #e.
func TestParseBodyPaths(t *testing.T) {
	for _, c := range []struct {
		body string
		path string
	}{
		{`{"top_level":true,"#h":["` + testChannel + `"]}`, "window"},
		{`{"top_level":true,"#h":["` + testChannel + `"],"depth_limit":1,"#e":["` + testID + `"]}`, "window"},
		{`{"top_level":"true","#h":["` + testChannel + `"]}`, "generic"},
		{`{"top_level":1,"#h":["` + testChannel + `"]}`, "generic"},
		{`{"top_level":false,"#h":["` + testChannel + `"]}`, "generic"},
		{`{"depth_limit":0,"#e":["` + testID + `"]}`, "thread"},
		{`{"depth_limit":4294967295,"#e":["` + strings.ToUpper(testID) + `"]}`, "thread"},
		{`{"depth_limit":4294967296,"#e":["` + testID + `"]}`, "generic"},
		{`{"depth_limit":-1,"#e":["` + testID + `"]}`, "generic"},
		{`{"depth_limit":1.5,"#e":["` + testID + `"]}`, "generic"},
		{`{"depth_limit":"2","#e":["` + testID + `"]}`, "generic"},
		{`{"depth_limit":2,"#e":["` + testID + `","` + testID + `"]}`, "generic"},
		{`{"depth_limit":2,"#e":["abc"]}`, "generic"},
		{`{"depth_limit":2}`, "generic"},
		{`{"kinds":[1]}`, "generic"},
	} {
		if got := pathOf(parseOne(t, "["+c.body+"]")); got != c.path {
			t.Errorf("%s: %s path, want %s", c.body, got, c.path)
		}
	}
}

// pathOf names the path a filter takes.
func pathOf(f Filter) string {
	switch {
	case f.Window != nil:
		return "window"
	case f.Feed != nil:
		return "feed"
	case f.Thread != nil:
		return "thread"
	}
	return "generic"
}

// CW-2, CW-4, CW-6, CW-1: the channel in canonical form, the limit clamp,
// kinds, and the literal-true flags.
func TestParseWindow(t *testing.T) {
	for _, c := range []struct {
		extra string
		limit int
	}{
		{``, 50}, {`,"limit":0`, 1}, {`,"limit":-5`, 1}, {`,"limit":7`, 7}, {`,"limit":200`, 200}, {`,"limit":5000`, 200},
		{`,"limit":5.0`, 5}, {`,"limit":99999999999999999999`, 200},
	} {
		w := parseOne(t, `[{"top_level":true,"#h":["`+testChannel+`"]`+c.extra+`}]`).Window
		if _, err := w.Check(); err != nil || w.Limit != c.limit {
			t.Errorf("%q: limit %d, want %d", c.extra, w.Limit, c.limit)
		}
	}
	for _, form := range []string{
		strings.ToUpper(testChannel),
		strings.ReplaceAll(testChannel, "-", ""),
		"{" + testChannel + "}",
		"urn:uuid:" + testChannel,
	} {
		w := parseOne(t, `[{"top_level":true,"#h":["`+form+`","`+testChannel+`"]}]`).Window
		if w.Channel != testChannel {
			t.Errorf("%s: channel %q", form, w.Channel)
		}
	}
	w := parseOne(t, `[{"top_level":true,"#h":["`+testChannel+`"],"kinds":[9,11],"include_summaries":true,"include_aux":"true"}]`).Window
	if _, err := w.Check(); err != nil || len(w.Kinds) != 2 || !w.IncludeSummaries || w.IncludeAux {
		t.Errorf("got %+v", w)
	}
}

// CW-5: both or neither, checked in order: a malformed before_id, a half
// cursor, then until. CW-3: kinds and limit are checked after access too.
func TestWindowCursor(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  *Cursor
		err   error
	}{
		{``, nil, nil},
		{`,"until":null,"before_id":null`, nil, nil},
		{`,"until":1751500000,"before_id":"` + strings.ToUpper(testID) + `"`, &Cursor{CreatedAt: 1751500000, ID: testID}, nil},
		{`,"until":0,"before_id":"` + testID + `"`, &Cursor{CreatedAt: 0, ID: testID}, nil},
		{`,"before_id":"xyz"`, nil, ErrWindowBeforeID},
		{`,"until":5,"before_id":"xyz"`, nil, ErrWindowBeforeID},
		{`,"until":5,"before_id":5`, nil, ErrWindowBeforeID},
		{`,"until":5`, nil, ErrWindowHalfCursor},
		{`,"before_id":"` + testID + `"`, nil, ErrWindowHalfCursor},
		{`,"until":-1,"before_id":"` + testID + `"`, nil, ErrWindowUntil},
		{`,"until":1.5,"before_id":"` + testID + `"`, nil, ErrWindowUntil},
		{`,"until":"5","before_id":"` + testID + `"`, nil, ErrWindowUntil},
		{`,"until":99999999999999999999,"before_id":"` + testID + `"`, nil, ErrWindowUntil},
	} {
		w := parseOne(t, `[{"top_level":true,"#h":["`+testChannel+`"]`+c.extra+`}]`).Window
		got, err := w.Check()
		if err != c.err || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%s: %+v, %v; want %+v, %v", c.extra, got, err, c.want, c.err)
		}
	}
}

// RL-20: thread limit, cursor and flags.
func TestParseThread(t *testing.T) {
	th := parseOne(t, `[{"#e":["`+testID+`"],"depth_limit":3,"limit":900,"threadCursor":17,"threadCursorId":"`+strings.ToUpper(testID)+`","include_aux":true}]`).Thread
	if th.Root != testID || th.DepthLimit != 3 || th.Limit != MaxThreadLimit || !th.IncludeAux || *th.After != (Cursor{CreatedAt: 17, ID: testID}) {
		t.Errorf("got %+v %+v", th, th.After)
	}
	th = parseOne(t, `[{"#e":["`+testID+`"],"depth_limit":3,"thread_cursor":17,"limit":0}]`).Thread
	if th.Limit != 0 || *th.After != (Cursor{CreatedAt: 17}) {
		t.Errorf("got %+v %+v", th, th.After)
	}
	if th = parseOne(t, `[{"#e":["`+testID+`"],"depth_limit":3}]`).Thread; th.Limit != ThreadLimit || th.After != nil {
		t.Errorf("defaults: %+v", th)
	}
}

// RL-19: generic limit default and clamp; before_id canonical.
func TestParseGeneric(t *testing.T) {
	g := parseOne(t, `[{"kinds":[1],"until":5,"before_id":"`+strings.ToUpper(testID)+`","top_level":false}]`).Generic
	if g.BeforeID != testID || g.Filter.Limit != GenericLimit || *g.Filter.Until != 5 {
		t.Errorf("got %+v", g)
	}
	if g = parseOne(t, `[{"limit":5000}]`).Generic; g.Filter.Limit != GenericLimit {
		t.Errorf("limit clamp: %d", g.Filter.Limit)
	}
	if g = parseOne(t, `[{"limit":0}]`).Generic; !g.Filter.LimitZero {
		t.Errorf("limit 0 lost: %+v", g.Filter)
	}
}

// CW-20: the bounds d tag.
func TestBoundsD(t *testing.T) {
	if got := BoundsD(testChannel, nil); got != testChannel+":head" {
		t.Errorf("head: %q", got)
	}
	if got := BoundsD(testChannel, &Cursor{CreatedAt: 1751500000, ID: strings.ToUpper(testID)}); got != testChannel+":1751500000:"+testID {
		t.Errorf("cursor: %q", got)
	}
}

// RL-16, RL-35: the body parser never panics, every refusal is a
// RequestError, every filter takes one path, and a feed filter is sound.
func FuzzParseBody(f *testing.F) {
	for _, seed := range []string{
		`[{"top_level":true,"#h":["` + testChannel + `"],"until":5,"before_id":"` + testID + `","limit":3,"kinds":[9]}]`,
		`[{"#e":["` + testID + `"],"depth_limit":2,"thread_cursor":1,"thread_cursor_id":"` + testID + `"}]`,
		`[{"kinds":[1],"before_id":"` + testID + `","until":9,"#t":["x"]}]`,
		`{}`, `[]`, `[null]`, `[{"top_level":true}]`,
		`[{"feed_types":["mentions","agent_activity","needs_action"],"limit":5,"since":9}]`,
		`[{"feed_types":[1,"activity",null],"limit":-1}]`, `[{"feed_types":"activity"}]`, `[{"feed_types":[]}]`,
		`[{"feed_types":["activity"],"until":9,"before_id":"` + testID + `","limit":0}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fs, err := ParseBody(body)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a RequestError", err)
			}
			return
		}
		for _, f := range fs {
			n := 0
			if f.Window != nil {
				n++
				f.Window.Check()
			}
			if f.Feed != nil {
				n++
				checkFeed(t, f.Feed)
			}
			if f.Thread != nil {
				n++
			}
			if f.Generic != nil {
				n++
			}
			if n != 1 {
				t.Fatalf("filter on %d paths", n)
			}
		}
	})
}

// CW-2, RL-36: a channel id is a UUID in any spelling, echoed canonical,
// or a NIP-29 group id that is not a UUID form: 1 to 128 characters of
// A-Za-z0-9-_.~, echoed verbatim, letter case included; nothing else.
func TestParseChannelID(t *testing.T) {
	bare := strings.ReplaceAll(testChannel, "-", "")
	up := strings.ToUpper(testChannel)
	long := strings.Repeat("a", 128)
	mixed := strings.Repeat("Zz9-_.~", 19)[:128]
	for _, c := range []struct {
		name, in, want string
		ok             bool
	}{
		{"canonical UUID", testChannel, testChannel, true},
		{"uppercase UUID", up, testChannel, true},
		{"mixed-case UUID", up[:9] + testChannel[9:19] + up[19:], testChannel, true},
		{"bare hex: a UUID, not a group id", bare, testChannel, true},
		{"bare uppercase hex: a UUID", strings.ToUpper(bare), testChannel, true},
		{"braced UUID", "{" + testChannel + "}", testChannel, true},
		{"braced uppercase UUID", "{" + up + "}", testChannel, true},
		{"urn:uuid:", "urn:uuid:" + testChannel, testChannel, true},
		{"URN:UUID: uppercase", "URN:UUID:" + up, testChannel, true},

		{"group id", "abc123", "abc123", true},
		{"NDK's default id, mixed case", "p0ZPf6Xc6Ngx7TZFdJHcWRxY", "p0ZPf6Xc6Ngx7TZFdJHcWRxY", true},
		{"another case is another id", "P0zpF6xC6nGX7tzfDjhCwrXy", "P0zpF6xC6nGX7tzfDjhCwrXy", true},
		{"uppercase letters", "General", "General", true},
		{"hyphen", "a-b", "a-b", true},
		{"underscore", "a_b", "a_b", true},
		{"dot", "a.b", "a.b", true},
		{"tilde", "a~b", "a~b", true},
		{"a hyphen alone", "-", "-", true},
		{"an underscore alone", "_", "_", true},
		{"a dot alone", ".", ".", true},
		{"two dots", "..", "..", true},
		{"a tilde alone", "~", "~", true},
		{"one digit", "0", "0", true},
		{"128 characters", long, long, true},
		{"128 characters of every kind", mixed, mixed, true},
		{"UUID-shaped, not hex", "zzzzzzzz-1d7a-4c3e-9a59-4c2b1a0e7b11", "zzzzzzzz-1d7a-4c3e-9a59-4c2b1a0e7b11", true},
		{"UUID-shaped, G for a digit", "G" + up[1:], "G" + up[1:], true},
		{"33 hex digits", strings.ToUpper(bare) + "A", strings.ToUpper(bare) + "A", true},
		{"a UUID with a tilde", "~" + testChannel, "~" + testChannel, true},

		{"empty", "", "", false},
		{"129 characters", long + "a", "", false},
		{"129 characters of every kind", mixed + "Z", "", false},
		{"space", "a b", "", false},
		{"colon", "a:b", "", false},
		{"slash", "a/b", "", false},
		{"percent", "a%2Eb", "", false},
		{"plus", "a+b", "", false},
		{"at", "a@b", "", false},
		{"question mark", "a?b", "", false},
		{"hash", "a#b", "", false},
		{"brace", "{a}", "", false},
		{"NUL", "a\x00b", "", false},
		{"newline", "a\n", "", false},
		{"non-ASCII letter", "é", "", false},
		{"fullwidth letter", "\uff21", "", false},
		{"urn: without uuid:", "urn:" + testChannel, "", false},
		{"unclosed brace", "{" + testChannel, "", false},
	} {
		got, ok := ParseChannelID(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: ParseChannelID(%q) = %q, %v; want %q, %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}

// CW-2: the window takes a NIP-29 group id verbatim and a UUID in
// canonical form.
func TestWindowChannelID(t *testing.T) {
	for in, want := range map[string]string{
		"abc123":                     "abc123",
		strings.ToUpper(testChannel): testChannel,
		"urn:uuid:" + testChannel:    testChannel,
		strings.Repeat("_", 128):     strings.Repeat("_", 128),
		"p0ZPf6Xc6Ngx7TZFdJHcWRxY":   "p0ZPf6Xc6Ngx7TZFdJHcWRxY",
		"a.b~c":                      "a.b~c",
	} {
		w := parseOne(t, `[{"top_level":true,"#h":["`+in+`","`+in+`"]}]`).Window
		if w == nil || w.Channel != want {
			t.Errorf("%q: window %+v, want channel %q", in, w, want)
		}
	}
	w := parseOne(t, `[{"top_level":true,"#h":["`+testChannel+`","`+strings.ReplaceAll(testChannel, "-", "")+`"]}]`).Window
	if w == nil || w.Channel != testChannel {
		t.Errorf("two spellings of one UUID: %+v", w)
	}
}

// CW-2, RL-36: a channel id reads back as itself, and is a UUID or a group
// id: a group id is its input, 1 to 128 characters of A-Za-z0-9-_.~.
func FuzzParseChannelID(f *testing.F) {
	f.Add(testChannel)
	f.Add(strings.ToUpper(testChannel))
	f.Add("abc123")
	f.Add("p0ZPf6Xc6Ngx7TZFdJHcWRxY")
	f.Add("..")
	f.Add("a.b~c")
	f.Add(strings.Repeat("-", 128))
	f.Add(strings.Repeat("~", 129))
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseChannelID(s)
		if !ok {
			return
		}
		if again, ok := ParseChannelID(c); !ok || again != c {
			t.Fatalf("%q -> %q does not read back as itself", s, c)
		}
		if _, uuid := ParseUUID(s); uuid {
			return
		}
		if c != s {
			t.Fatalf("group id %q echoed as %q", s, c)
		}
		if len(s) < 1 || len(s) > MaxGroupIDLen || strings.Trim(s, groupIDAlphabet) != "" {
			t.Fatalf("group id %q is not 1 to %d of %s", s, MaxGroupIDLen, groupIDAlphabet)
		}
	})
}

// CW-2: ParseUUID reads every common spelling and refuses the rest.
func FuzzParseUUID(f *testing.F) {
	f.Add(testChannel)
	f.Add("urn:uuid:" + testChannel)
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseUUID(s)
		if !ok {
			return
		}
		if again, ok := ParseUUID(c); !ok || again != c || len(c) != 36 || strings.ToLower(c) != c {
			t.Fatalf("%q -> %q is not canonical", s, c)
		}
	})
}

// CW-3: nothing but the channel is judged before access: a malformed
// kinds list, limit or cursor parses, and is refused only by Check.
func TestWindowCheckedAfterAccess(t *testing.T) {
	for _, extra := range []string{`,"kinds":"x"`, `,"limit":"x"`, `,"until":5`, `,"before_id":"x"`} {
		w := parseOne(t, `[{"top_level":true,"#h":["`+testChannel+`"]`+extra+`}]`).Window
		if _, err := w.Check(); err == nil {
			t.Errorf("%s: Check accepted it", extra)
		}
	}
}
