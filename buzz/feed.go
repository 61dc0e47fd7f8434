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
