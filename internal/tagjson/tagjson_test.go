package tagjson

import (
	"strings"
	"testing"
)

// Issue 15: escapeIn finds a byte that needs an escape in a word exactly
// when the byte table does, wherever it is and whatever is beside it.
func FuzzEscapeIn(f *testing.F) {
	f.Add(uint64(0))
	f.Add(uint64(0x2020202020202020))
	f.Add(uint64(0x5c))
	f.Add(uint64(0x2200000000000000))
	f.Add(uint64(0x1f7f80ff5b5d2123))
	f.Fuzz(func(t *testing.T, w uint64) {
		want := false
		for i := range 8 {
			want = want || needsEscape[byte(w>>(8*i))]
		}
		if got := escapeIn(w); got != want {
			t.Fatalf("escapeIn(%#016x) = %v, want %v", w, got, want)
		}
		var b [8]byte
		for i := range b {
			b[i] = byte(w >> (8 * i))
		}
		if load64(string(b[:])) != w {
			t.Fatalf("load64 of %x is %#x", b, load64(string(b[:])))
		}
	})
}

// Every byte value, alone and at each place of a word among plain bytes.
func TestEscapeInEveryByte(t *testing.T) {
	for c := range 256 {
		for at := range 8 {
			w := uint64(0x6161616161616161)&^(0xff<<(8*at)) | uint64(c)<<(8*at)
			if escapeIn(w) != needsEscape[c] {
				t.Fatalf("byte %#x at %d: escapeIn = %v", c, at, escapeIn(w))
			}
		}
	}
}

// Plain says whether AppendString writes a string as it is: every byte
// value alone and inside a run of plain ones.
func TestPlain(t *testing.T) {
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "ab" + string([]byte{byte(c)}) + "cdefghijk"} {
			verbatim := string(AppendString(nil, s)) == `"`+s+`"`
			if Plain(s) != verbatim {
				t.Fatalf("Plain(%q) = %v, AppendString writes it as it is: %v", s, Plain(s), verbatim)
			}
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	plain := strings.Repeat("a reply with nothing to escape, ", 8)
	escaped := strings.Repeat("a \"quoted\"\nline\\ ", 16)
	for _, c := range []struct{ name, s string }{{"plain", plain}, {"escaped", escaped}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				buf = AppendString(buf[:0], c.s)
			}
		})
	}
}
