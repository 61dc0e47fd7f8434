package buzz

// AuxFits reports whether an aux event whose scope is scope (ok false: it
// was stored without a channel) may be served on rows of channel rows
// (nil: rows of no channel), before the access check every aux event
// passes as well (CW-18). On a private channel's rows only aux events
// stored in that channel are served: a non-member's reaction, edit or
// deletion naming a private message is stored channel-less, as if its
// target did not exist (RL-29), and must not show there. Whether rows is
// private is part of its page version: the 9002 that changes it is
// stored in the channel.
func AuxFits(rows *Channel, scope int64, ok bool) bool {
	return rows == nil || !rows.Private || (ok && scope == rows.Seq)
}
