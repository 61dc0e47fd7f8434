package buzz

import (
	"errors"
	"fmt"
)

// Rejection is an event or request refused for a reason the client must be
// told verbatim. Prefix is the NIP-01 machine-readable prefix ("invalid",
// "restricted", "blocked", "error", ...); Error() is the exact wire message.
type Rejection struct {
	Prefix  string
	Message string
}

func (r *Rejection) Error() string { return r.Prefix + ": " + r.Message }

func reject(prefix, msg string) *Rejection { return &Rejection{Prefix: prefix, Message: msg} }

// The rejections of the contract (RL-5, RL-6, RL-7, RL-9, CW-22). Compare
// with errors.Is; the wire text is Error().
var (
	ErrParentNotFound        = reject("invalid", "reply parent not found")
	ErrParentNoChannel       = reject("invalid", "parent event has no channel association")
	ErrParentOtherChannel    = reject("invalid", "parent event belongs to a different channel")
	ErrRootMismatch          = reject("invalid", "root tag does not match thread ancestry")
	ErrDepthExceeded         = reject("invalid", "thread depth limit exceeded")
	ErrNotAuthor             = reject("invalid", "must be event author")
	ErrNotAuthorOrAdmin      = reject("invalid", "must be event author or channel admin")
	ErrDeletionTargets       = reject("invalid", "deletion events must reference exactly one target via e or a tag")
	ErrMissingH              = reject("invalid", "missing h tag")
	ErrTargetNotFound        = reject("invalid", "target event not found")
	ErrTargetOtherChannel    = reject("invalid", "target event belongs to a different channel")
	ErrEditTarget            = reject("invalid", "edit must reference its target via an e tag")
	ErrTooFarInFuture        = reject("invalid", "event creation date is too far off from the current time")
	ErrExpired               = reject("invalid", "event has expired")
	ErrEphemeral             = reject("invalid", "ephemeral events are not stored")
	ErrRelayOnlyKind         = reject("restricted", "relay-only kind")
	ErrSeveralChannels       = reject("invalid", "event names more than one channel in h tags")
	ErrNotChannelID          = reject("invalid", "h tag must be a channel id (a UUID or a NIP-29 group id)")
	ErrMalformedDTag         = reject("invalid", "d tag must have a value")
	ErrNotLowerHex           = reject("invalid", "id, pubkey and sig must be lowercase hex")
	ErrStorageFull           = reject("error", "storage is full, event not stored")
	ErrDuplicate             = reject("duplicate", "already have this event")
	ErrNewerVersionStored    = reject("duplicate", "a newer version of this event is stored")
	ErrDeletedBeforeArriving = reject("blocked", "this event has been deleted")
	ErrCrossChannelDeletion  = reject("invalid", "deletion targets events in more than one channel")
)

// The rejections of channels, membership and community settings (RL-10,
// RL-14, RL-15, RL-36). docs/relay.md lists them.
var (
	ErrNotMember       = reject("restricted", "not a channel member")
	ErrCannotJoin      = reject("restricted", "no such channel, or it is private")
	ErrChannelDeleted  = reject("restricted", "channel has been deleted")
	ErrCannotCreate    = reject("restricted", "not allowed to create channels")
	ErrNotChannelAdmin = reject("restricted", "must be channel owner or admin")
	ErrNotChannelOwner = reject("restricted", "must be channel owner")
	ErrRoleAboveOwn    = reject("restricted", "cannot grant or change a role above your own")
	ErrNotRelayAdmin   = reject("restricted", "must be a relay admin")
	ErrChannelExists   = reject("invalid", "channel already exists")
	ErrChannelNotFound = reject("invalid", "channel not found")
	ErrChannelID       = reject("invalid", "channel id must be a lowercase UUID")
	ErrUnknownRole     = reject("invalid", "role must be member, admin or owner")
	ErrUserTag         = reject("invalid", "p tag must name a lowercase hex pubkey")
	ErrSettingNotBool  = reject("invalid", "thread_replies_in_channel must be a boolean")
	ErrAlreadyMember   = reject("duplicate", "already a member")
	ErrInviteCode      = reject("invalid", fmt.Sprintf("create-invite must carry one code tag of 1 to %d bytes", MaxInviteCode))
	ErrPictureURL      = reject("invalid", "picture must be an http(s) URL")
	ErrParentCycle     = reject("invalid", "parent would make the channel its own subgroup")
	ErrSubgroupDepth   = reject("invalid", fmt.Sprintf("subgroups nest at most %d deep", MaxSubgroupDepth))
)

// The rejections of the write policy (RL-29).
var (
	ErrBlocked     = reject("blocked", "this pubkey may not post here")
	ErrMembersOnly = reject("restricted", "this relay accepts events from its members only")
)

// KindNotAccepted refuses kind k, which access.allowed_kinds leaves out
// (RL-29).
func KindNotAccepted(k int) *Rejection {
	return reject("blocked", fmt.Sprintf("kind %d is not accepted here", k))
}

// AsRejection returns the Rejection inside err, if any.
func AsRejection(err error) (*Rejection, bool) {
	var r *Rejection
	ok := errors.As(err, &r)
	return r, ok
}
