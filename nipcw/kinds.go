package nipcw

// The kinds of the channel window's vocabulary: which events annotate
// others, which are overlays, which have a place in a thread. This file is
// their one definition; buzz names them for the rest of the domain.

// Aux kinds: they annotate other events, travel in a window's aux
// closure, and are never rows (CW-6, CW-18).
const (
	KindDeletion    = 5
	KindReaction    = 7
	KindGroupDelete = 9005
	KindEdit        = 40003
)

// Overlay kinds (CW-19, CW-20).
const (
	KindThreadSummary = 39005
	KindWindowBounds  = 39006
)

// IsAuxKind reports whether events of kind k annotate other events:
// deletions, reactions, group deletions and edits. Their e tags name
// targets, not thread parents (CW-6, CW-10, CW-18).
func IsAuxKind(k int) bool {
	return k == KindDeletion || k == KindReaction || k == KindGroupDelete || k == KindEdit
}

// IsOverlayKind reports whether events of kind k are window overlays: thread
// summaries and window bounds, metadata that is never a message (CL-6).
func IsOverlayKind(k int) bool { return k == KindThreadSummary || k == KindWindowBounds }

// IsModerationKind reports whether k is a NIP-29 moderation or lifecycle
// kind (9000-9030): never classified and never a row (CW-6, CW-10).
func IsModerationKind(k int) bool { return k >= 9000 && k <= 9030 }

// IsGroupStateKind reports whether k is NIP-29 group state (39000-39003),
// which the relay signs: never classified and never a row (CW-6).
func IsGroupStateKind(k int) bool { return k >= 39000 && k <= 39003 }

// IsClassifiedKind reports whether a channel event of kind k has a place
// in a thread by its NIP-10 tags, and so may be a row (CW-6, CW-10): every
// kind but the aux, moderation, group state and overlay kinds.
func IsClassifiedKind(k int) bool {
	return !IsAuxKind(k) && !IsModerationKind(k) && !IsGroupStateKind(k) && !IsOverlayKind(k)
}
