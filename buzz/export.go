package buzz

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// This file holds the rules of export (RL-25, RL-33): which deleted events
// an export still writes, and the order and form of its output. A store
// reads the pages, one read transaction each, in the order its query
// states with ReplayRankSQL.

// ExportPageSize is how many events one read transaction of an export
// reads: memory stays constant and no snapshot is held while the output
// is slow.
const ExportPageSize = 1000

// exportKeptDeletedKinds are the kinds whose deleted events an export
// without WithDeleted still writes: reactions and edits, whose deletions
// the aux closure serves (CW-18), and NIP-29 lifecycle events: deleting
// one does not undo what it did to its channel, and import replays them;
// a 9009's deletion does undo it (its code is revoked), which the import
// replays from the deletion, written too, once the 9009 is back (RL-36).
var exportKeptDeletedKinds = []int{KindReaction, KindEdit, KindPutUser, KindRemoveUser, KindEditMetadata,
	KindCreateChannel, KindDeleteChannel, KindCreateInvite, KindJoin, KindLeave}

// ExportKeptDeletedKinds is exportKeptDeletedKinds as a list of numbers
// separated by commas, for a store's IN (...).
func ExportKeptDeletedKinds() string {
	list := make([]string, len(exportKeptDeletedKinds))
	for i, k := range exportKeptDeletedKinds {
		list[i] = strconv.Itoa(k)
	}
	return strings.Join(list, ", ")
}

// KeepsDeletionTargets reports whether an export by f writes the deleted
// target of a kind 9005 deletion that it writes too, to be deleted again
// on import: RL-6 refuses a 9005 whose target is not stored, while a kind
// 5 is stored without its target (NIP-09) and refuses it when it arrives.
// A target whose 9005 the filter leaves out would come back alive: it
// stays out. With WithDeleted every deleted event goes out anyway.
func (f ExportFilter) KeepsDeletionTargets() bool {
	return !f.WithDeleted && (len(f.Kinds) == 0 || slices.Contains(f.Kinds, KindGroupDelete))
}

// ExportPosition is an event's place in an export: the replay order
// (ReplayRank) by created_at, then rank, then id.
type ExportPosition struct {
	CreatedAt, Rank int64
	ID              []byte
}

// ExportLine is an exported event: its signed JSON and its place.
type ExportLine struct {
	JSON []byte
	At   ExportPosition
}

// WriteExport writes the events page reads to w as JSON Lines, one signed
// event per line and nothing else (the format of `strfry export` and
// `nak`), and returns how many it wrote. page reads the next
// ExportPageSize events in the replay order after position after (nil:
// from the first); a shorter page is the last. A page is written after
// page returned, so that a slow output holds no snapshot open.
func WriteExport(w io.Writer, page func(after *ExportPosition) ([]ExportLine, error)) (int64, error) {
	out := bufio.NewWriterSize(w, 256<<10)
	var n int64
	var after *ExportPosition
	for {
		lines, err := page(after)
		if err != nil {
			return n, err
		}
		for _, l := range lines {
			if _, err := out.Write(l.JSON); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			if err := out.WriteByte('\n'); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			n++
		}
		if len(lines) < ExportPageSize {
			break
		}
		after = &lines[len(lines)-1].At
	}
	if err := out.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}
