package buzz

// Kinds with a role in buzz-lite.
const (
	KindDeletion       = 5
	KindReaction       = 7
	KindGroupDelete    = 9005
	KindEdit           = 40003
	KindThreadSummary  = 39005
	KindWindowBounds   = 39006
	KindCommunityAdmin = 9033
)

// IsAuxKind reports whether events of kind k annotate other events (deletions,
// reactions, edits): their e tags name targets, not thread parents, and they
// travel in a window's aux closure, never as rows (CW-6, CW-10, CW-18).
func IsAuxKind(k int) bool {
	return k == KindDeletion || k == KindReaction || k == KindGroupDelete || k == KindEdit
}

// IsModerationKind reports whether k is a NIP-29 moderation or lifecycle kind
// (9000-9030), never classified and never a row (CW-6, CW-10).
func IsModerationKind(k int) bool { return k >= 9000 && k <= 9030 }

// IsRelayOnlyKind reports whether only the relay itself may sign events of
// kind k: NIP-29 group state 39000-39003 and the channel-window overlays
// 39005 and 39006 (RL-11, CW-22).
func IsRelayOnlyKind(k int) bool {
	return (k >= 39000 && k <= 39003) || k == KindThreadSummary || k == KindWindowBounds
}

// IsClassifiedKind reports whether a channel event of kind k gets thread
// metadata from its NIP-10 tags (CW-10).
func IsClassifiedKind(k int) bool {
	return !IsAuxKind(k) && !IsModerationKind(k) && !IsRelayOnlyKind(k)
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
