package sqlite

// Channels and membership in this store's tables (issue 3): the NIP-29
// lifecycle writes each change to the channels and members tables, from
// which a reopened store loads the same state (RL-10). The behaviour every
// store shows (refusals, group state, write access, settings) is
// storetest's (channels.go). Helpers start with "ch".

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
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

// chWant is the expected state of a channel.
func chWant(created bool, name, about string, private, deleted bool, members map[string]buzz.Role) string {
	if members == nil {
		members = map[string]buzz.Role{}
	}
	return storetest.ChannelState(&buzz.Channel{Created: created, Name: name, About: about, Private: private, Deleted: deleted, Members: members})
}

// chExpect requires channel h of s's published state to be want.
func chExpect(t testing.TB, s *Store, h, want string) {
	t.Helper()
	if got := storetest.ChannelState(s.Community().Channel(h)); got != want {
		t.Fatalf("channel %s:\n got  %s\n want %s", h[:8], got, want)
	}
}

// accessQueries select every row of the access state tables (channels,
// members, invites, settings).
var accessQueries = []string{
	`SELECT seq, h, created_at, name, about, private, deleted_at, picture, parent FROM channels ORDER BY seq`,
	`SELECT channel, pubkey, role FROM members ORDER BY channel, pubkey`,
	`SELECT channel, code, event FROM invites ORDER BY channel, code, event`,
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
	rows, tables, state := ttSnapshot(t, s), chTables(t, s), storetest.CommunityState(s.Community())
	storetest.Reject(t, s, ev, want)
	storetest.SameSnapshot(t, "a rejected event", rows, ttSnapshot(t, s))
	if got := chTables(t, s); got != tables {
		t.Fatalf("access state tables changed by a rejected event:\n before %s\n after  %s", tables, got)
	}
	if got := storetest.CommunityState(s.Community()); got != state {
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

// chPersisted closes s, opens its file again with opts and requires the
// same access state, loaded from the tables; it returns the new store.
func chPersisted(t testing.TB, s *Store, opts Options) *Store {
	t.Helper()
	before, tables := storetest.CommunityState(s.Community()), chTables(t, s)
	s = chReopen(t, s, opts)
	if got := storetest.CommunityState(s.Community()); got != before {
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
	clock := testutil.NewClock(chT + 50)
	opts := Options{Now: clock.Now}
	s := chOpen(t, chPath(t), opts)
	sg := testutil.SortedSigners(t, 4)
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
	if _, deleted := chSQLChannel(t, s, ttChan); deleted != (sql.NullInt64{Int64: clock.Now().Unix(), Valid: true}) {
		t.Fatalf("channels row: deleted_at %v, want the store clock", deleted)
	}
	for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(owner.PK), buzz.Viewer(admin.PK)} {
		if storetest.Sees(t, s, v, msg.ID) || storetest.Sees(t, s, v, del.ID) {
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
