package sqlite

// Helpers of thread_test.go and deletion_test.go: opening a store,
// ingesting, reading an event's place and counters back with plain SQL,
// checking the counters against storetest's model of a thread tree (RL-5,
// CW-19) and the writer's recount, and full table snapshots for atomicity
// checks (RL-4). Every name starts with "tt".

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// Two channels, as NIP-29 group ids (UUIDs).
const (
	ttChan  = "0b5d2f0e-8a4b-4f43-9a4e-6a1c4b3e2d11"
	ttChan2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// ttBase is the created_at of the first event of a test; the store does not
// check dates (that is buzz.CheckSubmission), so a fixed past date keeps the
// tests deterministic.
const ttBase int64 = 1_700_000_000

// ttOpen opens a fresh store in t.TempDir() with the given relay admins.
func ttOpen(t testing.TB, admins ...string) *Store {
	t.Helper()
	return qtOpenWith(t, Options{Admins: admins})
}

func ttH(ch string) nostr.Tag        { return nostr.Tag{"h", ch} }
func ttReplyTag(id string) nostr.Tag { return nostr.Tag{"e", id, "", "reply"} }
func ttRootTag(id string) nostr.Tag  { return nostr.Tag{"e", id, "", "root"} }
func ttE(id string) nostr.Tag        { return nostr.Tag{"e", id} }

// ttIngest stores ev and fails the test on any error.
func ttIngest(t testing.TB, s *Store, ev *nostr.Event) *nostr.Event {
	t.Helper()
	if err := s.Ingest(context.Background(), ev); err != nil {
		t.Fatalf("ingest kind %d %s (tags %v): %v", ev.Kind, ev.ID, ev.Tags, err)
	}
	return ev
}

// ttCounters are the subtree counters of one event (RL-5, CW-19), as stored
// or as the writer recounts them. A missing thread_metadata row reads as all
// zero (schema.sql).
type ttCounters struct {
	ReplyCount      int64
	DescendantCount int64
	LastReplyAt     sql.NullInt64
	Participants    []string // hex pubkeys, in stored order
	ParticipantAts  []int64  // each participant's newest created_at below
}

// ttInfo is an event's place in the events table and its counters as
// thread_metadata holds them.
type ttInfo struct {
	ID  string // hex
	Seq int64
	ttCounters
}

// ttReadWhere reads, through the read pool, the events where says, in seq
// order.
func ttReadWhere(t testing.TB, s *Store, where string, args ...any) []ttInfo {
	t.Helper()
	rows, err := s.readers.QueryContext(context.Background(), `
		SELECT e.id, e.seq, coalesce(m.reply_count, 0), coalesce(m.descendant_count, 0),
		       m.last_reply_at, m.participants
		FROM events e
		LEFT JOIN thread_metadata m ON m.seq = e.seq
		WHERE `+where+` ORDER BY e.seq`, args...)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var out []ttInfo
	for rows.Next() {
		var (
			in    ttInfo
			id    []byte
			parts []byte
		)
		if err := rows.Scan(&id, &in.Seq, &in.ReplyCount, &in.DescendantCount, &in.LastReplyAt, &parts); err != nil {
			t.Fatalf("read events: %v", err)
		}
		in.ID = hex.EncodeToString(id)
		if len(parts)%40 != 0 {
			t.Fatalf("event %s: participants blob of %d bytes is not n x 40", in.ID, len(parts))
		}
		for b := parts; len(b) > 0; b = b[40:] {
			in.Participants = append(in.Participants, hex.EncodeToString(b[:32]))
			in.ParticipantAts = append(in.ParticipantAts, int64(binary.BigEndian.Uint64(b[32:40])))
		}
		out = append(out, in)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatalf("read events: %v", err)
	}
	return out
}

// ttMustRead reads, through the read pool, the stored place and counters
// of the event with hex id, failing the test when no such row
// exists.
func ttMustRead(t testing.TB, s *Store, id string) ttInfo {
	t.Helper()
	key, err := hex.DecodeString(strings.ToLower(id))
	if err != nil {
		t.Fatalf("bad id %q", id)
	}
	ins := ttReadWhere(t, s, `e.id = ?`, key)
	if len(ins) == 0 {
		t.Fatalf("event %s is not stored", id)
	}
	return ins[0]
}

// ttCheckModel requires the counters the store serves for every model
// event to be the model's (storetest.CheckThreadModel), and those it
// stores to be what the writer's recount computes.
func ttCheckModel(t testing.TB, s *Store, m *storetest.ThreadModel) {
	t.Helper()
	storetest.CheckThreadModel(t, suiteStore{s}, m)
	ttCheckRecount(t, s)
}

// ttCheckRecount requires, for every classified event, that the stored
// thread_metadata equals tx.subtreeCounters.
func ttCheckRecount(t testing.TB, s *Store) {
	t.Helper()
	stored := ttReadWhere(t, s, `e.depth IS NOT NULL`)
	computed := make([]Counters, len(stored))
	err := s.writer.do(context.Background(), func(tx *writeTx) error {
		for i, in := range stored {
			c, err := tx.subtreeCounters(in.Seq)
			if err != nil {
				return err
			}
			computed[i] = c
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range computed {
		got := ttCounters{ReplyCount: c.ReplyCount, DescendantCount: c.DescendantCount, LastReplyAt: c.lastReplyAt()}
		for _, p := range c.Participants {
			got.Participants = append(got.Participants, hex.EncodeToString(p.PubKey))
			got.ParticipantAts = append(got.ParticipantAts, p.At)
		}
		if !reflect.DeepEqual(got, stored[i].ttCounters) {
			t.Errorf("event %s: subtreeCounters %+v, stored %+v", stored[i].ID[:8], got, stored[i].ttCounters)
		}
	}
}

// ttNewThread opens a fresh store with an empty model and n signers
// (testutil.SortedSigners): the start of every counter test.
func ttNewThread(t testing.TB, n int) (*Store, []testutil.Signer, *storetest.ThreadModel) {
	t.Helper()
	s := ttOpen(t)
	return s, testutil.SortedSigners(t, n), storetest.NewThreadModel()
}

// ttIngestAdd stores ev (ttIngest) and records it in m as a child of parent
// ("" for top-level).
func ttIngestAdd(t testing.TB, s *Store, m *storetest.ThreadModel, ev *nostr.Event, parent string) *nostr.Event {
	t.Helper()
	ttIngest(t, s, ev)
	m.Add(ev, parent)
	return ev
}

// snapshotQueries select every row of the tables ingest writes, in a
// stable order, so that a rejected event can be shown to have left
// nothing (RL-4).
var snapshotQueries = []string{
	`SELECT seq, h FROM channels ORDER BY seq`,
	`SELECT seq, id, pubkey, created_at, kind, tags, content, sig, channel, dtag, expires_at,
		deleted_at, parent, root, depth, broadcast, row_class FROM events ORDER BY seq`,
	`SELECT name, value, created_at, seq, kind FROM tags ORDER BY seq, name, value`,
	`SELECT seq, reply_count, descendant_count, last_reply_at, participants FROM thread_metadata ORDER BY seq`,
}

// ttSnapshot dumps every row of the tables ingest writes.
func ttSnapshot(t testing.TB, s *Store) string {
	t.Helper()
	return ttDump(t, s, snapshotQueries...)
}

// ttDump runs queries and writes every row of each (dumpRows).
func ttDump(t testing.TB, s *Store, queries ...string) string {
	t.Helper()
	d, err := dumpRows(context.Background(), s, queries...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dumpRows runs queries on the read pool and writes every row of each,
// blobs in hex, the results separated by "--" lines.
func dumpRows(ctx context.Context, s *Store, queries ...string) (string, error) {
	var b strings.Builder
	for _, q := range queries {
		rows, err := s.readers.QueryContext(ctx, q)
		if err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			return "", errors.Join(err, rows.Close())
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return "", errors.Join(err, rows.Close())
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					fmt.Fprintf(&b, "x'%x' ", bs)
				} else {
					fmt.Fprintf(&b, "%v ", v)
				}
			}
			b.WriteByte('\n')
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
		b.WriteString("--\n")
	}
	return b.String(), nil
}

// ttVisible reports whether Query by id finds the event.
func ttVisible(t testing.TB, s *Store, id string) bool {
	t.Helper()
	return len(storetest.QueryIDs(t, s, nostr.Filter{IDs: []string{id}}, buzz.Anonymous)) == 1
}
