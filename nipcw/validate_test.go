package nipcw

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

const (
	pageChannel = "6b0f3c1e-2a4d-4e5f-8a9b-0c1d2e3f4a5b"
	otherChan   = "0d9e8f7a-6b5c-4d3e-a2f1-0a9b8c7d6e5f"
	sentAt      = 1_751_500_000
	zeroID      = "0000000000000000000000000000000000000000000000000000000000000000"
)

// One relay identity, one impostor, two users: generated once, every page
// of these tests is really signed.
var (
	relaySK, relayPK = keypair()
	otherSK, otherPK = keypair()
	userSK, userPK   = keypair()
	user2SK, user2PK = keypair()
)

func keypair() (string, string) {
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		panic(err)
	}
	return sk, pk
}

func sign(tb testing.TB, sk string, ev *nostr.Event) *nostr.Event {
	tb.Helper()
	if err := ev.Sign(sk); err != nil {
		tb.Fatal(err)
	}
	return ev
}

// boundsOverlay is what relay/overlays.go's boundsEvent emits (CW-20).
func boundsOverlay(tb testing.TB, channel string, sent *Cursor, b Bounds, at int64) *nostr.Event {
	tb.Helper()
	content, err := json.Marshal(b)
	if err != nil {
		tb.Fatal(err)
	}
	return sign(tb, relaySK, &nostr.Event{
		Kind:      KindWindowBounds,
		CreatedAt: nostr.Timestamp(at),
		Tags:      nostr.Tags{{"d", BoundsD(channel, sent)}, {"h", channel}},
		Content:   string(content),
	})
}

// summaryOverlay is what relay/overlays.go's summaryEvent emits (CW-19).
func summaryOverlay(tb testing.TB, channel, row string, sm Summary, at int64) *nostr.Event {
	tb.Helper()
	if sm.Participants == nil {
		sm.Participants = []string{}
	}
	content, err := json.Marshal(sm)
	if err != nil {
		tb.Fatal(err)
	}
	return sign(tb, relaySK, &nostr.Event{
		Kind:      KindThreadSummary,
		CreatedAt: nostr.Timestamp(at),
		Tags:      nostr.Tags{{"e", row}, {"d", row}, {"h", channel}},
		Content:   string(content),
	})
}

func message(tb testing.TB, at int64, text string) *nostr.Event {
	return sign(tb, userSK, &nostr.Event{
		Kind:      9,
		CreatedAt: nostr.Timestamp(at),
		Tags:      nostr.Tags{{"h", pageChannel}},
		Content:   text,
	})
}

// pageFixture is one page as the relay serves it, and the request it
// answers; cases break one thing of it.
type pageFixture struct {
	channel   string // as the client sent it
	sent      *Cursor
	relay     string
	check     bool // CheckPage rather than ValidatePage
	rows      []*nostr.Event
	aux       []*nostr.Event
	summaries []*nostr.Event
	bounds    []*nostr.Event
	extra     []*nostr.Event
}

// newPage is a genuine continuation page: four rows (the first in the
// cursor's own second, two sharing a second), aux of both hops, two
// summaries, and bounds with has_more.
func newPage(tb testing.TB) *pageFixture {
	tb.Helper()
	f := &pageFixture{channel: pageChannel, sent: &Cursor{CreatedAt: sentAt, ID: zeroID}, relay: relayPK}
	r0 := message(tb, sentAt, "same second as the cursor, after its id")
	a := message(tb, sentAt-10, "burst a")
	b := message(tb, sentAt-10, "burst b")
	if a.ID > b.ID {
		a, b = b, a
	}
	r3 := message(tb, sentAt-20, "last row")
	f.rows = []*nostr.Event{r0, a, b, r3}
	reaction := sign(tb, user2SK, &nostr.Event{Kind: 7, CreatedAt: sentAt - 5, Content: "+",
		Tags: nostr.Tags{{"e", a.ID}, {"p", userPK}, {"h", pageChannel}}})
	edit := sign(tb, userSK, &nostr.Event{Kind: 40003, CreatedAt: sentAt - 4, Content: "burst b, edited",
		Tags: nostr.Tags{{"e", b.ID}, {"h", pageChannel}}})
	unreact := sign(tb, user2SK, &nostr.Event{Kind: 5, CreatedAt: sentAt - 3,
		Tags: nostr.Tags{{"e", reaction.ID}, {"h", pageChannel}}})
	// A hop-2 deletion of a hop-1 event that is itself deleted, so not
	// served (CW-18).
	orphan := sign(tb, user2SK, &nostr.Event{Kind: 5, CreatedAt: sentAt - 2,
		Tags: nostr.Tags{{"e", strings.Repeat("ab", 32)}, {"h", pageChannel}}})
	f.aux = []*nostr.Event{reaction, edit, unreact, orphan}
	last := int64(sentAt - 1)
	f.summaries = []*nostr.Event{
		summaryOverlay(tb, pageChannel, a.ID, Summary{ReplyCount: 2, DescendantCount: 3, LastReplyAt: &last,
			Participants: []string{user2PK, userPK}}, sentAt-1),
		summaryOverlay(tb, pageChannel, b.ID, Summary{ReplyCount: 1, DescendantCount: 1}, sentAt-6),
	}
	f.bounds = []*nostr.Event{boundsOverlay(tb, pageChannel, f.sent, Bounds{
		HasMore: true, NextCursor: &Cursor{CreatedAt: int64(r3.CreatedAt), ID: r3.ID},
	}, sentAt+100)}
	return f
}

// The response order of relay/query.go: rows, aux, summaries, bounds.
func (f *pageFixture) events() []*nostr.Event {
	var evs []*nostr.Event
	for _, part := range [][]*nostr.Event{f.rows, f.aux, f.summaries, f.bounds, f.extra} {
		evs = append(evs, part...)
	}
	return evs
}

func (f *pageFixture) validate() (*Page, error) {
	if f.check {
		return CheckPage(f.events(), f.channel, f.sent, f.relay)
	}
	return ValidatePage(f.events(), f.channel, f.sent, f.relay)
}

// resign signs ev again with sk after a change, as its signer would have.
func resign(tb testing.TB, sk string, ev *nostr.Event, change func(*nostr.Event)) {
	tb.Helper()
	change(ev)
	sign(tb, sk, ev)
}

// setContent sets (raw != "") or removes a key of ev's JSON content.
func setContent(tb testing.TB, ev *nostr.Event, key, raw string) {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.Content), &m); err != nil {
		tb.Fatal(err)
	}
	if raw == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(raw)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	ev.Content = string(b)
}

// boundsContent makes a case that re-signs the bounds with the content key
// set to raw (removed when raw is "").
func boundsContent(key, raw string) func(*testing.T, *pageFixture) {
	return func(t *testing.T, f *pageFixture) {
		resign(t, relaySK, f.bounds[0], func(ev *nostr.Event) { setContent(t, ev, key, raw) })
	}
}

func boundsRaw(content string) func(*testing.T, *pageFixture) {
	return func(t *testing.T, f *pageFixture) {
		resign(t, relaySK, f.bounds[0], func(ev *nostr.Event) { ev.Content = content })
	}
}

func boundsTags(tags func(f *pageFixture) nostr.Tags) func(*testing.T, *pageFixture) {
	return func(t *testing.T, f *pageFixture) {
		resign(t, relaySK, f.bounds[0], func(ev *nostr.Event) { ev.Tags = tags(f) })
	}
}

func summaryContent(key, raw string) func(*testing.T, *pageFixture) {
	return func(t *testing.T, f *pageFixture) {
		resign(t, relaySK, f.summaries[0], func(ev *nostr.Event) { setContent(t, ev, key, raw) })
	}
}

func summaryTags(tags func(f *pageFixture) nostr.Tags) func(*testing.T, *pageFixture) {
	return func(t *testing.T, f *pageFixture) {
		resign(t, relaySK, f.summaries[0], func(ev *nostr.Event) { ev.Tags = tags(f) })
	}
}

func lastRow(f *pageFixture) *nostr.Event { return f.rows[len(f.rows)-1] }

// boundsNext re-signs the bounds with next_cursor at c (has_more kept).
func boundsNext(t *testing.T, f *pageFixture, c *Cursor) {
	f.bounds[0] = boundsOverlay(t, pageChannel, f.sent, Bounds{HasMore: c != nil, NextCursor: c}, sentAt+100)
}

// A genuine page passes, in every form the contract allows.
func TestValidatePageAccepts(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(*testing.T, *pageFixture)
	}{
		{"genuine continuation page", func(*testing.T, *pageFixture) {}},
		// CW-20: a head page's d ends in `head`.
		{"head page", func(t *testing.T, f *pageFixture) {
			f.sent = nil
			f.rows[0] = message(t, sentAt+50, "newest")
			f.bounds[0] = boundsOverlay(t, pageChannel, nil, Bounds{HasMore: true,
				NextCursor: &Cursor{CreatedAt: int64(lastRow(f).CreatedAt), ID: lastRow(f).ID}}, sentAt+100)
		}},
		// CW-20: bounds on an empty page too.
		{"empty exhausted page", func(t *testing.T, f *pageFixture) {
			f.rows, f.aux, f.summaries = nil, nil, nil
			boundsNext(t, f, nil)
		}},
		// CL-1: a final page may be full; has_more alone says it is the last.
		{"exhausted page with rows", func(t *testing.T, f *pageFixture) { boundsNext(t, f, nil) }},
		// CW-17: the cursor moves past a retained row that could not be
		// served, so next_cursor may lie beyond the last row served.
		{"next_cursor past a skipped row", func(t *testing.T, f *pageFixture) {
			boundsNext(t, f, &Cursor{CreatedAt: sentAt - 30, ID: zeroID})
		}},
		// CW-17: rows the relay could not serve leave only the cursor.
		{"has_more without rows", func(t *testing.T, f *pageFixture) {
			f.rows, f.aux, f.summaries = nil, nil, nil
			boundsNext(t, f, &Cursor{CreatedAt: sentAt - 30, ID: zeroID})
		}},
		// CL-2: the d binding is compared case-insensitively.
		{"uppercase d", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", strings.ToUpper(BoundsD(pageChannel, f.sent))}, {"h", pageChannel}}
		})},
		{"uppercase sent cursor id", func(t *testing.T, f *pageFixture) {
			f.sent = &Cursor{CreatedAt: sentAt, ID: strings.ToUpper(zeroID)}
		}},
		// CW-2: the channel may be sent in any UUID form.
		{"channel sent braced and uppercase", func(t *testing.T, f *pageFixture) {
			f.channel = "{" + strings.ToUpper(pageChannel) + "}"
		}},
		{"uppercase h tags", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"h", strings.ToUpper(pageChannel)}}
		})},
		// CW-2: a row's h names the channel in any UUID form.
		{"row h braced and uppercase", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) {
				ev.Tags = nostr.Tags{{"h", "{" + strings.ToUpper(pageChannel) + "}"}}
			})
		}},
		// CL-2: unknown content fields are ignored.
		{"unknown bounds field", boundsContent("window_version", `{"x":[1,"2",null]}`)},
		{"unknown summary field", summaryContent("thread_title", `"hello"`)},
		// CW-19: clients must accept a null last_reply_at.
		{"null last_reply_at", summaryContent("last_reply_at", `null`)},
		{"tags in another order", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"h", pageChannel}, {"d", BoundsD(pageChannel, f.sent)}}
		})},
		// Clients partition by kind: the order of the parts is no contract.
		{"parts in another order", func(t *testing.T, f *pageFixture) {
			f.extra = append(f.bounds, f.aux...)
			f.bounds, f.aux = nil, nil
		}},
		{"projection mode", func(t *testing.T, f *pageFixture) {
			f.bounds[0] = boundsOverlay(t, pageChannel, f.sent, Bounds{HasMore: true, ThreadRepliesInChannel: true,
				NextCursor: &Cursor{CreatedAt: int64(lastRow(f).CreatedAt), ID: lastRow(f).ID}}, sentAt+100)
		}},
		// CL-3: no relay key: the transport is trusted for the signer.
		{"relay unknown, overlays of another key", func(t *testing.T, f *pageFixture) {
			f.relay = ""
			sign(t, otherSK, f.bounds[0])
		}},
		// CL-3: with an authenticated transport rows need no Schnorr check.
		{"CheckPage skips row signatures", func(t *testing.T, f *pageFixture) {
			f.check = true
			f.rows[0].Sig = f.rows[1].Sig
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newPage(t)
			c.mut(t, f)
			p, err := f.validate()
			if err != nil {
				t.Fatalf("genuine page rejected: %v", err)
			}
			if got, want := len(p.Rows)+len(p.Aux)+len(p.Overlays), len(f.events()); got != want {
				t.Errorf("partition holds %d events, the response %d", got, want)
			}
		})
	}
}

// CL-6: the partition by kind, the summaries by row id, and the cursor of
// the next page (CL-1).
func TestValidatePagePartition(t *testing.T) {
	f := newPage(t)
	p, err := f.validate()
	if err != nil {
		t.Fatal(err)
	}
	if p.Channel != pageChannel || p.Request == nil || *p.Request != *f.sent {
		t.Errorf("page answers %q %+v, want %q %+v", p.Channel, p.Request, pageChannel, f.sent)
	}
	for i, ev := range p.Rows {
		if ev != f.rows[i] {
			t.Errorf("row %d is %s, want %s", i, ev.ID, f.rows[i].ID)
		}
	}
	if len(p.Aux) != len(f.aux) {
		t.Errorf("%d aux events, want %d", len(p.Aux), len(f.aux))
	}
	if len(p.Overlays) != 3 || p.Overlays[2] != f.bounds[0] {
		t.Errorf("overlays %v, want the 2 summaries then the bounds", p.Overlays)
	}
	a, b := f.rows[1].ID, f.rows[2].ID
	if len(p.Summaries) != 2 {
		t.Fatalf("%d summaries, want 2", len(p.Summaries))
	}
	if sm := p.Summaries[a]; sm.ReplyCount != 2 || sm.DescendantCount != 3 || sm.LastReplyAt == nil ||
		*sm.LastReplyAt != sentAt-1 || len(sm.Participants) != 2 || sm.Participants[0] != user2PK {
		t.Errorf("summary of %s = %+v", a, sm)
	}
	if sm := p.Summaries[b]; sm.ReplyCount != 1 || sm.LastReplyAt != nil || sm.Participants == nil {
		t.Errorf("summary of %s = %+v", b, sm)
	}
	next := p.Next()
	r3 := lastRow(f)
	if next == nil || next.CreatedAt != int64(r3.CreatedAt) || next.ID != r3.ID {
		t.Fatalf("Next() = %+v, want the last row %d %s", next, r3.CreatedAt, r3.ID)
	}
	next.ID = zeroID
	if p.Bounds.NextCursor.ID != r3.ID {
		t.Error("Next() returned the page's own cursor, not a copy")
	}
	// CL-1: exhaustion only from has_more.
	boundsNext(t, f, nil)
	if p, err = f.validate(); err != nil {
		t.Fatal(err)
	}
	if p.Next() != nil {
		t.Errorf("Next() of an exhausted page with %d rows = %+v, want nil", len(p.Rows), p.Next())
	}
	if (*Page)(nil).Next() != nil {
		t.Error("Next() of no page is not nil")
	}
}

// Every hostile variant is rejected with its reason named (CL-2, CL-3,
// CW-15, CW-17..CW-20).
func TestValidatePageRejects(t *testing.T) {
	fakeID := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, reason string
		mut          func(*testing.T, *pageFixture)
	}{
		// CL-2, CW-20: exactly one 39006.
		{"no bounds", "no bounds overlay", func(t *testing.T, f *pageFixture) { f.bounds = nil }},
		{"empty response", "no bounds overlay", func(t *testing.T, f *pageFixture) {
			f.rows, f.aux, f.summaries, f.bounds = nil, nil, nil, nil
		}},
		{"doubled bounds", "2 bounds overlays", func(t *testing.T, f *pageFixture) {
			f.bounds = append(f.bounds, boundsOverlay(t, pageChannel, f.sent, Bounds{}, sentAt+101))
		}},
		{"the same bounds twice", "duplicate event", func(t *testing.T, f *pageFixture) {
			f.bounds = append(f.bounds, f.bounds[0])
		}},
		// CL-2: the d binding echoes channel and cursor.
		{"d of another channel", "bounds d tag does not echo the channel", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(otherChan, f.sent)}, {"h", pageChannel}}
		})},
		{"d of another cursor", "bounds d tag does not echo the request cursor", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, &Cursor{CreatedAt: sentAt - 1, ID: zeroID})}, {"h", pageChannel}}
		})},
		{"d of another cursor id", "bounds d tag does not echo the request cursor", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, &Cursor{CreatedAt: sentAt, ID: fakeID})}, {"h", pageChannel}}
		})},
		{"d head for a cursor request", "bounds d tag does not echo the request cursor", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, nil)}, {"h", pageChannel}}
		})},
		{"d cursor for a head request", "bounds d tag does not echo the request cursor", func(t *testing.T, f *pageFixture) {
			f.sent = nil
			f.rows[0] = message(t, sentAt+50, "newest")
		}},
		{"d without a suffix", "bounds d tag does not echo the channel", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", pageChannel}, {"h", pageChannel}}
		})},
		{"h of another channel", "bounds h tag is not the channel", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"h", otherChan}}
		})},
		// CL-2: exact tag cardinality.
		{"extra bounds tag", "bounds tags: 3 tags, want 2", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"h", pageChannel}, {"p", relayPK}}
		})},
		{"missing h tag", "bounds tags: 1 tags, want 2", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}}
		})},
		{"3-element d tag", "bounds tags: a tag of 3 elements, want 2", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent), ""}, {"h", pageChannel}}
		})},
		{"1-element h tag", "bounds tags: a tag of 1 elements, want 2", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"h"}}
		})},
		{"repeated d tag", "bounds tags: a repeated tag", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"d", BoundsD(pageChannel, f.sent)}}
		})},
		{"unexpected tag", "bounds tags: an unexpected tag", boundsTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"d", BoundsD(pageChannel, f.sent)}, {"H", pageChannel}}
		})},
		// CL-2: content that is not JSON, and wrong field types.
		{"unparseable content", "bounds content is not JSON", boundsRaw(`{"has_more":true,`)},
		{"trailing garbage", "bounds content is not JSON", boundsRaw(`{"has_more":false,"next_cursor":null,"thread_replies_in_channel":false} x`)},
		{"array content", "bounds content is not a JSON object", boundsRaw(`[true,null,false]`)},
		{"null content", "bounds content is not a JSON object", boundsRaw(`null`)},
		{"repeated key", "bounds content has a repeated key",
			boundsRaw(`{"has_more":false,"next_cursor":null,"thread_replies_in_channel":false,"has_more":true}`)},
		{"has_more a string", "bounds content: has_more is not a boolean", boundsContent("has_more", `"true"`)},
		{"has_more a number", "bounds content: has_more is not a boolean", boundsContent("has_more", `1`)},
		{"has_more null", "bounds content: has_more is not a boolean", boundsContent("has_more", `null`)},
		{"has_more missing", "bounds content: has_more is missing", boundsContent("has_more", ``)},
		{"has_more in other case", "bounds content: has_more is missing", func(t *testing.T, f *pageFixture) {
			resign(t, relaySK, f.bounds[0], func(ev *nostr.Event) {
				ev.Content = strings.Replace(ev.Content, `"has_more"`, `"HAS_MORE"`, 1)
			})
		}},
		{"next_cursor missing", "bounds content: next_cursor is missing", boundsContent("next_cursor", ``)},
		{"next_cursor a string", "bounds content: next_cursor is not null or an object", boundsContent("next_cursor", `"1:ab"`)},
		{"next_cursor an array", "bounds content: next_cursor is not null or an object", boundsContent("next_cursor", `[1,"ab"]`)},
		{"created_at a string", "bounds content: next_cursor.created_at is not an integer",
			boundsContent("next_cursor", `{"created_at":"5","id":"`+zeroID+`"}`)},
		{"created_at a fraction", "bounds content: next_cursor.created_at is not an integer",
			boundsContent("next_cursor", `{"created_at":5.5,"id":"`+zeroID+`"}`)},
		{"created_at an exponent", "bounds content: next_cursor.created_at is not an integer",
			boundsContent("next_cursor", `{"created_at":1e3,"id":"`+zeroID+`"}`)},
		{"created_at too large", "bounds content: next_cursor.created_at is not an integer",
			boundsContent("next_cursor", `{"created_at":99999999999999999999,"id":"`+zeroID+`"}`)},
		{"created_at null", "bounds content: next_cursor.created_at is not an integer",
			boundsContent("next_cursor", `{"created_at":null,"id":"`+zeroID+`"}`)},
		{"created_at missing", "bounds content: next_cursor.created_at is missing",
			boundsContent("next_cursor", `{"id":"`+zeroID+`"}`)},
		{"created_at negative", "bounds content: next_cursor.created_at is negative",
			boundsContent("next_cursor", `{"created_at":-1,"id":"`+zeroID+`"}`)},
		{"id a number", "bounds content: next_cursor.id is not a 64-hex string",
			boundsContent("next_cursor", `{"created_at":5,"id":5}`)},
		{"id short", "bounds content: next_cursor.id is not a 64-hex string",
			boundsContent("next_cursor", `{"created_at":5,"id":"abcd"}`)},
		{"id not hex", "bounds content: next_cursor.id is not a 64-hex string",
			boundsContent("next_cursor", `{"created_at":5,"id":"`+strings.Repeat("zz", 32)+`"}`)},
		{"id missing", "bounds content: next_cursor.id is missing", boundsContent("next_cursor", `{"created_at":5}`)},
		{"mode a string", "bounds content: thread_replies_in_channel is not a boolean",
			boundsContent("thread_replies_in_channel", `"false"`)},
		{"mode missing", "bounds content: thread_replies_in_channel is missing",
			boundsContent("thread_replies_in_channel", ``)},
		// CW-17, CL-2: next_cursor = null ⇔ has_more = false.
		{"has_more without next_cursor", "has_more and next_cursor disagree", boundsContent("next_cursor", `null`)},
		{"next_cursor without has_more", "has_more and next_cursor disagree", boundsContent("has_more", `false`)},
		// CW-15, CW-17: the cursor a client follows must move on (CL-1
		// would loop forever otherwise).
		{"next_cursor is the request cursor", "next_cursor does not advance past the request cursor", func(t *testing.T, f *pageFixture) {
			f.rows, f.aux, f.summaries = nil, nil, nil
			boundsNext(t, f, &Cursor{CreatedAt: sentAt, ID: zeroID})
		}},
		{"next_cursor before the request cursor", "next_cursor does not advance past the request cursor", func(t *testing.T, f *pageFixture) {
			f.rows, f.aux, f.summaries = nil, nil, nil
			boundsNext(t, f, &Cursor{CreatedAt: sentAt + 1, ID: zeroID})
		}},
		{"row past next_cursor", "row lies past next_cursor", func(t *testing.T, f *pageFixture) {
			r := f.rows[2]
			boundsNext(t, f, &Cursor{CreatedAt: int64(r.CreatedAt), ID: r.ID})
		}},
		// CW-19: summaries.
		{"summary e != d", "summary e and d tags differ", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", f.rows[1].ID}, {"d", f.rows[2].ID}, {"h", pageChannel}}
		})},
		{"summary for an unknown row", "summary for an id that is not a row of the page", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", fakeID}, {"d", fakeID}, {"h", pageChannel}}
		})},
		{"summary for an aux event", "summary for an id that is not a row of the page", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", f.aux[0].ID}, {"d", f.aux[0].ID}, {"h", pageChannel}}
		})},
		{"summary d not hex", "summary d tag is not a 64-hex id", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", "x"}, {"d", "x"}, {"h", pageChannel}}
		})},
		{"summary of another channel", "summary h tag is not the channel", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", f.rows[1].ID}, {"d", f.rows[1].ID}, {"h", otherChan}}
		})},
		{"summary extra tag", "summary tags: 4 tags, want 3", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", f.rows[1].ID}, {"d", f.rows[1].ID}, {"h", pageChannel}, {"p", userPK}}
		})},
		{"summary marked e tag", "summary tags: a tag of 4 elements, want 2", summaryTags(func(f *pageFixture) nostr.Tags {
			return nostr.Tags{{"e", f.rows[1].ID, "", "root"}, {"d", f.rows[1].ID}, {"h", pageChannel}}
		})},
		{"two summaries for one row", "2 summaries for one row", func(t *testing.T, f *pageFixture) {
			f.extra = append(f.extra, summaryOverlay(t, pageChannel, f.rows[1].ID, Summary{ReplyCount: 1, DescendantCount: 1}, sentAt))
		}},
		{"summary reply_count a string", "summary content: reply_count is not a non-negative integer", summaryContent("reply_count", `"2"`)},
		{"summary reply_count negative", "summary content: reply_count is not a non-negative integer", summaryContent("reply_count", `-1`)},
		{"summary reply_count null", "summary content: reply_count is not a non-negative integer", summaryContent("reply_count", `null`)},
		{"summary descendant_count missing", "summary content: descendant_count is missing", summaryContent("descendant_count", ``)},
		{"summary more replies than descendants", "summary content: reply_count exceeds descendant_count", summaryContent("reply_count", `4`)},
		{"summary without replies", "summary for a row without replies", func(t *testing.T, f *pageFixture) {
			resign(t, relaySK, f.summaries[0], func(ev *nostr.Event) {
				ev.Content = `{"reply_count":0,"descendant_count":0,"last_reply_at":null,"participants":[]}`
			})
		}},
		{"summary last_reply_at a string", "summary content: last_reply_at is not an integer or null", summaryContent("last_reply_at", `"5"`)},
		{"summary last_reply_at missing", "summary content: last_reply_at is missing", summaryContent("last_reply_at", ``)},
		{"summary participants missing", "summary content: participants is missing", summaryContent("participants", ``)},
		{"summary participants null", "summary content: participants is not a list of 64-hex pubkeys", summaryContent("participants", `null`)},
		{"summary participant a number", "summary content: participants is not a list of 64-hex pubkeys", summaryContent("participants", `[5]`)},
		{"summary participant not hex", "summary content: participants is not a list of 64-hex pubkeys", summaryContent("participants", `["npub1xyz"]`)},
		{"summary participants repeated", "summary content: participants are not distinct",
			summaryContent("participants", `["`+userPK+`","`+strings.ToUpper(userPK)+`"]`)},
		{"summary 11 participants", "summary content: more than 10 participants", func(t *testing.T, f *pageFixture) {
			var pks []string
			for i := range 11 {
				pks = append(pks, `"`+strings.Repeat(strconv.FormatInt(int64(i), 16), 64)+`"`)
			}
			summaryContent("participants", "["+strings.Join(pks, ",")+"]")(t, f)
		}},
		{"summary content not JSON", "summary content is not JSON", func(t *testing.T, f *pageFixture) {
			resign(t, relaySK, f.summaries[0], func(ev *nostr.Event) { ev.Content = "3 replies" })
		}},
		// CL-3: trust of the overlays.
		{"bounds signed by another key", "overlay signed by another key", func(t *testing.T, f *pageFixture) {
			sign(t, otherSK, f.bounds[0])
		}},
		{"summary signed by another key", "overlay signed by another key", func(t *testing.T, f *pageFixture) {
			sign(t, otherSK, f.summaries[1])
		}},
		{"tampered bounds content", "overlay id does not match its content", func(t *testing.T, f *pageFixture) {
			f.bounds[0].Content = strings.Replace(f.bounds[0].Content, `"has_more":true`, `"has_more":false`, 1)
		}},
		{"tampered summary content", "overlay id does not match its content", func(t *testing.T, f *pageFixture) {
			f.summaries[0].Content = strings.Replace(f.summaries[0].Content, `"reply_count":2`, `"reply_count":20`, 1)
		}},
		{"tampered overlay, id recomputed", "overlay signature is invalid", func(t *testing.T, f *pageFixture) {
			ev := f.bounds[0]
			ev.Content = strings.Replace(ev.Content, `"has_more":true`, `"has_more":false`, 1)
			ev.ID = ev.GetID()
		}},
		{"overlay claiming the relay key", "overlay signature is invalid", func(t *testing.T, f *pageFixture) {
			ev := sign(t, otherSK, f.bounds[0])
			ev.PubKey = relayPK
			ev.ID = ev.GetID()
		}},
		{"relay unknown, tampered overlay", "overlay id does not match its content", func(t *testing.T, f *pageFixture) {
			f.relay = ""
			f.bounds[0].Content = strings.Replace(f.bounds[0].Content, `"has_more":true`, `"has_more":false`, 1)
		}},
		{"CheckPage still checks the overlay signer", "overlay signed by another key", func(t *testing.T, f *pageFixture) {
			f.check = true
			sign(t, otherSK, f.summaries[0])
		}},
		// CL-3: rows and aux events are verified.
		{"tampered row signature", "row signature is invalid", func(t *testing.T, f *pageFixture) {
			f.rows[0].Sig = f.rows[1].Sig
		}},
		{"tampered row content", "row id does not match its content", func(t *testing.T, f *pageFixture) {
			f.rows[0].Content = "edited in transit"
		}},
		{"CheckPage still checks row ids", "row id does not match its content", func(t *testing.T, f *pageFixture) {
			f.check = true
			f.rows[0].Content = "edited in transit"
		}},
		{"tampered aux signature", "aux event signature is invalid", func(t *testing.T, f *pageFixture) {
			f.aux[1].Sig = f.aux[0].Sig
		}},
		{"tampered aux content", "aux event id does not match its content", func(t *testing.T, f *pageFixture) {
			f.aux[1].Content = "edited in transit"
		}},
		// CW-15: keyset order.
		{"same-second rows out of order", "rows out of order", func(t *testing.T, f *pageFixture) {
			f.rows[1], f.rows[2] = f.rows[2], f.rows[1]
		}},
		{"rows oldest first", "rows out of order", func(t *testing.T, f *pageFixture) {
			f.rows[0], f.rows[3] = f.rows[3], f.rows[0]
		}},
		{"duplicate row", "duplicate event", func(t *testing.T, f *pageFixture) {
			f.rows = append(f.rows[:2], f.rows[1:]...)
		}},
		{"row at the request cursor's second, before its id", "row is not after the request cursor", func(t *testing.T, f *pageFixture) {
			f.sent = &Cursor{CreatedAt: sentAt, ID: strings.Repeat("f", 64)}
			f.bounds[0] = boundsOverlay(t, pageChannel, f.sent, Bounds{HasMore: true,
				NextCursor: &Cursor{CreatedAt: int64(lastRow(f).CreatedAt), ID: lastRow(f).ID}}, sentAt+100)
		}},
		{"row newer than the request cursor", "row is not after the request cursor", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.CreatedAt = sentAt + 1 })
		}},
		// CW-9: rows of the channel, of kinds that may be rows (CW-6).
		{"row of another channel", "row is not in the channel", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"h", otherChan}} })
		}},
		{"row of two channels", "row is not in the channel", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"h", otherChan}) })
		}},
		{"row h not a channel id", "row is not in the channel", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"h", pageChannel + "!"}} })
		}},
		{"row without a channel", "row is not in the channel", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.Tags = nostr.Tags{} })
		}},
		{"moderation event as a row", "kind 9000 is never a row", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.rows[0], func(ev *nostr.Event) { ev.Kind = 9000 })
		}},
		{"group state as a row", "kind 39000 is never a row", func(t *testing.T, f *pageFixture) {
			resign(t, relaySK, f.rows[0], func(ev *nostr.Event) { ev.Kind = 39000 })
		}},
		// CW-18: reactions and edits are hop-1 events of this page's rows.
		{"reaction to no row", "aux event names no row of the page", func(t *testing.T, f *pageFixture) {
			resign(t, user2SK, f.aux[0], func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e", fakeID}, {"h", pageChannel}} })
		}},
		{"edit of an aux event", "aux event names no row of the page", func(t *testing.T, f *pageFixture) {
			resign(t, userSK, f.aux[1], func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e", f.aux[0].ID}} })
		}},
		{"null event", "null event", func(t *testing.T, f *pageFixture) { f.extra = []*nostr.Event{nil} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newPage(t)
			c.mut(t, f)
			p, err := f.validate()
			var pe *PageError
			if !errors.As(err, &pe) {
				t.Fatalf("got page %v, error %v; want a *PageError %q", p != nil, err, c.reason)
			}
			if pe.Reason != c.reason {
				t.Fatalf("reason %q, want %q", pe.Reason, c.reason)
			}
			if p != nil {
				t.Error("a page came with the error")
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("Error() = %q lacks the reason", err)
			}
		})
	}
}

// The error names the event at fault by its position in the response.
func TestPageErrorIndex(t *testing.T) {
	f := newPage(t)
	sign(t, otherSK, f.summaries[1])
	_, err := f.validate()
	var pe *PageError
	if !errors.As(err, &pe) || pe.Index != len(f.rows)+len(f.aux)+1 {
		t.Fatalf("error %v, want the second summary's index %d", err, len(f.rows)+len(f.aux)+1)
	}
	f.bounds = nil
	if _, err = f.validate(); !errors.As(err, &pe) || pe.Index != -1 || err.Error() != "nipcw: unusable window page: no bounds overlay" {
		t.Fatalf("error %v, want one without an index", err)
	}
}

// Malformed arguments are the caller's errors, not the page's.
func TestValidatePageArguments(t *testing.T) {
	f := newPage(t)
	for _, c := range []struct {
		name, channel, relay string
		sent                 *Cursor
	}{
		{"channel not a channel id", "Gen eral", relayPK, f.sent}, // CW-2
		{"sent id short", pageChannel, relayPK, &Cursor{CreatedAt: 1, ID: "abcd"}},
		{"sent created_at negative", pageChannel, relayPK, &Cursor{CreatedAt: -1, ID: zeroID}},
		{"relay not hex", pageChannel, "npub1relay", f.sent},
	} {
		_, err := ValidatePage(f.events(), c.channel, c.sent, c.relay)
		var pe *PageError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("%s: error %v, want an argument error", c.name, err)
		}
	}
}

// CL-3: with neither an authenticated transport nor the relay key, every
// event is verified.
func TestVerifyEvents(t *testing.T) {
	f := newPage(t)
	if err := VerifyEvents(f.events()); err != nil {
		t.Fatal(err)
	}
	evs := f.events()
	evs[1].Sig = evs[0].Sig
	var pe *PageError
	if err := VerifyEvents(evs); !errors.As(err, &pe) || pe.Reason != "event signature is invalid" || pe.Index != 1 {
		t.Errorf("tampered signature: %v", err)
	}
	evs[2].Content = "tampered"
	if err := VerifyEvents(evs[2:]); !errors.As(err, &pe) || pe.Reason != "event id does not match its content" || pe.Index != 0 {
		t.Errorf("tampered content: %v", err)
	}
	if err := VerifyEvents([]*nostr.Event{nil}); !errors.As(err, &pe) || pe.Reason != "null event" {
		t.Errorf("null event: %v", err)
	}
}

// CL-5: a change of thread_replies_in_channel starts a new lineage.
func TestSameLineage(t *testing.T) {
	next := &Cursor{CreatedAt: 5, ID: zeroID}
	for _, c := range []struct {
		a, b Bounds
		want bool
	}{
		{Bounds{}, Bounds{}, true},
		{Bounds{ThreadRepliesInChannel: true}, Bounds{ThreadRepliesInChannel: true, HasMore: true, NextCursor: next}, true},
		{Bounds{HasMore: true, NextCursor: next}, Bounds{}, true},
		{Bounds{ThreadRepliesInChannel: true}, Bounds{}, false},
		{Bounds{HasMore: true, NextCursor: next}, Bounds{ThreadRepliesInChannel: true}, false},
	} {
		if got := SameLineage(c.a, c.b); got != c.want {
			t.Errorf("SameLineage(%+v, %+v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	// Across real pages: the second page of a lineage served in another
	// mode is told apart.
	f := newPage(t)
	first, err := f.validate()
	if err != nil {
		t.Fatal(err)
	}
	g := newPage(t)
	g.sent = first.Next()
	g.rows = []*nostr.Event{message(t, g.sent.CreatedAt-1, "older")}
	g.aux, g.summaries = nil, nil
	g.bounds[0] = boundsOverlay(t, pageChannel, g.sent, Bounds{ThreadRepliesInChannel: true}, sentAt+200)
	second, err := g.validate()
	if err != nil {
		t.Fatal(err)
	}
	if SameLineage(first.Bounds, second.Bounds) {
		t.Error("pages of two row modes reported as one lineage")
	}
}

func TestIsAuxAndOverlayKind(t *testing.T) {
	for k, want := range map[int]bool{5: true, 7: true, 9005: true, 40003: true, 1: false, 9: false, 9000: false, 39005: false} {
		if IsAuxKind(k) != want {
			t.Errorf("IsAuxKind(%d) = %v", k, !want)
		}
	}
	for k, want := range map[int]bool{39005: true, 39006: true, 39000: false, 5: false} {
		if IsOverlayKind(k) != want {
			t.Errorf("IsOverlayKind(%d) = %v", k, !want)
		}
	}
}

// FuzzValidatePage signs pages whose bounds content, bounds d suffix and
// summary content are fuzzed: the validator never panics, and what it
// accepts is consistent (CL-1, CL-2).
func FuzzValidatePage(f *testing.F) {
	fx := newPage(f)
	rows := fx.rows
	next := lastRow(fx)
	genuine := fx.bounds[0].Content
	f.Add(genuine, strconv.Itoa(sentAt)+":"+zeroID, fx.summaries[0].Content, false)
	f.Add(genuine, "head", fx.summaries[1].Content, true)
	f.Add(`{"has_more":false,"next_cursor":null,"thread_replies_in_channel":true,"x":{}}`, "HEAD", `{}`, true)
	f.Add(`{"has_more":"true","next_cursor":{"created_at":"5","id":5},"thread_replies_in_channel":1}`, "", `[]`, false)
	f.Add(`{"has_more":true,"next_cursor":{"created_at":1e400,"id":"`+next.ID+`"},"thread_replies_in_channel":false}`,
		strconv.Itoa(sentAt)+":"+strings.ToUpper(zeroID), `{"reply_count":1,"descendant_count":1,"last_reply_at":null,"participants":null}`, false)
	f.Add(`{"has_more":true,"has_more":false}`, ":", `{"participants":["`+userPK+`","`+userPK+`"]}`, false)
	f.Add("\xff", "\x00", "{\"reply_count\":\"\xff\"}", true)
	f.Fuzz(func(t *testing.T, boundsContent, suffix, summaryContent string, head bool) {
		var sent *Cursor
		if !head {
			sent = &Cursor{CreatedAt: sentAt, ID: zeroID}
		}
		bounds := sign(t, relaySK, &nostr.Event{Kind: KindWindowBounds, CreatedAt: sentAt + 100,
			Tags: nostr.Tags{{"d", pageChannel + ":" + suffix}, {"h", pageChannel}}, Content: boundsContent})
		summary := sign(t, relaySK, &nostr.Event{Kind: KindThreadSummary, CreatedAt: sentAt,
			Tags: nostr.Tags{{"e", rows[1].ID}, {"d", rows[1].ID}, {"h", pageChannel}}, Content: summaryContent})
		evs := append(append([]*nostr.Event{}, rows...), summary, bounds)
		for _, check := range []bool{false, true} {
			validate := ValidatePage
			if check {
				validate = CheckPage
			}
			p, err := validate(evs, pageChannel, sent, relayPK)
			if err != nil {
				var pe *PageError
				if !errors.As(err, &pe) || pe.Reason == "" || p != nil {
					t.Fatalf("error %v (page %v), want a *PageError and no page", err, p != nil)
				}
				continue
			}
			if (p.Next() != nil) != p.Bounds.HasMore {
				t.Fatalf("accepted has_more %v with next cursor %+v", p.Bounds.HasMore, p.Next())
			}
			if n := p.Next(); n != nil && (n.CreatedAt < 0 || !IsHex64(n.ID) || n.ID != strings.ToLower(n.ID)) {
				t.Fatalf("accepted next cursor %+v", n)
			}
			if len(p.Rows) != len(rows) || len(p.Overlays) != 2 || len(p.Summaries) != 1 {
				t.Fatalf("partition %d rows, %d overlays, %d summaries", len(p.Rows), len(p.Overlays), len(p.Summaries))
			}
		}
	})
}
