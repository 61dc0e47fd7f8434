package storetest

// Helpers of the suite: opening a store, ingesting, reading back, the
// channels of the tests and what they check of a channel's state. The
// exported ones serve a store package's own tests too.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// qtT0 is the created_at of the first event of a fixture. The store does not
// check dates (buzz.CheckSubmission does), so fixed dates keep tests exact.
const qtT0 int64 = 1_700_000_000

// qtOpen opens a fresh store; clock may be nil (time.Now).
func qtOpen(t testing.TB, open Opener, clock *testutil.Clock) Store {
	t.Helper()
	var cfg Config
	if clock != nil {
		cfg.Now = clock.Now
	}
	return open(t, cfg)
}

// qtOpenWith opens a fresh store as cfg says.
func qtOpenWith(t testing.TB, open Opener, cfg Config) Store {
	t.Helper()
	return open(t, cfg)
}

// ingest stores ev, whose id and signature are valid, as Admit does,
// with only its error.
func ingest(s buzz.Store, ctx context.Context, ev *nostr.Event) error {
	_, err := s.Admit(ctx, ev)
	return err
}

// qtIngest stores every event, failing the test on any error.
func qtIngest(t testing.TB, s Store, evs ...*nostr.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := ingest(s, context.Background(), ev); err != nil {
			t.Fatalf("ingest %s (kind %d, %q): %v", ev.ID, ev.Kind, ev.Content, err)
		}
	}
}

// IngestConcurrently stores evs from several goroutines, so that a store
// that batches writes batches them (a fast way to load many events), and
// fails the test on any error.
func IngestConcurrently(t testing.TB, s buzz.Store, evs []*nostr.Event) {
	t.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(evs); i += workers {
				if err := ingest(s, context.Background(), evs[i]); err != nil {
					errs <- fmt.Errorf("ingest %s: %w", evs[i].ID, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Ordered returns the ids of evs in the order the contract asks for,
// created_at DESC then id ASC, computed independently of the store.
func Ordered(evs []*nostr.Event) []string {
	sorted := slices.Clone(evs)
	slices.SortFunc(sorted, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			if a.CreatedAt > b.CreatedAt {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return testutil.IDs(sorted...)
}

// QueryIDs runs Query as v and returns the ids in the order returned,
// failing the test on an error.
func QueryIDs(t testing.TB, s buzz.Store, f nostr.Filter, v buzz.Viewer) []string {
	t.Helper()
	evs, err := s.Query(context.Background(), f, v)
	if err != nil {
		t.Fatalf("query %v as %q: %v", f, v, err)
	}
	return testutil.IDs(evs...)
}

// Count runs Count as v, failing the test on an error.
func Count(t testing.TB, s buzz.Store, f nostr.Filter, v buzz.Viewer) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), f, v)
	if err != nil {
		t.Fatalf("count %v as %q: %v", f, v, err)
	}
	return n
}

func qtTS(v int64) *nostr.Timestamp { ts := nostr.Timestamp(v); return &ts }

// qtMixedCase upper-cases every other character of a hex string.
func qtMixedCase(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i += 2 {
		if 'a' <= b[i] && b[i] <= 'f' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// Two channels, as NIP-29 group ids (UUIDs).
const (
	ttChan  = "0b5d2f0e-8a4b-4f43-9a4e-6a1c4b3e2d11"
	ttChan2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
)

// ttBase is the created_at of the first event of a test; the store does not
// check dates (that is buzz.CheckSubmission), so a fixed past date keeps the
// tests deterministic.
const ttBase int64 = 1_700_000_000

// ttOpen opens a fresh store with the given relay admins.
func ttOpen(t testing.TB, open Opener, admins ...string) Store {
	t.Helper()
	return open(t, Config{Admins: admins})
}

func ttH(ch string) nostr.Tag        { return nostr.Tag{"h", ch} }
func ttReplyTag(id string) nostr.Tag { return nostr.Tag{"e", id, "", "reply"} }
func ttRootTag(id string) nostr.Tag  { return nostr.Tag{"e", id, "", "root"} }
func ttE(id string) nostr.Tag        { return nostr.Tag{"e", id} }

// ttIngest stores ev and fails the test on any error.
func ttIngest(t testing.TB, s Store, ev *nostr.Event) *nostr.Event {
	t.Helper()
	if err := ingest(s, context.Background(), ev); err != nil {
		t.Fatalf("ingest kind %d %s (tags %v): %v", ev.Kind, ev.ID, ev.Tags, err)
	}
	return ev
}

// Reject ingests ev and requires the exact rejection want: same wire text
// (err.Error()) and errors.Is the buzz sentinel.
func Reject(t testing.TB, s buzz.Store, ev *nostr.Event, want error) {
	t.Helper()
	err := ingest(s, context.Background(), ev)
	if err == nil {
		t.Fatalf("ingest kind %d (tags %v) accepted, want %q", ev.Kind, ev.Tags, want.Error())
	}
	if err.Error() != want.Error() {
		t.Fatalf("ingest kind %d (tags %v): error %q, want %q", ev.Kind, ev.Tags, err.Error(), want.Error())
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q is not the sentinel %q", err, want)
	}
	if _, ok := buzz.AsRejection(err); !ok {
		t.Fatalf("error %q is not a *buzz.Rejection", err)
	}
}

// chT is the date of the events of the channel and scope tests.
const chT int64 = 1_700_000_000

// Sees reports whether v reads event id, by Query and by Count, which
// must agree.
func Sees(t testing.TB, s buzz.Store, v buzz.Viewer, id string) bool {
	t.Helper()
	f := nostr.Filter{IDs: []string{id}}
	q := len(QueryIDs(t, s, f, v))
	n := Count(t, s, f, v)
	if int64(q) != n {
		t.Fatalf("event %s as %q: Query returns %d, Count %d", id[:8], v, q, n)
	}
	return q == 1
}

// ChannelState renders the state of one channel, members sorted, Seq left out.
func ChannelState(ch *buzz.Channel) string {
	if ch == nil {
		return "<nil>"
	}
	members := make([]string, 0, len(ch.Members))
	for pk, role := range ch.Members {
		members = append(members, pk[:12]+":"+role.String())
	}
	slices.Sort(members)
	return fmt.Sprintf("{created:%v name:%q picture:%q about:%q private:%v parent:%d deleted:%v members:%v invites:%d}",
		ch.Created, ch.Name, ch.Picture, ch.About, ch.Private, ch.Parent, ch.Deleted, members, ch.Invites)
}

// CommunityState renders a whole community: version, setting, every channel by h
// with its number.
func CommunityState(c *buzz.Community) string {
	chs := c.Channels()
	slices.SortFunc(chs, func(a, b *buzz.Channel) int { return strings.Compare(a.H, b.H) })
	var b strings.Builder
	fmt.Fprintf(&b, "version=%d replies=%v\n", c.Version, c.ThreadRepliesInChannel)
	for _, ch := range chs {
		fmt.Fprintf(&b, "%s #%d %s\n", ch.H, ch.Seq, ChannelState(ch))
	}
	return b.String()
}

// chReject requires ev to be refused with exactly want, and to leave
// everything as it was: the store's whole state (Dump), the published
// community, and no trace of the event.
func chReject(t testing.TB, s Store, ev *nostr.Event, want error) {
	t.Helper()
	rows, state := ttSnapshot(t, s), CommunityState(s.Community())
	Reject(t, s, ev, want)
	SameSnapshot(t, "a rejected event", rows, ttSnapshot(t, s))
	if got := CommunityState(s.Community()); got != state {
		t.Fatalf("community changed by a rejected event:\n before %s\n after  %s", state, got)
	}
	if holds(t, s, ev.ID) {
		t.Fatal("rejected event stored")
	}
}

// held counts the events matching f that s keeps, deleted ones too.
func held(t testing.TB, s Store, f nostr.Filter) int {
	t.Helper()
	n, err := s.Held(context.Background(), f)
	if err != nil {
		t.Fatalf("held %v: %v", f, err)
	}
	return n
}

// holds reports whether s keeps event id in any form.
func holds(t testing.TB, s Store, id string) bool {
	t.Helper()
	return held(t, s, nostr.Filter{IDs: []string{id}}) > 0
}

// chGroupStateRows counts every stored event (deleted or not) of the group
// state kinds whose d tag is h.
func chGroupStateRows(t testing.TB, s Store, h string) int {
	t.Helper()
	return held(t, s, nostr.Filter{Kinds: []int{39000, 39001, 39002, 39003}, Tags: nostr.TagMap{"d": {h}}})
}
