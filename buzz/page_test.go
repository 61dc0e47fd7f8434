package buzz

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fakePages is a PageReader over rows held in memory: window rows, a
// thread root and its replies, and the aux events of each hop by the id
// they name.
type fakePages struct {
	rows    []fakeRow
	root    *ThreadRoot
	replies []RawEvent
	aux     map[int]map[string][]AuxRow
	// endless makes every aux page full: a hop that never drains.
	endless      bool
	replyReads   int
	auxPages     map[int]int
	cappedHop    int
	cappedPages  int
	threadRootOf []byte
}

type fakeRow struct {
	ev       RawEvent
	id       []byte
	unusable bool // stored, but cannot be rebuilt (CW-17)
	summary  *Summary
}

func (f *fakePages) WindowRows(_ int64, _ WindowQuery, rows *WindowRows) error {
	for _, r := range f.rows {
		if !rows.Row(r.ev.CreatedAt, r.id, 0, false) {
			return nil
		}
		if r.unusable {
			continue
		}
		if err := rows.Add(r.ev); err != nil {
			return err
		}
		if r.summary != nil {
			rows.Summary(*r.summary)
		}
	}
	return nil
}

func (f *fakePages) ThreadRoot(id []byte) (ThreadRoot, bool, error) {
	f.threadRootOf = id
	if f.root == nil {
		return ThreadRoot{}, false, nil
	}
	return *f.root, true, nil
}

func (f *fakePages) ThreadReplies(_ ThreadRoot, _ ThreadQuery, add func(RawEvent) error) error {
	f.replyReads++
	for _, ev := range f.replies {
		if err := add(ev); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakePages) AuxPage(hop int, names []string, page int, fn func(AuxRow) error) (int, error) {
	if f.auxPages == nil {
		f.auxPages = map[int]int{}
	}
	f.auxPages[hop]++
	if f.endless {
		return AuxPageSize, nil
	}
	n := 0
	for _, name := range names {
		for _, row := range f.aux[hop][name] {
			n++
			if err := fn(row); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (f *fakePages) AuxCapped(hop, pages int) { f.cappedHop, f.cappedPages = hop, pages }

// hexID is a 64-hex id made of c.
func hexID(c string) string { return strings.Repeat(c, 64) }

func rawOf(id string, at int64) RawEvent {
	return RawEvent{ID: id, CreatedAt: at, JSON: []byte(`{"id":"` + id + `"}`)}
}

func rowOf(id string, at int64) fakeRow {
	raw, _ := hex.DecodeString(id)
	return fakeRow{ev: rawOf(id, at), id: raw}
}

// RL-27a: a page is refused as soon as what it read passes its bound.
func TestPageBound(t *testing.T) {
	if NewPageBound(0) != nil {
		t.Fatal("a bound of 0 is none")
	}
	var none *PageBound
	if err := none.Take(1 << 30); err != nil {
		t.Fatalf("no bound refused: %v", err)
	}
	b := NewPageBound(10)
	if err := b.Take(10); err != nil {
		t.Fatalf("10 bytes of 10: %v", err)
	}
	if err := b.Take(1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("11 bytes of 10: %v, want ErrTooLarge", err)
	}
}

// CW-16, CW-17, CW-19: a page holds at most its limit; the row past it
// says more follow, and the next cursor is the last row counted, even one
// that could not be rebuilt and was skipped.
func TestReadWindowPaging(t *testing.T) {
	ch := openChannel()
	c := NewCommunity(DefaultPolicy(), ch)
	sm := Summary{ID: hexID("a")}
	r := &fakePages{rows: []fakeRow{rowOf(hexID("a"), 30), rowOf(hexID("b"), 20), rowOf(hexID("c"), 10)}}
	r.rows[0].summary = &sm
	r.rows[1].unusable = true
	q := WindowQuery{Channel: ch.H, Limit: 2, Viewer: Viewer(pkMember)}
	scope, got, ok := c.WindowScope(q)
	if !ok || got != ch {
		t.Fatal("a member does not read its open channel")
	}
	page, _, err := c.ReadWindow(context.Background(), r, q, scope, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != 1 || page.Rows[0].ID != hexID("a") || len(page.Summaries) != 1 {
		t.Fatalf("rows %v summaries %v, want the first row and its summary", page.Rows, page.Summaries)
	}
	if !page.HasMore || page.Next == nil || page.Next.CreatedAt != 20 || page.Next.ID != hexID("b") {
		t.Fatalf("HasMore %v Next %+v, want more after the skipped row b", page.HasMore, page.Next)
	}

	r.rows = r.rows[:2]
	if page, _, err = c.ReadWindow(context.Background(), r, q, scope, ch, nil); err != nil || page.HasMore || page.Next != nil {
		t.Fatalf("a page of exactly its limit: HasMore %v Next %+v (%v)", page.HasMore, page.Next, err)
	}
	q.MaxBytes = 10
	if _, _, err := c.ReadWindow(context.Background(), r, q, scope, ch, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("rows past MaxBytes: %v, want ErrTooLarge", err)
	}
}

// CW-3: the page's scope is judged on the channel of the snapshot.
func TestWindowScopeUnreadable(t *testing.T) {
	c := NewCommunity(DefaultPolicy(), privateChannel())
	if _, _, ok := c.WindowScope(WindowQuery{Channel: chanID, Viewer: Viewer(pkOutsider)}); ok {
		t.Fatal("an outsider reads a private channel")
	}
	if _, _, ok := c.WindowScope(WindowQuery{Channel: chanID, Viewer: Viewer(pkMember)}); !ok {
		t.Fatal("a member does not read its private channel")
	}
}

// CW-18: hop 1 serves the aux events naming the rows that the reader may
// see, once each; a deleted hop-1 event is not served but the deletion
// naming it is (hop 2); on a private channel's rows an aux event stored
// without a channel is not served, on an open channel's it is.
func TestAuxClosure(t *testing.T) {
	row := hexID("a")
	reaction := AuxRow{Ref: 1, ID: []byte{1}, Live: true, Event: rawOf(hexID("1"), 1), Scope: 1, Scoped: true}
	deletedEdit := AuxRow{Ref: 2, ID: []byte{0xee}, Named: true, Scope: 1, Scoped: true}
	stray := AuxRow{Ref: 3, ID: []byte{3}, Live: true, Event: rawOf(hexID("3"), 3)}
	elsewhere := AuxRow{Ref: 4, ID: []byte{4}, Live: true, Event: rawOf(hexID("4"), 4), Scope: 2, Scoped: true, Expiring: true, Expires: 7}
	deletion := AuxRow{Ref: 5, ID: []byte{5}, Live: true, Event: rawOf(hexID("5"), 5), Scope: 1, Scoped: true, Expiring: true, Expires: 9}
	aux := map[int]map[string][]AuxRow{
		AuxHopTargets:   {row: {reaction, deletedEdit, stray, elsewhere, reaction}},
		AuxHopDeletions: {"ee": {deletion}},
	}
	other := &Channel{Seq: 2, H: chanIDOther, Created: true, Private: true, Members: map[string]Role{}}
	for _, tc := range []struct {
		name string
		ch   *Channel
		want []int64
	}{
		{"open rows", openChannel(), []int64{1, 3, 5}},
		{"private rows", privateChannel(), []int64{1, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCommunity(DefaultPolicy(), tc.ch, other)
			r := &fakePages{rows: []fakeRow{rowOf(row, 1)}, aux: aux}
			q := WindowQuery{Channel: tc.ch.H, Limit: 10, Aux: true, Viewer: Viewer(pkMember)}
			scope, ch, _ := c.WindowScope(q)
			var judged []int64
			page, expires, err := c.ReadWindow(context.Background(), r, q, scope, ch, func(s int64) { judged = append(judged, s) })
			if err != nil {
				t.Fatal(err)
			}
			var served []int64
			for _, ev := range page.Aux {
				served = append(served, map[string]int64{hexID("1"): 1, hexID("3"): 3, hexID("4"): 4, hexID("5"): 5}[ev.ID])
			}
			if !slices.Equal(served, tc.want) {
				t.Fatalf("served %v, want %v", served, tc.want)
			}
			if expires != 9 {
				t.Fatalf("expires %d, want 9: the unread channel's event does not count", expires)
			}
			if !tc.ch.Private && !slices.Contains(judged, 2) {
				t.Fatalf("judged %v: the other channel's scope is not reported", judged)
			}
		})
	}
}

// CW-18: a hop that never drains is read up to its page cap, and said so.
func TestAuxClosureCap(t *testing.T) {
	c := NewCommunity(DefaultPolicy(), openChannel())
	r := &fakePages{rows: []fakeRow{rowOf(hexID("a"), 1)}, endless: true}
	q := WindowQuery{Channel: chanID, Limit: 10, Aux: true}
	scope, ch, _ := c.WindowScope(q)
	if _, _, err := c.ReadWindow(context.Background(), r, q, scope, ch, nil); err != nil {
		t.Fatal(err)
	}
	if r.auxPages[AuxHopTargets] != AuxMaxPages || r.cappedHop != AuxHopTargets || r.cappedPages != AuxMaxPages {
		t.Fatalf("read %d pages, capped hop %d at %d; want %d pages of hop 1", r.auxPages[AuxHopTargets], r.cappedHop, r.cappedPages, AuxMaxPages)
	}
}

// RL-20, CW-10: a thread page reads below a stored root its scope reads; a
// channel-less root has no replies, but aux it may have.
func TestReadThread(t *testing.T) {
	c := NewCommunity(DefaultPolicy(), privateChannel())
	root := hexID("a")
	reply := rawOf(hexID("b"), 2)
	aux := map[int]map[string][]AuxRow{AuxHopTargets: {
		root:     {{Ref: 7, Live: true, Event: rawOf(hexID("7"), 7)}},
		reply.ID: {{Ref: 8, Live: true, Event: rawOf(hexID("8"), 8), Scope: 1, Scoped: true}},
	}}
	q := ThreadQuery{Root: strings.ToUpper(root), DepthLimit: 1, Limit: 10, Aux: true, Viewer: Viewer(pkMember)}

	r := &fakePages{replies: []RawEvent{reply}, aux: aux}
	if page, err := c.ReadThread(context.Background(), r, q); err != nil || len(page.Replies)+len(page.Aux) != 0 {
		t.Fatalf("a root not stored: %+v (%v)", page, err)
	}
	if len(r.threadRootOf) != 32 || r.threadRootOf[0] != 0xaa {
		t.Fatalf("root looked up as %x", r.threadRootOf)
	}

	r.root = &ThreadRoot{Ref: 1, Depth: 0, HasDepth: true, Scope: 1, Scoped: true}
	page, err := c.ReadThread(context.Background(), r, q)
	if err != nil || len(page.Replies) != 1 || len(page.Aux) != 1 || page.Aux[0].ID != hexID("8") {
		t.Fatalf("a private thread's member: replies %v aux %v (%v); want the reply and its reaction only", page.Replies, page.Aux, err)
	}

	q.Viewer = Viewer(pkOutsider)
	if page, err := c.ReadThread(context.Background(), r, q); err != nil || len(page.Replies)+len(page.Aux) != 0 {
		t.Fatalf("an outsider reads a private thread: %+v (%v)", page, err)
	}

	r.root, r.replyReads = &ThreadRoot{Ref: 1}, 0
	page, err = c.ReadThread(context.Background(), r, q)
	if err != nil || r.replyReads != 0 || len(page.Aux) != 1 || page.Aux[0].ID != hexID("7") {
		t.Fatalf("a channel-less root: %d reply reads, aux %v (%v); want none and its own aux", r.replyReads, page.Aux, err)
	}
}

// CW-19, CW-21: summaries come in the order asked, ids not stored left out.
func TestSummariesIn(t *testing.T) {
	a, b := hexID("a"), hexID("b")
	byID := map[string]Summary{a: SummaryOf(a, 1, 2, 5, true, nil, 6), b: SummaryOf(b, 0, 0, 0, false, nil, 0)}
	got := SummariesIn([]string{strings.ToUpper(b), hexID("c"), a}, byID)
	if len(got) != 2 || got[0].ID != b || got[1].ID != a {
		t.Fatalf("got %+v, want b then a", got)
	}
	if got[1].LastReplyAt == nil || *got[1].LastReplyAt != 5 || got[0].LastReplyAt != nil || got[1].UpdatedAt != 6 {
		t.Fatalf("counters not kept: %+v", got)
	}
}

// RL-35: a feed read's streams are padded to a power of two with a stream
// no event is in.
func TestFeedArmsOf(t *testing.T) {
	for _, tc := range []struct {
		streams []int64
		want    []int64
	}{
		{nil, []int64{FeedNoStream}},
		{[]int64{0}, []int64{0}},
		{[]int64{0, 4, 9}, []int64{0, 4, 9, FeedNoStream}},
	} {
		if got := FeedArmsOf(FeedRange{Streams: tc.streams}); !slices.Equal(got, tc.want) {
			t.Errorf("FeedArmsOf(%v) = %v, want %v", tc.streams, got, tc.want)
		}
	}
	if sizes := FeedStatements(func(n int) string { return "" }); len(sizes) != 5 {
		t.Fatalf("%d statement sizes, want 1, 2, 4, 8, 16", len(sizes))
	}
}
