package buzz

import (
	"errors"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// RL-4 (issue 8): an import batch refuses events one by one (a malformed
// event, a *Rejection) and goes on; any other failure ends the batch, and
// running it again admits every prepared event afresh.
func TestImportBatch(t *testing.T) {
	errDisk := errors.New("disk full")
	evs := []*nostr.Event{{Content: "ok"}, {Content: "malformed"}, {Content: "rejected"}, {Content: "fails"}, {Content: "after"}}
	prepare := func(ev *nostr.Event) (string, error) {
		if ev.Content == "malformed" {
			return "", ErrMalformedEvent
		}
		return ev.Content, nil
	}
	for _, tc := range []struct {
		name         string
		failing      bool
		wantErr      error
		wantAdmitted []string
		wantOutcomes []error
	}{
		{"a failure ends the batch", true, errDisk, []string{"ok", "rejected", "fails"},
			[]error{nil, ErrMalformedEvent, ErrDuplicate, errDisk, nil}},
		{"refusals do not", false, nil, []string{"ok", "rejected", "fails", "after"},
			[]error{nil, ErrMalformedEvent, ErrDuplicate, nil, nil}},
	} {
		batch := PrepareBatch(evs, prepare)
		var admitted []string
		admit := func(fail bool) func(string) error {
			return func(c string) error {
				admitted = append(admitted, c)
				switch {
				case c == "rejected":
					return ErrDuplicate
				case c == "fails" && fail:
					return errDisk
				}
				return nil
			}
		}
		if tc.failing {
			// A run that fails, then the same batch run again.
			if err := batch.Admit(admit(true)); !errors.Is(err, tc.wantErr) {
				t.Fatalf("%s: err %v, want %v", tc.name, err, tc.wantErr)
			}
		} else if err := batch.Admit(admit(false)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(admitted, tc.wantAdmitted) {
			t.Errorf("%s: admitted %v, want %v", tc.name, admitted, tc.wantAdmitted)
		}
		for i, want := range tc.wantOutcomes {
			if !errors.Is(batch.Outcomes[i], want) || (want == nil && batch.Outcomes[i] != nil) {
				t.Errorf("%s: outcome %d = %v, want %v", tc.name, i, batch.Outcomes[i], want)
			}
		}
		if tc.failing {
			admitted = nil
			if err := batch.Admit(admit(false)); err != nil || batch.Outcomes[3] != nil || len(admitted) != 4 {
				t.Errorf("%s: run again: err %v, admitted %v, outcomes %v", tc.name, err, admitted, batch.Outcomes)
			}
		}
	}
}
