package buzz

import (
	"context"

	"github.com/nbd-wtf/go-nostr"
)

// Store is what the relay needs of a database: storage, transactions,
// indexes and queries. The rules that decide what an event does to the
// stored ones are this package's (ingest.go), so that a second store
// implements storage, not the rules again; storetest holds the behaviour
// every implementation must show.
type Store interface {
	// Admit stores a verified event in one transaction and says what
	// became of it; a *Rejection carries the client's message.
	Admit(ctx context.Context, ev *nostr.Event) (Admitted, error)
	// Query returns the matching stored events v may read, newest first.
	Query(ctx context.Context, f nostr.Filter, v Viewer) ([]*nostr.Event, error)
	// Count counts the matching stored events v may read.
	Count(ctx context.Context, f nostr.Filter, v Viewer) (int64, error)
	// Community is the access state now: channels, members, settings.
	Community() *Community
	// OnPublish sets what hears of the group state events the store signed
	// and stored, once committed.
	OnPublish(fn func([]*nostr.Event))
	// QueryBounded is Query continuing after the composite cursor (until,
	// beforeID) of RL-19, serving each event as its signed JSON and
	// reading no more than maxBytes of it (0: no bound); truncated says it
	// stopped there (RL-27a).
	QueryBounded(ctx context.Context, f nostr.Filter, v Viewer, beforeID string, maxBytes int) (evs []RawEvent, truncated bool, err error)
	// Positions is QueryBounded reading only each event's (created_at,
	// id), within f's limit: the set of a NIP-77 sync (RL-34).
	Positions(ctx context.Context, f nostr.Filter, v Viewer, beforeID string) ([]Position, error)
	// Window serves one channel window page from one snapshot (CW-9..CW-19).
	Window(ctx context.Context, q WindowQuery) (*WindowPage, error)
	// Thread serves the replies below an event (RL-20).
	Thread(ctx context.Context, q ThreadQuery) (*ThreadPage, error)
	// Feed serves the home feed of a requester from one snapshot (RL-35).
	Feed(ctx context.Context, q FeedQuery) ([]*nostr.Event, error)
	// Summaries reads the thread summaries of events, zero counts too.
	Summaries(ctx context.Context, ids []string) ([]Summary, error)
	// Ping is a write round trip through the store's writer that writes
	// nothing; it fails when the store is closed or its writer cannot
	// commit before ctx ends (RL-30 readiness).
	Ping(ctx context.Context) error
	// Stats are the store's numbers for the metrics (RL-30).
	Stats() (StoreStats, error)
	// SpendToken records the key of an accepted NIP-98 token (a digest of
	// its signature) until expires (Unix seconds), and reports whether it
	// was new: false when the token was spent before, through this
	// process, another sharing the database, or before a restart (RL-17).
	// Of the callers racing with one key, one is told true.
	SpendToken(ctx context.Context, key []byte, expires int64) (bool, error)
	// ChannelsByActivity lists up to limit open channels (neither private
	// nor deleted), the newest last message first, ties the newest
	// channel first, after position after (nil: from the first). A call
	// reads limit channels whatever the community holds (the web view,
	// CW-25).
	ChannelsByActivity(ctx context.Context, after *ChannelPosition, limit int) ([]ChannelActivity, error)
}

// SharedStore is a Store that several relay processes share (RL-33): each
// hears of the events the others stored, to deliver them live to its own
// subscriptions.
type SharedStore interface {
	Store
	// OnRemote sets what hears of each event another process stored, once
	// committed, with what became of it there; the events this process
	// stores are not handed to it.
	OnRemote(fn func(ev *nostr.Event, a Admitted))
	// Broadcast hands an ephemeral event, which is never stored, to the
	// other processes, whose OnRemote functions deliver it.
	Broadcast(ctx context.Context, ev *nostr.Event) error
	// CommunityNow is the access state as the database has it now, where
	// Community may not yet know a change another process committed
	// (its notification still on the way).
	CommunityNow(ctx context.Context) (*Community, error)
	// CaughtUp returns a channel closed once this process has delivered
	// live (OnRemote) every event another process committed before the
	// call, so that a subscription whose stored events held one knows
	// when it can no longer receive it again.
	CaughtUp() <-chan struct{}
}
