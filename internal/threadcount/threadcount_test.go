package threadcount

import (
	"bytes"
	"encoding/hex"
	"slices"
	"testing"
)

// hexKeysOneByOne is HexKeys as it was: each key of Decode encoded alone.
func hexKeysOneByOne(b []byte) []string {
	keys := []string{}
	for _, p := range Decode(b) {
		keys = append(keys, hex.EncodeToString(p.PubKey))
	}
	return keys
}

// CW-19: a summary's participants are the packed pubkeys in hex, in their
// stored order; a blob with no participant is an empty list, not null.
func TestHexKeys(t *testing.T) {
	var ps []Participant
	for i := range Max {
		ps = append(ps, Participant{PubKey: bytes.Repeat([]byte{byte(0xa0 + i)}, 32), At: int64(1000 - i)})
	}
	for name, blob := range map[string][]byte{
		"none":             nil,
		"one":              Encode(ps[:1]),
		"all":              Encode(ps),
		"a part left over": append(Encode(ps[:3]), 1, 2, 3),
	} {
		t.Run(name, func(t *testing.T) {
			got, want := HexKeys(blob), hexKeysOneByOne(blob)
			if got == nil || !slices.Equal(got, want) {
				t.Fatalf("HexKeys = %q, want %q", got, want)
			}
		})
	}
}

func FuzzHexKeys(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 2*Size+7))
	f.Fuzz(func(t *testing.T, blob []byte) {
		if got, want := HexKeys(blob), hexKeysOneByOne(blob); !slices.Equal(got, want) {
			t.Fatalf("HexKeys = %q, want %q", got, want)
		}
	})
}
