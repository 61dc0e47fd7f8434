package nipcw

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// FeedExtension is the name NIP-11 `supported_extensions` gives the home
// feed, beside "nip-cw" (RL-35).
const FeedExtension = "nip-cw-feed"

// The feed types of RL-35, as a FeedRequest names them.
const (
	FeedMentions    = "mentions"
	FeedNeedsAction = "needs_action"
	FeedActivity    = "activity"
)

// feedAliases maps every name a client may give a feed type to the type:
// `agent_activity` is Buzz's name for `activity`.
var feedAliases = map[string]string{
	FeedMentions:     FeedMentions,
	FeedNeedsAction:  FeedNeedsAction,
	FeedActivity:     FeedActivity,
	"agent_activity": FeedActivity,
}

// FeedType is the type a client's name for one stands for (an alias names
// its type), ok false for a name that is none.
func FeedType(name string) (string, bool) {
	t, ok := feedAliases[name]
	return t, ok
}

// Feed limits (RL-35): the events one feed filter serves, across its types.
const (
	FeedLimit    = 20
	MaxFeedLimit = 100
)

// FeedRequest is a filter with `feed_types` (RL-35): the home feed of the
// requester.
type FeedRequest struct {
	// Types are the known types asked for, canonical, each once, in the
	// order given: they are served in this order. Empty when the filter
	// named none that is known: it then serves nothing.
	Types []string
	// Since, when set, leaves out events older than it.
	Since *int64
	// Before, when set, continues each type strictly after (until,
	// before_id) in `created_at DESC, id ASC` order, as RL-19 pages the
	// generic path; an empty ID (until alone) leaves out events newer
	// than until.
	Before *Cursor
	// Limit is how many events the filter serves, 0..100, across its types.
	Limit int
}

// feedTypes reads `feed_types`: its string members, or ok false when it is
// not an array or has none, and the filter is then no feed filter.
func feedTypes(obj map[string]json.RawMessage) (names []string, ok bool) {
	var members []json.RawMessage
	if json.Unmarshal(obj["feed_types"], &members) != nil {
		return nil, false
	}
	for _, m := range members {
		var name string
		if m = bytes.TrimSpace(m); len(m) > 0 && m[0] == '"' && json.Unmarshal(m, &name) == nil {
			names = append(names, name)
		}
	}
	return names, len(names) > 0
}

// parseFeed reads a feed filter whose `feed_types` are names: unknown and
// repeated types are skipped (an alias repeats its type), `since`, `until`
// and `limit` are integers, `before_id` is RL-19's: a 64-hex id (checked
// first) that needs `until`. Every other key is ignored.
func parseFeed(obj map[string]json.RawMessage, names []string) (*FeedRequest, error) {
	f := &FeedRequest{}
	for _, name := range names {
		if t, ok := FeedType(name); ok && !slices.Contains(f.Types, t) {
			f.Types = append(f.Types, t)
		}
	}
	var beforeID string
	if present(obj["before_id"]) {
		if json.Unmarshal(obj["before_id"], &beforeID) != nil || !IsHex64(beforeID) {
			return nil, ErrBeforeID
		}
	}
	if present(obj["until"]) {
		until, err := integer(obj["until"])
		if err != nil {
			return nil, invalidFilters("until must be an integer")
		}
		f.Before = &Cursor{CreatedAt: until, ID: strings.ToLower(beforeID)}
	} else if beforeID != "" {
		return nil, ErrBeforeIDNeedUntil
	}
	if present(obj["since"]) {
		since, err := integer(obj["since"])
		if err != nil {
			return nil, invalidFilters("since must be an integer")
		}
		f.Since = &since
	}
	var err error
	if f.Limit, err = integerLimit(obj, FeedLimit, MaxFeedLimit); err != nil {
		return nil, err
	}
	return f, nil
}
