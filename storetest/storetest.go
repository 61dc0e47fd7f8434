// Package storetest is the behaviour every buzz-lite store must show,
// written once against buzz.Store: a store package runs it with Run on a
// store of its own, so that SQLite today and a second store later answer
// alike. What the suite needs beyond the relay's interface (an import, a
// backfill, an export, the consistency check and its repair, the purge of
// expired events and tokens, a restart, and for the checks what the store
// holds, an event's place, its whole state as text and a way to damage it)
// is the small Store interface here; how a store is opened is the store
// package's business (Opener).
//
// The checks the suite is written with (a model of thread counters, an
// event's classification, reads as a viewer, exact refusals, unchanged
// snapshots, a channel's state as text) are exported too, for the tests a
// store package keeps of its own, on what only that store has (a failure
// half way, a recount, a repair), so that both check alike.
package storetest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Config is how a test wants its fresh store.
type Config struct {
	// Admins are relay admins, added to Policy's.
	Admins []string
	// Policy is the community's access configuration; nil means
	// buzz.DefaultPolicy().
	Policy *buzz.Policy
	// ThreadRepliesInChannel is the configured community setting (RL-15);
	// nil leaves the store's as it is.
	ThreadRepliesInChannel *bool
	// RelayKey is the relay identity secret key (hex) that signs group
	// state (RL-11); empty: no group state is kept.
	RelayKey string
	// Now is the store's clock; nil means time.Now.
	Now func() time.Time
}

// Store is what the suite asks of a store.
type Store interface {
	buzz.Store
	// ImportBatch stores evs in order in one transaction as an import
	// does: a reply whose parent is not served is kept unclassified
	// (CW-12), group state waits for RenewGroupState. It returns each
	// event's outcome; err is a failure of the batch as a whole.
	ImportBatch(ctx context.Context, evs []*nostr.Event) (outcomes []error, err error)
	// RenewGroupState signs and stores the group state of every channel
	// afresh (RL-11), as an import does at its end.
	RenewGroupState(ctx context.Context) error
	// RenewChangedGroupState does so once when the group state's form or
	// the configuration it reads changed since the last time (RL-36), as
	// the relay asks when it starts.
	RenewChangedGroupState(ctx context.Context) error
	// Backfill classifies the unclassified replies whose parents are
	// stored now (CW-12): how many it classified, how many still wait.
	Backfill(ctx context.Context) (buzz.BackfillResult, error)
	// Export writes the stored events f selects to w as JSON Lines,
	// oldest first, saying how many (RL-25, RL-33).
	Export(ctx context.Context, f buzz.ExportFilter, w io.Writer) (int64, error)
	// Check is the store's own consistency check (RL-33): every thread
	// counter against its subtree, the tag index against the events, the
	// group state against the relay key; with repair, it makes what is
	// wrong right.
	Check(ctx context.Context, repair bool) (buzz.CheckReport, error)
	// Damage breaks what the store derives from its events as harm says,
	// behind the store's back, for Check to find and repair.
	Damage(ctx context.Context, harm Harm) error
	// PurgeExpired removes the events whose NIP-40 expiration passed,
	// saying how many.
	PurgeExpired(ctx context.Context) (int, error)
	// PurgeTokens deletes the NIP-98 tokens whose expiry passed by the
	// store's clock, saying how many (RL-17).
	PurgeTokens(ctx context.Context) (int, error)
	// Held counts the events matching f (its limit aside) that the store
	// still keeps in any form, deleted and expired ones too, whoever may
	// read them: a replaced or purged event is no longer held.
	Held(ctx context.Context, f nostr.Filter) (int, error)
	// Reopen closes the store and opens its database again as cfg says,
	// as a restart of the relay does; the store returned is closed when
	// the test ends.
	Reopen(t testing.TB, cfg Config) Store
	// Placement is what the store keeps of event id's place (lowercase
	// hex): its channel and thread classification (CW-10..CW-12), deleted
	// or not; found is false when it holds no such event.
	Placement(ctx context.Context, id string) (p Placement, found bool, err error)
	// Dump is everything the store holds, as text in a stable order: a
	// refused event must leave it as it was (RL-4).
	Dump(ctx context.Context) (string, error)
}

// Harm is a damage Damage does to a store's derived rows.
type Harm int

const (
	// HarmReplyCount adds one to the reply count of the counters row of
	// the lowest seq.
	HarmReplyCount Harm = iota + 1
	// HarmParticipants empties (NULL) the participants of the counters
	// row of the highest seq.
	HarmParticipants
	// HarmDropTags deletes every tag index row named t.
	HarmDropTags
	// HarmTagKind gives every tag index row named p kind 7.
	HarmTagKind
	// HarmStrayTag adds a tag index row (x, "stray", created_at 1, kind 1)
	// for seq 999999, which no event has.
	HarmStrayTag
)

// Verify is the store's own consistency check as an error: every thread
// counter agrees with its subtree, every index with its events and the
// group state with the relay key.
func Verify(ctx context.Context, s Store) error {
	rep, err := s.Check(ctx, false)
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("check: %+v", rep)
	}
	return nil
}

// Placement is an event's channel and place in its thread.
type Placement struct {
	// Channel is the h of its channel, "" for none.
	Channel string
	// Classified says it has a place: Depth below Root, Parent its parent
	// (hex ids, "" for a root).
	Classified   bool
	Depth        int64
	Parent, Root string
	Broadcast    bool
	Row          buzz.RowClass
	Deleted      bool
}

// Opener opens a fresh, empty store as cfg says, closed when t ends.
type Opener func(t testing.TB, cfg Config) Store

// suite is every behaviour test, by name.
var suite = []struct {
	name string
	test func(t *testing.T, open Opener)
}{
	{"ChannelsByActivity", testChannelsByActivity},
	{"ChannelLifecycleRejections", testChannelLifecycleRejections},
	{"ChannelCreatePolicy", testChannelCreatePolicy},
	{"GroupDeleteByChannelAdmin", testGroupDeleteByChannelAdmin},
	{"GroupState", testGroupState},
	{"GroupStateNeedsRelayKey", testGroupStateNeedsRelayKey},
	{"GroupStateImport", testGroupStateImport},
	{"GroupIDsVerbatim", testGroupIDsVerbatim},
	{"JoinDuplicate", testJoinDuplicate},
	{"IssuedMembershipEvents", testIssuedMembershipEvents},
	{"Invites", testInvites},
	{"InviteAccessMatrix", testInviteAccessMatrix},
	{"InvitePurged", testInvitePurged},
	{"InviteLookupsBound", testInviteLookupsBound},
	{"ExportIssuedMembership", testExportIssuedMembership},
	{"ImportInvitedMembers", testImportInvitedMembers},
	{"UUIDSpellingsOneChannel", testUUIDSpellingsOneChannel},
	{"GroupMetadataPicture", testGroupMetadataPicture},
	{"GroupMetadataFlags", testGroupMetadataFlags},
	{"GroupStateRenewedOnChange", testGroupStateRenewedOnChange},
	{"Subgroups", testSubgroups},
	{"SubgroupReadAccess", testSubgroupReadAccess},
	{"SubgroupOrphansBounded", testSubgroupOrphansBounded},
	{"WriteAccess", testWriteAccess},
	{"ThreadRepliesSetting", testThreadRepliesSetting},
	{"ThreadRepliesConfigPrecedence", testThreadRepliesConfigPrecedence},
	{"CountersProperty", testCountersProperty},
	{"DeleteKind5Counters", testDeleteKind5Counters},
	{"DeleteParticipantsRefill", testDeleteParticipantsRefill},
	{"DeleteRandom", testDeleteRandom},
	{"DeleteKind5Rules", testDeleteKind5Rules},
	{"DeleteByAddressCounters", testDeleteByAddressCounters},
	{"DeleteKind9005", testDeleteKind9005},
	{"Edit", testEdit},
	{"Reactions", testReactions},
	{"CheckAndRepair", testCheckAndRepair},
	{"CheckGroupStateSigner", testCheckGroupStateSigner},
	{"Export", testExport},
	{"ExportKeepsDeletedAnchors", testExportKeepsDeletedAnchors},
	{"ExportGroupDeleteTargets", testExportGroupDeleteTargets},
	{"ExportReplayOrder", testExportReplayOrder},
	{"ExpireRefusedOnArrival", testExpireRefusedOnArrival},
	{"ExpireLifecycle", testExpireLifecycle},
	{"ExpireRootWithReplies", testExpireRootWithReplies},
	{"ExpiredTargetsAreGone", testExpiredTargetsAreGone},
	{"FeedModel", testFeedModel},
	{"FeedCrowdedSecond", testFeedCrowdedSecond},
	{"FeedRemovedMember", testFeedRemovedMember},
	{"FeedByteBound", testFeedByteBound},
	{"FeedNoPublicRead", testFeedNoPublicRead},
	{"FeedComplete", testFeedComplete},
	{"FeedPaging", testFeedPaging},
	{"FeedActivityReplies", testFeedActivityReplies},
	{"FeedChannelChanges", testFeedChannelChanges},
	{"ImportOutOfOrderThenBackfill", testImportOutOfOrderThenBackfill},
	{"ImportMissingParent", testImportMissingParent},
	{"ImportBatchTagIndex", testImportBatchTagIndex},
	{"QueryImpossibleChannel", testQueryImpossibleChannel},
	{"BackfillPrivateChannel", testBackfillPrivateChannel},
	{"PageMaxBytes", testPageMaxBytes},
	{"ImportAppliesWritePolicy", testImportAppliesWritePolicy},
	{"PositionsMatchQuery", testPositionsMatchQuery},
	{"QueryFilters", testQueryFilters},
	{"QueryTagValuesExactNotNumeric", testQueryTagValuesExactNotNumeric},
	{"QueryOrderSameSecond", testQueryOrderSameSecond},
	{"QueryDefaultLimit", testQueryDefaultLimit},
	{"QueryBounded", testQueryBounded},
	{"ReplaceNewerReplacesOlder", testReplaceNewerReplacesOlder},
	{"ReplaceRegularKindsKeepAll", testReplaceRegularKindsKeepAll},
	{"ReplaceSameSecondLowerIDWins", testReplaceSameSecondLowerIDWins},
	{"ReplaceAddressKeys", testReplaceAddressKeys},
	{"ReplaceAddressDeletion", testReplaceAddressDeletion},
	{"ReplaceAddressDeletionScope", testReplaceAddressDeletionScope},
	{"ReplaceAddressDeletionOtherAuthor", testReplaceAddressDeletionOtherAuthor},
	{"ReplaceEDeletedResubmitted", testReplaceEDeletedResubmitted},
	{"ReplaceConcurrentVersions", testReplaceConcurrentVersions},
	{"ReplaceAddressDeletionSpellings", testReplaceAddressDeletionSpellings},
	{"ReplaceEDeletionSpellings", testReplaceEDeletionSpellings},
	{"ReplaceDeletedVersionStaysNewest", testReplaceDeletedVersionStaysNewest},
	{"WriteRuleHoles", testWriteRuleHoles},
	{"WindowSnapshotAccessAndExpiry", testWindowSnapshotAccessAndExpiry},
	{"RootOnlyReplyIngest", testRootOnlyReplyIngest},
	{"RootOnlyReplyMissingRoot", testRootOnlyReplyMissingRoot},
	{"RootOnlyReplyImportBackfill", testRootOnlyReplyImportBackfill},
	{"ReactionScope", testReactionScope},
	{"AuxChannellessOpenOnly", testAuxChannellessOpenOnly},
	{"DeletionScope", testDeletionScope},
	{"QueryScopeFilters", testQueryScopeFilters},
	{"Smoke", testSmoke},
	{"ThreadClassification", testThreadClassification},
	{"ThreadClassificationNoChannel", testThreadClassificationNoChannel},
	{"ThreadNIP29KindsNotClassified", testThreadNIP29KindsNotClassified},
	{"ThreadDepthLimit", testThreadDepthLimit},
	{"ThreadCountersTree", testThreadCountersTree},
	{"ThreadParticipantsTwelveAuthors", testThreadParticipantsTwelveAuthors},
	{"ThreadCountersRandom", testThreadCountersRandom},
	{"ThreadRejectedLeavesNothing", testThreadRejectedLeavesNothing},
	{"ThreadConcurrentIngest", testThreadConcurrentIngest},
	{"TokenSpentOnce", testTokenSpentOnce},
	{"TokenRace", testTokenRace},
	{"TokenPurge", testTokenPurge},
}

// Run runs the whole suite on the stores open opens, each test on a fresh
// one.
func Run(t *testing.T, open Opener) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open) })
	}
}
