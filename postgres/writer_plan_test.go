package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// statementLog records the statements a store's pool runs while on.
type statementLog struct {
	mu  sync.Mutex
	on  bool
	ran []sqlQuery
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.ran = append(l.ran, sqlQuery{sql: data.SQL, args: slices.Clone(data.Args)})
	}
	return ctx
}

func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The writes a transaction queues go in batches (pipeTx): each statement
// of a batch is recorded too.
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on {
		l.ran = append(l.ran, sqlQuery{sql: data.SQL, args: slices.Clone(data.Args)})
	}
}

func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (l *statementLog) record(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = on
}

// writerStatements are the statements of every write path the issue names,
// by what they do: the workload of TestWriterPlans must run each of them,
// so that a path it stopped reaching fails the test rather than going
// unchecked.
var writerStatements = map[string]string{
	"duplicate, deleted and reacted probe": `EXISTS (SELECT 1 FROM events WHERE id = $1)`,
	"address deletion probe":               `WHERE t.name = 'a' AND t.value = $1 AND t.kind = 5`,
	"versions at an address":               `WHERE kind = $1 AND pubkey = $2 AND dkey = $3`,
	"versions of a replaceable event":      `WHERE pubkey = $1 AND kind = $2`,
	"event by id":                          `FROM events WHERE id = $1`,
	"event by number":                      `FROM events WHERE seq = $1`,
	"events an aux event names":            `FROM events WHERE id = ANY($1)`,
	"channel by id, the table fallback":    `SELECT seq FROM channels WHERE h = $1`,
	"ancestor's counters, locked":          `FOR UPDATE OF e`,
	"ancestor's counters, written":         `INSERT INTO thread_metadata`,
	"reactions to adopt":                   `SELECT seq FROM tags WHERE name = 'e' AND value = $1 AND kind = 7`,
	"reaction adopted":                     `UPDATE events SET scope = $1 WHERE seq = $2`,
	"soft deletion":                        `UPDATE events SET deleted_at = $1`,
	"channel's last message raised":        raiseLastMessageSQL,
	"channel's last message read again":    rereadLastMessageSQL,
	"root's newest replies":                `WHERE root = $1 AND deleted_at IS NULL ORDER BY created_at DESC LIMIT $2`,
	"root's authors":                       threadAuthorsSQL,
	"inner ancestor's subtree":             subtreeAuthorsSQL,
	"replies probe of a removal":           `SELECT seq FROM events WHERE parent = $1 LIMIT 1`,
	"removal's tag rows":                   `DELETE FROM tags WHERE seq = $1`,
	"removal's event":                      `DELETE FROM events WHERE seq = $1`,
	"page versions":                        bumpPagesSQL,
	"notifications":                        notifySQL,
	"tag row":                              insertTagSQL,
	"event's row":                          insertEventSQL,
	"event numbers drawn":                  drawSeqsSQL,
	"thread changes":                       `JOIN channels c ON c.seq = e.channel WHERE e.seq = ANY($1)`,
	"channel saved":                        `UPDATE channels SET`,
	"member put":                           `INSERT INTO members`,
	"member removed":                       `DELETE FROM members WHERE channel = $1 AND pubkey = $2`,
	"invite codes a join names":            `SELECT event FROM invites WHERE channel = $1 AND code = $2`,
	"invite code recorded":                 `INSERT INTO invites`,
	"invite code revoked":                  `DELETE FROM invites WHERE event = $1`,
	"subgroups of a deleted channel":       childChannelsSQL,
	"expired events":                       `WHERE expires_at <= $1 LIMIT $2`,
	"a batch's events read ahead":          prefetchRowsSQL,
	"a batch's probes read ahead":          prefetchProbeSQL,
}

// RL-27a, issue 18 (sqlite's TestWriterPlans): no statement a write runs
// reads the whole of a table that grows with the events (planScans), on
// the plan database: the writes of ingest (a thread two levels deep and
// its counters, a reaction adopted by its late target, deletions of a
// reply, of a reply in a thread of 300, by a channel admin and of a
// reaction, deletions before their targets by id and by address,
// replaced addressable and replaceable events, channels created by a
// 9007 and by a first event, members put and removed, a subgroup made a
// root by its parent's 9008, the relay's group state renewed), an import
// batch's reads ahead and the purge of an expired event. The statements are
// the ones the store ran (a tracer on its pool), so that one added later
// is checked too; each is explained with the arguments it ran with, and
// as the generic plan PostgreSQL turns to once a prepared statement has
// run five times.
func TestWriterPlans(t *testing.T) {
	ctx := context.Background()
	url := pgtest.FreshDatabase(t)
	const at = int64(1_800_000_000)
	clock := testutil.NewClock(at)
	admin, a, b := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	ran := &statementLog{}
	s, err := Open(ctx, Options{URL: url, Admins: []string{admin.PK}, RelayKey: nostr.GeneratePrivateKey(), Now: clock.Now, tracer: ran})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	fillPlanDatabase(t, s.pool)
	// The access state of the fill's channels and members: announced as
	// another process's change would be, and read by the next transaction
	// before the recording starts (loadCommunity reads it whole, by design).
	if _, err := s.pool.Exec(ctx, `UPDATE settings SET value = value + 1 WHERE key = 'access_version'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(ctx, nostr.Filter{Kinds: []int{1}}, buzz.Anonymous); err != nil {
		t.Fatal(err)
	}
	if s.Community().Channel("ch7") == nil {
		t.Fatal("the access state of the fill was not read")
	}

	admit := func(ev *nostr.Event, want error) {
		t.Helper()
		if _, err := s.Admit(ctx, ev); !errors.Is(err, want) {
			t.Fatalf("admit kind %d: %v, want %v", ev.Kind, err, want)
		}
	}
	ch := nostr.Tag{"h", "ch1"}
	root := func(id string) nostr.Tag { return nostr.Tag{"e", id, "", "root"} }
	reply := func(id string) nostr.Tag { return nostr.Tag{"e", id, "", "reply"} }
	group := "0b5d2f0e-8a4b-4f43-9a4e-6a1c4b3e2d99"

	ran.record(true)
	m := a.Event(t, 9, at, "root", ch)
	r1 := b.Event(t, 9, at+1, "reply", ch, root(m.ID), reply(m.ID))
	r2 := a.Event(t, 9, at+2, "reply below", ch, root(m.ID), reply(r1.ID))
	late := a.Event(t, 9, at+4, "reacted to before it arrived", ch)
	reaction := b.Event(t, 7, at+3, "+", nostr.Tag{"e", late.ID})
	for _, ev := range []*nostr.Event{m, r1, r2, reaction, late} {
		admit(ev, nil)
	}
	// Issue 32: an import batch reads its events, the events its replies
	// name with their counters, and its probes ahead (prefetch.go).
	imported := b.Event(t, 9, at+3, "imported", ch)
	outcomes, err := s.ImportBatch(ctx, []*nostr.Event{imported,
		a.Event(t, 9, at+4, "imported reply", ch, root(imported.ID), reply(imported.ID)),
		b.Event(t, 9, at+4, "imported reply below a stored one", ch, root(m.ID), reply(r2.ID)),
		b.Event(t, 7, at+4, "+", nostr.Tag{"e", late.ID})})
	if err := errors.Join(append(outcomes, err)...); err != nil {
		t.Fatalf("import batch: %v", err)
	}
	admit(a.Event(t, 5, at+5, "", nostr.Tag{"e", r2.ID}), nil)
	// Event 6 of the fill is a root in ch7 with 300 replies by 3 authors:
	// its recount reads every author once the newest replies fall short.
	big := a.Event(t, 9, at+6, "reply to a long thread", nostr.Tag{"h", "ch7"}, root(planID(6)), reply(planID(6)))
	admit(big, nil)
	admit(a.Event(t, 5, at+7, "", nostr.Tag{"e", big.ID}), nil)
	// RL-6: its counters again as they were, from its 3 authors' newest
	// replies (fill replies 300, 299 and 298).
	ran.record(false)
	sums, err := s.Summaries(ctx, []string{planID(6)})
	if err != nil {
		t.Fatal(err)
	}
	ran.record(true)
	if len(sums) != 1 || sums[0].LastReplyAt == nil || *sums[0].LastReplyAt != 1700200300 ||
		!slices.Equal(sums[0].Participants, []string{planID(0), planID(2), planID(1)}) {
		t.Fatalf("thread 6 after its newest reply was deleted: %+v, want last reply 1700200300 by %s, %s, %s", sums, planID(0), planID(2), planID(1))
	}
	admit(a.Event(t, 30023, at+8, "v1", nostr.Tag{"d", "x"}), nil)
	admit(a.Event(t, 30023, at+9, "v2", nostr.Tag{"d", "x"}), nil)
	admit(a.Event(t, 0, at+10, "{}"), nil)
	admit(a.Event(t, 0, at+11, "{}"), nil)
	early := a.Event(t, 9, at+12, "deleted before it arrived", ch)
	admit(a.Event(t, 5, at+13, "", nostr.Tag{"e", early.ID}), nil)
	admit(early, buzz.ErrDeletedBeforeArriving)
	admit(a.Event(t, 5, at+14, "", nostr.Tag{"a", "30023:" + a.PK + ":old"}), nil)
	admit(a.Event(t, 30023, at+13, "old", nostr.Tag{"d", "old"}), buzz.ErrDeletedBeforeArriving)
	admit(admin.Event(t, buzz.KindCreateChannel, at+15, "", nostr.Tag{"h", group}), nil)
	admit(admin.Event(t, buzz.KindPutUser, at+16, "", nostr.Tag{"h", group}, nostr.Tag{"p", b.PK}), nil)
	admit(admin.Event(t, buzz.KindRemoveUser, at+17, "", nostr.Tag{"h", group}, nostr.Tag{"p", b.PK}), nil)
	// RL-36: an invite code, a join with it (the relay issues its 9000)
	// and a leave (its 9001), the code revoked.
	admit(admin.Event(t, buzz.KindEditMetadata, at+17, "", nostr.Tag{"h", group}, nostr.Tag{"private"}), nil)
	invite := admin.Event(t, buzz.KindCreateInvite, at+17, "", nostr.Tag{"h", group}, nostr.Tag{"code", "c"})
	admit(invite, nil)
	admit(b.Event(t, buzz.KindJoin, at+17, "", nostr.Tag{"h", group}, nostr.Tag{"code", "c"}), nil)
	admit(b.Event(t, buzz.KindLeave, at+17, "", nostr.Tag{"h", group}), nil)
	admit(admin.Event(t, buzz.KindGroupDelete, at+17, "", nostr.Tag{"h", group}, nostr.Tag{"e", invite.ID}), nil)
	// RL-36: a subgroup of the new channel, which a 9008 makes a root.
	admit(admin.Event(t, buzz.KindEditMetadata, at+17, "", nostr.Tag{"h", "ch9"}, nostr.Tag{"parent", group}), nil)
	admit(admin.Event(t, buzz.KindDeleteChannel, at+17, "", nostr.Tag{"h", group}), nil)
	admit(admin.Event(t, buzz.KindGroupDelete, at+18, "", ch, nostr.Tag{"e", late.ID}), nil)
	admit(b.Event(t, 5, at+19, "", nostr.Tag{"e", reaction.ID}), nil)
	admit(a.Event(t, 9, at+20, "names a channel first", nostr.Tag{"h", "fresh"}), nil)
	admit(a.Event(t, 9, at+21, "expires", ch, nostr.Tag{"expiration", strconv.FormatInt(at+30, 10)}), nil)
	clock.Set(at + 60)
	if n, err := s.PurgeExpired(ctx); err != nil || n != 1 {
		t.Fatalf("purge: %d removed, %v; want 1", n, err)
	}
	ran.record(false)

	for what, stmt := range writerStatements {
		if !slices.ContainsFunc(ran.ran, func(q sqlQuery) bool { return strings.Contains(q.sql, stmt) }) {
			t.Errorf("the writes ran no statement of the %s (%q)", what, stmt)
		}
	}
	generic := genericConn(t, url)
	explained, failed := map[string]bool{}, map[string]bool{}
	for _, q := range ran.ran {
		if !explainable(q.sql) || failed[q.sql] {
			continue
		}
		plan := explain(t, s.pool, q.sql, q.args...)
		if scans := planScans(plan); len(scans) > 0 {
			failed[q.sql] = true
			t.Errorf("the writer's statement\n%s\nwith %v reads a whole table: %q; the plan:\n%s", q.sql, q.args, scans, plan)
		}
		// RL-6: a root's authors are read one index search each, never
		// the whole thread (event 6's 300 replies by 3 authors).
		if q.sql == threadAuthorsSQL && strings.Contains(plan, "Bitmap Heap Scan") {
			failed[q.sql] = true
			t.Errorf("the authors of thread %v are read from every reply:\n%s", q.args, plan)
		}
		if explained[q.sql] {
			continue
		}
		explained[q.sql] = true
		plan = genericPlan(t, generic, q.sql)
		if scans := planScans(plan); len(scans) > 0 {
			t.Errorf("the writer's statement\n%s\nreads a whole table in its generic plan: %q; the plan:\n%s", q.sql, scans, plan)
		}
	}
}

// explainable reports whether a statement is one EXPLAIN shows the plan
// of, not a transaction's begin or end.
func explainable(query string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	switch strings.ToUpper(first) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH":
		return true
	}
	return false
}

// genericConn is a connection to the database at url that plans every
// prepared statement generically, for genericPlan.
func genericConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := conn.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	return conn
}

// genericPlan is the plan of query that does not depend on its arguments,
// the one PostgreSQL may keep for a prepared statement once it has run
// five times: conn has plan_cache_mode force_generic_plan.
func genericPlan(t *testing.T, conn *pgx.Conn, query string) string {
	t.Helper()
	ctx := context.Background()
	sd, err := conn.Prepare(ctx, "generic", query)
	if err != nil {
		t.Fatalf("prepare %s: %v", query, err)
	}
	defer func() {
		if err := conn.Deallocate(ctx, "generic"); err != nil {
			t.Fatalf("deallocate %s: %v", query, err)
		}
	}()
	execute := "EXPLAIN EXECUTE generic"
	if n := len(sd.ParamOIDs); n > 0 {
		execute += "(" + strings.TrimSuffix(strings.Repeat("NULL,", n), ",") + ")"
	}
	rows, err := conn.Query(ctx, execute)
	if err != nil {
		t.Fatalf("explain the generic plan of %s: %v", query, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain the generic plan of %s: %v", query, err)
	}
	return strings.Join(lines, "\n")
}
