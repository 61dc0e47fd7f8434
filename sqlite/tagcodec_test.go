package sqlite

// The stored-tags codec (appendTags / parseTags): every tag list survives a
// round trip byte for byte, is written exactly as NIP-01 serialization
// escapes it (so the stored event still verifies), and no input, however
// malformed, makes the parser panic (RL-3, RL-22).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// tcAllControl is every byte below 0x20, and DEL.
var tcAllControl = func() string {
	var b strings.Builder
	for c := 0; c < 0x20; c++ {
		b.WriteByte(byte(c))
	}
	b.WriteByte(0x7f)
	return b.String()
}()

// tcTricky are tag lists that stress the codec.
var tcTricky = []struct {
	name string
	tags nostr.Tags
}{
	{"no tags", nostr.Tags{}},
	{"one empty tag", nostr.Tags{{}}},
	{"empty tags around", nostr.Tags{{}, {"t", "x"}, {}}},
	{"empty strings", nostr.Tags{{""}, {"", ""}, {"t", ""}}},
	{"quotes", nostr.Tags{{"t", `"`}, {"t", `say "hi"`}, {"t", `""""`}, {`"`, `"`}}},
	{"backslashes", nostr.Tags{{"t", `\`}, {"t", `\\`}, {"t", `\"`}, {"t", `\n`}, {"t", `C:\path\to\`}, {"t", `\u0041`}}},
	{"json-looking", nostr.Tags{{"t", `["a","b"]`}, {"t", `],[`}, {"t", `","`}, {"t", "/"}, {"t", `\/`}}},
	{"control chars", nostr.Tags{{"t", "\x00"}, {"t", "a\nb\tc\rd"}, {"t", "\b\f"}, {"t", tcAllControl}, {"t", "\x1f\x1a\x0b\x0e"}}},
	{"unicode", nostr.Tags{{"t", "héllo wörld"}, {"t", "日本語"}, {"t", "🎉🧵"}, {"t", "עברית"}, {"t", "e\u0301"}, {"t", "\u2028\u2029"}, {"t", "\ufeff"}, {"t", "\uffff"}}},
	{"invalid utf-8", nostr.Tags{{"t", "\xff"}, {"t", "\xfe\xff"}, {"t", "\xc3("}, {"t", "a\x80b"}, {"t", "\xed\xa0\x80"}, {"t", "\xf4\x90\x80\x80"}, {"\xff", "\xc0\xaf"}}},
	{"html", nostr.Tags{{"t", "<script>&amp;</script>"}, {"t", "<>&'"}}},
	{"long", nostr.Tags{{"t", strings.Repeat(`a"\`, 5000)}, append(nostr.Tag{"many"}, strings.Split(strings.Repeat("x,", 300), ",")...)}},
	{"hex ids", nostr.Tags{{"e", strings.Repeat("ab", 32), "wss://relay.example", "reply"}, {"p", strings.Repeat("CD", 32)}}},
}

// tcEqual compares tag lists element by element (nil and empty alike).
func tcEqual(a, b nostr.Tags) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// tcNIP01 is the tags part of go-nostr's NIP-01 serialization of tags.
func tcNIP01(tags nostr.Tags) string {
	ev := nostr.Event{PubKey: "pk", CreatedAt: 1, Kind: 1, Tags: tags}
	ser := string(ev.Serialize())
	prefix, suffix := `[0,"pk",1,1,`, `,""]`
	if !strings.HasPrefix(ser, prefix) || !strings.HasSuffix(ser, suffix) {
		panic("unexpected serialization " + ser)
	}
	return ser[len(prefix) : len(ser)-len(suffix)]
}

func tcAllUTF8(tags nostr.Tags) bool {
	for _, tag := range tags {
		for _, s := range tag {
			if !utf8.ValidString(s) {
				return false
			}
		}
	}
	return true
}

// tcViaJSON reads s with encoding/json as a list of lists of strings.
func tcViaJSON(s string) (nostr.Tags, error) {
	var viaJSON [][]string
	if err := json.Unmarshal([]byte(s), &viaJSON); err != nil {
		return nil, err
	}
	back := make(nostr.Tags, len(viaJSON))
	for i, tag := range viaJSON {
		back[i] = tag
	}
	return back, nil
}

// tcCheckRoundTrip is the property of FuzzTagsRoundTrip and
// TestTagCodecRoundTrip.
func tcCheckRoundTrip(t testing.TB, tags nostr.Tags) {
	t.Helper()
	enc := string(tagjson.AppendTags(nil, tags))
	got, err := tagjson.Parse(enc)
	if err != nil {
		t.Fatalf("tagjson.Parse(tagjson.AppendTags(%q)) = %v (encoded %q)", tags, err, enc)
	}
	if !tcEqual(got, tags) {
		t.Fatalf("round trip changed the tags:\n got %q\nwant %q", got, tags)
	}
	// Escaped exactly as the signature's serialization escapes.
	if want := tcNIP01(tags); enc != want {
		t.Fatalf("AppendTags(%q)\n = %q\nNIP-01 %q", tags, enc, want)
	}
	// Appending to a buffer keeps what is in it.
	if b := tagjson.AppendTags([]byte("xy"), tags); string(b) != "xy"+enc {
		t.Fatalf("appendTags to a non-empty buffer: %q", b)
	}
	// Valid UTF-8 in, valid JSON out, read back alike by encoding/json.
	if tcAllUTF8(tags) {
		back, err := tcViaJSON(enc)
		if err != nil {
			t.Fatalf("encoding/json rejects %q: %v", enc, err)
		}
		if !tcEqual(back, tags) {
			t.Fatalf("encoding/json reads %q as %q, want %q", enc, back, tags)
		}
	}
}

// RL-3: appendTags/parseTags round trip every tricky tag list exactly, in
// NIP-01's escaping.
func TestTagCodecRoundTrip(t *testing.T) {
	for _, tc := range tcTricky {
		t.Run(tc.name, func(t *testing.T) { tcCheckRoundTrip(t, tc.tags) })
	}
	t.Run("nil tags", func(t *testing.T) {
		if enc := string(tagjson.AppendTags(nil, nil)); enc != "[]" {
			t.Fatalf("AppendTags(nil) = %q", enc)
		}
		got, err := tagjson.Parse("[]")
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("tagjson.Parse([]) = %#v, %v; want an empty, non-nil list", got, err)
		}
	})
	t.Run("escapes", func(t *testing.T) {
		for in, want := range map[string]string{
			"\x00": `"\u0000"`, "\x01": `"\u0001"`, "\x08": `"\b"`, "\t": `"\t"`, "\n": `"\n"`,
			"\x0b": `"\u000b"`, "\x0c": `"\f"`, "\r": `"\r"`, "\x1f": `"\u001f"`, "\x7f": "\"\x7f\"",
			`"`: `"\""`, `\`: `"\\"`, "/": `"/"`, "é": `"é"`, "\xff": "\"\xff\"", "<": `"<"`,
		} {
			if got := string(tagjson.AppendString(nil, in)); got != want {
				t.Errorf("tagjson.AppendString(%q) = %q, want %q", in, got, want)
			}
		}
	})
}

// RL-3: parseTags reads JSON as JSON writers produce it (whitespace, every
// escape, surrogate pairs) and refuses what is not an array of arrays of
// strings.
func TestTagCodecParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want nostr.Tags
	}{
		{`[]`, nostr.Tags{}},
		{` [ ] `, nostr.Tags{}},
		{"\t[\n[\r\n]\n]\n", nostr.Tags{{}}},
		{`[["a","b"],["c"]]`, nostr.Tags{{"a", "b"}, {"c"}}},
		{` [ [ "a" , "b" ] , [ "c" ] ] `, nostr.Tags{{"a", "b"}, {"c"}}},
		{`[["\"\\\/\b\f\n\r\t"]]`, nostr.Tags{{"\"\\/\b\f\n\r\t"}}},
		{`[["\u0041\u00e9\u65e5"]]`, nostr.Tags{{"Aé日"}}},
		{`[["\u00E9\u00e9"]]`, nostr.Tags{{"éé"}}},
		{`[["\ud83c\udf89"]]`, nostr.Tags{{"🎉"}}},
		{`[["\ud83c"]]`, nostr.Tags{{"\ufffd"}}},
		{`[["\udf89x"]]`, nostr.Tags{{"\ufffdx"}}},
		{`[["\ud83c\u0041"]]`, nostr.Tags{{"\ufffdA"}}},
		{`[["\ud83c\ud83c\udf89"]]`, nostr.Tags{{"\ufffd🎉"}}},
		{`[["\u0000"]]`, nostr.Tags{{"\x00"}}},
		{"[[\"raw\x01ctl\"]]", nostr.Tags{{"raw\x01ctl"}}},
		{"[[\"\xff\xfe\"]]", nostr.Tags{{"\xff\xfe"}}},
		{`[["",""]]`, nostr.Tags{{"", ""}}},
	} {
		got, err := tagjson.Parse(tc.in)
		if err != nil {
			t.Errorf("tagjson.Parse(%q): %v", tc.in, err)
			continue
		}
		if !tcEqual(got, tc.want) {
			t.Errorf("tagjson.Parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	for _, in := range []string{
		``, ` `, `[`, `]`, `[[`, `[[]`, `[["a"]`, `[["a"],]`, `[,["a"]]`, `[["a",]]`, `[[,"a"]]`,
		`["a"]`, `[[1]]`, `[["a",1]]`, `[[null]]`, `[null]`, `null`, `{}`, `[{}]`, `[["a" "b"]]`,
		`[["a"]["b"]]`, `[["a"]] x`, `[]]`, `[[]]]`, `[["\x"]]`, `[["\u12"]]`, `[["\u12g4"]]`,
		`[["\u+123"]]`, `[["\u-123"]]`, `[["\`, `[["\"]]`, `[["abc`, `[["abc\`, `[['a']]`, `[[a]]`,
		`[["\U0041"]]`, "\x00[]",
	} {
		if got, err := tagjson.Parse(in); err == nil {
			t.Errorf("tagjson.Parse(%q) = %q, want an error", in, got)
		}
	}
}

// RL-3, RL-22: an event whose content and tags hold every tricky string is
// stored and read back exactly: same tags, same content, and the signature
// still verifies; its tag values are found by exact tag filters.
func TestTagCodecStoredEventVerifies(t *testing.T) {
	s := qtOpen(t, nil)
	a := testutil.NewSigner(t)
	contents := []string{
		"", "plain", `"quoted" \back\slash`, "\x00nul\x00", tcAllControl, "🎉 日本語 e\u0301",
		"\xff\xfe invalid \xc3(", "\xed\xa0\x80", `{"json":["in","content"]}`, strings.Repeat("long ", 20000),
	}
	i := 0
	for _, tc := range tcTricky {
		for _, content := range []string{contents[i%len(contents)], contents[(i+3)%len(contents)]} {
			i++
			t.Run(fmt.Sprintf("%s/%d", tc.name, i), func(t *testing.T) {
				ev := a.Event(t, 1, qtT0+int64(i), content, tc.tags...)
				qtIngest(t, s, ev)
				got, err := s.Query(context.Background(), nostr.Filter{IDs: []string{ev.ID}}, buzz.Anonymous)
				if err != nil || len(got) != 1 {
					t.Fatalf("query by id: %d events, %v", len(got), err)
				}
				back := got[0]
				if back.Content != ev.Content {
					t.Errorf("content changed: %q -> %q", ev.Content, back.Content)
				}
				if !tcEqual(back.Tags, ev.Tags) {
					t.Errorf("tags changed:\n got %q\nwant %q", back.Tags, ev.Tags)
				}
				if back.PubKey != ev.PubKey || back.CreatedAt != ev.CreatedAt || back.Kind != ev.Kind || back.Sig != ev.Sig || back.ID != ev.ID {
					t.Errorf("header changed: %+v", back)
				}
				if back.GetID() != ev.ID {
					t.Errorf("stored event hashes to %s, want %s", back.GetID(), ev.ID)
				}
				if ok, err := back.CheckSignature(); !ok || err != nil {
					t.Errorf("stored event does not verify: %v", err)
				}
				// Every single-letter tag value finds this event, exactly.
				for _, tag := range ev.Tags {
					if len(tag) < 2 || !buzz.IsTagName(tag[0]) {
						continue
					}
					ids := storetest.QueryIDs(t, s, nostr.Filter{Tags: nostr.TagMap{tag[0]: {tag[1]}}, Authors: []string{a.PK}}, buzz.Anonymous)
					found := false
					for _, id := range ids {
						found = found || id == ev.ID
					}
					if !found {
						t.Errorf("#%s %q does not find the event", tag[0], tag[1])
					}
				}
			})
		}
	}
}

// RL-3, RL-22. FuzzParseTags: parseTags never panics; whatever it accepts re-encodes to a
// string it reads back identically; and where encoding/json also accepts
// valid UTF-8 input, both read the same tags.
func FuzzParseTags(f *testing.F) {
	for _, tc := range tcTricky {
		f.Add(string(tagjson.AppendTags(nil, tc.tags)))
	}
	for _, seed := range []string{
		``, `[]`, `[[]]`, ` [ [ "a" , "b" ] ] `, `[["\ud83c\udf89"]]`, `[["\ud83c"]]`, `[["\u00e9\/"]]`,
		`[["a"],]`, `[["\u12"]]`, `[null]`, "[[\"\xff\"]]", `[["\ud83c\ud83c\udf89"]]`, `[["\`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tags, err := tagjson.Parse(in)
		if err != nil {
			return
		}
		enc := tagjson.AppendTags(nil, tags)
		again, err := tagjson.Parse(string(enc))
		if err != nil {
			t.Fatalf("tagjson.Parse(%q) = %q, whose encoding %q does not parse: %v", in, tags, enc, err)
		}
		if !tcEqual(again, tags) {
			t.Fatalf("re-encoding of %q changed the tags: %q -> %q", in, tags, again)
		}
		if enc2 := tagjson.AppendTags(nil, again); string(enc2) != string(enc) {
			t.Fatalf("encoding not stable: %q -> %q", enc, enc2)
		}
		if !utf8.ValidString(in) {
			return
		}
		back, err := tcViaJSON(in)
		if err != nil {
			return // parseTags is more lenient (raw control characters)
		}
		if !tcEqual(back, tags) {
			t.Fatalf("tagjson.Parse(%q) = %q, encoding/json reads %q", in, tags, back)
		}
	})
}

// RL-3. FuzzTagsRoundTrip: any tag list built from arbitrary strings round trips
// exactly and is escaped as NIP-01 serialization escapes it.
func FuzzTagsRoundTrip(f *testing.F) {
	f.Add("t", "foo", "", uint8(7))
	f.Add(`"`, `\`, "\x00\x1f", uint8(23))
	f.Add("\xff", "日本", "\xed\xa0\xbc", uint8(255))
	f.Add("", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, a, b, c string, shape uint8) {
		parts := []string{a, b, c}
		tags := nostr.Tags{}
		for i := 0; i < int(shape%5); i++ {
			tag := nostr.Tag{}
			for j := 0; j < (i+int(shape/5))%4; j++ {
				tag = append(tag, parts[(i+j)%3])
			}
			tags = append(tags, tag)
		}
		tcCheckRoundTrip(t, tags)
	})
}
