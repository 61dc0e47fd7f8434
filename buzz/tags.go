package buzz

import (
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

// ChannelOf returns the channel an event belongs to: the value of its `h` tag,
// or "" when it has none. An event may name one channel only, possibly in
// several identical tags, and only by a channel id (CW-2).
func ChannelOf(tags nostr.Tags) (string, error) {
	channel := ""
	for _, tag := range tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		switch {
		case !IsChannelID(tag[1]):
			return "", ErrNotChannelID
		case channel == "":
			channel = tag[1]
		case channel != tag[1]:
			return "", ErrSeveralChannels
		}
	}
	return channel, nil
}
