package buzz

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// memLookup is a Lookup over events held in a slice: the least a store
// has to answer for the rules of ingest.
type memLookup struct {
	events []*StoredEvent
	// dTags are the d tags of the addressable events, by Ref.
	dTags     map[int64]string
	community *Community
}

func (l *memLookup) EventByID(id string) (*StoredEvent, error) {
	for _, e := range l.events {
		if e.ID == id {
			return e, nil
		}
	}
	return nil, nil
}

func (l *memLookup) EventByRef(ref int64) (*StoredEvent, error) {
	for _, e := range l.events {
		if e.Ref == ref {
			return e, nil
		}
	}
	return nil, nil
}

func (l *memLookup) Versions(kind int, pubkey, d string) ([]*StoredEvent, error) {
	var out []*StoredEvent
	for _, e := range l.events {
		if e.Kind == kind && e.PubKey == pubkey && (!IsAddressableKind(kind) || l.dTags[e.Ref] == d) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *memLookup) ChannelNumber(h string) (int64, bool, error) {
	if ch := l.community.Channel(h); ch != nil {
		return ch.Seq, true, nil
	}
	return 0, false, nil
}

func (l *memLookup) Community() *Community { return l.community }

// Numbers of the channels of the rule tests.
const (
	seqOpen    = 1
	seqPrivate = 2
)

// ruleCommunity has an open channel (1) and a private one (2), both staffed.
func ruleCommunity() *Community {
	open := openChannel()
	private := &Channel{Seq: seqPrivate, H: chanIDPrivate, Created: true, Private: true, Members: staffed()}
	return NewCommunity(Policy{OpenWrite: true, Admins: relayAdmins()}, open, private)
}

// id is a 64-hex event id that names n.
func id(n int) string { return fmt.Sprintf("%064x", n) }

// ruleStore holds a thread of the open channel (a root 1 by the member,
// its reply 2, the reply's reply 3), a post 4 of the private channel by
// the member, a post 5 of no channel by the outsider, a reaction 6 to 1,
// a deleted post 7, an expired post 8 and an edit 9 of 1 in the open
// channel.
func ruleStore() *memLookup {
	ev := func(ref int64, kind int, author string, channel, depth, root int64) *StoredEvent {
		return &StoredEvent{Ref: ref, ID: id(int(ref)), PubKey: author, Kind: kind, CreatedAt: 1000 + ref,
			Channel: channel, Scope: channel, Classified: channel != 0 && kind == 1, Depth: depth, RootRef: root}
	}
	deleted := ev(7, 1, pkMember, seqOpen, 0, 0)
	deleted.Deleted = true
	expired := ev(8, 1, pkMember, seqOpen, 0, 0)
	expired.ExpiresAt = 1500
	reaction := ev(6, KindReaction, pkOutsider, 0, 0, 0)
	reaction.Scope = seqOpen
	return &memLookup{community: ruleCommunity(), dTags: map[int64]string{}, events: []*StoredEvent{
		ev(1, 1, pkMember, seqOpen, 0, 0),
		ev(2, 1, pkAdmin, seqOpen, 1, 1),
		ev(3, 1, pkOwner, seqOpen, 2, 1),
		ev(4, 1, pkMember, seqPrivate, 0, 0),
		ev(5, 1, pkOutsider, 0, 0, 0),
		reaction, deleted, expired,
		ev(9, KindEdit, pkMember, seqOpen, 0, 0),
	}}
}

const ruleNow = 2000

// CW-10, CW-11, CW-12: a reply is placed below its parent, in its root's
// thread, a depth further; a parent not served, of no channel or another
// channel, of no thread kind, or a root marker naming another root refuse
// it; an import keeps it unclassified instead of refusing a missing
// parent. The author is a newcomer unless the case names one.
func TestClassify(t *testing.T) {
	l := ruleStore()
	open := l.community.Channel(chanID)
	tests := []struct {
		name      string
		kind      int
		author    string
		tags      nostr.Tags
		h         string
		ch        *Channel
		importing bool
		want      Classification
		err       error
	}{
		{name: "root", kind: 1, h: chanID, ch: open,
			want: Classification{Classified: true, Row: RowTopLevel}},
		{name: "no channel", kind: 1, tags: nostr.Tags{{"e", id(1), "", "reply"}}},
		{name: "aux kind", kind: KindReaction, h: chanID, ch: open, tags: nostr.Tags{{"e", id(1)}}},
		{name: "direct reply", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(1), "", "reply"}},
			want: Classification{Classified: true, Depth: 1, ParentRef: 1, RootRef: 1, Row: RowReply}},
		{name: "broadcast direct reply is top level", kind: 1, h: chanID, ch: open,
			tags: nostr.Tags{{"e", id(1), "", "reply"}, {"broadcast", "1"}},
			want: Classification{Classified: true, Depth: 1, ParentRef: 1, RootRef: 1, Broadcast: true, Row: RowTopLevel}},
		{name: "deeper reply with its root", kind: 1, h: chanID, ch: open,
			tags: nostr.Tags{{"e", id(1), "", "root"}, {"e", id(3), "", "reply"}},
			want: Classification{Classified: true, Depth: 3, ParentRef: 3, RootRef: 1, Row: RowReply}},
		{name: "root marker of another thread", kind: 1, h: chanID, ch: open,
			tags: nostr.Tags{{"e", id(5), "", "root"}, {"e", id(3), "", "reply"}}, err: ErrRootMismatch},
		{name: "parent missing", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(99), "", "reply"}}, err: ErrParentNotFound},
		{name: "parent missing while importing", kind: 1, h: chanID, ch: open, importing: true,
			tags: nostr.Tags{{"e", id(99), "", "reply"}}, want: Classification{Row: RowTopLevel}},
		{name: "parent deleted", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(7), "", "reply"}}, err: ErrParentNotFound},
		{name: "parent expired", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(8), "", "reply"}}, err: ErrParentNotFound},
		{name: "parent of no channel", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(5), "", "reply"}}, err: ErrParentNoChannel},
		{name: "parent in a channel not created yet", kind: 1, h: chanIDOther, tags: nostr.Tags{{"e", id(1), "", "reply"}}, err: ErrParentOtherChannel},
		{name: "parent a reaction of no channel", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(6), "", "reply"}}, err: ErrParentNoChannel},
		{name: "parent an edit", kind: 1, h: chanID, ch: open, tags: nostr.Tags{{"e", id(9), "", "reply"}}, err: ErrParentNotFound},
		{name: "parent private, author an outsider", kind: 1, author: pkOutsider, h: chanID, ch: open,
			tags: nostr.Tags{{"e", id(4), "", "reply"}}, err: ErrParentNotFound},
		{name: "parent private, author a member", kind: 1, author: pkMember, h: chanID, ch: open,
			tags: nostr.Tags{{"e", id(4), "", "reply"}}, err: ErrParentOtherChannel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			author := tc.author
			if author == "" {
				author = pkNewbie
			}
			ev := &nostr.Event{Kind: tc.kind, PubKey: author, CreatedAt: ruleNow, Tags: tc.tags}
			got, err := Classify(l, ev, ParseThreadTags(tc.tags), tc.h, tc.ch, ruleNow, tc.importing)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// CW-10: a reply deeper than MaxDepth is refused.
func TestClassifyDepthBound(t *testing.T) {
	l := ruleStore()
	l.events = append(l.events, &StoredEvent{Ref: 50, ID: id(50), PubKey: pkMember, Kind: 1, Channel: seqOpen,
		Scope: seqOpen, Classified: true, Depth: MaxDepth, RootRef: 1})
	ev := &nostr.Event{Kind: 1, PubKey: pkMember, Tags: nostr.Tags{{"e", id(50), "", "reply"}}}
	if _, err := Classify(l, ev, ParseThreadTags(ev.Tags), chanID, l.community.Channel(chanID), ruleNow, false); !errors.Is(err, ErrDepthExceeded) {
		t.Fatalf("err %v, want %v", err, ErrDepthExceeded)
	}
}

// RL-6, RL-29: a kind 5 deletes its author's events its e and a tags
// name, no deletion, and is refused by one target of another author that
// its author may know of.
func TestDeletionTargets(t *testing.T) {
	l := ruleStore()
	l.events = append(l.events,
		&StoredEvent{Ref: 20, ID: id(20), PubKey: pkMember, Kind: KindDeletion},
		&StoredEvent{Ref: 21, ID: id(21), PubKey: pkMember, Kind: 30023, CreatedAt: 1500},
		&StoredEvent{Ref: 22, ID: id(22), PubKey: pkMember, Kind: 30023, CreatedAt: 2500},
	)
	l.dTags[21], l.dTags[22] = "x", "x"
	addr := "30023:" + pkMember + ":x"
	tests := []struct {
		name   string
		author string
		tags   nostr.Tags
		want   []int64
		err    error
	}{
		{name: "own event", author: pkMember, tags: nostr.Tags{{"e", id(1)}}, want: []int64{1}},
		{name: "own private event", author: pkMember, tags: nostr.Tags{{"e", id(4)}}, want: []int64{4}},
		{name: "another author's", author: pkMember, tags: nostr.Tags{{"e", id(1)}, {"e", id(2)}}, err: ErrNotAuthor},
		{name: "unknowable is ignored", author: pkOutsider, tags: nostr.Tags{{"e", id(4)}, {"e", id(5)}}, want: []int64{5}},
		{name: "uppercase id names nothing", author: pkMember, tags: nostr.Tags{{"e", strings.Repeat("A", 64)}}},
		{name: "a deletion is no target", author: pkMember, tags: nostr.Tags{{"e", id(20)}}},
		{name: "address up to its date", author: pkMember, tags: nostr.Tags{{"a", addr}}, want: []int64{21}},
		{name: "address in another spelling", author: pkMember, tags: nostr.Tags{{"a", "030023:" + pkMember + ":x"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &nostr.Event{Kind: KindDeletion, PubKey: tc.author, CreatedAt: ruleNow, Tags: tc.tags}
			got, err := DeletionTargets(l, ev)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if refs := refsOf(got); fmt.Sprint(refs) != fmt.Sprint(tc.want) {
				t.Fatalf("targets %v, want %v", refs, tc.want)
			}
		})
	}
}

func refsOf(evs []*StoredEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Ref)
	}
	return out
}

// RL-6, RL-8: a kind 9005 names one target in its own channel, which its
// author or a channel admin may delete; a reaction belongs to its
// target's channel.
func TestGroupDeleteTarget(t *testing.T) {
	l := ruleStore()
	open := l.community.Channel(chanID)
	tests := []struct {
		name   string
		author string
		tags   nostr.Tags
		h      string
		want   int64
		err    error
	}{
		{name: "by its author", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(1)}}, want: 1},
		{name: "by a channel admin", author: pkAdmin, h: chanID, tags: nostr.Tags{{"e", id(1)}}, want: 1},
		{name: "by a member", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(2)}}, err: ErrNotAuthorOrAdmin},
		{name: "a reaction in its target's channel", author: pkAdmin, h: chanID, tags: nostr.Tags{{"e", id(6)}}, want: 6},
		{name: "two targets", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(1)}, {"e", id(2)}}, err: ErrDeletionTargets},
		{name: "no h", author: pkMember, tags: nostr.Tags{{"e", id(1)}}, err: ErrMissingH},
		{name: "missing", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(99)}}, err: ErrTargetNotFound},
		{name: "deleted again", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(7)}}, want: 7},
		{name: "expired", author: pkMember, h: chanID, tags: nostr.Tags{{"e", id(8)}}, err: ErrTargetNotFound},
		{name: "of no channel", author: pkOutsider, h: chanID, tags: nostr.Tags{{"e", id(5)}}, err: ErrTargetOtherChannel},
		{name: "private, unknowable", author: pkOutsider, h: chanID, tags: nostr.Tags{{"e", id(4)}}, err: ErrTargetNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &nostr.Event{Kind: KindGroupDelete, PubKey: tc.author, CreatedAt: ruleNow, Tags: tc.tags}
			ch := open
			if tc.h == "" {
				ch = nil
			}
			got, err := GroupDeleteTarget(l, ev, tc.h, ch, ruleNow)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && (len(got) != 1 || got[0].Ref != tc.want) {
				t.Fatalf("targets %v, want [%d]", refsOf(got), tc.want)
			}
		})
	}
}

// RL-7: an edit names a live target of its own channel by its author.
func TestCheckEdit(t *testing.T) {
	l := ruleStore()
	open := l.community.Channel(chanID)
	tests := []struct {
		name   string
		author string
		tags   nostr.Tags
		h      string
		ch     *Channel
		err    error
	}{
		{name: "own post", author: pkMember, h: chanID, ch: open, tags: nostr.Tags{{"e", id(1)}}},
		{name: "uppercase id", author: pkMember, h: chanID, ch: open, tags: nostr.Tags{{"e", strings.ToUpper(id(1))}}},
		{name: "no h", author: pkMember, tags: nostr.Tags{{"e", id(1)}}, err: ErrMissingH},
		{name: "no e", author: pkMember, h: chanID, ch: open, err: ErrEditTarget},
		{name: "not an id", author: pkMember, h: chanID, ch: open, tags: nostr.Tags{{"e", "x"}}, err: ErrTargetNotFound},
		{name: "deleted", author: pkMember, h: chanID, ch: open, tags: nostr.Tags{{"e", id(7)}}, err: ErrTargetNotFound},
		{name: "another author's", author: pkMember, h: chanID, ch: open, tags: nostr.Tags{{"e", id(2)}}, err: ErrNotAuthor},
		{name: "of no channel", author: pkOutsider, h: chanID, ch: open, tags: nostr.Tags{{"e", id(5)}}, err: ErrTargetOtherChannel},
		{name: "in a channel not created yet", author: pkOutsider, h: chanIDOther, tags: nostr.Tags{{"e", id(5)}}, err: ErrTargetOtherChannel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &nostr.Event{Kind: KindEdit, PubKey: tc.author, CreatedAt: ruleNow, Tags: tc.tags}
			if err := CheckEdit(l, ev, tc.h, tc.ch, ruleNow); !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
		})
	}
}

// RL-8, RL-10, RL-13, RL-14, RL-29: which channel an event is read in and
// whether it may be written.
func TestAccess(t *testing.T) {
	l := ruleStore()
	l.community.Policy.OpenWrite = false
	open := l.community.Channel(chanID)
	stored := func(ref int64) *StoredEvent { e, _ := l.EventByRef(ref); return e }
	tests := []struct {
		name      string
		kind      int
		author    string
		tags      nostr.Tags
		h         string
		ch        *Channel
		targets   []*StoredEvent
		wantScope int64
		err       error
	}{
		{name: "member posts", kind: 1, author: pkMember, h: chanID, ch: open, wantScope: seqOpen},
		{name: "outsider posts", kind: 1, author: pkOutsider, h: chanID, ch: open, err: ErrNotMember},
		{name: "reaction takes its target's channel", kind: KindReaction, author: pkMember,
			tags: nostr.Tags{{"e", id(1)}}, wantScope: seqOpen},
		{name: "outsider's reaction to a member post", kind: KindReaction, author: pkOutsider,
			tags: nostr.Tags{{"e", id(1)}}, err: ErrNotMember},
		{name: "outsider deletes their reaction in the channel", kind: KindDeletion, author: pkOutsider,
			h: chanID, ch: open, targets: []*StoredEvent{stored(6)}, wantScope: seqOpen},
		{name: "deletion across channels", kind: KindDeletion, author: pkMember,
			targets: []*StoredEvent{stored(1), stored(4)}, err: ErrCrossChannelDeletion},
		{name: "deletion of no channel by an outsider", kind: KindDeletion, author: pkOutsider, err: ErrMembersOnly},
		{name: "join of a private channel", kind: KindJoin, author: pkOutsider, h: chanIDPrivate,
			ch: l.community.Channel(chanIDPrivate), err: ErrCannotJoin},
		{name: "lifecycle without h", kind: KindJoin, author: pkOutsider, err: ErrMissingH},
		{name: "group state belongs to its channel", kind: KindGroupMetadata, tags: nostr.Tags{{"d", chanID}}, wantScope: seqOpen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := &nostr.Event{Kind: tc.kind, PubKey: tc.author, CreatedAt: ruleNow, Tags: tc.tags}
			scope, _, err := Access(l, ev, tc.h, tc.ch, tc.targets, Grant{Relay: tc.author == ""})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && scope != tc.wantScope {
				t.Fatalf("scope %d, want %d", scope, tc.wantScope)
			}
		})
	}
}

// RL-9: a version replaces the older ones not deleted and is refused by a
// newer one, within a second the one of the lower id.
func TestSupersedes(t *testing.T) {
	v := func(at int64, id string, deleted bool) *StoredEvent {
		return &StoredEvent{CreatedAt: at, ID: id, Deleted: deleted}
	}
	ev := &nostr.Event{CreatedAt: 100, ID: strings.Repeat("5", 64)}
	tests := []struct {
		name     string
		versions []*StoredEvent
		want     int
		err      error
	}{
		{name: "older ones", versions: []*StoredEvent{v(90, id(1), false), v(99, id(2), true)}, want: 1},
		{name: "a newer one", versions: []*StoredEvent{v(101, id(1), false)}, err: ErrNewerVersionStored},
		{name: "a newer deleted one", versions: []*StoredEvent{v(101, id(1), true)}, err: ErrNewerVersionStored},
		{name: "same second, lower id", versions: []*StoredEvent{v(100, strings.Repeat("4", 64), false)}, err: ErrNewerVersionStored},
		{name: "same second, higher id", versions: []*StoredEvent{v(100, strings.Repeat("6", 64), false)}, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Supersedes(ev, tc.versions)
			if !errors.Is(err, tc.err) || len(got) != tc.want {
				t.Fatalf("got %d superseded, err %v; want %d, %v", len(got), err, tc.want, tc.err)
			}
		})
	}
}
