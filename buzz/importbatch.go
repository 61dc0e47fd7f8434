package buzz

import "github.com/nbd-wtf/go-nostr"

// ImportBatch is a batch of events an import stores in one transaction
// (issue 8), each prepared (R: a store's ParsedEvent with its columns)
// before the transaction.
type ImportBatch[R any] struct {
	prepared []R
	refused  []bool
	// Outcomes are each event's: nil when stored, else why not (a
	// *Rejection when refused).
	Outcomes []error
}

// PrepareBatch prepares each of evs with prepare, outside the write
// transaction; an event prepare refuses keeps that refusal as its outcome
// and is not admitted.
func PrepareBatch[R any](evs []*nostr.Event, prepare func(*nostr.Event) (R, error)) *ImportBatch[R] {
	b := &ImportBatch[R]{prepared: make([]R, len(evs)), refused: make([]bool, len(evs)), Outcomes: make([]error, len(evs))}
	for i, ev := range evs {
		b.prepared[i], b.Outcomes[i] = prepare(ev)
		b.refused[i] = b.Outcomes[i] != nil
	}
	return b
}

// Admit admits the prepared events in order with admit, inside the write
// transaction. A *Rejection is the event's outcome and the batch goes on;
// any other failure is the batch's: Admit returns it, and the store must
// commit nothing of the batch. A store that runs the batch again after a
// failure calls Admit again: every prepared event is admitted afresh.
func (b *ImportBatch[R]) Admit(admit func(R) error) error {
	for i, r := range b.prepared {
		if b.refused[i] {
			continue
		}
		err := admit(r)
		b.Outcomes[i] = err
		if _, rejected := AsRejection(err); err != nil && !rejected {
			return err
		}
	}
	return nil
}
