package nipcw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// This file is the client side of the contract (CL-1..CL-6): it checks that
// a `/query` response to one window filter is a usable page and splits it by
// kind. It does no I/O.

// MaxParticipants bounds the participants of a thread summary (CW-19).
const MaxParticipants = 10

// Page is a validated window page, partitioned by kind (CL-6): rows, aux
// events and overlays kept apart.
type Page struct {
	// Channel is the channel of the page, canonical (CW-2).
	Channel string
	// Request is the request cursor this page answers, id lowercase; nil
	// for the head (CW-20).
	Request *Cursor
	// Rows are the rows, in window order: created_at DESC, id ASC (CW-15).
	Rows []*nostr.Event
	// Aux are the aux events (kinds 5, 7, 9005, 40003), as received (CW-18).
	Aux []*nostr.Event
	// Summaries are the thread summaries by row id, lowercase (CW-19);
	// never nil. A row without one has no non-deleted reply.
	Summaries map[string]Summary
	// Bounds is the content of the bounds overlay (CW-20), its next
	// cursor's id lowercase.
	Bounds Bounds
	// Overlays are the 39005 and 39006 events as received: metadata only,
	// never messages and never cursor input; a cache of summaries keys them
	// by their d tag and keeps the latest by created_at (CL-6).
	Overlays []*nostr.Event
}

// Next is the request cursor of the page after p: until =
// next_cursor.created_at, before_id = next_cursor.id; nil when the window
// is exhausted. Exhaustion comes from has_more only, never from the row
// count (CL-1).
func (p *Page) Next() *Cursor {
	if p == nil || !p.Bounds.HasMore || p.Bounds.NextCursor == nil {
		return nil
	}
	c := *p.Bounds.NextCursor
	return &c
}

// SameLineage reports whether two pages' bounds belong to one window
// lineage: thread_replies_in_channel did not change between them. When it
// did, the client refetches from the head and never mixes pages of both
// modes (CL-5).
func SameLineage(a, b Bounds) bool {
	return a.ThreadRepliesInChannel == b.ThreadRepliesInChannel
}

// PageError is a response that breaks the contract: the page is unusable,
// the client discards it and may retry or fall back to a standard filter
// (CL-2, CL-3, CW-24).
type PageError struct {
	// Reason names what is wrong, e.g. "no bounds overlay".
	Reason string
	// Index is the position in the response of the event at fault, -1 when
	// the fault is no one event's.
	Index int
}

func (e *PageError) Error() string {
	if e.Index < 0 {
		return "nipcw: unusable window page: " + e.Reason
	}
	return fmt.Sprintf("nipcw: unusable window page: %s (event %d)", e.Reason, e.Index)
}

func unusable(i int, format string, a ...any) *PageError {
	return &PageError{Reason: fmt.Sprintf(format, a...), Index: i}
}

// ValidatePage checks that evs, the whole response to a `/query` body whose
// only filter was a window request for channel at the request cursor sent
// (nil for a head request), is a usable page (CL-2, CL-3), and partitions
// it (CL-6). relay is the relay's pubkey (NIP-11 `self`, or configured):
// when set, every overlay must be signed by it; "" trusts an authenticated
// transport for the overlays' signer (CL-3).
//
// ValidatePage verifies the id and signature of every event, rows and aux
// included: use it for any page that did not come over an authenticated
// transport. CheckPage does the same checks but the signatures of rows and
// aux events.
//
// A page that breaks the contract is a *PageError; any other error is a
// malformed argument: a channel that is not a channel id (CW-2), a sent cursor that
// could not have been sent (CW-5), or a relay that is not a 64-hex pubkey.
func ValidatePage(evs []*nostr.Event, channel string, sent *Cursor, relay string) (*Page, error) {
	return validatePage(evs, channel, sent, relay, true)
}

// CheckPage is ValidatePage without the Schnorr verification of rows and
// aux events, the bulk of its cost: their ids are still checked, and the
// overlays are verified as ValidatePage does when relay is set. Use it only
// over an authenticated transport (CL-3), or verify the rows and aux events
// with VerifyEvents.
func CheckPage(evs []*nostr.Event, channel string, sent *Cursor, relay string) (*Page, error) {
	return validatePage(evs, channel, sent, relay, false)
}

// VerifyEvents checks the id and signature of every event: what a client
// does with every event it did not get over an authenticated transport, and
// with every event of the standard filter path when it can neither trust
// the transport nor knows the relay's key (CL-3). The error is a
// *PageError.
func VerifyEvents(evs []*nostr.Event) error {
	for i, ev := range evs {
		if ev == nil {
			return unusable(i, "null event")
		}
		if !ev.CheckID() {
			return unusable(i, "event id does not match its content")
		}
		if !validSig(ev) {
			return unusable(i, "event signature is invalid")
		}
	}
	return nil
}

func validSig(ev *nostr.Event) bool {
	ok, err := ev.CheckSignature()
	return ok && err == nil
}

// indexed is an event with its position in the response.
type indexed struct {
	ev *nostr.Event
	i  int
}

func validatePage(evs []*nostr.Event, channel string, sent *Cursor, relay string, verify bool) (*Page, error) {
	ch, ok := ParseChannelID(channel)
	if !ok {
		return nil, fmt.Errorf("nipcw: channel %q is not a channel id", channel)
	}
	if sent != nil {
		if sent.CreatedAt < 0 || !IsHex64(sent.ID) {
			return nil, errors.New("nipcw: the sent cursor needs a non-negative created_at and a 64-hex id")
		}
		sent = &Cursor{CreatedAt: sent.CreatedAt, ID: strings.ToLower(sent.ID)}
	}
	if relay != "" && !IsHex64(relay) {
		return nil, fmt.Errorf("nipcw: relay pubkey %q is not 64 hex characters", relay)
	}

	// Partition by kind (CL-6); each event at most once (CW-18).
	p := &Page{Channel: ch, Request: sent, Summaries: map[string]Summary{}}
	var rows, aux, summaries, bounds []indexed
	seen := make(map[string]bool, len(evs))
	for i, ev := range evs {
		if ev == nil {
			return nil, unusable(i, "null event")
		}
		if seen[ev.ID] {
			return nil, unusable(i, "duplicate event")
		}
		seen[ev.ID] = true
		switch {
		case ev.Kind == KindWindowBounds:
			bounds = append(bounds, indexed{ev, i})
		case ev.Kind == KindThreadSummary:
			summaries = append(summaries, indexed{ev, i})
		case IsAuxKind(ev.Kind):
			aux = append(aux, indexed{ev, i})
		default:
			rows = append(rows, indexed{ev, i})
		}
	}
	switch len(bounds) {
	case 0:
		return nil, unusable(-1, "no bounds overlay")
	case 1:
	default:
		return nil, unusable(bounds[1].i, "%d bounds overlays", len(bounds))
	}

	// Trust first (CL-3): nothing an overlay says counts before its id,
	// signer and signature do.
	for _, o := range append(append([]indexed{}, bounds...), summaries...) {
		if err := checkOverlay(o, relay, verify); err != nil {
			return nil, err
		}
	}

	b := bounds[0]
	if err := checkBounds(b, ch, sent, &p.Bounds); err != nil {
		return nil, err
	}
	next := p.Bounds.NextCursor
	if sent != nil && next != nil && !precedes(sent.CreatedAt, sent.ID, next.CreatedAt, next.ID) {
		return nil, unusable(b.i, "next_cursor does not advance past the request cursor")
	}

	rowIDs, pageRows, err := checkRows(rows, ch, sent, next, verify)
	if err != nil {
		return nil, err
	}
	p.Rows = pageRows

	// Summaries: one per row with replies, none for anything else (CW-19).
	for _, s := range summaries {
		id, sm, err := checkSummary(s, ch, rowIDs)
		if err != nil {
			return nil, err
		}
		if _, dup := p.Summaries[id]; dup {
			return nil, unusable(s.i, "2 summaries for one row")
		}
		p.Summaries[id] = sm
	}

	// Aux: verified; a reaction or an edit is only ever a hop-1 event, so it
	// names a row of the page. A deletion may be a hop-2 event naming a
	// hop-1 event that is itself deleted and not served (CW-18): it is not
	// checked against the page.
	for _, a := range aux {
		ev := a.ev
		if !ev.CheckID() {
			return nil, unusable(a.i, "aux event id does not match its content")
		}
		if verify && !validSig(ev) {
			return nil, unusable(a.i, "aux event signature is invalid")
		}
		if (ev.Kind == KindReaction || ev.Kind == KindEdit) && !namesRow(ev, rowIDs) {
			return nil, unusable(a.i, "aux event names no row of the page")
		}
		p.Aux = append(p.Aux, ev)
	}

	for _, s := range summaries {
		p.Overlays = append(p.Overlays, s.ev)
	}
	p.Overlays = append(p.Overlays, b.ev)
	return p, nil
}

// checkRows checks the rows of a page: verified, in the channel, in
// window order, after the request cursor and not past next_cursor (CW-15,
// CW-17). It returns their ids (lowercase) and events.
func checkRows(rows []indexed, ch string, sent, next *Cursor, verify bool) (ids map[string]bool, out []*nostr.Event, err *PageError) {
	ids = make(map[string]bool, len(rows))
	for n, r := range rows {
		ev := r.ev
		if !IsClassifiedKind(ev.Kind) {
			return nil, nil, unusable(r.i, "kind %d is never a row", ev.Kind)
		}
		if !ev.CheckID() {
			return nil, nil, unusable(r.i, "row id does not match its content")
		}
		if verify && !validSig(ev) {
			return nil, nil, unusable(r.i, "row signature is invalid")
		}
		if !inChannel(ev, ch) {
			return nil, nil, unusable(r.i, "row is not in the channel")
		}
		id := strings.ToLower(ev.ID)
		at := int64(ev.CreatedAt)
		if n > 0 {
			prev := rows[n-1].ev
			if !precedes(int64(prev.CreatedAt), strings.ToLower(prev.ID), at, id) {
				return nil, nil, unusable(r.i, "rows out of order")
			}
		}
		if sent != nil && !precedes(sent.CreatedAt, sent.ID, at, id) {
			return nil, nil, unusable(r.i, "row is not after the request cursor")
		}
		if next != nil && precedes(next.CreatedAt, next.ID, at, id) {
			return nil, nil, unusable(r.i, "row lies past next_cursor")
		}
		ids[id] = true
		out = append(out, ev)
	}
	return ids, out, nil
}

// checkOverlay is CL-3 for one overlay: its id always; with relay set its
// signer and signature; with verify its signature in any case.
func checkOverlay(o indexed, relay string, verify bool) *PageError {
	if !o.ev.CheckID() {
		return unusable(o.i, "overlay id does not match its content")
	}
	if relay != "" && !equalFold(o.ev.PubKey, relay) {
		return unusable(o.i, "overlay signed by another key")
	}
	if (relay != "" || verify) && !validSig(o.ev) {
		return unusable(o.i, "overlay signature is invalid")
	}
	return nil
}

// checkBounds checks the bounds overlay's tags, its binding to the request
// and its content (CW-20, CL-2), and sets out.
func checkBounds(b indexed, ch string, sent *Cursor, out *Bounds) *PageError {
	tags, why := exactTags(b.ev.Tags, "d", "h")
	if why != "" {
		return unusable(b.i, "bounds tags: %s", why)
	}
	if !equalFold(tags["h"], ch) {
		return unusable(b.i, "bounds h tag is not the channel")
	}
	if d := tags["d"]; !equalFold(d, BoundsD(ch, sent)) {
		if len(d) <= len(ch) || !equalFold(d[:len(ch)+1], ch+":") {
			return unusable(b.i, "bounds d tag does not echo the channel")
		}
		return unusable(b.i, "bounds d tag does not echo the request cursor")
	}
	f, why := object(b.ev.Content)
	if why != "" {
		return unusable(b.i, "bounds content %s", why)
	}
	if out.HasMore, why = boolField(f, "has_more"); why != "" {
		return unusable(b.i, "bounds content: %s", why)
	}
	raw, ok := f["next_cursor"]
	switch {
	case !ok:
		return unusable(b.i, "bounds content: next_cursor is missing")
	case isNull(raw):
	default:
		nf, why := object(string(raw))
		if why != "" {
			return unusable(b.i, "bounds content: next_cursor is not null or an object")
		}
		c := &Cursor{}
		var set bool
		if c.CreatedAt, set, why = intField(nf, "created_at", "next_cursor."); why != "" {
			return unusable(b.i, "bounds content: %s", why)
		}
		if !set {
			return unusable(b.i, "bounds content: next_cursor.created_at is not an integer")
		}
		if c.CreatedAt < 0 {
			// It would be an `until` the relay refuses (CW-5).
			return unusable(b.i, "bounds content: next_cursor.created_at is negative")
		}
		idRaw, ok := nf["id"]
		if !ok {
			return unusable(b.i, "bounds content: next_cursor.id is missing")
		}
		if json.Unmarshal(idRaw, &c.ID) != nil || !IsHex64(c.ID) {
			return unusable(b.i, "bounds content: next_cursor.id is not a 64-hex string")
		}
		c.ID = strings.ToLower(c.ID)
		out.NextCursor = c
	}
	if out.ThreadRepliesInChannel, why = boolField(f, "thread_replies_in_channel"); why != "" {
		return unusable(b.i, "bounds content: %s", why)
	}
	if out.HasMore != (out.NextCursor != nil) {
		return unusable(b.i, "has_more and next_cursor disagree")
	}
	return nil
}

// checkSummary checks a thread summary's tags and content (CW-19) and
// returns the row id it describes, lowercase.
func checkSummary(s indexed, ch string, rows map[string]bool) (string, Summary, *PageError) {
	var sm Summary
	tags, why := exactTags(s.ev.Tags, "e", "d", "h")
	if why != "" {
		return "", sm, unusable(s.i, "summary tags: %s", why)
	}
	if !equalFold(tags["h"], ch) {
		return "", sm, unusable(s.i, "summary h tag is not the channel")
	}
	if !equalFold(tags["e"], tags["d"]) {
		return "", sm, unusable(s.i, "summary e and d tags differ")
	}
	if !IsHex64(tags["d"]) {
		return "", sm, unusable(s.i, "summary d tag is not a 64-hex id")
	}
	id := strings.ToLower(tags["d"])
	if !rows[id] {
		return "", sm, unusable(s.i, "summary for an id that is not a row of the page")
	}
	f, why := object(s.ev.Content)
	if why != "" {
		return "", sm, unusable(s.i, "summary content %s", why)
	}
	for _, c := range []struct {
		name string
		v    *int64
	}{{"reply_count", &sm.ReplyCount}, {"descendant_count", &sm.DescendantCount}} {
		if _, ok := f[c.name]; !ok {
			return "", sm, unusable(s.i, "summary content: %s is missing", c.name)
		}
		n, set, why := intField(f, c.name, "")
		if why != "" || !set || n < 0 {
			return "", sm, unusable(s.i, "summary content: %s is not a non-negative integer", c.name)
		}
		*c.v = n
	}
	if sm.ReplyCount > sm.DescendantCount {
		return "", sm, unusable(s.i, "summary content: reply_count exceeds descendant_count")
	}
	if sm.DescendantCount == 0 {
		return "", sm, unusable(s.i, "summary for a row without replies")
	}
	if _, ok := f["last_reply_at"]; !ok {
		return "", sm, unusable(s.i, "summary content: last_reply_at is missing")
	}
	at, set, why := intField(f, "last_reply_at", "")
	if why != "" {
		return "", sm, unusable(s.i, "summary content: last_reply_at is not an integer or null")
	}
	if set {
		sm.LastReplyAt = &at
	}
	raw, ok := f["participants"]
	if !ok {
		return "", sm, unusable(s.i, "summary content: participants is missing")
	}
	if json.Unmarshal(raw, &sm.Participants) != nil || sm.Participants == nil {
		return "", sm, unusable(s.i, "summary content: participants is not a list of 64-hex pubkeys")
	}
	if len(sm.Participants) > MaxParticipants {
		return "", sm, unusable(s.i, "summary content: more than %d participants", MaxParticipants)
	}
	distinct := make(map[string]bool, len(sm.Participants))
	for i, pk := range sm.Participants {
		if !IsHex64(pk) {
			return "", sm, unusable(s.i, "summary content: participants is not a list of 64-hex pubkeys")
		}
		pk = strings.ToLower(pk)
		if distinct[pk] {
			return "", sm, unusable(s.i, "summary content: participants are not distinct")
		}
		distinct[pk] = true
		sm.Participants[i] = pk
	}
	return id, sm, nil
}

// exactTags checks that tags are exactly one tag of each name, each of
// exactly two elements, and returns their values by name; else why not.
func exactTags(tags nostr.Tags, names ...string) (map[string]string, string) {
	if len(tags) != len(names) {
		return nil, fmt.Sprintf("%d tags, want %d", len(tags), len(names))
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	values := make(map[string]string, len(names))
	for _, tag := range tags {
		if len(tag) != 2 {
			return nil, fmt.Sprintf("a tag of %d elements, want 2", len(tag))
		}
		if !want[tag[0]] {
			return nil, "an unexpected tag"
		}
		if _, dup := values[tag[0]]; dup {
			return nil, "a repeated tag"
		}
		values[tag[0]] = tag[1]
	}
	return values, ""
}

// inChannel reports whether ev names channel ch (canonical), and no other,
// in its h tags.
func inChannel(ev *nostr.Event, ch string) bool {
	found := false
	for _, tag := range ev.Tags {
		if len(tag) < 2 || tag[0] != "h" {
			continue
		}
		if id, ok := ParseChannelID(tag[1]); !ok || id != ch {
			return false
		}
		found = true
	}
	return found
}

// namesRow reports whether an e tag of ev names one of rows.
func namesRow(ev *nostr.Event, rows map[string]bool) bool {
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "e" && rows[strings.ToLower(tag[1])] {
			return true
		}
	}
	return false
}

// precedes reports whether position (aAt, aID) comes strictly before (bAt,
// bID) in window order, created_at DESC, id ASC, ids lowercase (CW-15).
func precedes(aAt int64, aID string, bAt int64, bID string) bool {
	if aAt != bAt {
		return aAt > bAt
	}
	return aID < bID
}

// object reads a JSON object, its keys exact (no case folding) and each at
// most once: two parsers that disagree on a repeated key would disagree on
// the page. Else it says why not.
func object(s string) (map[string]json.RawMessage, string) {
	if !json.Valid([]byte(s)) {
		return nil, "is not JSON"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, "is not a JSON object"
	}
	f := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, "is not a JSON object"
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "is not a JSON object"
		}
		if _, dup := f[key]; dup {
			return nil, "has a repeated key"
		}
		f[key] = v
	}
	return f, ""
}

// equalFold compares ASCII case-insensitively: ids, pubkeys, channels and
// `head` are ASCII, and Unicode folding would let "K" pass for "k".
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// boolField reads a required boolean: the JSON literals only.
func boolField(f map[string]json.RawMessage, name string) (bool, string) {
	raw, ok := f[name]
	if !ok {
		return false, name + " is missing"
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, ""
	case "false":
		return false, ""
	}
	return false, name + " is not a boolean"
}

// intField reads a required integer or null (set false): a JSON number
// written as an integer that fits int64, never a string, a fraction or an
// exponent.
func intField(f map[string]json.RawMessage, name, prefix string) (n int64, set bool, why string) {
	raw, ok := f[name]
	if !ok {
		return 0, false, prefix + name + " is missing"
	}
	if isNull(raw) {
		return 0, false, ""
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	if err != nil {
		return 0, false, prefix + name + " is not an integer"
	}
	return n, true, ""
}
