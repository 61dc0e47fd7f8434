package nipcw

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// Cursor is a position in the window order `created_at DESC, id ASC`
// (CW-15): a page continues strictly after it.
type Cursor struct {
	CreatedAt int64  `json:"created_at"`
	ID        string `json:"id"`
}

// Bounds is the content of a window bounds overlay (CW-20).
type Bounds struct {
	HasMore                bool    `json:"has_more"`
	NextCursor             *Cursor `json:"next_cursor"`
	ThreadRepliesInChannel bool    `json:"thread_replies_in_channel"`
}

// Equal reports whether b and c say the same.
func (b Bounds) Equal(c Bounds) bool {
	return b.HasMore == c.HasMore && b.ThreadRepliesInChannel == c.ThreadRepliesInChannel &&
		(b.NextCursor == nil) == (c.NextCursor == nil) && (b.NextCursor == nil || *b.NextCursor == *c.NextCursor)
}

// Summary is the content of a thread summary overlay (CW-19).
type Summary struct {
	ReplyCount      int64    `json:"reply_count"`
	DescendantCount int64    `json:"descendant_count"`
	LastReplyAt     *int64   `json:"last_reply_at"`
	Participants    []string `json:"participants"`
}

// BoundsD is the `d` tag of the bounds of a page of channel: the channel,
// a colon, and `head` for a head request or else the request cursor as
// `<until>:<before_id>` in decimal seconds and lowercase hex (CW-20).
func BoundsD(channel string, cursor *Cursor) string {
	if cursor == nil {
		return channel + ":head"
	}
	return channel + ":" + strconv.FormatInt(cursor.CreatedAt, 10) + ":" + strings.ToLower(cursor.ID)
}

// ParseUUID reads a channel id in any form a UUID parser accepts
// (hyphenated in either case, 32 bare hex digits, braced, `urn:uuid:`)
// and returns it in canonical form: lowercase, hyphenated (CW-2).
func ParseUUID(s string) (string, bool) {
	switch {
	case len(s) == 45 && strings.EqualFold(s[:9], "urn:uuid:"):
		s = s[9:]
	case len(s) == 38 && s[0] == '{' && s[37] == '}':
		s = s[1:37]
	}
	var digits string
	switch len(s) {
	case 32:
		digits = s
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return "", false
		}
		digits = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	default:
		return "", false
	}
	b, err := hex.DecodeString(digits)
	if err != nil {
		return "", false
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// MaxGroupIDLen is the longest NIP-29 group id a channel may go by, in
// bytes (CW-2, RL-36): long enough for any id a NIP-29 client makes, short
// enough to bound what an id costs in a tag, a row and a URL.
const MaxGroupIDLen = 128

// ParseChannelID reads a channel id (CW-2): a UUID in any form ParseUUID
// accepts, returned in canonical form, or else a NIP-29 group id, 1 to
// MaxGroupIDLen characters of A-Z, a-z, 0-9, '-', '_', '.' and '~',
// returned verbatim: letter case is part of a group id, as NIP-29 clients
// (NDK) make them mixed-case (RL-36). A UUID form is never a group id: 32
// bare hex digits, in either case, name the UUID, so that one channel has
// one id.
func ParseChannelID(s string) (string, bool) {
	if u, ok := ParseUUID(s); ok {
		return u, true
	}
	if len(s) == 0 || len(s) > MaxGroupIDLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !isGroupIDChar(s[i]) {
			return "", false
		}
	}
	return s, true
}

// SameChannel reports whether a and b name the same channel as CW-2 reads
// an h value: a UUID in any spelling is its canonical form, a NIP-29 group
// id is itself, case and all. A value that is no channel id names none.
func SameChannel(a, b string) bool {
	x, ok := ParseChannelID(a)
	if !ok {
		return false
	}
	y, ok := ParseChannelID(b)
	return ok && x == y
}

// MatchesFilter reports whether ev matches f as the relay matches it: like
// nostr.Filter.Matches, except that an #h value names a channel (CW-2), so
// that the events of a channel whose h tag spells its UUID otherwise than
// the filter are the channel's too, as the relay sends them.
func MatchesFilter(f nostr.Filter, ev *nostr.Event) bool {
	hs, ok := f.Tags["h"]
	if !ok {
		return f.Matches(ev)
	}
	rest := f
	rest.Tags = make(nostr.TagMap, len(f.Tags))
	for name, values := range f.Tags {
		if name != "h" {
			rest.Tags[name] = values
		}
	}
	if !rest.Matches(ev) {
		return false
	}
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		for _, h := range hs {
			if SameChannel(tag[1], h) {
				return true
			}
		}
	}
	return false
}

// isGroupIDChar reports whether c may appear in a NIP-29 group id: the
// characters RFC 3986 leaves unreserved, so that an id is a URL path
// segment as it is.
func isGroupIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// IsHex64 reports whether s is 64 hexadecimal digits of either case.
func IsHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// IsLowerHex64 reports whether s is 64 lowercase hexadecimal digits, the
// form of every event id and pubkey on the wire.
func IsLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// DecodeHex decodes s, 2n hexadecimal digits of either case, to n bytes.
func DecodeHex(s string, n int) ([]byte, error) {
	if len(s) != 2*n {
		return nil, fmt.Errorf("want %d hex characters, got %d", 2*n, len(s))
	}
	return hex.DecodeString(s)
}

// ID32 is an event id or pubkey given in hex of either case as its 32
// bytes; ok is false when s is not 64 hexadecimal digits.
func ID32(s string) (b []byte, ok bool) {
	if !IsHex64(s) {
		return nil, false
	}
	b, _ = hex.DecodeString(s)
	return b, true
}
