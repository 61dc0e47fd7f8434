package relay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/sign"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// overlaySigner signs the thread summary and window bounds overlays with the
// relay identity key (RL-21, CW-21). A signature costs about as much as the
// database work of a whole page, and busy pages are asked for many times a
// second: signatures are cached by event id. A summary is dated when its
// thread last changed, so it keeps its id, and its signature, until then;
// a page's bounds are dated when served and signed at most once a second.
// The cache holds two generations of maxCachedSignatures: when the newer
// fills up it becomes the older, and the older is dropped.
type overlaySigner struct {
	key    *sign.Key
	pubkey string

	mu        sync.Mutex
	cur, prev map[string]string // event id -> signature

	// summaries keeps the summaries of window pages signed and encoded,
	// in two generations as signatures are (summaryJSON).
	summariesMu             sync.Mutex
	summaries, oldSummaries map[string]*encodedSummary // row id -> its summary
}

const (
	// maxCachedSignatures bounds one generation of the signatures (some
	// 16 MB a generation, 32 MB for both): a deep page read again finds
	// its summaries' signatures here (a page's fifty signatures cost more
	// than reading it; with 4,096 the million-event bench's deep pages
	// were 2.4 times slower).
	maxCachedSignatures = 1 << 16
	// maxCachedSummaries bounds one generation of the encoded summaries:
	// the ten pages or so asked for most, 1-2 KB a summary (its JSON and
	// the participants it was made of). Under load
	// the relay's heap sits at its soft memory limit (tuneGC), where every
	// megabyte held for good makes the collector run more often for every
	// request: 8 MB of summaries cost the million-event bench a fifth of
	// its REQs and window pages a second.
	maxCachedSummaries = 1 << 9
)

func newOverlaySigner(key *sign.Key) *overlaySigner {
	return &overlaySigner{key: key, pubkey: key.PubKey(), cur: map[string]string{}, prev: map[string]string{},
		summaries: map[string]*encodedSummary{}, oldSummaries: map[string]*encodedSummary{}}
}

// encodedSummary is the signed summary overlay of a row as served: what
// it was made of, and its JSON.
type encodedSummary struct {
	channel string
	at      int64
	sum     nipcw.Summary
	json    []byte
}

// made reports whether e is the summary of sm in channel dated at.
func (e *encodedSummary) made(channel string, at int64, sm nipcw.Summary) bool {
	return e.channel == channel && e.at == at && e.sum.ReplyCount == sm.ReplyCount &&
		e.sum.DescendantCount == sm.DescendantCount &&
		(e.sum.LastReplyAt == nil) == (sm.LastReplyAt == nil) &&
		(sm.LastReplyAt == nil || *e.sum.LastReplyAt == *sm.LastReplyAt) &&
		slices.Equal(e.sum.Participants, sm.Participants)
}

// summaryJSON is the thread summary overlay of a row (CW-19) of sm in
// channel, signed and encoded: tags exactly e, d and h, content the
// counters, dated when the thread last changed (now when that is
// unknown). It is the one encoder of summaries, for pages and live
// pushes. A page asked for again serves the same summaries, and building,
// hashing and encoding fifty events a page was two fifths of what a cached
// window page cost the relay (issue 15): each is kept by its row, and used
// while the row's summary is what it was made of.
func (o *overlaySigner) summaryJSON(channel string, sm buzz.Summary, now int64) []byte {
	at := summaryDate(sm, now)
	o.summariesMu.Lock()
	e, ok := o.summaries[sm.ID]
	if !ok {
		// A summary asked for again moves to the newer generation, so
		// that the pages asked for all the time stay kept.
		if e, ok = o.oldSummaries[sm.ID]; ok {
			o.keepSummary(sm.ID, e)
		}
	}
	o.summariesMu.Unlock()
	if ok && e.made(channel, at, sm.Summary) {
		return e.json
	}
	j := o.encodeSummary(channel, sm, at)
	e = &encodedSummary{channel: channel, at: at, sum: sm.Summary, json: j}
	e.sum.Participants = slices.Clone(sm.Participants)
	if sm.LastReplyAt != nil {
		last := *sm.LastReplyAt
		e.sum.LastReplyAt = &last
	}
	o.summariesMu.Lock()
	o.keepSummary(sm.ID, e)
	o.summariesMu.Unlock()
	return j
}

// windowOverlays is the overlays of a window page of channel answering
// the request cursor: its rows' summary overlays in its order
// (summaryJSON) and its one bounds overlay (CW-19, CW-20). A page served
// from the store's cache is the same page each time, and making its
// overlays again was half of what a cached deep page cost the relay and
// most of the garbage it made (issue 32), so they are kept with the page
// (WindowPage.Keep): the summaries once made, when every one is dated by
// its thread rather than by now, and the bounds, dated when served, for
// answers within the same second.
func (o *overlaySigner) windowOverlays(channel string, cursor *nipcw.Cursor, page *buzz.WindowPage, b nipcw.Bounds, now int64) (summaries [][]byte, bounds []byte, err error) {
	kept, ok := page.Kept().(*pageOverlays)
	if !ok || kept.channel != channel {
		kept = &pageOverlays{channel: channel}
		page.Keep(kept)
	}
	if made := kept.summaries.Load(); made != nil {
		summaries = *made
	} else {
		summaries = make([][]byte, len(page.Summaries))
		dated := true
		for i, sm := range page.Summaries {
			summaries[i] = o.summaryJSON(channel, sm, now)
			dated = dated && sm.UpdatedAt > 0
		}
		if dated {
			kept.summaries.Store(&summaries)
		}
	}
	d := nipcw.BoundsD(channel, cursor)
	if made := kept.bounds.Load(); made != nil && made.at == now && made.d == d && made.bounds.Equal(b) {
		return summaries, made.json, nil
	}
	ev, err := boundsEvent(channel, d, b, now)
	if err != nil {
		return nil, nil, err
	}
	o.sign(ev)
	if bounds, err = ev.MarshalJSON(); err != nil {
		return nil, nil, fmt.Errorf("encode window bounds: %w", err)
	}
	kept.bounds.Store(&servedBounds{at: now, d: d, bounds: b, json: bounds})
	return summaries, bounds, nil
}

// pageOverlays is what windowOverlays keeps with a page of channel.
type pageOverlays struct {
	channel   string
	summaries atomic.Pointer[[][]byte]
	bounds    atomic.Pointer[servedBounds]
}

// servedBounds is a bounds overlay served at a second: its d tag, its
// content and its JSON.
type servedBounds struct {
	at     int64
	d      string
	bounds nipcw.Bounds
	json   []byte
}

// encodeSummary is the summary overlay of sm in channel dated at, signed
// and encoded as Event.MarshalJSON would (byte for byte for every channel id
// the relay accepts, which need no escapes), but written straight from
// its parts: a deep page's summaries are mostly not kept, and building
// each as an event, serializing, hashing and encoding it through
// encoding/json and easyjson was a sixth of what such a page cost. The
// content is written as the JSON string it is served as, and the tags as
// JSON, once each, into a pooled buffer beside the serialization that is
// hashed: the summary's JSON is its one allocation.
func (o *overlaySigner) encodeSummary(channel string, sm buzz.Summary, at int64) []byte {
	scratch := summaryScratch.Get().(*[]byte)
	defer summaryScratch.Put(scratch)
	buf := appendQuotedSummary((*scratch)[:0], sm.Summary)
	quotedEnd := len(buf)
	buf = appendSummaryTags(buf, sm.ID, channel)
	tagsEnd := len(buf)
	buf = append(buf, `[0,"`...)
	buf = append(buf, o.pubkey...)
	buf = strconv.AppendInt(append(buf, `",`...), at, 10)
	buf = strconv.AppendInt(append(buf, ','), nipcw.KindThreadSummary, 10)
	buf = append(append(buf, ','), buf[quotedEnd:tagsEnd]...)
	buf = append(append(buf, ','), buf[:quotedEnd]...)
	buf = append(buf, ']')
	hash := sha256.Sum256(buf[tagsEnd:])
	*scratch = buf
	quoted, tags := buf[:quotedEnd], buf[quotedEnd:tagsEnd]

	b := make([]byte, 0, len(quoted)+len(tags)+400)
	b = strconv.AppendInt(append(b, `{"kind":`...), nipcw.KindThreadSummary, 10)
	b = hex.AppendEncode(append(b, `,"id":"`...), hash[:])
	id := string(b[len(b)-64:])
	b = append(append(b, `","pubkey":"`...), o.pubkey...)
	b = strconv.AppendInt(append(b, `","created_at":`...), at, 10)
	b = append(append(b, `,"tags":`...), tags...)
	b = append(append(b, `,"content":`...), quoted...)
	b = append(append(b, `,"sig":"`...), o.signature(id, hash)...)
	return append(b, `"}`...)
}

// summaryScratch holds the buffers encodeSummary writes a summary's parts
// and serialization into.
var summaryScratch = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendQuotedSummary appends the JSON of sm (as json.Marshal writes a
// nipcw.Summary, participants never null) as a JSON string: the summary
// event's content as its JSON and its serialization carry it.
func appendQuotedSummary(dst []byte, sm nipcw.Summary) []byte {
	dst = strconv.AppendInt(append(dst, `"{\"reply_count\":`...), sm.ReplyCount, 10)
	dst = strconv.AppendInt(append(dst, `,\"descendant_count\":`...), sm.DescendantCount, 10)
	dst = append(dst, `,\"last_reply_at\":`...)
	if sm.LastReplyAt == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *sm.LastReplyAt, 10)
	}
	dst = append(dst, `,\"participants\":[`...)
	for i, p := range sm.Participants {
		if i > 0 {
			dst = append(dst, ',')
		}
		// A participant is a hex key, which needs no escape in either
		// string; anything else is escaped as a string, then again as part
		// of the content.
		if tagjson.Plain(p) {
			dst = append(append(append(dst, `\"`...), p...), `\"`...)
			continue
		}
		inner := tagjson.AppendString(nil, p)
		outer := tagjson.AppendString(nil, string(inner))
		dst = append(dst, outer[1:len(outer)-1]...)
	}
	return append(dst, `]}"`...)
}

// appendSummaryTags appends the JSON of summaryTags(id, channel).
func appendSummaryTags(dst []byte, id, channel string) []byte {
	dst = tagjson.AppendString(append(dst, `[["e",`...), id)
	dst = tagjson.AppendString(append(dst, `],["d",`...), id)
	dst = tagjson.AppendString(append(dst, `],["h",`...), channel)
	return append(dst, "]]"...)
}

// keepSummary keeps e as row id's summary in the newer generation, which
// becomes the older once full; called with summariesMu held.
func (o *overlaySigner) keepSummary(id string, e *encodedSummary) {
	if len(o.summaries) >= maxCachedSummaries {
		o.oldSummaries, o.summaries = o.summaries, make(map[string]*encodedSummary, maxCachedSummaries)
	}
	o.summaries[id] = e
}

// sign sets ev's pubkey, id and signature, the signature made once an id.
func (o *overlaySigner) sign(ev *nostr.Event) {
	ev.PubKey = o.pubkey
	hash := sha256.Sum256(ev.Serialize())
	ev.ID = hex.EncodeToString(hash[:])
	ev.Sig = o.signature(ev.ID, hash)
}

// signature is the signature, in hex, of the event whose id is hash (id in
// hex): the one made before if it is still kept.
func (o *overlaySigner) signature(id string, hash [32]byte) string {
	o.mu.Lock()
	sig, ok := o.cur[id]
	if !ok {
		sig, ok = o.prev[id]
	}
	o.mu.Unlock()
	if ok {
		return sig
	}
	signature := o.key.Sign(hash)
	sig = hex.EncodeToString(signature[:])
	o.mu.Lock()
	if len(o.cur) >= maxCachedSignatures {
		o.prev, o.cur = o.cur, make(map[string]string, maxCachedSignatures)
	}
	o.cur[id] = sig
	o.mu.Unlock()
	return sig
}

// summaryDate is the date of sm's overlay: when its thread last changed,
// now when that is unknown.
func summaryDate(sm buzz.Summary, now int64) int64 {
	if sm.UpdatedAt > 0 {
		return sm.UpdatedAt
	}
	return now
}

// summaryTags are the tags of the summary of row id in channel: exactly
// e, d and h (CW-19).
func summaryTags(id, channel string) nostr.Tags {
	return nostr.Tags{{"e", id}, {"d", id}, {"h", channel}}
}

// boundsEvent is the window bounds overlay of a page (CW-20): tags exactly
// d and h, d (nipcw.BoundsD) naming the request cursor the page answers.
func boundsEvent(channel, d string, b nipcw.Bounds, at int64) (*nostr.Event, error) {
	content, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("window bounds: %w", err)
	}
	return &nostr.Event{
		Kind:      nipcw.KindWindowBounds,
		CreatedAt: nostr.Timestamp(at),
		Tags:      nostr.Tags{{"d", d}, {"h", channel}},
		Content:   string(content),
	}, nil
}
