package buzz

// FeedNoStream is a stream no event is in: what pads the streams of a
// store read of the feed to a power of two (FeedArmsOf).
const FeedNoStream = -1

// FeedArmsOf are the streams of rg padded with FeedNoStream to a power of
// two: the arms of the one statement that reads them. A store prepares a
// statement for each power of two up to FeedArms (FeedStatements), so that
// a handful of texts serve every requester.
func FeedArmsOf(rg FeedRange) []int64 {
	n := 1
	for n < len(rg.Streams) {
		n *= 2
	}
	arms := make([]int64, n)
	for i := range arms {
		arms[i] = FeedNoStream
	}
	copy(arms, rg.Streams)
	return arms
}

// FeedStatements are the statements build writes for each number of arms
// FeedArmsOf gives, by that number.
func FeedStatements(build func(arms int) string) map[int]string {
	m := map[int]string{}
	for n := 1; n <= FeedArms; n *= 2 {
		m[n] = build(n)
	}
	return m
}
