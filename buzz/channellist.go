package buzz

// ChannelActivity is a channel as a listing of channels shows it: its
// store number, its id and when its newest event was made.
type ChannelActivity struct {
	Seq int64
	H   string
	// LastEventAt is the created_at of the channel's newest stored event,
	// 0 when it has none or is private or deleted (the listing does not
	// read what it will not show).
	LastEventAt int64
}
