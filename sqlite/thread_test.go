package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// RL-4: an ingest that fails half way, by a trigger planted in the
// database, leaves nothing: the rollback of this store's writer. The
// behaviour every store shows (classification, counters, atomicity of
// refusals) is storetest's (thread.go).

// ttExec runs stmt on a connection of its own to the store's file (not
// the writer's): the tests use it to plant triggers that fail a write half
// way. The writer's prepared statements pick the schema change up.
func ttExec(t *testing.T, s *Store, stmt string) {
	t.Helper()
	var path string
	if err := s.readers.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, false, 0))
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
	s := ttOpen(t)
	a, b := testutil.NewSigner(t), testutil.NewSigner(t)
	r := ttIngest(t, s, a.Event(t, 9, ttBase+1, "root", ttH(ttChan)))
	r2 := ttIngest(t, s, a.Event(t, 9, ttBase+2, "another root", ttH(ttChan)))
	c1 := ttIngest(t, s, b.Event(t, 9, ttBase+3, "reply", ttH(ttChan), ttRootTag(r.ID), ttReplyTag(r.ID)))
	g := ttIngest(t, s, b.Event(t, 9, ttBase+4, "reply to the reply", ttH(ttChan), ttRootTag(r.ID), ttReplyTag(c1.ID)))
	rootSeq := ttMustRead(t, s, r.ID).Seq
	ttExec(t, s, fmt.Sprintf(`CREATE TRIGGER tt_fail_root BEFORE UPDATE ON thread_metadata
		WHEN NEW.seq = %d BEGIN SELECT RAISE(ABORT, 'tt injected failure'); END`, rootSeq))

	ev := a.Event(t, 9, ttBase+50, "deep", ttH(ttChan), nostr.Tag{"p", b.PK}, ttRootTag(r.ID), ttReplyTag(g.ID))
	before := ttSnapshot(t, s)
	err := s.Ingest(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "tt injected failure") {
		t.Fatalf("ingest: %v, want the injected failure", err)
	}
	storetest.SameSnapshot(t, "a failed ingest", before, ttSnapshot(t, s))
	ttExec(t, s, `DROP TRIGGER tt_fail_root`)

	// A kind 5 with two own targets, failing on the second deletion after
	// the first was marked and its ancestors recounted.
	r2Seq := ttMustRead(t, s, r2.ID).Seq
	ttExec(t, s, fmt.Sprintf(`CREATE TRIGGER tt_fail_delete BEFORE UPDATE OF deleted_at ON events
		WHEN NEW.seq = %d BEGIN SELECT RAISE(ABORT, 'tt injected failure'); END`, r2Seq))
	own := ttIngest(t, s, a.Event(t, 9, ttBase+51, "own reply", ttH(ttChan), ttReplyTag(c1.ID)))
	del := a.Event(t, 5, ttBase+52, "", ttE(own.ID), ttE(r2.ID))
	before = ttSnapshot(t, s)
	if err := s.Ingest(context.Background(), del); err == nil || !strings.Contains(err.Error(), "tt injected failure") {
		t.Fatalf("ingest deletion: %v, want the injected failure", err)
	}
	storetest.SameSnapshot(t, "a failed ingest", before, ttSnapshot(t, s))
	if !ttVisible(t, s, own.ID) {
		t.Fatal("first target of the failed deletion is deleted")
	}

	ttExec(t, s, `DROP TRIGGER tt_fail_delete`)
	ttIngest(t, s, ev)
	ttIngest(t, s, del)
	// The model of R's thread as stored now.
	m := storetest.NewThreadModel()
	m.Add(r, "")
	m.Add(c1, r.ID)
	m.Add(g, c1.ID)
	m.Add(ev, g.ID)
	m.Add(own, c1.ID)
	m.Delete(own.ID)
	ttCheckModel(t, s, m)
	if ttVisible(t, s, r2.ID) {
		t.Error("R2 not deleted after the trigger was dropped")
	}
}
