package buzz

// ChannelActivity is a channel as a listing of channels shows it: its
// store number, its id and when its last message was made.
type ChannelActivity struct {
	Seq int64
	H   string
	// LastMessageAt is the created_at of the channel's newest message (a
	// window row in projection mode, CW-13) that is not deleted (RL-6), 0
	// when it has none.
	LastMessageAt int64
}

// Position is where a listing by activity stands: after the channel it
// names, the next is the one with the newest last message before
// LastMessageAt, or at it with a smaller number.
func (a ChannelActivity) Position() ChannelPosition {
	return ChannelPosition{LastMessageAt: a.LastMessageAt, Seq: a.Seq}
}

// ChannelPosition is a place in the listing of channels by activity.
type ChannelPosition struct {
	LastMessageAt, Seq int64
}
