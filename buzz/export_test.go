package buzz

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// RL-25, RL-33: an export writes every event its pages read, one line
// each and nothing else, asks for each page after the last event of the
// one before, and stops at the first short page; a page that is full
// asks once more.
func TestWriteExportPages(t *testing.T) {
	for _, n := range []int{0, 1, ExportPageSize - 1, ExportPageSize, 2*ExportPageSize + 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			var afters []int64
			var out bytes.Buffer
			wrote, err := WriteExport(&out, func(after *ExportPosition) ([]ExportLine, error) {
				from := int64(0)
				if after != nil {
					from = after.CreatedAt + 1
					afters = append(afters, after.CreatedAt)
				}
				var page []ExportLine
				for i := from; i < int64(n) && len(page) < ExportPageSize; i++ {
					page = append(page, ExportLine{JSON: fmt.Appendf(nil, `{"n":%d}`, i), At: ExportPosition{CreatedAt: i}})
				}
				return page, nil
			})
			if err != nil || wrote != int64(n) {
				t.Fatalf("wrote %d, %v; want %d", wrote, err, n)
			}
			lines := strings.Split(out.String(), "\n")
			if len(lines) != n+1 || lines[n] != "" {
				t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
			}
			for i, l := range lines[:n] {
				if l != fmt.Sprintf(`{"n":%d}`, i) {
					t.Fatalf("line %d: %q", i, l)
				}
			}
			var want []int64
			for p := int64(ExportPageSize); p <= int64(n); p += ExportPageSize {
				want = append(want, p-1)
			}
			if !slices.Equal(afters, want) {
				t.Errorf("pages after %v, want %v", afters, want)
			}
		})
	}
}

// RL-33: a page that fails ends the export with its error and the count
// of what was written before.
func TestWriteExportPageError(t *testing.T) {
	broken := errors.New("read failed")
	calls := 0
	n, err := WriteExport(&bytes.Buffer{}, func(after *ExportPosition) ([]ExportLine, error) {
		calls++
		if calls == 2 {
			return nil, broken
		}
		return make([]ExportLine, ExportPageSize), nil
	})
	if !errors.Is(err, broken) || n != ExportPageSize {
		t.Fatalf("wrote %d, %v", n, err)
	}
}

// RL-25, RL-6, CW-18, RL-10: without WithDeleted an export keeps the
// deleted reactions and edits and every deleted lifecycle event; other
// deleted kinds it leaves to the deleted-with-replies rule.
func TestExportKeptDeletedKinds(t *testing.T) {
	kept := map[string]bool{}
	for _, k := range strings.Split(ExportKeptDeletedKinds(), ", ") {
		kept[k] = true
	}
	for k := range 50000 {
		want := k == KindReaction || k == KindEdit || IsLifecycleKind(k)
		if kept[strconv.Itoa(k)] != want {
			t.Errorf("kind %d kept: %v, want %v", k, kept[strconv.Itoa(k)], want)
		}
	}
}

// RL-6, RL-25: the deleted target of a 9005 goes out with it unless every
// deleted event goes out anyway, or the filter's kinds leave the 9005 out.
func TestKeepsDeletionTargets(t *testing.T) {
	for _, tc := range []struct {
		f    ExportFilter
		want bool
	}{
		{ExportFilter{}, true},
		{ExportFilter{WithDeleted: true}, false},
		{ExportFilter{Kinds: []int{9, KindGroupDelete}}, true},
		{ExportFilter{Kinds: []int{9, KindDeletion}}, false},
		{ExportFilter{Kinds: []int{KindGroupDelete}, WithDeleted: true}, false},
	} {
		if got := tc.f.KeepsDeletionTargets(); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
}
