package sqlite

// Channels, membership and community settings in this store's tables and
// across restarts (issue 3): the NIP-29 lifecycle and its persistence
// (RL-10), the relay-signed group state rows (RL-11), write access with
// its channel rows (RL-14) and the thread_replies_in_channel setting and
// its configuration (RL-15). The lifecycle's refusals, the create policy
// and 9005 by channel admins are storetest's (channels.go). Helpers start
// with "ch".

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// chC3 is a channel (a canonical UUID) besides ttChan and ttChan2.
const chC3 = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"

// chT is the store clock of these tests, and the date of their events.
const chT int64 = 1_700_000_000

// chPath is a fresh database path.
func chPath(t testing.TB) string { return filepath.Join(t.TempDir(), "buzz.db") }

// chOpen opens the store at path with opts (Path and Schema are set here)
// and closes it when the test ends, if the test did not.
func chOpen(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	opts.Path = path
	opts.Schema = testutil.Schema(t)
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // a no-op once chReopen closed it
	return s
}

// chReopen closes s (failing the test if Close fails) and opens its file
// again with opts.
func chReopen(t testing.TB, s *Store, opts Options) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return chOpen(t, s.path, opts)
}

// chChannel renders the state of one channel, members sorted, Seq left out.
func chChannel(ch *buzz.Channel) string {
	if ch == nil {
		return "<nil>"
	}
	members := make([]string, 0, len(ch.Members))
	for pk, role := range ch.Members {
		members = append(members, pk[:12]+":"+role.String())
	}
	slices.Sort(members)
	return fmt.Sprintf("{created:%v name:%q about:%q private:%v deleted:%v members:%v}",
		ch.Created, ch.Name, ch.About, ch.Private, ch.Deleted, members)
}

// chState renders a whole community: version, setting, every channel by h
// with its number.
func chState(c *buzz.Community) string {
	chs := c.Channels()
	slices.SortFunc(chs, func(a, b *buzz.Channel) int { return strings.Compare(a.H, b.H) })
	var b strings.Builder
	fmt.Fprintf(&b, "version=%d replies=%v\n", c.Version, c.ThreadRepliesInChannel)
	for _, ch := range chs {
		fmt.Fprintf(&b, "%s #%d %s\n", ch.H, ch.Seq, chChannel(ch))
	}
	return b.String()
}

// chWant is the expected state of a channel.
func chWant(created bool, name, about string, private, deleted bool, members map[string]buzz.Role) string {
	if members == nil {
		members = map[string]buzz.Role{}
	}
	return chChannel(&buzz.Channel{Created: created, Name: name, About: about, Private: private, Deleted: deleted, Members: members})
}

// chExpect requires channel h of s's published state to be want.
func chExpect(t testing.TB, s *Store, h, want string) {
	t.Helper()
	if got := chChannel(s.Community().Channel(h)); got != want {
		t.Fatalf("channel %s:\n got  %s\n want %s", h[:8], got, want)
	}
}

// accessQueries select every row of the access state tables (channels,
// members, settings).
var accessQueries = []string{
	`SELECT seq, h, created_at, name, about, private, deleted_at FROM channels ORDER BY seq`,
	`SELECT channel, pubkey, role FROM members ORDER BY channel, pubkey`,
	`SELECT key, value FROM settings ORDER BY key`,
}

// chTables dumps the access state tables.
func chTables(t testing.TB, s *Store) string {
	t.Helper()
	return ttDump(t, s, accessQueries...)
}

// chReject requires ev to be refused with exactly want, and to leave
// everything as it was: no event, tag or channel row, the access state
// tables and the published community unchanged.
func chReject(t testing.TB, s *Store, ev *nostr.Event, want error) {
	t.Helper()
	rows, tables, state := ttSnapshot(t, s), chTables(t, s), chState(s.Community())
	ttReject(t, s, ev, want)
	ttSameSnapshot(t, rows, ttSnapshot(t, s))
	if got := chTables(t, s); got != tables {
		t.Fatalf("access state tables changed by a rejected event:\n before %s\n after  %s", tables, got)
	}
	if got := chState(s.Community()); got != state {
		t.Fatalf("community changed by a rejected event:\n before %s\n after  %s", state, got)
	}
	if chStored(t, s, ev.ID) {
		t.Fatal("rejected event stored")
	}
}

// chStored reports whether a row of event id exists, deleted or not.
func chStored(t testing.TB, s *Store, id string) bool {
	t.Helper()
	key, _ := hex.DecodeString(id)
	return qtSQLCount(t, s, `SELECT count(*) FROM events WHERE id = ?`, key) > 0
}

// chQuery runs Query as v and returns the ids.
func chQuery(t testing.TB, s *Store, f nostr.Filter, v buzz.Viewer) []string {
	t.Helper()
	evs, err := s.Query(context.Background(), f, v)
	if err != nil {
		t.Fatalf("query %v as %q: %v", f, v, err)
	}
	return qtIDs(evs...)
}

// chCount runs Count as v.
func chCount(t testing.TB, s *Store, f nostr.Filter, v buzz.Viewer) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), f, v)
	if err != nil {
		t.Fatalf("count %v as %q: %v", f, v, err)
	}
	return n
}

// chSees reports whether v reads event id, by Query and by Count, which
// must agree.
func chSees(t testing.TB, s *Store, v buzz.Viewer, id string) bool {
	t.Helper()
	f := nostr.Filter{IDs: []string{id}}
	q := len(chQuery(t, s, f, v))
	n := chCount(t, s, f, v)
	if int64(q) != n {
		t.Fatalf("event %s as %q: Query returns %d, Count %d", id[:8], v, q, n)
	}
	return q == 1
}

// chPersisted closes s, opens its file again with opts and requires the
// same access state, loaded from the tables; it returns the new store.
func chPersisted(t testing.TB, s *Store, opts Options) *Store {
	t.Helper()
	before, tables := chState(s.Community()), chTables(t, s)
	s = chReopen(t, s, opts)
	if got := chState(s.Community()); got != before {
		t.Fatalf("access state after reopening:\n got  %s\n want %s", got, before)
	}
	if got := chTables(t, s); got != tables {
		t.Fatalf("tables after reopening:\n got  %s\n want %s", got, tables)
	}
	return s
}

// chSQLChannel reads the created_at and deleted_at columns of channel h.
func chSQLChannel(t testing.TB, s *Store, h string) (created, deleted sql.NullInt64) {
	t.Helper()
	if err := s.readers.QueryRow(`SELECT created_at, deleted_at FROM channels WHERE h = ?`, h).Scan(&created, &deleted); err != nil {
		t.Fatalf("channel %s: %v", h, err)
	}
	return created, deleted
}

// chRoles reads the members table of channel h: hex pubkey -> role.
func chRoles(t testing.TB, s *Store, h string) map[string]buzz.Role {
	t.Helper()
	rows, err := s.readers.Query(`SELECT m.pubkey, m.role FROM members m JOIN channels c ON c.seq = m.channel WHERE c.h = ?`, h)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]buzz.Role{}
	for rows.Next() {
		var pk []byte
		var role buzz.Role
		if err := rows.Scan(&pk, &role); err != nil {
			t.Fatal(err)
		}
		out[hex.EncodeToString(pk)] = role
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// RL-10: every lifecycle kind changes the channel as the contract says;
// after each, Community() shows it, the tables hold it (channels, members)
// and a reopened store loads the same state from them. Lifecycle events are
// stored, in the channel's scope.
func TestChannelLifecyclePersists(t *testing.T) {
	clock := qtNewClock(chT + 50)
	opts := Options{Now: clock.now}
	s := chOpen(t, chPath(t), opts)
	sg := ttSigners(t, 4)
	owner, admin, member, other := sg[0], sg[1], sg[2], sg[3]
	at := chT
	step := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		t.Helper()
		at++
		ev := ttIngest(t, s, sg.Event(t, kind, at, "", append([]nostr.Tag{ttH(ttChan)}, tags...)...))
		return ev
	}
	check := func(want string, members map[string]buzz.Role) {
		t.Helper()
		chExpect(t, s, ttChan, want)
		if got := chRoles(t, s, ttChan); fmt.Sprint(got) != fmt.Sprint(members) {
			t.Fatalf("members table %v, want %v", got, members)
		}
		s = chPersisted(t, s, opts)
		chExpect(t, s, ttChan, want)
	}
	ro := buzz.RoleOwner

	// 9007: the creator is owner; the metadata of its tags.
	create := step(owner, 9007, nostr.Tag{"name", "General"}, nostr.Tag{"about", "talk"})
	m := map[string]buzz.Role{owner.PK: ro}
	check(chWant(true, "General", "talk", false, false, m), m)
	if created, deleted := chSQLChannel(t, s, ttChan); created != (sql.NullInt64{Int64: int64(create.CreatedAt), Valid: true}) || deleted.Valid {
		t.Fatalf("channels row: created_at %v deleted_at %v", created, deleted)
	}

	// 9002 by the owner: name, about, private.
	step(owner, 9002, nostr.Tag{"name", "Renamed"}, nostr.Tag{"about", "secret"}, nostr.Tag{"private"})
	check(chWant(true, "Renamed", "secret", true, false, m), m)

	// 9000: the owner adds an admin and a member (no role: member).
	step(owner, 9000, nostr.Tag{"p", admin.PK, "admin"}, nostr.Tag{"p", member.PK})
	m = map[string]buzz.Role{owner.PK: ro, admin.PK: buzz.RoleAdmin, member.PK: buzz.RoleMember}
	check(chWant(true, "Renamed", "secret", true, false, m), m)

	// 9021 on a private channel is refused; the admin opens it (9002
	// public, the about left as it is), then 9021 joins.
	chReject(t, s, other.Event(t, 9021, at+1, "", ttH(ttChan)), buzz.ErrCannotJoin)
	step(admin, 9002, nostr.Tag{"public"})
	check(chWant(true, "Renamed", "secret", false, false, m), m)
	step(other, 9021)
	m[other.PK] = buzz.RoleMember
	check(chWant(true, "Renamed", "secret", false, false, m), m)

	// 9022: leave.
	step(other, 9022)
	delete(m, other.PK)
	check(chWant(true, "Renamed", "secret", false, false, m), m)

	// 9001 by the admin removes the member; 9001 of oneself by a member.
	step(admin, 9001, nostr.Tag{"p", member.PK})
	delete(m, member.PK)
	check(chWant(true, "Renamed", "secret", false, false, m), m)
	step(admin, 9000, nostr.Tag{"p", member.PK})
	m[member.PK] = buzz.RoleMember
	check(chWant(true, "Renamed", "secret", false, false, m), m)
	step(member, 9001, nostr.Tag{"p", member.PK})
	delete(m, member.PK)
	check(chWant(true, "Renamed", "secret", false, false, m), m)

	// 9008 by an admin is refused; by the owner it deletes the channel
	// (members stay in the tables, the channel answers as nonexistent).
	chReject(t, s, admin.Event(t, 9008, at+1, "", ttH(ttChan)), buzz.ErrNotChannelOwner)
	msg := step(owner, 9, nostr.Tag{"t", "before deletion"})
	del := step(owner, 9008)
	check(chWant(true, "Renamed", "secret", false, true, m), m)
	if _, deleted := chSQLChannel(t, s, ttChan); deleted != (sql.NullInt64{Int64: clock.now().Unix(), Valid: true}) {
		t.Fatalf("channels row: deleted_at %v, want the store clock", deleted)
	}
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(owner.PK), buzz.Viewer(admin.PK)} {
		if chSees(t, s, v, msg.ID) || chSees(t, s, v, del.ID) {
			t.Fatalf("%q reads an event of a deleted channel", v)
		}
	}
	// A deleted channel takes nothing more, not even a new 9007.
	at++
	chReject(t, s, owner.Event(t, 9007, at, "", ttH(ttChan)), buzz.ErrChannelDeleted)
	chReject(t, s, owner.Event(t, 9000, at, "", ttH(ttChan), nostr.Tag{"p", other.PK}), buzz.ErrChannelDeleted)
	chReject(t, s, owner.Event(t, 9, at, "late", ttH(ttChan)), buzz.ErrChannelDeleted)
	chReject(t, s, member.Event(t, 9021, at, "", ttH(ttChan)), buzz.ErrChannelDeleted)

	// Every accepted lifecycle event is stored (9 of them and the 9008).
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE kind BETWEEN 9000 AND 9022 AND deleted_at IS NULL`); n != 10 {
		t.Errorf("%d lifecycle events stored, want 10", n)
	}
}

// chGroupStateRows counts, with plain SQL, every stored row (deleted or
// not) of the group state kinds whose d tag is h.
func chGroupStateRows(t testing.TB, s *Store, h string) int64 {
	t.Helper()
	return qtSQLCount(t, s, `SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003 AND dtag = ?`, h)
}

// chGroupState returns the group state of h that v reads, by kind, and
// checks that it is one event of each kind, signed by the relay.
func chGroupState(t testing.TB, s *Store, h, relayPK string, v buzz.Viewer) map[int]*nostr.Event {
	t.Helper()
	f := nostr.Filter{Kinds: []int{39000, 39001, 39002}, Tags: nostr.TagMap{"d": {h}}}
	evs, err := s.Query(context.Background(), f, v)
	if err != nil {
		t.Fatal(err)
	}
	if n := chCount(t, s, f, v); n != int64(len(evs)) {
		t.Fatalf("group state of %s as %q: Query %d events, Count %d", h[:8], v, len(evs), n)
	}
	out := map[int]*nostr.Event{}
	for _, ev := range evs {
		if out[ev.Kind] != nil {
			t.Fatalf("two kind %d events for %s", ev.Kind, h[:8])
		}
		out[ev.Kind] = ev
		if ev.PubKey != relayPK {
			t.Fatalf("kind %d signed by %s, not the relay", ev.Kind, ev.PubKey)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("kind %d: signature does not verify: %v", ev.Kind, err)
		}
	}
	return out
}

// chTags renders tags for comparison.
func chTags(tags ...nostr.Tag) string { return fmt.Sprint(nostr.Tags(tags)) }

// chPublished collects what OnPublish hands over.
type chPublished struct {
	mu  sync.Mutex
	evs []*nostr.Event
}

func (p *chPublished) add(evs []*nostr.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, evs...)
}

// take returns what was published since the last take.
func (p *chPublished) take() []*nostr.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.evs
	p.evs = nil
	return out
}

// chSameEvents requires published to be exactly the events of state.
func chSameEvents(t testing.TB, published []*nostr.Event, state map[int]*nostr.Event) {
	t.Helper()
	var got, want []string
	for _, ev := range published {
		got = append(got, fmt.Sprintf("%d:%s", ev.Kind, ev.ID))
	}
	for _, ev := range state {
		want = append(want, fmt.Sprintf("%d:%s", ev.Kind, ev.ID))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("published %v, want the stored state %v", got, want)
	}
}

// RL-11, RL-13: with a relay key the store keeps exactly one 39000, 39001
// and 39002 per channel, relay-signed, with the contract's tags; a change
// replaces them with newer ones (even within one second); 9008 removes
// them; OnPublish hears of each new set after its commit; the group state
// of a private channel is read by its members only.
func TestGroupState(t *testing.T) {
	clock := qtNewClock(chT)
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := chOpen(t, chPath(t), Options{RelayKey: relayKey, Now: clock.now})
	var pub chPublished
	s.OnPublish(pub.add)
	sg := ttSigners(t, 4)
	owner, admin, member, outsider := sg[0], sg[1], sg[2], sg[3]
	ownerV := buzz.Viewer(owner.PK)

	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan), nostr.Tag{"name", "Ops"}, nostr.Tag{"about", "on call"}, nostr.Tag{"private"}))
	st := chGroupState(t, s, ttChan, relayPK, ownerV)
	if len(st) != 3 || chGroupStateRows(t, s, ttChan) != 3 {
		t.Fatalf("after 9007: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	if got, want := chTags(st[39000].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"name", "Ops"}, nostr.Tag{"about", "on call"}, nostr.Tag{"private"}); got != want {
		t.Errorf("39000 tags %s, want %s", got, want)
	}
	if got, want := chTags(st[39001].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK, "owner"}); got != want {
		t.Errorf("39001 tags %s, want %s", got, want)
	}
	if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}); got != want {
		t.Errorf("39002 tags %s, want %s", got, want)
	}
	for _, ev := range st {
		if int64(ev.CreatedAt) != chT {
			t.Errorf("kind %d dated %d, want the store clock %d", ev.Kind, ev.CreatedAt, chT)
		}
	}
	chSameEvents(t, pub.take(), st)

	// Private: not read by anonymous viewers or non-members, by Query or
	// Count, nor by a #d-less kinds filter.
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(outsider.PK)} {
		if got := chGroupState(t, s, ttChan, relayPK, v); len(got) != 0 {
			t.Errorf("%q reads %d group state events of a private channel", v, len(got))
		}
		if n := chCount(t, s, nostr.Filter{Kinds: []int{39000, 39001, 39002}}, v); n != 0 {
			t.Errorf("%q counts %d group state events of a private channel", v, n)
		}
	}

	// A change, in the same second: a new set, each newer than the last.
	prev := st
	ttIngest(t, s, owner.Event(t, 9000, chT, "", ttH(ttChan), nostr.Tag{"p", member.PK}, nostr.Tag{"p", admin.PK, "admin"}))
	st = chGroupState(t, s, ttChan, relayPK, ownerV)
	if len(st) != 3 || chGroupStateRows(t, s, ttChan) != 3 {
		t.Fatalf("after 9000: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	for kind, ev := range st {
		if ev.CreatedAt <= prev[kind].CreatedAt {
			t.Errorf("kind %d: new version dated %d, not after %d", kind, ev.CreatedAt, prev[kind].CreatedAt)
		}
	}
	if got, want := chTags(st[39001].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK, "owner"}, nostr.Tag{"p", admin.PK, "admin"}); got != want {
		t.Errorf("39001 tags %s, want %s", got, want)
	}
	if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}, nostr.Tag{"p", admin.PK}, nostr.Tag{"p", member.PK}); got != want {
		t.Errorf("39002 tags %s, want %s", got, want)
	}
	chSameEvents(t, pub.take(), st)
	// Members read it now; the outsider does not.
	if got := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(member.PK)); len(got) != 3 {
		t.Errorf("member reads %d group state events", len(got))
	}
	if got := chGroupState(t, s, ttChan, relayPK, buzz.Viewer(outsider.PK)); len(got) != 0 {
		t.Errorf("outsider reads %d group state events", len(got))
	}

	// Again in the same second: made public, renamed.
	prev = st
	ttIngest(t, s, admin.Event(t, 9002, chT, "", ttH(ttChan), nostr.Tag{"name", "Ops 2"}, nostr.Tag{"public"}))
	st = chGroupState(t, s, ttChan, relayPK, buzz.Anonymous)
	if len(st) != 3 || chGroupStateRows(t, s, ttChan) != 3 {
		t.Fatalf("after 9002: %d group state events readable, %d rows", len(st), chGroupStateRows(t, s, ttChan))
	}
	for kind, ev := range st {
		if ev.CreatedAt <= prev[kind].CreatedAt {
			t.Errorf("kind %d: new version dated %d, not after %d", kind, ev.CreatedAt, prev[kind].CreatedAt)
		}
	}
	if got, want := chTags(st[39000].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"name", "Ops 2"}, nostr.Tag{"about", "on call"}, nostr.Tag{"public"}); got != want {
		t.Errorf("39000 tags %s, want %s", got, want)
	}
	chSameEvents(t, pub.take(), st)
	for _, old := range prev {
		if chStored(t, s, old.ID) {
			t.Errorf("replaced kind %d still stored", old.Kind)
		}
	}

	// A rejected lifecycle event publishes nothing.
	chReject(t, s, member.Event(t, 9008, chT, "", ttH(ttChan)), buzz.ErrNotChannelOwner)
	if got := pub.take(); len(got) != 0 {
		t.Errorf("a rejection published %d events", len(got))
	}

	// 9008 removes the group state; nothing new is published.
	ttIngest(t, s, owner.Event(t, 9008, chT+1, "", ttH(ttChan)))
	if n := chGroupStateRows(t, s, ttChan); n != 0 {
		t.Errorf("%d group state rows left after 9008", n)
	}
	if got := chGroupState(t, s, ttChan, relayPK, ownerV); len(got) != 0 {
		t.Errorf("group state of a deleted channel read: %d events", len(got))
	}
	if got := pub.take(); len(got) != 0 {
		t.Errorf("9008 published %d events", len(got))
	}
}

// RL-11: without a relay key the store keeps no group state.
func TestGroupStateNeedsRelayKey(t *testing.T) {
	s := chOpen(t, chPath(t), Options{})
	owner := testutil.NewSigner(t)
	ttIngest(t, s, owner.Event(t, 9007, chT, "", ttH(ttChan)))
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003`); n != 0 {
		t.Errorf("%d group state events without a relay key", n)
	}
}

// RL-11, RL-25: an import (ImportBatch) leaves the group state for
// RenewGroupState, which makes it for every channel the import created.
func TestGroupStateImport(t *testing.T) {
	clock := qtNewClock(chT)
	relayKey := nostr.GeneratePrivateKey()
	relayPK, _ := nostr.GetPublicKey(relayKey)
	s := chOpen(t, chPath(t), Options{RelayKey: relayKey, Now: clock.now})
	var pub chPublished
	s.OnPublish(pub.add)
	owner, member := testutil.NewSigner(t), testutil.NewSigner(t)
	evs := []*nostr.Event{
		owner.Event(t, 9007, chT-100, "", ttH(ttChan), nostr.Tag{"name", "imported"}),
		owner.Event(t, 9000, chT-99, "", ttH(ttChan), nostr.Tag{"p", member.PK}),
		member.Event(t, 9, chT-98, "hello", ttH(ttChan)),
		owner.Event(t, 9007, chT-97, "", ttH(ttChan2), nostr.Tag{"private"}),
	}
	outcomes, err := s.ImportBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if o != nil {
			t.Fatalf("event %d: %v", i, o)
		}
	}
	chExpect(t, s, ttChan, chWant(true, "imported", "", false, false, map[string]buzz.Role{owner.PK: buzz.RoleOwner, member.PK: buzz.RoleMember}))
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003`); n != 0 {
		t.Fatalf("%d group state events made during the import", n)
	}
	if got := pub.take(); len(got) != 0 {
		t.Fatalf("import published %d events", len(got))
	}

	if err := s.RenewGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	var all []*nostr.Event
	for _, h := range []string{ttChan, ttChan2} {
		st := chGroupState(t, s, h, relayPK, buzz.Viewer(owner.PK))
		if len(st) != 3 || chGroupStateRows(t, s, h) != 3 {
			t.Fatalf("%s: %d group state events after RenewGroupState", h[:8], len(st))
		}
		for _, ev := range st {
			all = append(all, ev)
		}
		if h == ttChan {
			if got, want := chTags(st[39002].Tags...), chTags(nostr.Tag{"d", ttChan}, nostr.Tag{"p", owner.PK}, nostr.Tag{"p", member.PK}); got != want {
				t.Errorf("39002 tags %s, want %s", got, want)
			}
		}
	}
	// The private channel's state is its members' alone.
	if got := chGroupState(t, s, ttChan2, relayPK, buzz.Anonymous); len(got) != 0 {
		t.Errorf("anonymous reads %d group state events of the private channel", len(got))
	}
	published := pub.take()
	for _, ev := range all {
		if !slices.ContainsFunc(published, func(p *nostr.Event) bool { return p.ID == ev.ID }) {
			t.Errorf("kind %d of %s not published", ev.Kind, ev.Tags.GetD()[:8])
		}
	}
	// Renewing again replaces, never duplicates.
	if err := s.RenewGroupState(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{ttChan, ttChan2} {
		if n := chGroupStateRows(t, s, h); n != 3 {
			t.Errorf("%s: %d group state rows after a second RenewGroupState", h[:8], n)
		}
	}
}

// RL-14: writes go to members; to open channels (and channels that do not
// exist yet) also anyone when open_write is on; relay admins write
// anywhere; private channels take no outsider's writes either way.
func TestWriteAccess(t *testing.T) {
	relayAdmin := testutil.NewSigner(t)
	sg := ttSigners(t, 3)
	owner, member, outsider := sg[0], sg[1], sg[2]
	at := chT
	ev := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		at++
		return sg.Event(t, kind, at, fmt.Sprint("ev ", at), tags...)
	}
	setup := func(s *Store) {
		ttIngest(t, s, ev(owner, 9007, ttH(ttChan)))                             // open
		ttIngest(t, s, ev(owner, 9007, ttH(ttChan2), nostr.Tag{"private"}))      // private
		ttIngest(t, s, ev(owner, 9000, ttH(ttChan), nostr.Tag{"p", member.PK}))  // member of both
		ttIngest(t, s, ev(owner, 9000, ttH(ttChan2), nostr.Tag{"p", member.PK})) // ...
	}

	t.Run("open_write off", func(t *testing.T) {
		p := buzz.DefaultPolicy()
		p.OpenWrite = false
		opts := Options{Policy: &p, Admins: []string{relayAdmin.PK}}
		s := chOpen(t, chPath(t), opts)
		setup(s)
		chReject(t, s, ev(outsider, 9, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 9, ttH(ttChan2)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 1111, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 7, ttH(ttChan)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 9, ttH(chC3)), buzz.ErrNotMember)
		if s.Community().Channel(chC3) != nil {
			t.Fatal("a refused event made a channel")
		}
		for _, w := range []testutil.Signer{owner, member, relayAdmin} {
			ttIngest(t, s, ev(w, 9, ttH(ttChan)))
			ttIngest(t, s, ev(w, 9, ttH(ttChan2)))
		}
		// A relay admin may name a channel that does not exist yet.
		ttIngest(t, s, ev(relayAdmin, 9, ttH(chC3)))
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		// Events without a channel are the members' only (RL-29).
		chReject(t, s, ev(outsider, 1), buzz.ErrMembersOnly)
		ttIngest(t, s, ev(member, 1))
		// A member removed no longer writes.
		ttIngest(t, s, ev(owner, 9001, ttH(ttChan), nostr.Tag{"p", member.PK}))
		chReject(t, s, ev(member, 9, ttH(ttChan)), buzz.ErrNotMember)
		// Joining an open channel (9021) makes a writer.
		ttIngest(t, s, ev(outsider, 9021, ttH(ttChan)))
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		// The state survives a reopen: the same decisions after it.
		s = chPersisted(t, s, opts)
		chReject(t, s, ev(member, 9, ttH(ttChan)), buzz.ErrNotMember)
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		ttIngest(t, s, ev(member, 9, ttH(ttChan2)))
	})

	t.Run("open_write on", func(t *testing.T) {
		opts := Options{Admins: []string{relayAdmin.PK}} // DefaultPolicy: open writes
		s := chOpen(t, chPath(t), opts)
		setup(s)
		ttIngest(t, s, ev(outsider, 9, ttH(ttChan)))
		chReject(t, s, ev(outsider, 9, ttH(ttChan2)), buzz.ErrNotMember)
		chReject(t, s, ev(outsider, 1111, ttH(ttChan2)), buzz.ErrNotMember)
		ttIngest(t, s, ev(member, 9, ttH(ttChan2)))
		// A channel that does not exist: the event makes it, open, with no
		// members and not created.
		first := ttIngest(t, s, ev(outsider, 9, ttH(chC3)))
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		if created, deleted := chSQLChannel(t, s, chC3); created.Valid || deleted.Valid {
			t.Errorf("implicit channel row: created_at %v deleted_at %v", created, deleted)
		}
		if !chSees(t, s, buzz.Anonymous, first.ID) {
			t.Error("event of an implicit open channel not readable")
		}
		ttIngest(t, s, ev(member, 9, ttH(chC3)))
		s = chPersisted(t, s, opts)
		chExpect(t, s, chC3, chWant(false, "", "", false, false, nil))
		// A deleted channel takes no writes, open or not.
		ttIngest(t, s, ev(owner, 9008, ttH(ttChan)))
		chReject(t, s, ev(outsider, 9, ttH(ttChan)), buzz.ErrChannelDeleted)
		chReject(t, s, ev(owner, 9, ttH(ttChan)), buzz.ErrChannelDeleted)
	})
}

// chSetting is a kind 9033 setting thread_replies_in_channel to v.
func chSetting(t testing.TB, sg testutil.Signer, at int64, v string) *nostr.Event {
	return sg.Event(t, 9033, at, "", nostr.Tag{"thread_replies_in_channel", v})
}

// chStoredSetting reads thread_replies_in_channel from the settings table.
func chStoredSetting(t testing.TB, s *Store) sql.NullInt64 {
	t.Helper()
	var v sql.NullInt64
	err := s.readers.QueryRow(`SELECT value FROM settings WHERE key = 'thread_replies_in_channel'`).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return v
}

// chExpectSetting requires the community and the table to say want.
func chExpectSetting(t testing.TB, s *Store, want bool) {
	t.Helper()
	if got := s.Community().ThreadRepliesInChannel; got != want {
		t.Fatalf("community: thread_replies_in_channel %v, want %v", got, want)
	}
	if got := chStoredSetting(t, s); got != (sql.NullInt64{Int64: boolInt(want), Valid: true}) {
		t.Fatalf("settings table: thread_replies_in_channel %v, want %v", got, want)
	}
}

// RL-15: a relay admin's kind 9033 sets thread_replies_in_channel (every
// boolean spelling, any case); it is carried out, persisted, and not stored
// as an event; anyone else, a value that is not a boolean, or a date more
// than 120 s off is refused and changes nothing.
func TestThreadRepliesSetting(t *testing.T) {
	clock := qtNewClock(chT)
	relayAdmin, other := testutil.NewSigner(t), testutil.NewSigner(t)
	opts := Options{Admins: []string{relayAdmin.PK}, Now: clock.now}
	s := chOpen(t, chPath(t), opts)
	if s.Community().ThreadRepliesInChannel {
		t.Fatal("thread_replies_in_channel is on by default")
	}

	set := chSetting(t, relayAdmin, chT, "YES")
	a, err := s.Admit(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Applied {
		t.Error("9033 not reported as applied")
	}
	chExpectSetting(t, s, true)
	if chStored(t, s, set.ID) || chSees(t, s, buzz.Viewer(relayAdmin.PK), set.ID) {
		t.Fatal("9033 stored as an event")
	}
	if n := qtSQLCount(t, s, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("%d events stored", n)
	}

	for i, c := range []struct {
		v    string
		want bool
	}{
		{"false", false}, {"true", true}, {"0", false}, {"1", true}, {"no", false}, {"yes", true},
		{"off", false}, {"on", true}, {"FALSE", false}, {"TRUE", true}, {"Off", false}, {"oN", true},
		{"nO", false}, {"Yes", true}, {"fAlSe", false},
	} {
		// Within the ±120 s window at both ends.
		at := chT - 120 + int64(i%2)*240
		ttIngest(t, s, chSetting(t, relayAdmin, at, c.v))
		chExpectSetting(t, s, c.want)
	}
	ttIngest(t, s, chSetting(t, relayAdmin, chT, "on"))
	chExpectSetting(t, s, true)

	for _, c := range []struct {
		name string
		ev   *nostr.Event
		want error
	}{
		{"not a relay admin", chSetting(t, other, chT, "off"), buzz.ErrNotRelayAdmin},
		{"not a relay admin, bad value", chSetting(t, other, chT, "maybe"), buzz.ErrNotRelayAdmin},
		{"value maybe", chSetting(t, relayAdmin, chT, "maybe"), buzz.ErrSettingNotBool},
		{"value empty", chSetting(t, relayAdmin, chT, ""), buzz.ErrSettingNotBool},
		{"value 2", chSetting(t, relayAdmin, chT, "2"), buzz.ErrSettingNotBool},
		{"value with space", chSetting(t, relayAdmin, chT, " off"), buzz.ErrSettingNotBool},
		{"no setting tag", relayAdmin.Event(t, 9033, chT, "", nostr.Tag{"other", "off"}), buzz.ErrSettingNotBool},
		{"200 s old", chSetting(t, relayAdmin, chT-200, "off"), buzz.ErrTooFarInFuture},
		{"121 s old", chSetting(t, relayAdmin, chT-121, "off"), buzz.ErrTooFarInFuture},
		{"121 s ahead", chSetting(t, relayAdmin, chT+121, "off"), buzz.ErrTooFarInFuture},
	} {
		t.Run(c.name, func(t *testing.T) {
			chReject(t, s, c.ev, c.want)
			chExpectSetting(t, s, true)
		})
	}

	// Persisted: a reopened store (no configured value) has it.
	s = chReopen(t, s, opts)
	chExpectSetting(t, s, true)
	ttIngest(t, s, chSetting(t, relayAdmin, chT+1, "off"))
	s = chReopen(t, s, opts)
	chExpectSetting(t, s, false)
}

// RL-15: the configured value and 9033 — last write wins. A config value
// that changed since the last start is the newest write; an unchanged one
// leaves a 9033's value in force; no configured value (nil) leaves the
// stored one.
func TestThreadRepliesConfigPrecedence(t *testing.T) {
	clock := qtNewClock(chT)
	relayAdmin := testutil.NewSigner(t)
	opts := func(cfg *bool) Options {
		return Options{Admins: []string{relayAdmin.PK}, Now: clock.now, ThreadRepliesInChannel: cfg}
	}
	yes, no := true, false
	at := chT
	set := func(s *Store, v string) {
		t.Helper()
		at++
		ttIngest(t, s, chSetting(t, relayAdmin, at, v))
	}

	s := chOpen(t, chPath(t), opts(&no))
	chExpectSetting(t, s, false)
	set(s, "true")
	chExpectSetting(t, s, true)
	s = chReopen(t, s, opts(&no)) // config unchanged: the 9033 stays
	chExpectSetting(t, s, true)
	s = chReopen(t, s, opts(&yes)) // config changed to true
	chExpectSetting(t, s, true)
	set(s, "false")
	s = chReopen(t, s, opts(&yes)) // unchanged: the 9033 stays
	chExpectSetting(t, s, false)
	s = chReopen(t, s, opts(nil)) // nil: stored value as it is
	chExpectSetting(t, s, false)
	set(s, "on")
	s = chReopen(t, s, opts(nil))
	chExpectSetting(t, s, true)
	s = chReopen(t, s, opts(&yes)) // still the config of the last start
	chExpectSetting(t, s, true)
	s = chReopen(t, s, opts(&no)) // config changed to false: it wins
	chExpectSetting(t, s, false)
	s = chReopen(t, s, opts(&no))
	chExpectSetting(t, s, false)
}
