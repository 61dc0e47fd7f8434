package buzz

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/nipcw"
)

// The replay order of export and sync (RL-25, RL-34): oldest first by
// created_at, then, within one second, by ReplayRank, then by id. A live
// relay refuses a reply whose parent it does not hold yet, an edit or a
// 9005 whose target it does not hold, and a channel's events before the
// channel; ordered by id alone, events made in the same second as what
// they depend on went first half of the time, and a sync or an import of
// an export into a live relay refused them.

// Within one second: the channel's creation, then its invite codes, then
// the memberships it grants (a join may name a code), then thread messages by depth (an event of no thread at depth
// 0), then what takes a membership back or ends the channel, then the aux
// events, each after what it may name: reactions and edits, then NIP-29
// deletions (which may delete those), then kind 5 deletions (which may
// delete any of them, and arriving first would make the relay refuse
// their targets as deleted).
const (
	rankCreate   = 0
	rankInvite   = 1
	rankGrant    = 2
	rankThread   = 3
	rankRevoke   = rankThread + MaxDepth + 1
	rankAux      = rankRevoke + 1
	rankGroupDel = rankAux + 1
	rankDeletion = rankGroupDel + 1
)

// ReplayRank is the place of an event of kind k among the events of its
// second (see above); depth is its depth in its thread, 0 when it has
// none or is not classified.
func ReplayRank(k int, depth int64) int64 {
	switch k {
	case KindCreateChannel:
		return rankCreate
	case KindCreateInvite:
		return rankInvite
	case KindPutUser, KindJoin:
		return rankGrant
	case KindRemoveUser, KindLeave, KindDeleteChannel:
		return rankRevoke
	case KindReaction, KindEdit:
		return rankAux
	case KindGroupDelete:
		return rankGroupDel
	case KindDeletion:
		return rankDeletion
	}
	return rankThread + min(max(depth, 0), MaxDepth)
}

// ReplayRankSQL is ReplayRank as an SQL expression over the kind and
// depth columns of the events table aliased t, in a dialect both stores
// speak.
func ReplayRankSQL(t string) string {
	var b strings.Builder
	b.WriteString("CASE " + t + ".kind")
	for _, k := range []int{KindCreateChannel, KindCreateInvite, KindPutUser, KindJoin, KindRemoveUser, KindLeave, KindDeleteChannel,
		KindReaction, KindEdit, KindGroupDelete, KindDeletion} {
		fmt.Fprintf(&b, " WHEN %d THEN %d", k, ReplayRank(k, 0))
	}
	fmt.Fprintf(&b, " ELSE %d + COALESCE(%s.depth, 0) END", rankThread, t)
	return b.String()
}

// SortForReplay sorts evs in the replay order, for a set that comes
// without its stored depths (a sync's): an event's depth is counted
// along the parents the set holds, 0 for one whose parent it does not
// hold, which keeps every parent before its replies.
func SortForReplay(evs []*nostr.Event) {
	byID := make(map[string]*nostr.Event, len(evs))
	for _, ev := range evs {
		byID[ev.ID] = ev
	}
	depths := make(map[string]int64, len(evs))
	var depth func(ev *nostr.Event, hops int) int64
	depth = func(ev *nostr.Event, hops int) int64 {
		if d, ok := depths[ev.ID]; ok {
			return d
		}
		var d int64
		if nipcw.IsClassifiedKind(ev.Kind) && hops <= MaxDepth {
			if p := byID[ParseThreadTags(ev.Tags).Parent]; p != nil && p != ev {
				d = depth(p, hops+1) + 1
			}
		}
		depths[ev.ID] = d
		return d
	}
	ranks := make(map[string]int64, len(evs))
	for _, ev := range evs {
		ranks[ev.ID] = ReplayRank(ev.Kind, depth(ev, 0))
	}
	slices.SortFunc(evs, func(a, b *nostr.Event) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(ranks[a.ID], ranks[b.ID]), strings.Compare(a.ID, b.ID))
	})
}
