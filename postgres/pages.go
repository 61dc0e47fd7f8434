package postgres

import (
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// A cached window page is valid while the page version of its channel
// stands (pagecache.go). A write marks every channel whose pages it may
// change, and bumps each once before it commits (finish), in the same
// transaction, so every process reading in a later snapshot sees the new
// version. The channels of an event's pages, as package sqlite's triggers
// count them:
//   - its channel and its scope (a row, or an aux event of that channel;
//     a reaction without an h tag is scoped to its target's channel);
//   - for an aux event (kinds 5, 7, 9005, 40003), the channel of each
//     event its `e` tags name (it is served in that event's page, CW-18:
//     hop 1), and for a deletion (5, 9005) also the channel of each event
//     named by an aux event it names (hop 2);
//   - for a counter row written, its event's channel (summaries).

// touch marks channel seq's pages changed; nil is no channel.
func (tx *writeTx) touch(seq *int64) {
	if seq == nil {
		return
	}
	if tx.pages == nil {
		tx.pages = map[int64]bool{}
	}
	tx.pages[*seq] = true
}

// touchEvent marks the pages that show stored event t: called after it is
// stored or changed, and before it is dropped.
func (tx *writeTx) touchEvent(t *stored) error {
	tx.touch(t.channel)
	tx.touch(t.scope)
	if !nipcw.IsAuxKind(t.kind) {
		return nil
	}
	named, err := tx.namedBy(t)
	if err != nil {
		return err
	}
	for _, x := range named {
		tx.touch(x.channel)
		if (t.kind == buzz.KindDeletion || t.kind == buzz.KindGroupDelete) && nipcw.IsAuxKind(x.kind) {
			below, err := tx.namedBy(x)
			if err != nil {
				return err
			}
			for _, y := range below {
				tx.touch(y.channel)
			}
		}
	}
	return nil
}

// namedBy are the stored events t's `e` tags name in their canonical
// (lowercase hex) spelling.
func (tx *writeTx) namedBy(t *stored) ([]*stored, error) {
	ids, err := t.eTags()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := hexKeys(ids)
	rows, err := tx.tx.Query(tx.ctx, `SELECT `+storedColumns+` FROM events WHERE id = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("look up the events named: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*stored, error) { return scanStored(row) })
}

// eTags are the lowercase hex ids the `e` tags of s name.
func (s *stored) eTags() ([]string, error) {
	tags, err := tagjson.Parse(string(s.tagsJSON))
	if err != nil {
		return nil, fmt.Errorf("tags of stored event #%d: %w", s.seq, err)
	}
	var ids []string
	for _, tag := range tags {
		if len(tag) >= 2 && tag[0] == "e" && nipcw.IsLowerHex64(tag[1]) {
			ids = append(ids, tag[1])
		}
	}
	return ids, nil
}

// bumpPagesSQL bumps the page version of each channel of $1 (distinct
// numbers: one row may be changed once a statement) by one.
const bumpPagesSQL = `INSERT INTO page_versions (channel, version) SELECT c, 1 FROM unnest($1::bigint[]) AS c
	ON CONFLICT (channel) DO UPDATE SET version = page_versions.version + 1`

// bumpPages queues the bump of the page version of every channel the
// write marked, one statement for them all.
func (tx *writeTx) bumpPages() {
	if len(tx.pages) == 0 {
		return
	}
	tx.tx.queue(bumpPagesSQL, slices.Sorted(maps.Keys(tx.pages)))
}
