package gen

import (
	"testing"
)

// The same seed gives the same community, signatures included; every event
// verifies, and every event a tag names comes before it.
func TestGenerateDeterministic(t *testing.T) {
	o := Options{Channels: 2, TopLevel: 30}
	a, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Events) != len(b.Events) || len(a.Events) < 60 {
		t.Fatalf("%d and %d events", len(a.Events), len(b.Events))
	}
	seen := map[string]bool{}
	for i, ev := range a.Events {
		if ev.ID != b.Events[i].ID || ev.Sig != b.Events[i].Sig {
			t.Fatalf("event %d differs between runs", i)
		}
		if ok, err := ev.CheckSignature(); !ok || err != nil {
			t.Fatalf("event %d does not verify: %v", i, err)
		}
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "e" && !seen[tag[1]] {
				t.Fatalf("event %d names %s before it exists", i, tag[1])
			}
		}
		seen[ev.ID] = true
	}
	if c, _ := Generate(Options{Seed: 2, Channels: 2, TopLevel: 30}); c.Events[0].ID == a.Events[0].ID {
		t.Error("another seed gives the same community")
	}
}

// Every event is distinct: a relay would refuse a second copy.
func TestGenerateDistinct(t *testing.T) {
	c, err := Generate(Options{Channels: 3, TopLevel: 200, Authors: 5, Reactions: 4})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, ev := range c.Events {
		if seen[ev.ID] {
			t.Fatalf("event %d (kind %d) repeats an earlier one", i, ev.Kind)
		}
		seen[ev.ID] = true
	}
}

// Split keeps every event once, lifecycle events apart, each part in order.
func TestSplit(t *testing.T) {
	c, err := Generate(Options{Channels: 2, TopLevel: 5})
	if err != nil {
		t.Fatal(err)
	}
	lifecycle, rest := c.Split()
	if len(lifecycle) != 3 || len(lifecycle)+len(rest) != len(c.Events) {
		t.Fatalf("%d lifecycle, %d other events of %d; want 3 (2 creations, 1 member list)", len(lifecycle), len(rest), len(c.Events))
	}
	for i, ev := range rest {
		if ev.Kind >= 9000 && ev.Kind <= 9022 {
			t.Errorf("rest[%d] is kind %d", i, ev.Kind)
		}
	}
	if rest[0] != c.Events[3] || rest[len(rest)-1] != c.Events[len(c.Events)-1] {
		t.Error("the rest is not in the community's order")
	}
}
