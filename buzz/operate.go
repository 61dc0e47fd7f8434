package buzz

// The operator commands (RL-33: export, check, backfill) run on either
// store with these filters and results, so that the command line is
// written once whatever database holds the relay.

import "context"

// ExportFilter selects the events a store's Export writes.
type ExportFilter struct {
	// Channel limits the export to one channel's events (its h value).
	Channel string
	// Since and Until bound created_at, inclusive; nil is unbounded.
	Since, Until *int64
	// Kinds limits the export to these kinds; empty means all.
	Kinds []int
	// WithDeleted adds every deleted event. Without it, deleted events are
	// left out, except those an import needs to serve the same: those that
	// replies still hang below (the threads), deleted reactions and edits
	// (the window's aux closure serves the deletions of a message's
	// reactions and edits, CW-18), NIP-29 lifecycle events, and the
	// targets of kind 9005 deletions (RL-6 stores a 9005 only once its
	// target is stored). Every deletion event (kinds 5 and 9005) goes out
	// either way: deletions are live events, served by REQ, and an import
	// that knows them refuses a rebroadcast of what they deleted.
	WithDeleted bool
}

// CheckReport is what a store's Check found.
type CheckReport struct {
	// Integrity holds what the database's own integrity check said, when
	// not "ok": SQLite's PRAGMA integrity_check. PostgreSQL has no such
	// check to run on a live database (amcheck is an extension a server
	// need not have): it stays empty there.
	Integrity []string
	// ForeignKeys counts the rows the database's foreign key check
	// reported: SQLite's PRAGMA foreign_key_check. PostgreSQL enforces its
	// foreign keys on every write: it stays 0 there.
	ForeignKeys int
	// Counters lists each event whose thread counters differ from its
	// subtree (RL-5).
	Counters []string
	// MissingTags and ExtraTags count tag index rows missing for an event,
	// and rows no event has (RL-3).
	MissingTags, ExtraTags int
	// GroupState lists the group state events (39000-39003) that the
	// relay key did not sign (RL-11, RL-21).
	GroupState []string
	// DeletionMarks counts the aux events that a stored deletion names
	// but that do not say so (sqlite's events.named_by_deletion): a window
	// would not serve that deletion (CW-18). PostgreSQL keeps no such
	// mark: it stays 0 there.
	DeletionMarks int
	// Repaired is set when Check was asked to repair and did.
	Repaired bool
}

// OK reports whether nothing is wrong.
func (r CheckReport) OK() bool {
	return len(r.Integrity) == 0 && r.ForeignKeys == 0 && len(r.Counters) == 0 && r.MissingTags == 0 && r.ExtraTags == 0 &&
		len(r.GroupState) == 0 && r.DeletionMarks == 0
}

// BackfillResult says what a store's Backfill did.
type BackfillResult struct {
	// Classified is how many unclassified channel messages got their place
	// in a thread (or were found to be top-level).
	Classified int
	// Waiting is how many are still unclassified: their parent is not
	// stored, or their tags break a thread rule (another channel, a wrong
	// root marker, too deep). They stay rows of the window (CW-12).
	Waiting int
}

// BackfillPasses runs a store's backfill pass, which looks at every
// unclassified message once, until one classifies nothing: a reply
// classified in a pass can be the parent of one the pass saw before it
// (CW-12). It sums what the passes classified; Waiting is the last one's.
func BackfillPasses(ctx context.Context, pass func(context.Context) (classified, waiting int, err error)) (BackfillResult, error) {
	var res BackfillResult
	for {
		classified, waiting, err := pass(ctx)
		res.Classified += classified
		res.Waiting = waiting
		if err != nil || classified == 0 {
			return res, err
		}
	}
}
