package nipcw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// RequestError is a request the relay answers with 400; Error() is the exact
// message of the contract.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

func badRequest(msg string) *RequestError { return &RequestError{Message: msg} }

// The 400 messages of the contract (RL-16, RL-19, RL-20, CW-2, CW-5).
var (
	ErrTooManyFilters    = badRequest("too many filters")
	ErrTooManyChannels   = badRequest("too many explicit channels")
	ErrWindowChannel     = badRequest("top_level requires exactly one #h channel")
	ErrWindowBeforeID    = badRequest("top_level: before_id must be a 64-hex event id")
	ErrWindowHalfCursor  = badRequest("top_level cursor requires both until and before_id, or neither")
	ErrWindowUntil       = badRequest("top_level: until is out of range")
	ErrBeforeID          = badRequest("before_id must be a 64-char hex event id")
	ErrBeforeIDNeedUntil = badRequest("before_id requires until to be set")
	ErrThreadCursorID    = badRequest("thread_cursor_id must be a 64-char hex event id")
	ErrThreadCursorAlone = badRequest("thread_cursor_id requires thread_cursor")
	ErrThreadCursor      = badRequest("thread_cursor must be a non-negative integer")
)

func invalidFilters(format string, a ...any) *RequestError {
	return badRequest("invalid filters: " + fmt.Sprintf(format, a...))
}

// Bounds of one request (RL-16) and of each path's pages.
const (
	MaxFilters        = 32
	MaxChannels       = 128
	WindowLimit       = 50
	MaxWindowLimit    = 200
	ThreadLimit       = 100
	MaxThreadLimit    = 500
	GenericLimit      = 1000
	MaxDepthLimit     = 4294967295
	AuxPageSize       = 1000
	MaxAuxPagesPerHop = 64
	// MaxFilterValues bounds each list of a filter (ids, authors, kinds,
	// each tag's values) and MaxFilterTotal all of them together: the store
	// binds every value as an SQLite variable, at most 32766 a statement,
	// and a request past that would be an internal error, not a refusal.
	MaxFilterValues = 1000
	MaxFilterTotal  = 20 * MaxFilterValues
)

// TooManyValues says why f has more values than a filter may have, "" when
// it has not (the WebSocket surface applies the same bound).
func TooManyValues(f nostr.Filter) string {
	n := len(f.IDs) + len(f.Authors) + len(f.Kinds)
	if len(f.IDs) > MaxFilterValues || len(f.Authors) > MaxFilterValues || len(f.Kinds) > MaxFilterValues {
		return fmt.Sprintf("a filter list has more than %d values", MaxFilterValues)
	}
	for _, values := range f.Tags {
		if len(values) > MaxFilterValues {
			return fmt.Sprintf("a filter list has more than %d values", MaxFilterValues)
		}
		n += len(values)
	}
	if n > MaxFilterTotal {
		return fmt.Sprintf("a filter has more than %d values", MaxFilterTotal)
	}
	return ""
}

// Filter is one filter of a `/query` body with the path that serves it
// (RL-18): exactly one of the four is set.
type Filter struct {
	Window  *WindowRequest
	Feed    *FeedRequest
	Thread  *ThreadRequest
	Generic *GenericRequest
}

// WindowRequest is a filter with `top_level: true` (CW-1..CW-7).
type WindowRequest struct {
	// Channel is the one #h value, canonical (CW-2).
	Channel string
	// Kinds restricts the kinds of rows; nil or empty: no restriction (CW-6).
	Kinds []int
	// Limit is the row budget, 1..200 (CW-4).
	Limit            int
	IncludeSummaries bool
	IncludeAux       bool

	// Everything else is checked only once the channel is known to be
	// readable (CW-3): a malformed cursor, limit or kinds list on an
	// inaccessible channel is no error.
	until, beforeID, kinds, limit json.RawMessage
}

// Check reads the rest of the filter once the channel is known to be
// readable: the cursor (nil for a head request, or the 400 of CW-5, checked
// in its order: a malformed before_id, a half cursor, until), then kinds
// and limit, which it sets.
func (w *WindowRequest) Check() (*Cursor, error) {
	cursor, err := w.cursor()
	if err != nil {
		return nil, err
	}
	if present(w.kinds) {
		if err := json.Unmarshal(w.kinds, &w.Kinds); err != nil {
			return nil, invalidFilters("kinds must be a list of integers")
		}
		if len(w.Kinds) > MaxFilterValues {
			return nil, invalidFilters("a filter list has more than %d values", MaxFilterValues)
		}
	}
	if present(w.limit) {
		// Any number is a row budget, clamped (CW-4): 5.0 is 5, 1e9 is 200.
		n, err := strconv.ParseFloat(string(bytes.TrimSpace(w.limit)), 64)
		if err != nil {
			return nil, invalidFilters("limit must be a number")
		}
		w.Limit = int(min(max(n, 1), MaxWindowLimit))
	}
	return cursor, nil
}

func (w *WindowRequest) cursor() (*Cursor, error) {
	hasUntil, hasBefore := present(w.until), present(w.beforeID)
	var id string
	if hasBefore {
		if json.Unmarshal(w.beforeID, &id) != nil || !IsHex64(id) {
			return nil, ErrWindowBeforeID
		}
	}
	if hasUntil != hasBefore {
		return nil, ErrWindowHalfCursor
	}
	if !hasUntil {
		return nil, nil
	}
	until, err := strconv.ParseInt(string(bytes.TrimSpace(w.until)), 10, 64)
	if err != nil || until < 0 {
		return nil, ErrWindowUntil
	}
	return &Cursor{CreatedAt: until, ID: strings.ToLower(id)}, nil
}

// ThreadRequest is a filter with `depth_limit` and one `#e` id (RL-20).
type ThreadRequest struct {
	// Root is the event whose replies are asked for, lowercase hex.
	Root string
	// DepthLimit is how many levels below Root are served.
	DepthLimit uint32
	// Limit is 0..500.
	Limit int
	// After is the cursor: replies strictly after it in `created_at ASC,
	// id ASC` order; an empty ID means after the whole second.
	After      *Cursor
	IncludeAux bool
}

// GenericRequest is any other filter: NIP-01 with the composite cursor of
// RL-19.
type GenericRequest struct {
	Filter nostr.Filter
	// BeforeID, with Filter.Until, continues strictly after (until,
	// before_id) in `created_at DESC, id ASC` order; "" when absent.
	BeforeID string
}

// ParseBody reads a `/query` body: a JSON array of filter objects, each
// assigned its path (RL-16, RL-18). Any error refuses the whole request.
func ParseBody(body []byte) ([]Filter, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil || raws == nil {
		return nil, invalidFilters("want a JSON array of filter objects")
	}
	if len(raws) > MaxFilters {
		return nil, ErrTooManyFilters
	}
	objects := make([]map[string]json.RawMessage, len(raws))
	channels := 0
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &objects[i]); err != nil || objects[i] == nil {
			return nil, invalidFilters("filter %d is not a JSON object", i)
		}
		var hs []json.RawMessage
		if h, ok := objects[i]["#h"]; ok && json.Unmarshal(h, &hs) == nil {
			channels += len(hs)
		}
	}
	if channels > MaxChannels {
		return nil, ErrTooManyChannels
	}
	filters := make([]Filter, len(raws))
	for i, obj := range objects {
		var err error
		feed, isFeed := feedTypes(obj)
		switch {
		case isTrue(obj["top_level"]):
			filters[i].Window, err = parseWindow(obj)
		case isFeed:
			filters[i].Feed, err = parseFeed(obj, feed)
		case isThread(obj):
			filters[i].Thread, err = parseThread(obj)
		default:
			filters[i].Generic, err = parseGeneric(raws[i], obj)
		}
		if err != nil {
			return nil, err
		}
	}
	return filters, nil
}

// isTrue is the literal-true rule of CW-1: only the JSON boolean true.
func isTrue(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "true" }

// present reports whether a key was given a value other than null.
func present(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) > 0 && string(t) != "null"
}

func parseWindow(obj map[string]json.RawMessage) (*WindowRequest, error) {
	var hs []string
	if json.Unmarshal(obj["#h"], &hs) != nil {
		return nil, ErrWindowChannel
	}
	channel := ""
	for _, h := range hs {
		c, ok := ParseChannelID(h)
		if !ok || (channel != "" && c != channel) {
			return nil, ErrWindowChannel
		}
		channel = c
	}
	if channel == "" {
		return nil, ErrWindowChannel
	}
	w := &WindowRequest{
		Channel:          channel,
		Limit:            WindowLimit,
		IncludeSummaries: isTrue(obj["include_summaries"]),
		IncludeAux:       isTrue(obj["include_aux"]),
		until:            obj["until"],
		beforeID:         obj["before_id"],
		kinds:            obj["kinds"],
		limit:            obj["limit"],
	}
	return w, nil
}

// isThread reports whether a filter takes the thread path (RL-20): a
// depth_limit that is an integer 0..4294967295 and exactly one #e value
// that is a 64-hex id.
func isThread(obj map[string]json.RawMessage) bool {
	if _, err := strconv.ParseUint(string(bytes.TrimSpace(obj["depth_limit"])), 10, 32); err != nil {
		return false
	}
	var es []string
	return json.Unmarshal(obj["#e"], &es) == nil && len(es) == 1 && IsHex64(es[0])
}

func parseThread(obj map[string]json.RawMessage) (*ThreadRequest, error) {
	depth, _ := strconv.ParseUint(string(bytes.TrimSpace(obj["depth_limit"])), 10, 32)
	var es []string
	_ = json.Unmarshal(obj["#e"], &es) // checked by isThread
	t := &ThreadRequest{
		Root:       strings.ToLower(es[0]),
		DepthLimit: uint32(depth),
		Limit:      ThreadLimit,
		IncludeAux: isTrue(obj["include_aux"]),
	}
	cursor, cursorID := either(obj, "thread_cursor", "threadCursor"), either(obj, "thread_cursor_id", "threadCursorId")
	if present(cursorID) {
		var id string
		if json.Unmarshal(cursorID, &id) != nil || !IsHex64(id) {
			return nil, ErrThreadCursorID
		}
		if !present(cursor) {
			return nil, ErrThreadCursorAlone
		}
		t.After = &Cursor{ID: strings.ToLower(id)}
	}
	if present(cursor) {
		ts, err := integer(cursor)
		if err != nil || ts < 0 {
			return nil, ErrThreadCursor
		}
		if t.After == nil {
			t.After = &Cursor{}
		}
		t.After.CreatedAt = ts
	}
	var err error
	if t.Limit, err = integerLimit(obj, ThreadLimit, MaxThreadLimit); err != nil {
		return nil, err
	}
	return t, nil
}

// integerLimit reads the `limit` of a thread or feed filter: an integer,
// at most maximum; absent, null or negative, it is def.
func integerLimit(obj map[string]json.RawMessage, def, maximum int) (int, error) {
	if !present(obj["limit"]) {
		return def, nil
	}
	n, err := integer(obj["limit"])
	if err != nil {
		return 0, invalidFilters("limit must be an integer")
	}
	if n < 0 {
		return def, nil
	}
	return int(min(n, int64(maximum))), nil
}

// either returns the value of the first of two spellings of a key.
func either(obj map[string]json.RawMessage, names ...string) json.RawMessage {
	for _, n := range names {
		if v, ok := obj[n]; ok {
			return v
		}
	}
	return nil
}

func parseGeneric(raw json.RawMessage, obj map[string]json.RawMessage) (*GenericRequest, error) {
	g := &GenericRequest{}
	if present(obj["before_id"]) {
		if json.Unmarshal(obj["before_id"], &g.BeforeID) != nil || !IsHex64(g.BeforeID) {
			return nil, ErrBeforeID
		}
		g.BeforeID = strings.ToLower(g.BeforeID)
	}
	if err := json.Unmarshal(raw, &g.Filter); err != nil {
		return nil, invalidFilters("%v", err)
	}
	if g.BeforeID != "" && g.Filter.Until == nil {
		return nil, ErrBeforeIDNeedUntil
	}
	if why := TooManyValues(g.Filter); why != "" {
		return nil, invalidFilters("%s", why)
	}
	switch {
	case g.Filter.LimitZero:
		g.Filter.Limit = 0
	case g.Filter.Limit <= 0 || g.Filter.Limit > GenericLimit:
		g.Filter.Limit = GenericLimit
	}
	return g, nil
}

// integer reads a JSON number that is an integer.
func integer(v json.RawMessage) (int64, error) {
	return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
}
