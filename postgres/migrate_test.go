package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Opening a database again applies no migration twice, and a database
// whose schema is newer than the binary's is refused.
func TestMigrations(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	s := suiteOpen(t, url, storetest.Config{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = suiteOpen(t, url, storetest.Config{})
	ctx := context.Background()
	var versions []int32
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	if versions, err = pgx.CollectRows(rows, pgx.RowTo[int32]); err != nil {
		t.Fatal(err)
	}
	if len(versions) != len(migrations) || int(versions[len(versions)-1]) != len(migrations) {
		t.Fatalf("schema_migrations holds %v, want 1..%d once each", versions, len(migrations))
	}
	newer := len(migrations) + 1
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, newer); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{URL: url}); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("opening a newer database: %v, want a refusal", err)
	}
}

// RL-35: a database of the schema version before feedStreamsMigration
// (made by undoing it and the migrations after it) gets the feed's
// streams, and the
// feeds of the events stored before are served from them: the member's
// mentions in the private channel and in none, not the deleted one,
// activity of both channels, an outsider's of the open channel only.
func TestMigrateFeedStreams(t *testing.T) {
	const priv, open = "5d1c9b8a-7f6e-4d5c-8b4a-3f2e1d0c9b8a", "6e2d0c9b-8a7f-4e6d-9c5b-4a3f2e1d0c9b"
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	sg := testutil.SortedSigners(t, 3)
	owner, member, outsider := sg[0], sg[1], sg[2]
	pm := nostr.Tag{"p", member.PK}
	const at = 1700000000
	privMention := owner.Event(t, 9, at+3, "private mention", nostr.Tag{"h", priv}, pm)
	openMessage := owner.Event(t, 11, at+4, "open", nostr.Tag{"h", open})
	note := owner.Event(t, 1, at+5, "note", pm)
	gone := owner.Event(t, 9, at+6, "deleted mention", nostr.Tag{"h", open}, pm)
	old := suiteOpen(t, url, storetest.Config{})
	for _, ev := range []*nostr.Event{
		owner.Event(t, 9007, at, "", nostr.Tag{"h", priv}, nostr.Tag{"private"}),
		owner.Event(t, 9000, at+1, "", nostr.Tag{"h", priv}, pm),
		owner.Event(t, 9007, at+2, "", nostr.Tag{"h", open}),
		privMention, openMessage, note, gone,
		owner.Event(t, 5, at+7, "", nostr.Tag{"e", gone.ID}),
	} {
		if _, err := old.Admit(ctx, ev); err != nil {
			t.Fatalf("kind %d: %v", ev.Kind, err)
		}
	}
	if _, err := old.pool.Exec(ctx, `DROP TRIGGER mentions_insert ON tags; DROP TRIGGER mentions_tag_delete ON tags;
		DROP TRIGGER mentions_event_deleted ON events; DROP TRIGGER mentions_event_delete ON events;
		DROP TRIGGER channels_feed ON channels;
		DROP FUNCTION mentions_insert(); DROP FUNCTION mentions_tag_delete(); DROP FUNCTION mentions_event_gone();
		DROP FUNCTION channels_feed(); DROP TABLE mentions; DROP INDEX members_pubkey; DROP INDEX channels_private;
		ALTER TABLE events DROP COLUMN feed; DROP FUNCTION feed_stream(bigint);
		DROP INDEX channels_activity; ALTER TABLE channels DROP COLUMN last_message_at; DROP TABLE invites;
		DROP INDEX channels_parent; ALTER TABLE channels DROP COLUMN parent; ALTER TABLE channels DROP COLUMN picture`); err != nil {
		t.Fatal(err)
	}
	version := slices.Index(migrations, feedStreamsMigration) + 1
	if _, err := old.pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version >= $1`, version); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := suiteOpen(t, url, storetest.Config{})
	for _, c := range []struct {
		v     buzz.Viewer
		types []buzz.FeedType
		want  []*nostr.Event
	}{
		{buzz.Viewer(member.PK), []buzz.FeedType{buzz.FeedMentions}, []*nostr.Event{note, privMention}},
		{buzz.Viewer(member.PK), []buzz.FeedType{buzz.FeedActivity}, []*nostr.Event{openMessage, privMention}},
		{buzz.Viewer(outsider.PK), []buzz.FeedType{buzz.FeedActivity}, []*nostr.Event{openMessage}},
	} {
		got, err := s.Feed(ctx, buzz.FeedQuery{Viewer: c.v, Types: c.types, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if ids, want := testutil.IDs(got...), testutil.IDs(c.want...); !slices.Equal(ids, want) {
			t.Errorf("%.8s %v: %v, want %v", c.v, c.types, ids, want)
		}
	}
}

// RL-36: a database of the schema version before the invite codes gets
// their table; a 9009 stored before gives no code (any member could post
// one then): its private channel stays closed to a join naming the code.
func TestMigrateInvites(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	owner, stranger := testutil.NewSigner(t), testutil.NewSigner(t)
	const ops, at = "ops", 1700000000
	old := suiteOpen(t, url, storetest.Config{})
	for _, ev := range []*nostr.Event{
		owner.Event(t, 9007, at, "", nostr.Tag{"h", ops}, nostr.Tag{"private"}),
		owner.Event(t, 9009, at+1, "", nostr.Tag{"h", ops}, nostr.Tag{"code", "old"}),
	} {
		if _, err := old.Admit(ctx, ev); err != nil {
			t.Fatalf("kind %d: %v", ev.Kind, err)
		}
	}
	if _, err := old.pool.Exec(ctx, `DROP TABLE invites; DROP INDEX channels_parent; ALTER TABLE channels DROP COLUMN parent;
		ALTER TABLE channels DROP COLUMN picture`); err != nil {
		t.Fatal(err)
	}
	version := slices.Index(migrations, invitesMigration) + 1
	if _, err := old.pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version >= $1`, version); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := suiteOpen(t, url, storetest.Config{})
	if ch := s.Community().Channel(ops); ch == nil || ch.Invites != 0 || !ch.Closed() {
		t.Fatalf("after the migration: %+v, want a closed private channel without codes", ch)
	}
	_, err := s.Admit(ctx, stranger.Event(t, 9021, at+2, "", nostr.Tag{"h", ops}, nostr.Tag{"code", "old"}))
	if !errors.Is(err, buzz.ErrCannotJoin) {
		t.Fatalf("join with the code of a 9009 stored before: %v, want %v", err, buzz.ErrCannotJoin)
	}
}

// Issue 31 (RL-36): a database of the schema version before
// subgroupsMigration gets channels.picture (empty) and channels.parent (NULL:
// every channel a root) with channels_parent; its channels take a picture
// and a parent after; and the relay's first start renews the group state
// of every channel once (39003 appears), the next not at all.
func TestMigrateSubgroups(t *testing.T) {
	ctx := context.Background()
	const parent, child = "6e0f4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b", "nip29-group"
	url := pgtest.FreshDatabase(t)
	owner := testutil.NewSigner(t)
	old := suiteOpen(t, url, storetest.Config{})
	for _, ev := range []*nostr.Event{
		owner.Event(t, 9007, 1700000000, "", nostr.Tag{"h", parent}),
		owner.Event(t, 9007, 1700000001, "", nostr.Tag{"h", child}),
	} {
		if _, err := old.Admit(ctx, ev); err != nil {
			t.Fatalf("kind %d: %v", ev.Kind, err)
		}
	}
	if _, err := old.pool.Exec(ctx, `DROP INDEX channels_parent; ALTER TABLE channels DROP COLUMN parent;
		ALTER TABLE channels DROP COLUMN picture`); err != nil {
		t.Fatal(err)
	}
	version := slices.Index(migrations, subgroupsMigration) + 1
	if _, err := old.pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version >= $1`, version); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := suiteOpen(t, url, storetest.Config{RelayKey: nostr.GeneratePrivateKey()})
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM channels WHERE picture = '' AND parent IS NULL`); n != 2 {
		t.Fatalf("%d of 2 channels migrated without a picture and parent", n)
	}
	if n := count(`SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003`); n != 0 {
		t.Fatalf("%d group state events before the relay renewed it", n)
	}
	for i := range 2 {
		if err := s.RenewChangedGroupState(ctx); err != nil {
			t.Fatal(err)
		}
		if n := count(`SELECT count(*) FROM events WHERE kind BETWEEN 39000 AND 39003`); n != 8 {
			t.Fatalf("start %d: %d group state events, want 4 for each of 2 channels", i+1, n)
		}
	}
	if n := count(`SELECT count(*) FROM events WHERE kind = 39003`); n != 2 {
		t.Fatalf("%d 39003, want one a channel", n)
	}
	if _, err := s.Admit(ctx, owner.Event(t, 9002, 1700000002, "", nostr.Tag{"h", child}, nostr.Tag{"parent", parent},
		nostr.Tag{"picture", "https://example.com/n.png"})); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM channels c JOIN channels p ON p.seq = c.parent
		WHERE c.h = $1 AND p.h = $2 AND c.picture = 'https://example.com/n.png'`, child, parent); n != 1 {
		t.Fatal("the migrated channel kept no parent or picture")
	}
}

// Issue 32: a database of the schema version before
// narrowReadIndexesMigration, its REQ indexes by kind and by channel keyed
// (group, created_at DESC, id), gets them keyed (group, created_at), and
// serves the same REQ answer from them, ties of one second in id order
// (RL-19), as the window serves them (CW-15).
func TestMigrateNarrowReadIndexes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	owner := testutil.NewSigner(t)
	const ch, at = "general", 1700000000
	old := suiteOpen(t, url, storetest.Config{})
	if _, err := old.Admit(ctx, owner.Event(t, 9007, at, "", nostr.Tag{"h", ch})); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		// Three seconds of two messages each.
		if _, err := old.Admit(ctx, owner.Event(t, 9, int64(at+1+i/2), fmt.Sprint("m", i), nostr.Tag{"h", ch})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.pool.Exec(ctx, `DROP INDEX events_kind; CREATE INDEX events_kind ON events (kind, created_at DESC, id);
		DROP INDEX events_channel; CREATE INDEX events_channel ON events (channel, created_at DESC, id) WHERE channel IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	version := slices.Index(migrations, narrowReadIndexesMigration) + 1
	if _, err := old.pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version >= $1`, version); err != nil {
		t.Fatal(err)
	}
	read := func(s suiteStore) (window, req []string) {
		t.Helper()
		page, err := s.Window(ctx, buzz.WindowQuery{Channel: ch, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Rows {
			window = append(window, ev.ID)
		}
		evs, err := s.Query(ctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}, Limit: 4}, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			req = append(req, ev.ID)
		}
		return window, req
	}
	window, req := read(old)
	if len(window) != 4 || !slices.Equal(window, req) {
		t.Fatalf("before the migration: window %v, REQ %v, want the same 4 newest", window, req)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := suiteOpen(t, url, storetest.Config{})
	var defs []string
	rows, err := s.pool.Query(ctx, `SELECT indexdef FROM pg_indexes
		WHERE indexname IN ('events_kind', 'events_channel') ORDER BY indexname`)
	if err != nil {
		t.Fatal(err)
	}
	if defs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 2 {
		t.Fatalf("indexes after the migration: %q", defs)
	}
	for _, def := range defs {
		if strings.Contains(def, "DESC") || strings.Contains(def, " id") {
			t.Errorf("after the migration: %s, want it keyed (group, created_at)", def)
		}
	}
	afterWindow, afterReq := read(s)
	if !slices.Equal(afterWindow, window) || !slices.Equal(afterReq, req) {
		t.Fatalf("after the migration: window %v, REQ %v, want %v", afterWindow, afterReq, window)
	}
}

// Migration 9 keys the window's and the feed's indexes to be read
// backward and drops the id from events_root: the window, the feed and a
// thread page read the same events in the same order before and after.
func TestMigrateWriteOrderIndexes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	owner := testutil.NewSigner(t)
	const ch, at = "general", 1700000000
	old := suiteOpen(t, url, storetest.Config{})
	if _, err := old.Admit(ctx, owner.Event(t, 9007, at, "", nostr.Tag{"h", ch})); err != nil {
		t.Fatal(err)
	}
	root := owner.Event(t, 9, at+1, "root", nostr.Tag{"h", ch})
	if _, err := old.Admit(ctx, root); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		// Three seconds of two messages and two replies each.
		if _, err := old.Admit(ctx, owner.Event(t, 9, int64(at+2+i/2), fmt.Sprint("m", i), nostr.Tag{"h", ch})); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Admit(ctx, owner.Event(t, 9, int64(at+2+i/2), fmt.Sprint("r", i), nostr.Tag{"h", ch},
			nostr.Tag{"e", root.ID, "", "root"})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.pool.Exec(ctx, `DROP INDEX events_toplevel;
		CREATE INDEX events_toplevel ON events (channel, created_at DESC, id) WHERE row_class = 2 AND deleted_at IS NULL;
		DROP INDEX events_projection;
		CREATE INDEX events_projection ON events (channel, created_at DESC, id) WHERE row_class >= 1 AND deleted_at IS NULL;
		DROP INDEX events_feed;
		CREATE INDEX events_feed ON events (feed, created_at DESC, id) WHERE feed IS NOT NULL AND deleted_at IS NULL;
		DROP INDEX events_root;
		CREATE INDEX events_root ON events (root, created_at, id) WHERE root IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	version := slices.Index(migrations, writeOrderIndexesMigration) + 1
	if _, err := old.pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version >= $1`, version); err != nil {
		t.Fatal(err)
	}
	ids := func(evs []buzz.RawEvent) (out []string) {
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	read := func(s suiteStore) (reads [][]string) {
		t.Helper()
		for _, projection := range []bool{false, true} {
			page, err := s.Window(ctx, buzz.WindowQuery{Channel: ch, Limit: 5, Projection: projection})
			if err != nil {
				t.Fatal(err)
			}
			reads = append(reads, ids(page.Rows))
		}
		thread, err := s.Thread(ctx, buzz.ThreadQuery{Root: root.ID, DepthLimit: 1, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, ids(thread.Replies))
		feed, err := s.Feed(ctx, buzz.FeedQuery{Viewer: buzz.Viewer(owner.PK), Types: []buzz.FeedType{buzz.FeedActivity}, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		var fed []string
		for _, ev := range feed {
			fed = append(fed, ev.ID)
		}
		return append(reads, fed)
	}
	before := read(old)
	for i, ids := range before {
		if len(ids) != 5 {
			t.Fatalf("before the migration, read %d: %v, want 5 events", i, ids)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	s := suiteOpen(t, url, storetest.Config{})
	rows, err := s.pool.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
		WHERE indexname IN ('events_toplevel', 'events_projection', 'events_feed', 'events_root') ORDER BY indexname`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	var name, def string
	if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error { defs[name] = def; return nil }); err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]string{"events_toplevel": "(channel, created_at, id DESC)", "events_projection": "(channel, created_at, id DESC)",
		"events_feed": "(feed DESC, created_at, id DESC)", "events_root": "(root, created_at)"} {
		if !strings.Contains(defs[name], key) {
			t.Errorf("after the migration: %s is %q, want it keyed %s", name, defs[name], key)
		}
	}
	if after := read(s); !slices.EqualFunc(after, before, slices.Equal) {
		t.Fatalf("after the migration: %v, want %v", after, before)
	}
}
