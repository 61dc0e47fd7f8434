package buzz

import (
	"fmt"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// DefaultLimit is what a filter without a limit gets. Callers clamp larger
// limits to their own bound (RL-27).
const DefaultLimit = 1000

// MatchesNothing spots, without the database, filters that can match no
// event (NIP-01): an empty list, a tag name that is not one indexed letter
// (a filter's "#emoji" arrives as "emoji"), a search term (NIP-50 is not
// supported).
func MatchesNothing(f nostr.Filter) bool {
	if f.Search != "" || (f.IDs != nil && len(f.IDs) == 0) ||
		(f.Authors != nil && len(f.Authors) == 0) || (f.Kinds != nil && len(f.Kinds) == 0) {
		return true
	}
	for name, values := range f.Tags {
		if values != nil && (len(values) == 0 || !IsTagName(name)) {
			return true
		}
	}
	return false
}

// CursorKey is the stored form of the composite cursor (f.Until,
// beforeID) of RL-19: the id's 32 bytes; nil for no beforeID.
func CursorKey(f nostr.Filter, beforeID string) ([]byte, error) {
	if beforeID == "" {
		return nil, nil
	}
	before, ok := nipcw.ID32(beforeID)
	if !ok || f.Until == nil {
		return nil, fmt.Errorf("before_id %q needs a 64-hex id and until", beforeID)
	}
	return before, nil
}

// QueryCursor is where a query of f continuing after beforeID starts:
// ok is false when f matches nothing (MatchesNothing), before is the
// cursor's stored form (CursorKey).
func QueryCursor(f nostr.Filter, beforeID string) (before []byte, ok bool, err error) {
	if MatchesNothing(f) {
		return nil, false, nil
	}
	if before, err = CursorKey(f, beforeID); err != nil {
		return nil, false, err
	}
	return before, true, nil
}

// FilterPlan is a NIP-01 filter as one store statement reads it: each
// condition decided once, for a store to write as SQL in this order, ids,
// authors, kinds, since, until and the cursor, the driving tag value, then
// Tags.
type FilterPlan struct {
	// IDs and Authors are the 32-byte keys of the filter's lists, the
	// values that are no 64-hex key left out; nil: no constraint.
	IDs, Authors [][]byte
	// Kinds is the filter's list; nil: no constraint.
	Kinds        []int
	Since, Until *int64
	// Before, with Until, continues strictly after (Until, Before) in
	// `created_at DESC, id ASC` order (RL-19); nil: no cursor.
	Before []byte
	// Drive, when Driven, is the name and value of the filter's one tag
	// constraint (the channel aside) of one value, no ids making it moot:
	// the statement reads that tag's index range itself, newest first, so
	// that a LIMIT stops the scan early however many events carry the
	// value (the common `#e`, `#p` lookups).
	Drive  [2]string
	Driven bool
	// Tags are the filter's other tag constraints, by name.
	Tags []TagFilter
	// Limit is the filter's limit, DefaultLimit when it has none.
	Limit int
}

// TagFilter is one tag constraint of a FilterPlan: for "h", the channels'
// numbers, each once; for another name, the values.
type TagFilter struct {
	Name     string
	Values   []string
	Channels []int64
}

// PlanFilter plans f for a statement continuing after before (RL-19,
// CursorKey; nil: no cursor). lookup finds the number of channel h in the read's snapshot
// (found false: no channel has that id). ok is false when f can match
// nothing, so no statement is needed.
func PlanFilter(f nostr.Filter, before []byte, lookup func(h string) (seq int64, found bool, err error)) (p FilterPlan, ok bool, err error) {
	if MatchesNothing(f) {
		return p, false, nil
	}
	p.Before = before
	if f.IDs != nil {
		if p.IDs = keys32(f.IDs); len(p.IDs) == 0 {
			return p, false, nil
		}
	}
	if f.Authors != nil {
		if p.Authors = keys32(f.Authors); len(p.Authors) == 0 {
			return p, false, nil
		}
	}
	p.Kinds = f.Kinds
	if f.Since != nil {
		since := int64(*f.Since)
		p.Since = &since
	}
	if f.Until != nil {
		until := int64(*f.Until)
		p.Until = &until
	}
	p.Drive, p.Driven = singleTagValue(f)
	names := make([]string, 0, len(f.Tags))
	for name, values := range f.Tags {
		// A nil list constrains nothing, as in go-nostr's Filter.Matches.
		if values != nil && !(p.Driven && name == p.Drive[0]) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // one statement text per filter shape
	for _, name := range names {
		t := TagFilter{Name: name, Values: f.Tags[name]}
		if name == "h" {
			if t.Channels, err = ChannelSeqs(t.Values, lookup); err != nil {
				return p, false, err
			}
			if len(t.Channels) == 0 {
				return p, false, nil
			}
			t.Values = nil
		}
		p.Tags = append(p.Tags, t)
	}
	if p.Limit = f.Limit; p.Limit <= 0 {
		p.Limit = DefaultLimit
	}
	return p, true, nil
}

// singleTagValue returns the name and value of a filter's only tag
// constraint (the channel aside), when it has exactly one value and no ids
// make it moot.
func singleTagValue(f nostr.Filter) ([2]string, bool) {
	var found [2]string
	n := 0
	for name, values := range f.Tags {
		if values == nil || name == "h" {
			continue
		}
		n++
		if len(values) != 1 || !IsTagName(name) {
			return found, false
		}
		found = [2]string{name, values[0]}
	}
	return found, n == 1 && f.IDs == nil
}

// keys32 decodes the 64-hex values of list (either case), dropping the rest.
func keys32(list []string) [][]byte {
	out := make([][]byte, 0, len(list))
	for _, v := range list {
		if b, ok := nipcw.ID32(v); ok {
			out = append(out, b)
		}
	}
	return out
}

// ChannelSeqs maps `h` values to channel numbers, each once, leaving out
// ids no channel has; lookup finds a channel's number (found false: no
// channel has that id). The values name channels as FilterChannels reads
// them.
func ChannelSeqs(hs []string, lookup func(h string) (int64, bool, error)) ([]int64, error) {
	channels := FilterChannels(hs)
	out := make([]int64, 0, len(channels))
	for _, h := range channels {
		seq, found, err := lookup(h)
		if err != nil {
			return nil, fmt.Errorf("look up channel: %w", err)
		}
		if found && !slices.Contains(out, seq) {
			out = append(out, seq)
		}
	}
	return out, nil
}

// FilterChannels is the channels a filter's `h` values name, each once: a
// UUID in any spelling names the channel of its canonical form, as the
// channel of an event so spelled is (ChannelOf) and as the window reads it
// (CW-2), so that a REQ for a channel finds its events, stored and live,
// however their h tags spell it. A value that is no channel id names no
// channel (no event can be in one).
func FilterChannels(hs []string) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		if id, ok := nipcw.ParseChannelID(h); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// EventChannel is the channel ev is in for a filter's `#h` (ChannelOf),
// "" when its h tags name none, several, or something that is no channel
// id: no filter's channel (FilterChannels) is "".
func EventChannel(ev *nostr.Event) string {
	channel, err := ChannelOf(ev.Tags)
	if err != nil {
		return ""
	}
	return channel
}
