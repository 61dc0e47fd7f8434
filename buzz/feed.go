package buzz

// FeedType is one type of the home feed (RL-35).
type FeedType string

// The feed types; a client's alias names one of these.
const (
	// FeedMentions: events of MentionKinds whose `p` tags name the viewer.
	FeedMentions FeedType = "mentions"
	// FeedNeedsAction: events of NeedsActionKinds whose `p` tags name the
	// viewer.
	FeedNeedsAction FeedType = "needs_action"
	// FeedActivity: channel messages of ActivityKinds in every channel the
	// viewer may read.
	FeedActivity FeedType = "activity"
)

// The kinds each feed type serves (RL-35): notes, chat messages, threads
// and comments that mention; reminders (40007) and approval requests
// (46010); chat messages and threads.
var (
	MentionKinds     = []int{1, 9, 11, 1111}
	NeedsActionKinds = []int{40007, 46010}
	ActivityKinds    = []int{9, 11}
)

// FeedQuery asks for the home feed of Viewer (RL-35).
type FeedQuery struct {
	Viewer Viewer
	// Types are served in this order, each once.
	Types []FeedType
	// Since, when set, leaves out events older than it.
	Since *int64
	// Before, when set, continues each type strictly after (CreatedAt,
	// ID) in `created_at DESC, id ASC` order (RL-19's until + before_id);
	// an empty ID leaves out events newer than CreatedAt.
	Before *Position
	// Limit is how many events the feed serves across its types.
	Limit int
	// MaxBytes bounds the events read (EventSize), ErrTooLarge past it;
	// 0: no bound.
	MaxBytes int
}

// FeedStreams are the streams of the home feed v may read (RL-35): 0 (the
// open channels, and for mentions events of no channel) when v may read
// open channels, then each of candidates that is a private channel v may
// read in c. candidates are the channels a store found through v's
// memberships (all private ones for a relay admin), read in the snapshot
// c describes; an anonymous viewer has none.
func (c *Community) FeedStreams(v Viewer, candidates []int64) []int64 {
	var streams []int64
	if c.CanReadOpen(v) {
		streams = append(streams, 0)
	}
	for _, seq := range candidates {
		if ch := c.ChannelBySeq(seq); ch != nil && ch.Private && c.CanRead(v, ch) {
			streams = append(streams, seq)
		}
	}
	return streams
}
