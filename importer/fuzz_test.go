package importer

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// acceptAll stores nothing and says it stored everything: the fuzz target
// is about reading untrusted files, not about the store.
type acceptAll struct{}

func (acceptAll) ImportBatch(_ context.Context, evs []*nostr.Event) ([]error, error) {
	return make([]error, len(evs)), nil
}

// FuzzRun: an import file is untrusted input. Whatever it holds, Run does
// not panic, and every non-blank line is accounted for exactly once.
func FuzzRun(f *testing.F) {
	f.Add([]byte(`{"id":"00","pubkey":"00","created_at":1,"kind":1,"tags":[],"content":"","sig":"00"}` + "\n\nnot json\n{}"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte(`{"kind":1,"tags":[["e"]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, err := Run(context.Background(), bytes.NewReader(data), acceptAll{}, Options{Now: func() time.Time { return time.Unix(1_750_000_000, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Accepted+sum.Duplicate+sum.Replaced+sum.Bad() != sum.Lines {
			t.Fatalf("summary does not add up: %+v", sum)
		}
	})
}
