package buzz

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// lookupOf finds channels in a fixed map, as a store's snapshot would.
func lookupOf(seqs map[string]int64) func(string) (int64, bool, error) {
	return func(h string) (int64, bool, error) {
		seq, ok := seqs[h]
		return seq, ok, nil
	}
}

// NIP-01, RL-27: filters that match nothing are answered without a
// statement: empty lists, a tag that is not one letter, a search, ids or
// authors none of which is a key, channels none of which exists.
func TestPlanFilterNothing(t *testing.T) {
	lookup := lookupOf(map[string]int64{"x": 1})
	for name, f := range map[string]nostr.Filter{
		"empty ids":        {IDs: []string{}},
		"empty authors":    {Authors: []string{}},
		"empty kinds":      {Kinds: []int{}},
		"empty tag":        {Tags: nostr.TagMap{"e": {}}},
		"long tag name":    {Tags: nostr.TagMap{"emoji": {"x"}}},
		"search":           {Search: "x"},
		"no id is a key":   {IDs: []string{"abc"}},
		"no author a key":  {Authors: []string{"abc"}},
		"no such channel":  {Tags: nostr.TagMap{"h": {"y"}}},
		"channel and none": {Tags: nostr.TagMap{"h": {"y"}, "p": {"z"}}},
	} {
		if _, ok, err := PlanFilter(f, nil, lookup); ok || err != nil {
			t.Errorf("%s: planned (%v), want nothing", name, err)
		}
	}
	if !MatchesNothing(nostr.Filter{Search: "x"}) || MatchesNothing(nostr.Filter{Tags: nostr.TagMap{"e": nil}}) {
		t.Error("a search matches something, or a nil tag list constrains")
	}
}

// RL-19, RL-27, NIP-01: a plan keeps the keys, the channels each once, the
// tags other than the driving one in name order, and the default limit.
func TestPlanFilter(t *testing.T) {
	id := strings.Repeat("A", 64)
	until := nostr.Timestamp(50)
	f := nostr.Filter{
		IDs:   []string{id, "nope"},
		Kinds: []int{9},
		Until: &until,
		Tags:  nostr.TagMap{"p": {"1", "2"}, "h": {"x", "y", "x", "z"}, "e": {"3"}, "t": nil},
	}
	p, ok, err := PlanFilter(f, []byte{9}, lookupOf(map[string]int64{"x": 1, "y": 2}))
	if err != nil || !ok {
		t.Fatalf("not planned: %v", err)
	}
	if len(p.IDs) != 1 || len(p.IDs[0]) != 32 || p.Until == nil || *p.Until != 50 || p.Since != nil || string(p.Before) != "\x09" {
		t.Fatalf("keys, dates or cursor lost: %+v", p)
	}
	if p.Driven {
		t.Fatal("ids make a driving tag moot")
	}
	var names []string
	for _, tf := range p.Tags {
		names = append(names, tf.Name)
	}
	if !slices.Equal(names, []string{"e", "h", "p"}) || !slices.Equal(p.Tags[1].Channels, []int64{1, 2}) {
		t.Fatalf("tags %+v, want e, h (channels 1, 2), p", p.Tags)
	}
	if p.Limit != DefaultLimit {
		t.Fatalf("limit %d, want %d", p.Limit, DefaultLimit)
	}

	f = nostr.Filter{Tags: nostr.TagMap{"e": {"3"}, "h": {"x"}}, Limit: 5}
	if p, _, _ = PlanFilter(f, nil, lookupOf(map[string]int64{"x": 1})); !p.Driven || p.Drive != [2]string{"e", "3"} || len(p.Tags) != 1 || p.Tags[0].Name != "h" || p.Limit != 5 {
		t.Fatalf("one value of one tag drives: %+v", p)
	}

	failed := errors.New("down")
	if _, _, err := PlanFilter(nostr.Filter{Tags: nostr.TagMap{"h": {"x"}}}, nil, func(string) (int64, bool, error) { return 0, false, failed }); !errors.Is(err, failed) {
		t.Fatalf("a failed lookup: %v", err)
	}
}

// RL-19: before_id needs a 64-hex id and until.
func TestQueryCursor(t *testing.T) {
	until := nostr.Timestamp(5)
	id := strings.Repeat("b", 64)
	if before, ok, err := QueryCursor(nostr.Filter{Until: &until}, id); err != nil || !ok || len(before) != 32 {
		t.Fatalf("a sound cursor: %x %v %v", before, ok, err)
	}
	for _, f := range []nostr.Filter{{}, {Until: &until}} {
		bad := "nope"
		if f.Until == nil {
			bad = id
		}
		if _, _, err := QueryCursor(f, bad); err == nil {
			t.Errorf("cursor %q with until %v accepted", bad, f.Until)
		}
	}
	if _, ok, err := QueryCursor(nostr.Filter{Kinds: []int{}}, "nope"); ok || err != nil {
		t.Fatalf("a filter matching nothing: ok %v err %v", ok, err)
	}
}

// CW-17: a stored event is served as the signed JSON it was; columns that
// cannot make one are refused.
func TestNewRawEvent(t *testing.T) {
	ev := nostr.Event{Kind: 9, CreatedAt: 7, Content: "hi \"there\"", Tags: nostr.Tags{{"h", "x"}}}
	sk := nostr.GeneratePrivateKey()
	if err := ev.Sign(sk); err != nil {
		t.Fatal(err)
	}
	id, pubkey, sig := mustHex(t, ev.ID), mustHex(t, ev.PubKey), mustHex(t, ev.Sig)
	raw, err := NewRawEvent(id, pubkey, sig, 7, 9, `[["h","x"]]`, ev.Content)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := Decode([]RawEvent{raw})
	if err != nil || raw.ID != ev.ID || !evs[0].CheckID() || evs[0].Content != ev.Content {
		t.Fatalf("%s does not decode to the event (%v)", raw.JSON, err)
	}
	if _, err := NewRawEvent(id[:31], pubkey, sig, 7, 9, `[]`, ""); err == nil {
		t.Fatal("a short id accepted")
	}
	if _, err := NewRawEvent(id, pubkey, sig, 7, 9, `[["h"`, ""); err == nil {
		t.Fatal("malformed tags accepted")
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// CW-2: a filter's `#h` names channels as an event's h tag does, so that
// the channel a subscription names is the channel of the events it hears
// (live matching, stored queries): a UUID in any spelling is its canonical
// form, a group id is verbatim (letter case counts), a value that is no
// channel id names none, and an event whose h tags name no one channel is
// in none.
func TestFilterChannels(t *testing.T) {
	const uuid = "3f1c2f6e-1d7a-4c3e-9a59-4c2b1a0e7b11"
	upper := strings.ToUpper(uuid)
	got := FilterChannels([]string{upper, "{" + uuid + "}", "urn:uuid:" + uuid,
		strings.ReplaceAll(uuid, "-", ""), uuid, "Ops", "ops", "not a channel", ""})
	if want := []string{uuid, "Ops", "ops"}; !slices.Equal(got, want) {
		t.Fatalf("FilterChannels = %q, want %q", got, want)
	}
	for _, c := range []struct {
		tags nostr.Tags
		want string
	}{
		{nostr.Tags{{"h", upper}}, uuid},
		{nostr.Tags{{"h", uuid}, {"h", upper}}, uuid},
		{nostr.Tags{{"h", "Ops"}}, "Ops"},
		{nostr.Tags{{"h", "Ops"}, {"h", "ops"}}, ""},
		{nostr.Tags{{"h", "not a channel"}}, ""},
		{nostr.Tags{{"e", uuid}}, ""},
	} {
		if got := EventChannel(&nostr.Event{Tags: c.tags}); got != c.want {
			t.Errorf("EventChannel(%v) = %q, want %q", c.tags, got, c.want)
		}
	}
}
