package storetest

// Thread classification (CW-10, CW-11, CW-12, RL-5), subtree counters
// (RL-5, CW-19), ingest atomicity (RL-4) and concurrent ingest into one
// thread. Helpers are in helpers_thread.go.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// ttFixture is a small channel with a thread, events elsewhere and a
// deleted event, to classify new events against.
type ttFixture struct {
	s       Store
	a, b    testutil.Signer
	R, R2   string // top-level events in ttChan (by a)
	C1, G   string // C1 replies to R, G replies to C1 (by b)
	N       string // a kind 9 without h tag (by a)
	O       string // top-level in ttChan2 (by a)
	D       string // deleted top-level in ttChan (by a)
	V       string // top-level in ttChan (by a), victim of a 9005
	K       string // a kind 7 reaction in ttChan (unclassified)
	L       string // an unclassified message in ttChan, as import stores a reply to a parent it has not seen
	missing string // an id nothing has
	at      int64
	evC1    *nostr.Event // C1 signed again: same id
}

func newTTFixture(t *testing.T, open Opener) *ttFixture {
	t.Helper()
	f := &ttFixture{s: ttOpen(t, open), a: testutil.NewSigner(t), b: testutil.NewSigner(t), at: ttBase}
	ing := func(sg testutil.Signer, kind int, tags ...nostr.Tag) string {
		f.at++
		return ttIngest(t, f.s, sg.Event(t, kind, f.at, "fixture", tags...)).ID
	}
	f.R = ing(f.a, 9, ttH(ttChan))
	f.R2 = ing(f.a, 9, ttH(ttChan))
	f.C1 = ing(f.b, 9, ttH(ttChan), ttRootTag(f.R), ttReplyTag(f.R))
	f.evC1 = f.b.Event(t, 9, f.at, "fixture", ttH(ttChan), ttRootTag(f.R), ttReplyTag(f.R))
	f.G = ing(f.b, 9, ttH(ttChan), ttRootTag(f.R), ttReplyTag(f.C1))
	f.N = ing(f.a, 9)
	f.O = ing(f.a, 9, ttH(ttChan2))
	f.D = ing(f.a, 9, ttH(ttChan))
	ing(f.a, 5, ttE(f.D))
	f.V = ing(f.a, 9, ttH(ttChan))
	f.K = ing(f.a, 7, ttH(ttChan), ttE(f.R))
	f.missing = strings.Repeat("5a", 32)
	// An import keeps a reply whose parent it has not seen unclassified.
	f.at++
	legacy := f.a.Event(t, 9, f.at, "fixture", ttH(ttChan), ttReplyTag(strings.Repeat("6b", 32)))
	if outcomes, err := f.s.ImportBatch(context.Background(), []*nostr.Event{legacy}); err != nil || outcomes[0] != nil {
		t.Fatalf("import the legacy event: %v, %v", err, outcomes)
	}
	f.L = legacy.ID
	return f
}

// CW-10, CW-11, CW-12, RL-5: classification of channel events from their
// NIP-10 marked e tags, and the live-ingest rejections.
func testThreadClassification(t *testing.T, open Opener) {
	f := newTTFixture(t, open)
	var cases []ttCase
	for _, group := range []func(*ttFixture) []ttCase{ttNotReplyCases, ttReplyCases, ttRootOnlyCases,
		ttRootMarkerCases, ttBroadcastCases, ttParentCases, ttKindCases, ttAuxCases} {
		cases = append(cases, group(f)...)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { ttClassify(t, f, i, c) })
	}
}

// ttCase is an event of channel ttChan that testThreadClassification
// ingests, and the class it should get or the rejection.
type ttCase struct {
	name string
	req  string // requirement
	kind int    // 0 means 9
	tags func() nostr.Tags
	want Class
	err  error
}

// ttClassify ingests case c, the i-th, and checks its class or its
// rejection.
func ttClassify(t *testing.T, f *ttFixture, i int, c ttCase) {
	// c.req names the requirement this case proves.
	kind := c.kind
	if kind == 0 {
		kind = 9
	}
	tags := append(nostr.Tags{ttH(ttChan)}, c.tags()...)
	ev := f.a.Event(t, kind, ttBase+1000+int64(i), c.req+" "+c.name, tags...)
	if c.err != nil {
		Reject(t, f.s, ev, c.err)
		if _, ok := ttRead(t, f.s, ev.ID); ok {
			t.Fatalf("rejected event was stored")
		}
		return
	}
	ttIngest(t, f.s, ev)
	CheckClass(t, f.s, ev.ID, c.want)
}

// The classes an event that is no reply gets.
var (
	ttTop          = Class{Depth: 0, RowClass: rowTopLevel}
	ttTopBroadcast = Class{Depth: 0, RowClass: rowTopLevel, Broadcast: true}
	ttUnclassified = Class{Depth: -1, RowClass: rowNever}
)

// d1 is the class of a reply to f.R.
func (f *ttFixture) d1(broadcast bool, rowClass int) Class {
	return Class{Depth: 1, Parent: f.R, Root: f.R, Broadcast: broadcast, RowClass: rowClass}
}

// d2 is the class of a reply to f.C1.
func (f *ttFixture) d2() Class { return Class{Depth: 2, Parent: f.C1, Root: f.R, RowClass: rowReply} }

// d3 is the class of a reply to f.G.
func (f *ttFixture) d3() Class { return Class{Depth: 3, Parent: f.G, Root: f.R, RowClass: rowReply} }

// ttNotReplyCases are events that are no replies. Not replies: depth 0, a
// row in both modes.
func ttNotReplyCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "no e tags", req: "CW-10", tags: func() nostr.Tags { return nil }, want: ttTop},
		{name: "positional e tags", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttE(f.R), ttE(f.C1)} }, want: ttTop},
		{name: "positional e tags with relay", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{{"e", f.R, "wss://relay.example"}, {"e", f.C1, "wss://relay.example"}}
		}, want: ttTop},
		{name: "unknown marker", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{{"e", f.R, "", "mention"}} }, want: ttTop},
		{name: "marker in third element (3-element tag)", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{{"e", f.R, "reply"}} }, want: ttTop},
		{name: "63-char reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.R[:63])} }, want: ttTop},
		{name: "65-char reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.R + "0")} }, want: ttTop},
		{name: "non-hex reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag("g" + f.R[1:])} }, want: ttTop},
		{name: "empty reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag("")} }, want: ttTop},
		{name: "reply marker on a q tag", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{{"q", f.R, "", "reply"}} }, want: ttTop},
		{name: "reply marker on an E tag", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{{"E", f.R, "", "reply"}} }, want: ttTop},
		{name: "marker Reply in another case", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{{"e", f.R, "", "Reply"}} }, want: ttTop},
		{name: "malformed reply marker to a missing parent is ignored", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.missing[:63]), {"e", f.missing, "reply"}}
		}, want: ttTop},
	}
}

// ttReplyCases are replies.
func ttReplyCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "depth 1", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.R)} }, want: f.d1(false, rowReply)},
		{name: "depth 1 with pubkey element", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{{"e", f.R, "wss://relay.example", "reply", f.a.PK}}
		}, want: f.d1(false, rowReply)},
		{name: "depth 2", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.C1)} }, want: f.d2()},
		{name: "depth 3", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.G)} }, want: f.d3()},
		{name: "uppercase reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(strings.ToUpper(f.R))} }, want: f.d1(false, rowReply)},
		{name: "mixed-case reply id", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(strings.ToUpper(f.C1[:10]) + f.C1[10:])} }, want: f.d2()},
		{name: "last valid reply marker wins", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), ttReplyTag(f.C1)}
		}, want: f.d2()},
		{name: "last valid reply marker wins over a missing one before it", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.missing), ttReplyTag(f.R)}
		}, want: f.d1(false, rowReply)},
		{name: "malformed reply marker after a valid one is ignored", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.C1), ttReplyTag(f.R[:63]), {"e", f.R, "reply"}, ttReplyTag("z" + f.R[1:])}
		}, want: f.d2()},
		{name: "positional e tags next to a reply marker", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttE(f.R2), ttReplyTag(f.R), ttE(f.O)}
		}, want: f.d1(false, rowReply)},
	}
}

// ttRootOnlyCases are root markers alone: NIP-10 direct replies to the
// root (CW-10 as changed on 2026-12-03).
func ttRootOnlyCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "root marker only", req: "CW-10", tags: func() nostr.Tags { return nostr.Tags{ttRootTag(f.R)} }, want: f.d1(false, rowReply)},
		{name: "root marker only, uppercase, with a relay", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{{"e", strings.ToUpper(f.R), "wss://relay.example", "root"}}
		}, want: f.d1(false, rowReply)},
		{name: "root marker only with a malformed reply marker", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R), ttReplyTag(f.C1[:63]), {"e", f.C1, "reply"}}
		}, want: f.d1(false, rowReply)},
		{name: "last valid root marker only wins", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R2), ttRootTag(f.R), ttRootTag(f.R2[:63])}
		}, want: f.d1(false, rowReply)},
		{name: "root marker only with positional e tags", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttE(f.R2), ttRootTag(f.R)}
		}, want: f.d1(false, rowReply)},
		{name: "root marker only with broadcast is a row", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R), {"broadcast", "1"}}
		}, want: f.d1(true, rowTopLevel)},
		{name: "root marker only naming a missing root", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.missing)}
		}, err: buzz.ErrParentNotFound},
		{name: "root marker only naming a reply", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.C1)}
		}, err: buzz.ErrRootMismatch},
		{name: "root marker only naming a deleted root", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.D)}
		}, err: buzz.ErrParentNotFound},
		{name: "root marker only naming another channel's event", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.O)}
		}, err: buzz.ErrParentOtherChannel},
	}
}

// ttRootMarkerCases are root markers with reply markers.
func ttRootMarkerCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "root marker consistent at depth 1", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R), ttReplyTag(f.R)}
		}, want: f.d1(false, rowReply)},
		{name: "root marker consistent at depth 2", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R), ttReplyTag(f.C1)}
		}, want: f.d2()},
		{name: "root marker consistent at depth 3, after the reply marker", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.G), ttRootTag(f.R)}
		}, want: f.d3()},
		{name: "root marker consistent in uppercase", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(strings.ToUpper(f.R)), ttReplyTag(f.C1)}
		}, want: f.d2()},
		{name: "malformed root marker is ignored", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R2[:63]), {"e", f.R2, "root"}, ttReplyTag(f.C1)}
		}, want: f.d2()},
		{name: "last valid root marker wins", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R2), ttRootTag(f.R), ttReplyTag(f.C1)}
		}, want: f.d2()},
		{name: "root marker names another top-level event", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R2), ttReplyTag(f.R)}
		}, err: buzz.ErrRootMismatch},
		{name: "root marker names the parent at depth 2", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.C1), ttReplyTag(f.C1)}
		}, err: buzz.ErrRootMismatch},
		{name: "root marker names an intermediate ancestor", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.C1), ttReplyTag(f.G)}
		}, err: buzz.ErrRootMismatch},
		{name: "root marker names a missing event", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.missing), ttReplyTag(f.R)}
		}, err: buzz.ErrRootMismatch},
		{name: "last valid root marker wins (wrong one last)", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.R), ttRootTag(f.R2), ttReplyTag(f.C1)}
		}, err: buzz.ErrRootMismatch},
	}
}

// ttBroadcastCases are broadcast tags.
func ttBroadcastCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "broadcast at depth 1 is a row", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast", "1"}}
		}, want: f.d1(true, rowTopLevel)},
		{name: "broadcast tag before the reply marker", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{{"broadcast", "1"}, ttRootTag(f.R), ttReplyTag(f.R)}
		}, want: f.d1(true, rowTopLevel)},
		{name: "broadcast at depth 2 stays quiet", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.C1), {"broadcast", "1"}}
		}, want: Class{Depth: 2, Parent: f.C1, Root: f.R, Broadcast: true, RowClass: rowReply}},
		{name: "broadcast at depth 3 stays quiet", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.G), {"broadcast", "1"}}
		}, want: Class{Depth: 3, Parent: f.G, Root: f.R, Broadcast: true, RowClass: rowReply}},
		{name: "broadcast on a top-level event", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{{"broadcast", "1"}}
		}, want: ttTopBroadcast},
		{name: "broadcast true is not broadcast", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast", "true"}}
		}, want: f.d1(false, rowReply)},
		{name: "broadcast with a third element is not broadcast", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast", "1", ""}}
		}, want: f.d1(false, rowReply)},
		{name: "broadcast without value is not broadcast", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast"}}
		}, want: f.d1(false, rowReply)},
		{name: "Broadcast in another case is not broadcast", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"Broadcast", "1"}}
		}, want: f.d1(false, rowReply)},
		{name: "broadcast 0 is not broadcast", req: "CW-11", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast", "0"}}
		}, want: f.d1(false, rowReply)},
	}
}

// ttParentCases are the parent rules (RL-5 messages).
func ttParentCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "parent missing", req: "RL-5", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.missing)} }, err: buzz.ErrParentNotFound},
		{name: "parent missing, uppercase", req: "RL-5", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(strings.ToUpper(f.missing))} }, err: buzz.ErrParentNotFound},
		{name: "parent deleted", req: "RL-5", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.D)} }, err: buzz.ErrParentNotFound},
		{name: "parent deleted, root marker consistent", req: "RL-5", tags: func() nostr.Tags {
			return nostr.Tags{ttRootTag(f.D), ttReplyTag(f.D)}
		}, err: buzz.ErrParentNotFound},
		{name: "parent without channel", req: "RL-5", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.N)} }, err: buzz.ErrParentNoChannel},
		{name: "parent in another channel", req: "RL-5", tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.O)} }, err: buzz.ErrParentOtherChannel},
	}
}

// ttKindCases are other classified kinds: every kind of a channel event is
// classified; and replies to events that are no thread parents.
func ttKindCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "kind 1 reply", req: "CW-10", kind: 1, tags: func() nostr.Tags { return nostr.Tags{ttReplyTag(f.R)} }, want: f.d1(false, rowReply)},
		{name: "kind 11 top-level", req: "CW-10", kind: 11, tags: func() nostr.Tags { return nil }, want: ttTop},
		{name: "addressable kind 30023 reply", req: "CW-10", kind: 30023, tags: func() nostr.Tags {
			return nostr.Tags{{"d", "x"}, ttReplyTag(f.C1)}
		}, want: f.d2()},

		// CW-12: a reply to a legacy parent (stored without thread
		// metadata) stays unclassified and is a row (never vanishes).
		{name: "reply to a legacy channel event", req: "CW-12", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.L)}
		}, want: Class{Depth: -1, RowClass: rowTopLevel}},
		// CW-10: a reaction is no thread message; nothing replies to it.
		{name: "reply to a reaction", req: "CW-10", tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.K)}
		}, err: buzz.ErrParentNotFound},
	}
}

// ttAuxCases are aux kinds: e tags name targets, never parents.
func ttAuxCases(f *ttFixture) []ttCase {
	return []ttCase{
		{name: "kind 5 with a reply marker to a missing event", req: "CW-10", kind: 5, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.missing)}
		}, want: ttUnclassified},
		{name: "kind 7 with a reply marker to a missing event", req: "CW-10", kind: 7, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.missing)}
		}, want: ttUnclassified},
		{name: "kind 7 with a reply marker to a stored event", req: "CW-10", kind: 7, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R), {"broadcast", "1"}}
		}, want: Class{Depth: -1, RowClass: rowNever, Broadcast: true}},
		{name: "kind 7 naming an event of another channel", req: "RL-8", kind: 7, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.O)}
		}, want: ttUnclassified},
		{name: "kind 40003 with a reply marker to a missing event", req: "CW-10", kind: 40003, tags: func() nostr.Tags {
			return nostr.Tags{ttE(f.R), ttReplyTag(f.missing)}
		}, want: ttUnclassified},
		{name: "kind 40003 whose target tag has a reply marker", req: "CW-10", kind: 40003, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.R)}
		}, want: ttUnclassified},
		{name: "kind 9005 whose target tag has a reply marker", req: "CW-10", kind: 9005, tags: func() nostr.Tags {
			return nostr.Tags{ttReplyTag(f.V)}
		}, want: ttUnclassified},
	}
}

// CW-10: events without an h tag are never classified, whatever their
// markers, and are not rejected for a missing parent.
func testThreadClassificationNoChannel(t *testing.T, open Opener) {
	f := newTTFixture(t, open)
	for i, tags := range []nostr.Tags{
		{ttReplyTag(f.missing)},
		{ttReplyTag(f.R)},
		{ttRootTag(f.R), ttReplyTag(f.C1), {"broadcast", "1"}},
		{ttReplyTag(f.N)},
		{ttReplyTag(f.D)},
	} {
		ev := ttIngest(t, f.s, f.a.Event(t, 1, ttBase+2000+int64(i), "no channel", tags...))
		in := ttMustRead(t, f.s, ev.ID)
		if in.Depth.Valid || in.Parent != "" || in.Root != "" || in.RowClass != rowNever || in.Channel.Valid {
			t.Errorf("tags %v: got %+v, want unclassified without channel", tags, in)
		}
	}
	// Their markers counted nothing on the named events.
	if in := ttMustRead(t, f.s, f.R); in.ReplyCount != 1 || in.DescendantCount != 2 {
		t.Errorf("R counters changed by channel-less events: %v", in.ttCounters)
	}
}

// CW-10, CW-6: NIP-29 moderation and lifecycle kinds 9000-9030 are never
// classified; their e tags name targets, so a reply marker to a missing
// event neither rejects them nor makes them replies.
func testThreadNIP29KindsNotClassified(t *testing.T, open Opener) {
	f := newTTFixture(t, open)
	for kind := 9000; kind <= 9030; kind++ {
		if kind == buzz.KindGroupDelete || buzz.IsLifecycleKind(kind) {
			continue // need a stored target, or a channel state: deletion.go, channels.go
		}
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			ev := ttIngest(t, f.s, f.a.Event(t, kind, ttBase+3000, "mod",
				ttH(ttChan), ttRootTag(f.missing), ttReplyTag(f.missing), nostr.Tag{"p", f.b.PK}))
			CheckClass(t, f.s, ev.ID, Class{Depth: -1, RowClass: rowNever})
			ev = ttIngest(t, f.s, f.a.Event(t, kind, ttBase+3001, "mod", ttH(ttChan), ttReplyTag(f.R)))
			CheckClass(t, f.s, ev.ID, Class{Depth: -1, RowClass: rowNever})
		})
	}
	if in := ttMustRead(t, f.s, f.R); in.ReplyCount != 1 || in.DescendantCount != 2 {
		t.Errorf("R counters changed by moderation events: %v", in.ttCounters)
	}
}

// CW-10, RL-5: a chain of 100 replies is accepted (depth 100), the 101st
// level is rejected, and every ancestor of the chain counts exactly.
func testThreadDepthLimit(t *testing.T, open Opener) {
	s := ttOpen(t, open)
	a := testutil.NewSigner(t)
	m := NewThreadModel()
	root := ttIngestAdd(t, s, m, a.Event(t, 9, ttBase, "root", ttH(ttChan)), "")
	parent := root
	var middle *nostr.Event
	for d := 1; d <= 100; d++ {
		parent = ttIngestAdd(t, s, m, a.Event(t, 9, ttBase+int64(d), fmt.Sprint(d),
			ttH(ttChan), ttRootTag(root.ID), ttReplyTag(parent.ID)), parent.ID)
		if d == 50 {
			middle = parent
		}
	}
	// RL-20: a depth limit past any depth a store can hold serves every
	// level below the root and below an inner event alike.
	for _, from := range []struct {
		ev   *nostr.Event
		want int
	}{{root, 100}, {middle, 50}} {
		th, err := s.Thread(context.Background(), buzz.ThreadQuery{Root: from.ev.ID, DepthLimit: math.MaxUint32, Limit: 200})
		if err != nil || len(th.Replies) != from.want {
			t.Fatalf("thread below %q, every level: %d replies, %v; want %d", from.ev.Content, len(th.Replies), err, from.want)
		}
	}
	CheckClass(t, s, parent.ID, Class{Depth: 100, Parent: m.nodes[parent.ID].parent, Root: root.ID, RowClass: rowReply})

	before := ttSnapshot(t, s)
	Reject(t, s, a.Event(t, 9, ttBase+101, "101", ttH(ttChan), ttReplyTag(parent.ID)), buzz.ErrDepthExceeded)
	Reject(t, s, a.Event(t, 9, ttBase+101, "101 broadcast", ttH(ttChan), ttRootTag(root.ID), ttReplyTag(parent.ID), nostr.Tag{"broadcast", "1"}), buzz.ErrDepthExceeded)
	SameSnapshot(t, "a rejected event", before, ttSnapshot(t, s))

	if in := ttMustRead(t, s, root.ID); in.ReplyCount != 1 || in.DescendantCount != 100 || in.LastReplyAt.Int64 != ttBase+100 {
		t.Errorf("root counters %v", in.ttCounters)
	}
	CheckThreadModel(t, s, m)
}

// RL-5, CW-19: every ancestor's reply_count, descendant_count,
// last_reply_at and participants are exact after a tree of replies by
// several authors at depths 1-4 whose created_at arrive out of order
// (including ties, broken by pubkey ASC).
func testThreadCountersTree(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 6)
	evs := ttBuildTree(t, s, sg, []ttTreeNode{
		{"R", 0, 0, "", false},
		{"A", 1, 50, "R", false},
		{"A1", 2, 10, "A", false},
		{"A1a", 3, 70, "A1", false},
		{"A1a1", 1, 5, "A1a", false}, // depth 4, older than everything above it
		{"A2", 1, 30, "A", false},
		{"B", 2, 20, "R", true}, // broadcast depth 1 with its own replies
		{"B1", 4, 90, "B", false},
		{"B2", 5, 90, "B", false}, // same second as B1: pubkey ASC breaks the tie
		{"B2a", 4, 60, "B2", false},
		{"C", 3, 40, "R", false},
		{"R2", 0, 100, "", false},
		{"R2a", 0, 1, "R2", false}, // the root's own author replying
	}, m)
	CheckThreadModel(t, s, m)

	// Spot checks written out by hand, so that a model bug cannot hide a
	// store bug.
	got := ttMustRead(t, s, evs["R"].ID)
	if got.ReplyCount != 3 || got.DescendantCount != 10 || got.LastReplyAt.Int64 != ttBase+90 {
		t.Errorf("R counters %v", got.ttCounters)
	}
	wantParts := []string{sg[4].PK, sg[5].PK, sg[3].PK, sg[1].PK, sg[2].PK}
	if strings.Join(got.Participants, ",") != strings.Join(wantParts, ",") {
		t.Errorf("R participants %v, want %v", got.Participants, wantParts)
	}
	got = ttMustRead(t, s, evs["A1"].ID)
	if got.ReplyCount != 1 || got.DescendantCount != 2 || got.LastReplyAt.Int64 != ttBase+70 ||
		strings.Join(got.Participants, ",") != sg[3].PK+","+sg[1].PK {
		t.Errorf("A1 counters %v", got.ttCounters)
	}
	got = ttMustRead(t, s, evs["A1a1"].ID)
	if got.ReplyCount != 0 || got.DescendantCount != 0 || got.LastReplyAt.Valid || len(got.Participants) != 0 {
		t.Errorf("leaf counters %v", got.ttCounters)
	}
	CheckClass(t, s, evs["A1a1"].ID, Class{Depth: 4, Parent: evs["A1a"].ID, Root: evs["R"].ID, RowClass: rowReply})
	CheckClass(t, s, evs["B2a"].ID, Class{Depth: 3, Parent: evs["B2"].ID, Root: evs["R"].ID, RowClass: rowReply})
	CheckClass(t, s, evs["B"].ID, Class{Depth: 1, Parent: evs["R"].ID, Root: evs["R"].ID, Broadcast: true, RowClass: rowTopLevel})
	got = ttMustRead(t, s, evs["R2"].ID)
	if got.ReplyCount != 1 || got.DescendantCount != 1 || got.LastReplyAt.Int64 != ttBase+1 ||
		len(got.Participants) != 1 || got.Participants[0] != sg[0].PK {
		t.Errorf("R2 counters %v", got.ttCounters)
	}
}

// CW-19, RL-5: participants keep the 10 authors with the newest events
// (created_at DESC, pubkey ASC) out of 12, on the root and on an
// intermediate ancestor, as the ranking changes.
func testThreadParticipantsTwelveAuthors(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 12)
	root, mid := ttRootMid(t, s, m, sg[0])
	reply := func(author int, at int64, parent *nostr.Event) *nostr.Event {
		return ttIngestAdd(t, s, m, sg[author].Event(t, 9, ttBase+at, fmt.Sprint(author, "@", at), ttH(ttChan), ttReplyTag(parent.ID)), parent.ID)
	}
	// Authors 0..11 reply below mid; authors 0..3 share one second, so the
	// last places are decided by pubkey.
	for i := 11; i >= 0; i-- {
		at := int64(100 + i)
		if i < 4 {
			at = 100
		}
		reply(i, at, mid)
	}
	CheckThreadModel(t, s, m)
	got := ttMustRead(t, s, mid.ID)
	if len(got.Participants) != 10 {
		t.Fatalf("mid has %d participants, want 10", len(got.Participants))
	}
	// 11..4 by time, then the tie at 100 in pubkey order: 0, 1 (2 and 3 drop).
	want := []string{sg[11].PK, sg[10].PK, sg[9].PK, sg[8].PK, sg[7].PK, sg[6].PK, sg[5].PK, sg[4].PK, sg[0].PK, sg[1].PK}
	if strings.Join(got.Participants, ",") != strings.Join(want, ",") {
		t.Errorf("mid participants\n got  %v\n want %v", got.Participants, want)
	}

	// An older event of a dropped author changes nothing; a newer one
	// brings them to the front. Old events of listed authors never lower
	// their time.
	reply(3, 50, mid)
	reply(10, 20, root)
	CheckThreadModel(t, s, m)
	reply(2, 500, mid)
	CheckThreadModel(t, s, m)
	got = ttMustRead(t, s, root.ID)
	if got.Participants[0] != sg[2].PK || got.LastReplyAt.Int64 != ttBase+500 {
		t.Errorf("root participants after a newer reply of a dropped author: %v", got.ttCounters)
	}
	// Deeper replies count on every ancestor.
	deep := reply(3, 600, reply(5, 30, mid))
	reply(7, 10, deep)
	CheckThreadModel(t, s, m)
}

// RL-5, CW-19: a random forest of 150 events (12 authors, random parents
// and dates with ties) has exact counters on every event.
func testThreadCountersRandom(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 12)
	rng := rand.New(rand.NewPCG(7, 11))
	var ids []string
	for i := 0; i < 150; i++ {
		author := rng.IntN(len(sg))
		at := ttBase + rng.Int64N(60)
		tags := nostr.Tags{ttH(ttChan)}
		parent := ""
		if len(ids) > 0 && rng.IntN(8) != 0 {
			parent = ids[rng.IntN(len(ids))]
			tags = append(tags, ttReplyTag(parent))
			if rng.IntN(4) == 0 {
				tags = append(tags, nostr.Tag{"broadcast", "1"})
			}
		}
		ev := ttIngestAdd(t, s, m, sg[author].Event(t, 9, at, fmt.Sprint(i), tags...), parent)
		ids = append(ids, ev.ID)
	}
	CheckThreadModel(t, s, m)
}

// RL-4: a rejected event leaves nothing at all: the store's whole Dump is
// unchanged.
func testThreadRejectedLeavesNothing(t *testing.T, open Opener) {
	f := newTTFixture(t, open)
	newCh := "9a0f3c4e-2b1d-4e5f-8a7b-6c5d4e3f2a1b" // no event names it yet
	cases := []struct {
		name string
		ev   *nostr.Event
		err  error
	}{
		{"kind 5 with an own and a foreign target", f.a.Event(t, 5, ttBase+10, "", ttE(f.R2), ttE(f.C1)), buzz.ErrNotAuthor},
		{"kind 5 with a foreign and an own target", f.a.Event(t, 5, ttBase+10, "", ttE(f.C1), ttE(f.R2)), buzz.ErrNotAuthor},
		{"reply with a bad root marker", f.b.Event(t, 9, ttBase+10, "", ttH(ttChan), ttRootTag(f.R2), ttReplyTag(f.C1)), buzz.ErrRootMismatch},
		{"reply in a new channel to a parent elsewhere", f.b.Event(t, 9, ttBase+10, "", ttH(newCh), ttReplyTag(f.R)), buzz.ErrParentOtherChannel},
		{"reply to a missing parent in a new channel", f.b.Event(t, 9, ttBase+10, "", ttH(newCh), ttReplyTag(f.missing)), buzz.ErrParentNotFound},
		{"9005 in a new channel", f.a.Event(t, 9005, ttBase+10, "", ttH(newCh), ttE(f.R2)), buzz.ErrTargetOtherChannel},
		{"edit in a new channel", f.a.Event(t, 40003, ttBase+10, "", ttH(newCh), ttE(f.R2)), buzz.ErrTargetOtherChannel},
		{"edit of another author", f.a.Event(t, 40003, ttBase+10, "", ttH(ttChan), ttE(f.C1)), buzz.ErrNotAuthor},
		{"duplicate reply", f.evC1, buzz.ErrDuplicate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ttRejectLeavesNothing(t, f.s, c.ev, c.err)
		})
	}
	if !ttVisible(t, f.s, f.R2) {
		t.Error("own target of a refused kind 5 was deleted")
	}
}

// RL-4, RL-5, RL-1: 8 goroutines ingest replies into the same thread at
// once (chains of their own plus direct replies to the root), mixed with
// events that must be refused; every accepted event is stored whole, every
// refused one leaves nothing, and the counters end exact. A reader polls
// the root meanwhile: its counters only grow and stay consistent.
func testThreadConcurrentIngest(t *testing.T, open Opener) {
	s, sg, m := ttNewThread(t, open, 8)
	root := ttIngestAdd(t, s, m, sg[0].Event(t, 9, ttBase, "root", ttH(ttChan)), "")
	other := ttIngestAdd(t, s, m, sg[0].Event(t, 9, ttBase, "other root", ttH(ttChan)), "")

	type job struct {
		ev  *nostr.Event
		err error
	}
	const perWorker = 24
	work := make([][]job, len(sg))
	for w := range sg {
		parent := root.ID
		for i := 0; i < perWorker; i++ {
			at := ttBase + int64((w*7+i*13)%50) + 1
			switch i % 6 {
			case 5: // refused: wrong root marker
				work[w] = append(work[w], job{sg[w].Event(t, 9, at, fmt.Sprint(w, i), ttH(ttChan), ttRootTag(other.ID), ttReplyTag(parent)), buzz.ErrRootMismatch})
			case 4: // refused: missing parent
				work[w] = append(work[w], job{sg[w].Event(t, 9, at, fmt.Sprint(w, i), ttH(ttChan), ttReplyTag(strings.Repeat(fmt.Sprintf("%02x", w+1), 32))), buzz.ErrParentNotFound})
			case 0, 2: // a direct reply to the root
				ev := sg[w].Event(t, 9, at, fmt.Sprint(w, i), ttH(ttChan), ttRootTag(root.ID), ttReplyTag(root.ID))
				work[w] = append(work[w], job{ev: ev})
				m.Add(ev, root.ID)
				if i == 0 {
					parent = ev.ID
				}
			default: // extend this worker's own chain
				ev := sg[w].Event(t, 9, at, fmt.Sprint(w, i), ttH(ttChan), ttRootTag(root.ID), ttReplyTag(parent))
				work[w] = append(work[w], job{ev: ev})
				m.Add(ev, parent)
				parent = ev.ID
			}
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(sg)*perWorker+1)
	for w := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, j := range work[w] {
				err := ingest(s, context.Background(), j.ev)
				switch {
				case j.err == nil && err != nil:
					errs <- fmt.Errorf("worker %d: %s refused: %v", w, j.ev.Content, err)
				case j.err != nil && (err == nil || err.Error() != j.err.Error()):
					errs <- fmt.Errorf("worker %d: %s: got %v, want %v", w, j.ev.Content, err, j.err)
				}
			}
		}()
	}
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var last int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			sums, err := s.Summaries(context.Background(), []string{root.ID})
			if err != nil || len(sums) != 1 {
				errs <- fmt.Errorf("reader: %d summaries, %v", len(sums), err)
				return
			}
			replies, desc := sums[0].ReplyCount, sums[0].DescendantCount
			if desc < last || replies > desc {
				errs <- fmt.Errorf("reader: root counters went from desc %d to replies %d desc %d", last, replies, desc)
				return
			}
			last = desc
		}
	}()
	wg.Wait()
	close(stop)
	<-readerDone
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	CheckThreadModel(t, s, m)
	accepted := int64(len(m.order))
	if n := Count(t, s, nostr.Filter{Tags: nostr.TagMap{"h": {ttChan}}}, buzz.Anonymous); n != accepted {
		t.Errorf("Count = %d, want %d accepted events", n, accepted)
	}
	if n := held(t, s, nostr.Filter{}); int64(n) != accepted {
		t.Errorf("%d events stored, want %d", n, accepted)
	}
}
