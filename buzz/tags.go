package buzz

import (
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// ThreadTags is what an event's NIP-10 marked tags say about its place in a
// thread (CW-10, CW-11).
type ThreadTags struct {
	// Parent is the lowercase hex id named by the last valid `reply`
	// marker, else by the last valid `root` marker: NIP-10 marks a direct
	// reply to the root with `root` alone (CW-10, as nostr-tools'
	// nip10.parse reads it). Empty when the event is not a reply.
	Parent string
	// Root is the lowercase hex id named by the last valid `root` marker;
	// empty when there is none.
	Root string
	// Broadcast is set by the exact tag ["broadcast","1"].
	Broadcast bool
}

// ParseThreadTags reads the thread markers of tags. A marked tag is valid when
// it has at least four elements, is an `e` tag, and names an id of exactly 64
// hex characters in either case; malformed ones are ignored, and of several
// valid tags with the same marker the last wins. A valid `root` marker
// without a valid `reply` one makes a direct reply to that root. Unmarked
// (positional) `e` tags never make a reply.
func ParseThreadTags(tags nostr.Tags) ThreadTags {
	var t ThreadTags
	for _, tag := range tags {
		if len(tag) == 2 && tag[0] == "broadcast" && tag[1] == "1" {
			t.Broadcast = true
			continue
		}
		if len(tag) < 4 || tag[0] != "e" || !nipcw.IsHex64(tag[1]) {
			continue
		}
		switch tag[3] {
		case "reply":
			t.Parent = strings.ToLower(tag[1])
		case "root":
			t.Root = strings.ToLower(tag[1])
		}
	}
	if t.Parent == "" {
		t.Parent = t.Root
	}
	return t
}

// ChannelOf returns the channel an event belongs to: the channel id its
// `h` tag names, or "" when it has none. An event may name one channel
// only, possibly in several tags, and only by a channel id (CW-2); a UUID
// in any spelling names the channel of its canonical form, the id the
// window and the group state go by, so that every event of a channel is
// in its window however its author spelled the UUID.
func ChannelOf(tags nostr.Tags) (string, error) {
	channel := ""
	for _, tag := range tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		id, ok := nipcw.ParseChannelID(tag[1])
		switch {
		case !ok:
			return "", ErrNotChannelID
		case channel == "":
			channel = id
		case channel != id:
			return "", ErrSeveralChannels
		}
	}
	return channel, nil
}

// IsTagName reports whether name is a tag name NIP-01 filters can address:
// a single ASCII letter.
func IsTagName(name string) bool {
	return len(name) == 1 && ('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z')
}

// IndexedTags lists the (name, value) pairs of an event's tags that the
// tag index holds (RL-3): of single-letter tags other than h (the channel,
// a column of its own), each pair once.
func IndexedTags(tags nostr.Tags) [][2]string {
	pairs := make([][2]string, 0, len(tags))
	seen := make(map[[2]string]bool, len(tags))
	for _, tag := range tags {
		if len(tag) < 2 || !IsTagName(tag[0]) || tag[0] == "h" {
			continue
		}
		k := [2]string{tag[0], tag[1]}
		if !seen[k] {
			seen[k] = true
			pairs = append(pairs, k)
		}
	}
	return pairs
}

// Expiration is the NIP-40 expiration of an event with tags: the first
// `expiration` tag's value; ok is false when there is none or it is no
// whole number, and the event then never expires.
func Expiration(tags nostr.Tags) (at int64, ok bool) {
	for _, tag := range tags {
		if len(tag) >= 2 && tag[0] == "expiration" {
			ts, err := strconv.ParseInt(tag[1], 10, 64)
			return ts, err == nil
		}
	}
	return 0, false
}
