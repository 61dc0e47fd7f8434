package nipcw

import "testing"

// CW-20: the relay serves a bounds overlay again only for bounds that say
// the same (relay/overlays.go); every field tells two apart.
func TestBoundsEqual(t *testing.T) {
	next := func(at int64, id string) *Cursor { return &Cursor{CreatedAt: at, ID: id} }
	base := Bounds{HasMore: true, NextCursor: next(5, "aa")}
	for _, tc := range []struct {
		name  string
		other Bounds
		equal bool
	}{
		{"same, another pointer", Bounds{HasMore: true, NextCursor: next(5, "aa")}, true},
		{"has_more", Bounds{NextCursor: next(5, "aa")}, false},
		{"projection", Bounds{HasMore: true, NextCursor: next(5, "aa"), ThreadRepliesInChannel: true}, false},
		{"no next cursor", Bounds{HasMore: true}, false},
		{"next cursor's date", Bounds{HasMore: true, NextCursor: next(6, "aa")}, false},
		{"next cursor's id", Bounds{HasMore: true, NextCursor: next(5, "ab")}, false},
	} {
		if got := base.Equal(tc.other); got != tc.equal || tc.other.Equal(base) != tc.equal {
			t.Errorf("%s: Equal %v, want %v", tc.name, got, tc.equal)
		}
	}
	if !(Bounds{}).Equal(Bounds{}) {
		t.Error("empty bounds differ")
	}
}
