package sqlite

// RL-27a: the cost of a read, and of creating a channel, does not grow with
// the number of channels in the community. Helpers start with "sk".

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
	"github.com/buzz-lite/buzz-lite/storetest"
)

// skChannel is the channel id of the i-th channel of a scale fixture.
func skChannel(i int) string { return fmt.Sprintf("5ca1e000-0000-4000-8000-%012x", i) }

// skFixture is a community of many channels, created by signed 9007s:
// channel i is private when i is odd; member creates (and owns) every
// channel i with i%4 == 1, other the rest. Three messages: open in channel
// 0, mine in channel 1 (member's), theirs in channel 3 (other's, private).
type skFixture struct {
	member, other, outsider, admin testutil.Signer
	creates                        []*nostr.Event
	open, mine, theirs             *nostr.Event
}

func newSKFixture(tb testing.TB, n int) *skFixture {
	tb.Helper()
	sg := testutil.SortedSigners(tb, 4)
	fx := &skFixture{member: sg[0], other: sg[1], outsider: sg[2], admin: sg[3]}
	for i := range n {
		creator := fx.other
		if i%4 == 1 {
			creator = fx.member
		}
		tags := []nostr.Tag{ttH(skChannel(i))}
		if i%2 == 1 {
			tags = append(tags, nostr.Tag{"private"})
		}
		fx.creates = append(fx.creates, creator.Event(tb, buzz.KindCreateChannel, chT-1000, "", tags...))
	}
	fx.open = fx.other.Event(tb, 9, chT-500, "open", ttH(skChannel(0)))
	fx.mine = fx.member.Event(tb, 9, chT-500, "mine", ttH(skChannel(1)))
	fx.theirs = fx.other.Event(tb, 9, chT-500, "theirs", ttH(skChannel(3)))
	return fx
}

// store opens a fresh store (clock at chT, fx.admin a relay admin, opts
// otherwise) with the first n channels, imported as an import does, and
// the three messages.
func (fx *skFixture) store(tb testing.TB, n int, opts Options) *Store {
	tb.Helper()
	opts.Admins = []string{fx.admin.PK}
	opts.Now = func() time.Time { return time.Unix(chT, 0) }
	s := chOpen(tb, chPath(tb), opts)
	for start := 0; start < n; start += 1000 {
		outcomes, err := s.ImportBatch(context.Background(), fx.creates[start:min(start+1000, n)])
		if err != nil {
			tb.Fatal(err)
		}
		for i, o := range outcomes {
			if o != nil {
				tb.Fatalf("create channel %d: %v", start+i, o)
			}
		}
	}
	if err := s.RenewGroupState(context.Background()); err != nil {
		tb.Fatal(err)
	}
	for _, ev := range []*nostr.Event{fx.open, fx.mine, fx.theirs} {
		ttIngest(tb, s, ev)
	}
	return s
}

// skStatement is the statement Query runs for f and v.
func skStatement(t *testing.T, s *Store, f nostr.Filter, v buzz.Viewer) sqlQuery {
	t.Helper()
	var q sqlQuery
	err := s.readTx(context.Background(), func(tx *sql.Tx) error {
		var ok bool
		var err error
		if q, ok, err = s.translateIn(context.Background(), tx, f, v, nil, rawSelect); !ok && err == nil {
			t.Fatalf("filter %v translated to nothing", f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// RL-27a: an ids REQ runs the same statement, text and bound arguments,
// with 10 channels and with 10,000 (half of them private), for an
// authenticated viewer and an anonymous one: nothing of it is a list of
// channels, so its cost does not grow with them, and it is prepared once.
// The answer is still exactly what CanRead allows.
func TestReadStatementIndependentOfChannels(t *testing.T) {
	fx := newSKFixture(t, 10_000)
	f := nostr.Filter{IDs: []string{fx.open.ID, fx.mine.ID, fx.theirs.ID}}
	viewers := []buzz.Viewer{buzz.Anonymous, buzz.Viewer(fx.member.PK)}
	var stmts [][]sqlQuery
	for _, n := range []int{10, 10_000} {
		s := fx.store(t, n, Options{})
		for v, want := range map[buzz.Viewer][]string{
			buzz.Anonymous:              testutil.IDs(fx.open),
			buzz.Viewer(fx.outsider.PK): testutil.IDs(fx.open),
			buzz.Viewer(fx.member.PK):   testutil.IDs(fx.open, fx.mine),
			buzz.Viewer(fx.other.PK):    testutil.IDs(fx.open, fx.theirs),
			buzz.Viewer(fx.admin.PK):    testutil.IDs(fx.open, fx.mine, fx.theirs),
		} {
			if got := storetest.QueryIDs(t, s, f, v); !testutil.SameSet(got, want) {
				t.Errorf("%d channels, viewer %.8q: Query %v, want %v", n, v, got, want)
			}
			if got := storetest.Count(t, s, f, v); got != int64(len(want)) {
				t.Errorf("%d channels, viewer %.8q: Count %d, want %d", n, v, got, len(want))
			}
		}
		var qs []sqlQuery
		for _, v := range viewers {
			qs = append(qs, skStatement(t, s, f, v))
		}
		stmts = append(stmts, qs)
	}
	for i, v := range viewers {
		few, many := stmts[0][i], stmts[1][i]
		if few.sql != many.sql {
			t.Errorf("viewer %.8q: the statement text grows with the channels: %d bytes with 10, %d with 10,000",
				v, len(few.sql), len(many.sql))
		}
		if !reflect.DeepEqual(few.args, many.args) {
			t.Errorf("viewer %.8q: the bound arguments differ with 10 and 10,000 channels:\n %v\n %v", v, few.args, many.args)
		}
	}
}

// BenchmarkScaleChannels measures, with 100 and with 20,000 channels (half
// private), an ids REQ through the store, anonymous and authenticated
// (a member of the event's private channel), and a 9007 creating one more
// channel through the store's ingest (RL-27a: flat in the channels).
func BenchmarkScaleChannels(b *testing.B) {
	for _, n := range []int{100, 20_000} {
		fx := newSKFixture(b, n)
		s := fx.store(b, n, Options{RelayKey: nostr.GeneratePrivateKey()})
		for _, c := range []struct {
			name string
			v    buzz.Viewer
			ev   *nostr.Event
		}{
			{"anonymous", buzz.Anonymous, fx.open},
			{"member", buzz.Viewer(fx.member.PK), fx.mine},
		} {
			b.Run(fmt.Sprintf("channels=%d/ids/%s", n, c.name), func(b *testing.B) {
				f := nostr.Filter{IDs: []string{c.ev.ID}}
				for b.Loop() {
					got, err := s.Query(context.Background(), f, c.v)
					if err != nil || len(got) != 1 {
						b.Fatalf("got %d events, err %v", len(got), err)
					}
				}
			})
		}
		next := n // the benchmark runs several times: each creates new channels
		b.Run(fmt.Sprintf("channels=%d/create", n), func(b *testing.B) {
			evs := make([]*nostr.Event, b.N)
			for i := range evs {
				evs[i] = fx.outsider.Event(b, buzz.KindCreateChannel, chT-100, "", ttH(skChannel(next)), nostr.Tag{"private"})
				next++
			}
			b.ResetTimer()
			for i := range b.N {
				if err := s.Ingest(context.Background(), evs[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// RL-12, RL-13, RL-27a: the read scope a query applies in SQL is exactly
// buzz.Community.CanRead: for every viewer (anonymous, owner, member,
// removed member, outsider, relay admin), with and without public reads,
// Query and Count of everything return exactly the events without a scope
// and those of the channels CanRead allows: open, private, deleted open,
// deleted private, implicit, a reaction scoped by its target.
func TestReadScopeIsCanRead(t *testing.T) {
	for _, publicRead := range []bool{true, false} {
		t.Run(fmt.Sprintf("public_read=%v", publicRead), func(t *testing.T) {
			sg := testutil.SortedSigners(t, 5)
			owner, member, removed, outsider, admin := sg[0], sg[1], sg[2], sg[3], sg[4]
			p := buzz.DefaultPolicy()
			p.PublicRead = publicRead
			s := chOpen(t, chPath(t), Options{Policy: &p, Admins: []string{admin.PK}, Now: func() time.Time { return time.Unix(chT, 0) }})
			at := chT - 1000
			post := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
				at++
				return ttIngest(t, s, sg.Event(t, kind, at, "", tags...))
			}
			for i := range 5 {
				tags := []nostr.Tag{ttH(skChannel(i))}
				if i%2 == 1 {
					tags = append(tags, nostr.Tag{"private"})
				}
				post(owner, buzz.KindCreateChannel, tags...)
				post(owner, 9000, ttH(skChannel(i)), nostr.Tag{"p", member.PK}, nostr.Tag{"p", removed.PK})
				msg := post(member, 9, ttH(skChannel(i)))
				post(member, 7, ttE(msg.ID)) // scoped by its target's channel
				post(owner, 9001, ttH(skChannel(i)), nostr.Tag{"p", removed.PK})
			}
			post(owner, 9008, ttH(skChannel(3))) // private, deleted
			post(owner, 9008, ttH(skChannel(4))) // open, deleted
			post(outsider, 9, ttH(skChannel(9))) // an implicit channel
			post(outsider, 1)                    // no channel

			c := s.Community()
			scopes := map[string]sql.NullInt64{}
			err := s.readTx(context.Background(), func(tx *sql.Tx) error {
				rows, err := tx.Query(`SELECT lower(hex(id)), scope FROM events WHERE deleted_at IS NULL`)
				if err != nil {
					return err
				}
				defer rows.Close()
				for rows.Next() {
					var id string
					var scope sql.NullInt64
					if err := rows.Scan(&id, &scope); err != nil {
						return err
					}
					scopes[id] = scope
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []buzz.Viewer{buzz.Anonymous, buzz.Viewer(owner.PK), buzz.Viewer(member.PK),
				buzz.Viewer(removed.PK), buzz.Viewer(outsider.PK), buzz.Viewer(admin.PK)} {
				var want []string
				for id, scope := range scopes {
					if !scope.Valid || c.CanReadSeq(v, scope.Int64) {
						want = append(want, id)
					}
				}
				f := nostr.Filter{Limit: len(scopes) + 1}
				if got := storetest.QueryIDs(t, s, f, v); !testutil.SameSet(got, want) {
					t.Errorf("viewer %.8q: Query returns %d events, CanRead allows %d", v, len(got), len(want))
				}
				if n := storetest.Count(t, s, f, v); n != int64(len(want)) {
					t.Errorf("viewer %.8q: Count %d, CanRead allows %d", v, n, len(want))
				}
			}
		})
	}
}

// RL-3, RL-27a: scoped to what a viewer may read, a query is still driven
// by the index that fits its filter, and the scope is two index lookups
// per row examined: the channel by its primary key, the membership by
// (channel, pubkey). No table is scanned (the empty filter aside, which
// walks events_created newest first).
func TestScopedQueryPlans(t *testing.T) {
	fx := newSKFixture(t, 4)
	s := fx.store(t, 4, Options{})
	const (
		channelKey = "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"
		memberKey  = "SEARCH m USING PRIMARY KEY (channel=? AND pubkey=?)"
	)
	for _, c := range []struct {
		name  string
		f     nostr.Filter
		drive string
	}{
		{"ids", nostr.Filter{IDs: []string{fx.mine.ID}}, "SEARCH e USING INDEX events_id (id=?)"},
		{"#e", nostr.Filter{Tags: nostr.TagMap{"e": {fx.open.ID}}}, "SEARCH t USING PRIMARY KEY (name=? AND value=?)"},
		{"#h", nostr.Filter{Tags: nostr.TagMap{"h": {skChannel(1)}}}, "SEARCH e USING INDEX events_channel (channel=?)"},
		{"authors", nostr.Filter{Authors: []string{fx.member.PK}}, "SEARCH e USING INDEX events_pubkey (pubkey=?"},
		{"kinds", nostr.Filter{Kinds: []int{9}}, "SEARCH e USING INDEX events_kind (kind=?)"},
		{"empty", nostr.Filter{}, "SCAN e USING INDEX events_created"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := skStatement(t, s, c.f, buzz.Viewer(fx.member.PK))
			plan := explain(t, s, q.sql, q.args...)
			for _, want := range []string{c.drive, channelKey, memberKey} {
				if !strings.Contains(plan, want) {
					t.Errorf("plan of %v lacks %q:\n%s", c.f, want, plan)
				}
			}
			for _, line := range planLines(plan) {
				if strings.HasPrefix(line, "SCAN ") && !strings.HasPrefix(line, c.drive) {
					t.Errorf("plan of %v scans: %q\n%s", c.f, line, plan)
				}
			}
		})
	}
}

// RL-13, RL-27a: a read whose snapshot holds a change of the access state
// that this process's writer committed but has not published yet (as a
// read that begins between the two does) judges by that change, and does
// not read the whole state afresh for it: that would cost every such read
// the number of channels, at every change.
func TestReadBeforePublishNeedsNoReload(t *testing.T) {
	fx := newSKFixture(t, 100)
	s := fx.store(t, 100, Options{})
	before := s.Community()
	// The member, owner of private channel 1, adds the outsider.
	ttIngest(t, s, fx.member.Event(t, 9000, chT-400, "", ttH(skChannel(1)), nostr.Tag{"p", fx.outsider.PK}))
	// As if the writer had committed and not published yet.
	s.writer.community.Store(before)
	page, err := s.Window(context.Background(), buzz.WindowQuery{Channel: skChannel(1), Limit: 10, Viewer: buzz.Viewer(fx.outsider.PK)})
	if err != nil {
		t.Fatal(err)
	}
	if page.Unreadable || len(page.Rows) == 0 {
		t.Fatal("the read judged by the state before the committed change: the new member may not read")
	}
	if got := storetest.QueryIDs(t, s, nostr.Filter{IDs: []string{fx.mine.ID}}, buzz.Viewer(fx.outsider.PK)); len(got) != 1 {
		t.Fatal("Query does not serve the new member")
	}
	if s.Community() != before {
		t.Error("the read loaded and published the whole access state afresh")
	}
}
