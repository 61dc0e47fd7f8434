package buzz

// ChannelActivity is a channel as a listing of channels shows it: its
// store number, its id and when its newest event was made.
type ChannelActivity struct {
	Seq int64
	H   string
	// LastEventAt is the created_at of the channel's newest message
	// (a window row in projection mode, CW-13) that is not deleted
	// (RL-6), 0 when it has none or is private or deleted (the listing
	// does not read what it will not show).
	LastEventAt int64
}
