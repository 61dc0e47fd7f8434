package buzz

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// memTx is a WriteTx over a memLookup admitting ev: its writes change what
// it reads, and each is logged, so that a test sees which writes an
// admission made, in which order.
type memTx struct {
	*memLookup
	ev *nostr.Event
	// deletedBefore are the ids a stored kind 5 of their author names.
	deletedBefore map[string]bool
	channels      map[string]int64
	writes        []string
	row           EventRow
	// invites are the 9009s (Ref) of each channel and code; issued the
	// membership events the relay was asked to issue.
	invites map[string][]int64
	issued  []*nostr.Event
}

func newMemTx(ev *nostr.Event) *memTx {
	return &memTx{memLookup: ruleStore(), ev: ev, deletedBefore: map[string]bool{}, channels: map[string]int64{},
		invites: map[string][]int64{}}
}

func inviteKey(channel int64, code string) string { return fmt.Sprint(channel, "/", code) }

func (tx *memTx) InviteRefs(channel int64, code string, limit int) ([]int64, error) {
	refs := slices.Clone(tx.invites[inviteKey(channel, code)])
	slices.Reverse(refs)
	return refs[:min(len(refs), limit)], nil
}

func (tx *memTx) PutInvite(channel int64, code string) error {
	k := inviteKey(channel, code)
	tx.invites[k] = append(tx.invites[k], tx.events[len(tx.events)-1].Ref)
	tx.logf("invite %d %s", channel, code)
	return nil
}

func (tx *memTx) DeleteInvites(ref int64) (int, error) {
	n := 0
	for k, refs := range tx.invites {
		kept := slices.DeleteFunc(refs, func(r int64) bool { return r == ref })
		n += len(refs) - len(kept)
		tx.invites[k] = kept
	}
	tx.logf("revoke %d", ref)
	return n, nil
}

func (tx *memTx) Issue(ev *nostr.Event) {
	tx.issued = append(tx.issued, ev)
	tx.logf("issue %d", ev.Kind)
}

func (tx *memTx) logf(format string, args ...any) {
	tx.writes = append(tx.writes, fmt.Sprintf(format, args...))
}

func (tx *memTx) ChannelNumber(h string) (int64, bool, error) {
	if seq, ok := tx.channels[h]; ok {
		return seq, true, nil
	}
	return tx.memLookup.ChannelNumber(h)
}

func (tx *memTx) Seen() (Seen, error) {
	stored, err := tx.EventByID(tx.ev.ID)
	return Seen{Stored: stored != nil, DeletedBefore: tx.deletedBefore[tx.ev.ID]}, err
}

func (tx *memTx) AddressDeleted(string) (bool, error) { return false, nil }

func (tx *memTx) SetThreadRepliesInChannel(v bool) error {
	tx.logf("setting %v", v)
	return nil
}

func (tx *memTx) InsertChannel(h string) (int64, error) {
	seq := int64(100 + len(tx.channels))
	tx.channels[h] = seq
	tx.logf("channel %d", seq)
	return seq, nil
}

func (tx *memTx) UpdateChannel(ch *Channel, _, _ int64) error {
	tx.logf("update channel %d", ch.Seq)
	return nil
}

func (tx *memTx) ChildChannels(parent int64, limit int) ([]int64, error) {
	var seqs []int64
	for _, ch := range tx.community.Channels() {
		if ch.Parent == parent && len(seqs) < limit {
			seqs = append(seqs, ch.Seq)
		}
	}
	return seqs, nil
}

func (tx *memTx) PutMember(channel int64, pubkey []byte, role Role) error {
	tx.logf("member %d %x %d", channel, pubkey[:2], role)
	return nil
}

func (tx *memTx) DeleteMember(channel int64, pubkey []byte) error {
	tx.logf("remove member %d %x", channel, pubkey[:2])
	return nil
}

func (tx *memTx) PutChannel(ch *Channel) {
	tx.community.Put(ch)
	tx.logf("state %d", ch.Seq)
}

func (tx *memTx) InsertEvent(row EventRow) error {
	tx.row = row
	c := row.Class
	tx.events = append(tx.events, &StoredEvent{Ref: int64(100 + len(tx.events)), ID: tx.ev.ID, PubKey: tx.ev.PubKey,
		Kind: tx.ev.Kind, CreatedAt: int64(tx.ev.CreatedAt), Channel: row.Channel, Scope: row.Scope,
		Classified: c.Classified, Depth: c.Depth, RootRef: c.RootRef})
	tx.logf("event")
	return nil
}

func (tx *memTx) RaiseLastMessage(channel, at int64) error {
	tx.logf("last message %d", channel)
	return nil
}

func (tx *memTx) AddToAncestors(parent int64) error {
	tx.logf("count below %d", parent)
	return nil
}

func (tx *memTx) SoftDelete(t *StoredEvent, _ int64) error {
	t.Deleted = true
	tx.logf("delete %d", t.Ref)
	return nil
}

func (tx *memTx) Remove(t *StoredEvent, _ int64) error {
	tx.events = slices.DeleteFunc(tx.events, func(e *StoredEvent) bool { return e == t })
	tx.logf("remove %d", t.Ref)
	return nil
}

func (tx *memTx) ReactionsNaming(string) ([]int64, error) { return nil, nil }

func (tx *memTx) TagsOf(*StoredEvent) (nostr.Tags, error) { return nil, nil }

func (tx *memTx) SetScope(ref, scope int64) error {
	tx.logf("scope %d %d", ref, scope)
	return nil
}

func (tx *memTx) RecountedThreads() ([]ThreadChange, error) { return nil, nil }

// RL-4, RL-6, RL-29, NIP-40: the refusals come in their order, the
// questions of the event itself first (ephemeral, the write policy, stored
// already, expired, deleted before it arrived), and a refused event writes
// nothing, not even the channel it would have created.
func TestAdmitRefusalOrder(t *testing.T) {
	in := AdmitInput{H: chanID, Now: ruleNow}
	cases := []struct {
		name    string
		ev      *nostr.Event
		in      AdmitInput
		stored  bool
		deleted bool
		want    error
	}{
		{name: "ephemeral", ev: event(20001, pkMember), in: AdmitInput{Now: ruleNow}, stored: true, want: ErrEphemeral},
		{name: "stored and expired", ev: event(1, pkMember), in: AdmitInput{H: chanID, Now: ruleNow, Expires: true, ExpiresAt: 1}, stored: true, deleted: true, want: ErrDuplicate},
		{name: "expired and deleted", ev: event(1, pkMember), in: AdmitInput{H: chanID, Now: ruleNow, Expires: true, ExpiresAt: ruleNow}, deleted: true, want: ErrExpired},
		{name: "deleted before arriving", ev: event(1, pkMember), in: in, deleted: true, want: ErrDeletedBeforeArriving},
		{name: "reply to no parent in a new channel", ev: event(1, pkMember),
			in: AdmitInput{H: chanIDFresh, Now: ruleNow, Thread: ThreadTags{Parent: id(99)}}, want: ErrParentNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.ID = id(50)
			tx := newMemTx(tc.ev)
			if tc.stored {
				tx.events = append(tx.events, &StoredEvent{Ref: 50, ID: tc.ev.ID, PubKey: tc.ev.PubKey, Kind: tc.ev.Kind})
			}
			tx.deletedBefore[tc.ev.ID] = tc.deleted
			if _, err := Admit(tx, tc.ev, tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if len(tx.writes) > 0 {
				t.Fatalf("a refused event wrote %q", tx.writes)
			}
		})
	}
}

// RL-29: the relay's own group state passes the gate the write policy
// would close: here a relay key the policy blocks.
func TestAdmitRelaySigned(t *testing.T) {
	ev := event(KindGroupMetadata, pkBlocked, nostr.Tag{"d", chanID})
	ev.ID = id(50)
	tx := newMemTx(ev)
	tx.community.Policy.Blocked = map[string]bool{pkBlocked: true}
	if _, err := Admit(tx, ev, AdmitInput{Now: ruleNow}); !errors.Is(err, ErrBlocked) {
		t.Fatalf("signed by another key: err = %v, want %v", err, ErrBlocked)
	}
	a, err := Admit(tx, ev, AdmitInput{Now: ruleNow, Relay: pkBlocked})
	if err != nil {
		t.Fatal(err)
	}
	if a.Scope != chanID || tx.row.Scope != seqOpen {
		t.Fatalf("scope %q (#%d), want the channel it describes", a.Scope, tx.row.Scope)
	}
}

// CW-10, CW-21, RL-6, RL-8: what an admitted event writes, in order. An
// event naming a channel no one named before creates it, open and without
// members, and is read there; a reply counts into its ancestors; a
// deletion marks its targets once the deletion itself is stored.
func TestAdmitWrites(t *testing.T) {
	cases := []struct {
		name string
		ev   *nostr.Event
		in   AdmitInput
		want []string
	}{
		{name: "post naming a new channel", ev: event(1, pkOutsider), in: AdmitInput{H: chanIDFresh, Now: ruleNow},
			want: []string{"channel 100", "state 100", "event", "last message 100"}},
		{name: "reply", ev: event(1, pkMember), in: AdmitInput{H: chanID, Now: ruleNow, Thread: ThreadTags{Parent: id(2)}},
			want: []string{"event", "last message 1", "count below 2"}},
		{name: "deletion", ev: event(KindDeletion, pkMember, nostr.Tag{"e", id(1)}), in: AdmitInput{Now: ruleNow},
			want: []string{"event", "delete 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.ID = id(50)
			tx := newMemTx(tc.ev)
			a, err := Admit(tx, tc.ev, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tx.writes, tc.want) {
				t.Fatalf("writes %q, want %q", tx.writes, tc.want)
			}
			if tc.in.H != "" && (a.Scope != tc.in.H || tx.row.Scope != tx.row.Channel) {
				t.Fatalf("read in %q (#%d of #%d), want its channel", a.Scope, tx.row.Scope, tx.row.Channel)
			}
		})
	}
}

// RL-36: an accepted join or leave asks the relay to issue its own 9000
// put-user (the joiner as member) or 9001 remove-user, dated at the write's
// clock and naming the request; a refused one, and any of an import, asks
// for none. The relay's own 9000 or 9001, admitted in turn, is stored in
// its channel (a private one too, which the relay key cannot read), past
// a write policy that blocks the relay key, and changes nothing again.
func TestAdmitIssuesMembershipEvents(t *testing.T) {
	cases := []struct {
		name      string
		ev        *nostr.Event
		in        AdmitInput
		wantKind  int
		wantUser  nostr.Tag
		wantError error
	}{
		{name: "join", ev: event(KindJoin, pkOutsider), in: AdmitInput{H: chanID, Now: ruleNow},
			wantKind: KindPutUser, wantUser: nostr.Tag{"p", pkOutsider, "member"}},
		{name: "leave", ev: event(KindLeave, pkMember), in: AdmitInput{H: chanID, Now: ruleNow},
			wantKind: KindRemoveUser, wantUser: nostr.Tag{"p", pkMember}},
		{name: "join imported", ev: event(KindJoin, pkOutsider), in: AdmitInput{H: chanID, Now: ruleNow, Importing: true}},
		{name: "second join", ev: event(KindJoin, pkMember), in: AdmitInput{H: chanID, Now: ruleNow}, wantError: ErrAlreadyMember},
		{name: "join refused", ev: event(KindJoin, pkOutsider), in: AdmitInput{H: chanIDPrivate, Now: ruleNow}, wantError: ErrCannotJoin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.ID = id(50)
			tx := newMemTx(tc.ev)
			_, err := Admit(tx, tc.ev, tc.in)
			if !errors.Is(err, tc.wantError) {
				t.Fatalf("err %v, want %v", err, tc.wantError)
			}
			if tc.wantKind == 0 {
				if len(tx.issued) != 0 {
					t.Fatalf("issued %v, want none", tx.issued)
				}
				return
			}
			if len(tx.issued) != 1 {
				t.Fatalf("issued %v, want one", tx.issued)
			}
			got := tx.issued[0]
			want := nostr.Tags{{"h", tc.in.H}, tc.wantUser, {"e", tc.ev.ID}}
			if got.Kind != tc.wantKind || got.CreatedAt != ruleNow || fmt.Sprint(got.Tags) != fmt.Sprint(want) || got.Content != "" {
				t.Fatalf("issued kind %d at %d tags %v, want kind %d at %d tags %v", got.Kind, got.CreatedAt, got.Tags,
					tc.wantKind, ruleNow, want)
			}
		})
	}
	for _, h := range []string{chanID, chanIDPrivate} {
		for _, kind := range []int{KindPutUser, KindRemoveUser} {
			ev := Issued(event(KindJoin, pkOutsider), h, ruleNow)
			ev.Kind, ev.PubKey, ev.ID = kind, pkBlocked, id(51)
			tx := newMemTx(ev)
			tx.community.Policy.Blocked = map[string]bool{pkBlocked: true}
			a, err := Admit(tx, ev, AdmitInput{H: h, Now: ruleNow, Relay: pkBlocked})
			if err != nil {
				t.Fatalf("%s: relay's %d: %v", h, kind, err)
			}
			if !slices.Equal(tx.writes, []string{"event"}) || a.Scope != h || len(tx.issued) != 0 {
				t.Fatalf("%s: relay's %d wrote %q, read in %q, issued %v; want the event alone, in its channel",
					h, kind, tx.writes, a.Scope, tx.issued)
			}
		}
	}
}

// RL-36, RL-29: a 9009 records its code in its channel and counts it; a
// deletion of the 9009 (9005 by an admin, or kind 5 by its author)
// revokes it. A 9021 with a live code of a private channel joins it; a
// wrong, revoked or expired code, or none, is answered as any stranger's
// join of a private channel is.
func TestAdmitInvites(t *testing.T) {
	const code = "s3cret"
	invite := event(KindCreateInvite, pkOwner, nostr.Tag{"h", chanIDPrivate}, nostr.Tag{"code", code})
	invite.ID = id(60)
	tx := newMemTx(invite)
	if _, err := Admit(tx, invite, AdmitInput{H: chanIDPrivate, Now: ruleNow}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"event", "update channel 2", "state 2", "invite 2 " + code}; !slices.Equal(tx.writes, want) {
		t.Fatalf("9009 wrote %q, want %q", tx.writes, want)
	}
	if n := tx.community.ChannelBySeq(seqPrivate).Invites; n != 1 {
		t.Fatalf("live codes %d, want 1", n)
	}
	ref := tx.events[len(tx.events)-1].Ref

	join := func(tx *memTx, tags ...nostr.Tag) error {
		ev := event(KindJoin, pkOutsider, tags...)
		ev.ID = id(70)
		tx.ev = ev
		_, err := Admit(tx, ev, AdmitInput{H: chanIDPrivate, Now: ruleNow})
		return err
	}
	for _, c := range []struct {
		name string
		tags []nostr.Tag
		prep func(tx *memTx)
		want error
	}{
		{"live code", []nostr.Tag{{"code", code}}, nil, nil},
		{"no code", nil, nil, ErrCannotJoin},
		{"wrong code", []nostr.Tag{{"code", "guess"}}, nil, ErrCannotJoin},
		{"code of another letter case", []nostr.Tag{{"code", "S3CRET"}}, nil, ErrCannotJoin},
		{"deleted 9009", []nostr.Tag{{"code", code}}, func(tx *memTx) { tx.events[len(tx.events)-1].Deleted = true }, ErrCannotJoin},
		{"expired 9009", []nostr.Tag{{"code", code}}, func(tx *memTx) { tx.events[len(tx.events)-1].ExpiresAt = ruleNow }, ErrCannotJoin},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := newMemTx(invite)
			if _, err := Admit(tx, invite, AdmitInput{H: chanIDPrivate, Now: ruleNow}); err != nil {
				t.Fatal(err)
			}
			if c.prep != nil {
				c.prep(tx)
			}
			err := join(tx, c.tags...)
			if !errors.Is(err, c.want) || (err != nil && err.Error() != ErrCannotJoin.Error()) {
				t.Fatalf("join: %v, want %v", err, c.want)
			}
			if c.want == nil && tx.community.ChannelBySeq(seqPrivate).Members[pkOutsider] != RoleMember {
				t.Fatal("joined with a live code, but is no member")
			}
		})
	}

	for _, del := range []*nostr.Event{
		event(KindGroupDelete, pkAdmin, nostr.Tag{"h", chanIDPrivate}, nostr.Tag{"e", invite.ID}),
		event(KindDeletion, pkOwner, nostr.Tag{"e", invite.ID}),
	} {
		tx := newMemTx(invite)
		if _, err := Admit(tx, invite, AdmitInput{H: chanIDPrivate, Now: ruleNow}); err != nil {
			t.Fatal(err)
		}
		del.ID = id(80)
		tx.ev, tx.writes = del, nil
		h := ""
		if del.Kind == KindGroupDelete {
			h = chanIDPrivate
		}
		if _, err := Admit(tx, del, AdmitInput{H: h, Now: ruleNow}); err != nil {
			t.Fatalf("kind %d: %v", del.Kind, err)
		}
		want := []string{"event", fmt.Sprintf("delete %d", ref), fmt.Sprintf("revoke %d", ref), "state 2"}
		if !slices.Equal(tx.writes, want) {
			t.Fatalf("kind %d wrote %q, want %q", del.Kind, tx.writes, want)
		}
		if n := tx.community.ChannelBySeq(seqPrivate).Invites; n != 0 {
			t.Fatalf("kind %d: live codes %d after the revocation, want 0", del.Kind, n)
		}
		if err := join(tx, nostr.Tag{"code", code}); !errors.Is(err, ErrCannotJoin) {
			t.Fatalf("kind %d: join with the revoked code: %v, want %v", del.Kind, err, ErrCannotJoin)
		}
	}
}
