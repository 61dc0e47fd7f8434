package buzz

import "github.com/buzz-lite/buzz-lite/nipcw"

// Kinds with a role in buzz-lite. Those of the channel window's vocabulary
// are nipcw's (kinds.go), which also says which kinds are aux, overlays,
// and classified (nipcw.IsClassifiedKind).
const (
	KindDeletion       = nipcw.KindDeletion
	KindReaction       = nipcw.KindReaction
	KindGroupDelete    = nipcw.KindGroupDelete
	KindEdit           = nipcw.KindEdit
	KindThreadSummary  = nipcw.KindThreadSummary
	KindWindowBounds   = nipcw.KindWindowBounds
	KindCommunityAdmin = 9033
)

// IsRelayOnlyKind reports whether only the relay itself may sign events of
// kind k: NIP-29 group state 39000-39003 and the channel-window overlays
// 39005 and 39006 (RL-11, CW-22).
func IsRelayOnlyKind(k int) bool {
	return nipcw.IsGroupStateKind(k) || nipcw.IsOverlayKind(k)
}

// IsEphemeralKind reports whether events of kind k are broadcast, never stored
// (RL-9).
func IsEphemeralKind(k int) bool { return k >= 20000 && k < 30000 }

// IsReplaceableKind reports whether a newer event of the same author and kind
// replaces an older one (RL-9).
func IsReplaceableKind(k int) bool { return k == 0 || k == 3 || (k >= 10000 && k < 20000) }

// IsAddressableKind reports whether a newer event of the same author, kind and
// d tag replaces an older one (RL-9).
func IsAddressableKind(k int) bool { return k >= 30000 && k < 40000 }
