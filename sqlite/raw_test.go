package sqlite

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
)

// CW-17: validTags accepts what parseTags reads, except raw control
// characters in strings (parseTags is lenient there, and a response must
// be valid JSON): a stored event served from its columns could be decoded.
func FuzzValidTags(f *testing.F) {
	for _, seed := range []string{`[]`, `[["e","x"]]`, ` [ [ "a" , "b\u00e9\n" ] , [] ] `, `[["a"]`, `{}`, `[[1]]`, `[["\x"]]`, `[["\ud800"]]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := tagjson.Parse(s)
		valid := tagjson.Valid(s)
		if valid && (err != nil || !json.Valid([]byte(s))) {
			t.Fatalf("tagjson.Valid(%q) accepts what parseTags (%v) or JSON refuses", s, err)
		}
		if !valid && err == nil && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 }) {
			t.Fatalf("tagjson.Valid(%q) refuses what parseTags reads", s)
		}
	})
}

// CW-17, RL-3: an event served straight from its columns decodes to the
// event that was stored, whatever its tags and content hold.
func FuzzRawEvent(f *testing.F) {
	f.Add("hello", "e", "value", int64(1700000000), 9)
	f.Add("quote \" backslash \\ newline \n tab \t nul \x00 é 🙂", "t", "\x7f\x1f", int64(0), 0)
	f.Fuzz(func(t *testing.T, content, name, value string, createdAt int64, kind int) {
		tags := nostr.Tags{{name, value}, {"h", "x"}, {}}
		id := make([]byte, 32)
		id[0] = 0xab
		rest := storedColumns{
			id:        id,
			createdAt: createdAt,
			pubkey:    make([]byte, 32),
			sig:       make([]byte, 64),
			kind:      kind,
			tags:      tagjson.AppendTags(nil, tags),
			content:   []byte(content),
		}
		raw, err := rest.raw()
		if err != nil {
			t.Fatal(err)
		}
		// Besides tags and content, the JSON holds at most
		// RawEventFixedBytes (for a kind that fits an int32), so a buffer
		// sized by it is never grown unless escapes lengthen the content
		// past the eighth allowed for them.
		escaped := len(tagjson.AppendString(nil, content)) - 2
		if fixed := len(raw.JSON) - len(rest.tags) - escaped; kind == int(int32(kind)) && fixed > buzz.RawEventFixedBytes {
			t.Fatalf("%d bytes besides tags and content, RawEventFixedBytes is %d", fixed, buzz.RawEventFixedBytes)
		}
		if sized := buzz.RawEventFixedBytes + len(rest.tags) + len(content) + len(content)/8; kind == int(int32(kind)) &&
			escaped <= len(content)+len(content)/8 && cap(raw.JSON) != sized {
			t.Fatalf("JSON of %d bytes grew its buffer from %d to %d", len(raw.JSON), sized, cap(raw.JSON))
		}
		var ev nostr.Event
		if err := json.Unmarshal(raw.JSON, &ev); err != nil {
			if json.Valid(raw.JSON) {
				t.Fatalf("valid JSON %s does not decode: %v", raw.JSON, err)
			}
			// Invalid UTF-8 is kept as stored (NIP-01 signs the bytes).
			return
		}
		// Content survives exactly when it is valid UTF-8 (decoding
		// replaces invalid bytes).
		if ev.ID != raw.ID || int64(ev.CreatedAt) != createdAt || ev.Kind != kind || (utf8.ValidString(content) && ev.Content != content) {
			t.Fatalf("decoded %+v from %s", ev, raw.JSON)
		}
		if utf8.ValidString(name+value) && !slices.EqualFunc(ev.Tags, tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) }) {
			t.Fatalf("tags %v, want %v", ev.Tags, tags)
		}
	})
}
