package postgres

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/pgtest"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

const (
	pcA = "0f8e2d1c-6b5a-4e3d-9c2b-1a0f9e8d7c6b"
	pcB = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
	pcC = "2b3c4d5e-6f7a-4b2c-9d3e-4f5a6b7c8d9e"
)

// A window page served from one process's cache is the page the database
// gives, whichever process wrote since: after each write of a series by
// one store, a second store's pages, cached where their channel's version
// stands, equal those of a third store that caches nothing (issue 15).
// Writes to one channel leave the other channels' pages cached.
func TestPageCacheAcrossProcesses(t *testing.T) {
	url := pgtest.FreshDatabase(t)
	owner, m, x := testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)
	clock := func() time.Time { return time.Unix(procT+1000, 0) }
	open := func(cache int64) *Store {
		s, err := Open(context.Background(), Options{URL: url, Admins: []string{owner.PK}, PageCacheBytes: cache, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, cached, fresh := open(-1), open(0), open(-1)
	at := procT
	post := func(sg testutil.Signer, kind int, tags ...nostr.Tag) *nostr.Event {
		t.Helper()
		at++
		ev := sg.Event(t, kind, at, "", tags...)
		admit(t, writer, ev)
		return ev
	}
	h := func(ch string) nostr.Tag { return nostr.Tag{"h", ch} }
	e := func(id string) nostr.Tag { return nostr.Tag{"e", id} }

	var queries []buzz.WindowQuery
	for _, ch := range []string{pcA, pcB, pcC} {
		for _, v := range []buzz.Viewer{buzz.Viewer(owner.PK), buzz.Viewer(m.PK), buzz.Viewer(x.PK), buzz.Anonymous} {
			for _, projection := range []bool{false, true} {
				queries = append(queries, buzz.WindowQuery{Channel: ch, Limit: 10, Projection: projection,
					Summaries: true, Aux: true, Viewer: v})
			}
		}
	}
	check := func(step string) {
		t.Helper()
		for _, q := range queries {
			for range 2 { // the second read of a page is the cache's
				got, err := cached.Window(context.Background(), q)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				want, err := fresh.Window(context.Background(), q)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: channel %s as %.8s (projection %v): the cached page differs from the database's:\n%+v\n%+v",
						step, q.Channel, q.Viewer, q.Projection, got, want)
				}
			}
		}
	}
	hits := func() uint64 {
		st, err := cached.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st.PagesFromCache
	}

	post(owner, 9007, h(pcA))
	post(owner, 9007, h(pcB), nostr.Tag{"private"})
	post(owner, 9007, h(pcC))
	post(owner, 9000, h(pcB), nostr.Tag{"p", m.PK})
	check("channels created")
	rowA := post(m, 9, h(pcA))
	rowB := post(m, 9, h(pcB))
	post(x, 9, h(pcC))
	check("rows")
	foreign := post(m, 7, h(pcB), e(rowA.ID))
	check("a reaction of private B to a row of A")
	bare := post(x, 7, e(rowA.ID))
	check("a reaction without a channel")
	reply := post(x, 9, h(pcA), nostr.Tag{"e", rowA.ID, "", "reply"})
	check("a reply: A's summaries")
	post(x, 5, e(bare.ID))
	check("the bare reaction deleted")
	post(m, 40003, h(pcB), e(rowB.ID))
	check("an edit in B")
	post(m, 5, e(foreign.ID))
	check("the foreign reaction deleted")
	post(m, 5, e(foreign.ID), nostr.Tag{"k", "7"})
	check("the foreign reaction deleted again: a deletion of B on A's page by hop 2 alone")
	post(x, 5, e(reply.ID))
	check("the reply deleted: A's summaries again")
	post(x, 9, h(pcC))
	before := hits()
	for _, q := range queries {
		if q.Channel != pcA {
			continue
		}
		if _, err := cached.Window(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if hits() == before {
		t.Fatal("a row of C made A's pages stale")
	}
	check("a row of C")
	post(owner, 9002, h(pcA), nostr.Tag{"private"})
	check("A made private")
	post(owner, 9001, h(pcB), nostr.Tag{"p", m.PK})
	check("m removed from B")
}
