package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// RL-4: an ingest that fails half way, by a trigger planted in the
// database, leaves nothing: the rollback of this store's writer. The
// behaviour every store shows (classification, counters, atomicity of
// refusals) is storetest's (thread.go).

// ttFixture is a small channel with a thread, events elsewhere and a
// deleted event, to classify new events against.
type ttFixture struct {
	s       *Store
	a, b    testutil.Signer
	R, R2   string // top-level events in ttChan (by a)
	C1, G   string // C1 replies to R, G replies to C1 (by b)
	N       string // a kind 9 without h tag (by a)
	O       string // top-level in ttChan2 (by a)
	D       string // deleted top-level in ttChan (by a)
	V       string // top-level in ttChan (by a), victim of a 9005
	K       string // a kind 7 reaction in ttChan (unclassified)
	L       string // a legacy top-level message in ttChan: depth NULL, as import stores it
	missing string // an id nothing has
	at      int64
	evC1    *nostr.Event // C1 signed again: same id
}

func newTTFixture(t *testing.T) *ttFixture {
	t.Helper()
	f := &ttFixture{s: ttOpen(t), a: testutil.NewSigner(t), b: testutil.NewSigner(t), at: ttBase}
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
	f.L = ing(f.a, 9, ttH(ttChan))
	id, _ := idKey(f.L)
	if _, err := mgRaw(t, f.s.path).Exec("UPDATE events SET depth = NULL WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
	f.missing = strings.Repeat("5a", 32)
	return f
}

// ttExec runs stmt on a connection of its own to the store's file (not
// the writer's): the tests use it to plant triggers that fail a write half
// way. The writer's prepared statements pick the schema change up.
func ttExec(t *testing.T, s *Store, stmt string) {
	t.Helper()
	var path string
	if err := s.readers.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// RL-4: an ingest that fails after its event row, tag rows and part of the
// ancestor counters were written (a trigger aborts the update of the root's
// counters) leaves none of it; the same event then goes in whole.
func TestThreadFailureMidIngestRollsBack(t *testing.T) {
	f := newTTFixture(t)
	rootSeq := ttMustRead(t, f.s, f.R).Seq
	ttExec(t, f.s, fmt.Sprintf(`CREATE TRIGGER tt_fail_root BEFORE UPDATE ON thread_metadata
		WHEN NEW.seq = %d BEGIN SELECT RAISE(ABORT, 'tt injected failure'); END`, rootSeq))

	ev := f.a.Event(t, 9, ttBase+50, "deep", ttH(ttChan), nostr.Tag{"p", f.b.PK}, ttRootTag(f.R), ttReplyTag(f.G))
	before := ttSnapshot(t, f.s)
	err := f.s.Ingest(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "tt injected failure") {
		t.Fatalf("ingest: %v, want the injected failure", err)
	}
	ttSameSnapshot(t, before, ttSnapshot(t, f.s))
	ttExec(t, f.s, `DROP TRIGGER tt_fail_root`)

	// A kind 5 with two own targets, failing on the second deletion after
	// the first was marked and its ancestors recounted.
	r2Seq := ttMustRead(t, f.s, f.R2).Seq
	ttExec(t, f.s, fmt.Sprintf(`CREATE TRIGGER tt_fail_delete BEFORE UPDATE OF deleted_at ON events
		WHEN NEW.seq = %d BEGIN SELECT RAISE(ABORT, 'tt injected failure'); END`, r2Seq))
	own := ttIngest(t, f.s, f.a.Event(t, 9, ttBase+51, "own reply", ttH(ttChan), ttReplyTag(f.C1)))
	del := f.a.Event(t, 5, ttBase+52, "", ttE(own.ID), ttE(f.R2))
	before = ttSnapshot(t, f.s)
	if err := f.s.Ingest(context.Background(), del); err == nil || !strings.Contains(err.Error(), "tt injected failure") {
		t.Fatalf("ingest deletion: %v, want the injected failure", err)
	}
	ttSameSnapshot(t, before, ttSnapshot(t, f.s))
	if !ttVisible(t, f.s, own.ID) {
		t.Fatal("first target of the failed deletion is deleted")
	}

	ttExec(t, f.s, `DROP TRIGGER tt_fail_delete`)
	ttIngest(t, f.s, ev)
	ttIngest(t, f.s, del)
	// The model of R's thread as stored now.
	m := newTTModel()
	m.add(&nostr.Event{ID: f.R, PubKey: f.a.PK, CreatedAt: nostr.Timestamp(ttBase + 1)}, "")
	m.add(&nostr.Event{ID: f.C1, PubKey: f.b.PK, CreatedAt: nostr.Timestamp(ttBase + 3)}, f.R)
	m.add(&nostr.Event{ID: f.G, PubKey: f.b.PK, CreatedAt: nostr.Timestamp(ttBase + 4)}, f.C1)
	m.add(ev, f.G)
	m.add(own, f.C1)
	m.del(own.ID)
	ttCheckModel(t, f.s, m)
	if ttVisible(t, f.s, f.R2) {
		t.Error("R2 not deleted after the trigger was dropped")
	}
}
