package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// maxDepth is the deepest reply live ingest accepts (CW-10).
const maxDepth = 100

// Ingest stores ev, whose id and signature the caller has verified, in one
// transaction (RL-4): the event row, its tag index rows, its thread
// classification and the counters of every ancestor; for a deletion, the
// soft deletion of its targets with their ancestors' counters made exact
// again (RL-6); for a replaceable or addressable event, the removal of the
// versions it replaces (RL-9); for a NIP-29 lifecycle event, the channel's
// new state and group state (RL-10, RL-11). A refusal is a *buzz.Rejection
// carrying the exact client message; buzz.ErrDuplicate and
// buzz.ErrNewerVersionStored mean nothing was stored and nothing is wrong.
func (s *Store) Ingest(ctx context.Context, ev *nostr.Event) error {
	_, err := s.Admit(ctx, ev)
	return err
}

// Admit is Ingest, saying what became of the event.
func (s *Store) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	r, err := newRecord(ev)
	if err != nil {
		return buzz.Admitted{}, err
	}
	now := s.nowUnix()
	var a buzz.Admitted
	err = s.writer.do(ctx, func(tx *writeTx) error {
		var err error
		a, err = s.ingest(tx, r, now, false)
		return err
	})
	return a, err
}

// ImportBatch ingests evs in order, in one transaction, as an import does
// (issue 8): through the same ingest as Ingest, except that a reply whose
// parent is not stored (absent, or later in the file), or no longer served,
// is kept unclassified (depth NULL, CW-12) instead of refused; Backfill
// classifies it once its parent is there. Group state is left for
// RenewGroupState at the end of the import. It returns each event's
// outcome (nil when stored, else a *buzz.Rejection); err is a failure of
// the batch as a whole, after which nothing of it is stored.
func (s *Store) ImportBatch(ctx context.Context, evs []*nostr.Event) (outcomes []error, err error) {
	outcomes = make([]error, len(evs))
	records := make([]*record, len(evs))
	for i, ev := range evs {
		records[i], outcomes[i] = newRecord(ev)
	}
	now := s.nowUnix()
	err = s.writer.do(ctx, func(tx *writeTx) error {
		tx.deferState = true
		defer func() { tx.deferState = false }()
		for i, r := range records {
			if r == nil {
				continue
			}
			_, outcomes[i] = s.ingest(tx, r, now, true)
			if _, rejected := buzz.AsRejection(outcomes[i]); outcomes[i] != nil && !rejected {
				return outcomes[i]
			}
		}
		return nil
	})
	return outcomes, err
}

func (s *Store) ingest(tx *writeTx, r *record, now int64, importing bool) (buzz.Admitted, error) {
	ev := r.ev
	tx.recounted = tx.recounted[:0]
	if buzz.IsEphemeralKind(ev.Kind) {
		return buzz.Admitted{}, buzz.ErrEphemeral
	}
	// The relay's own group state is no submission: the write policy is
	// for what others send (RL-29).
	relaySigned := s.pubkey != "" && ev.PubKey == s.pubkey
	if !relaySigned {
		if err := tx.community().CheckEvent(ev, r.channel); err != nil {
			return buzz.Admitted{}, err
		}
	}
	if ev.Kind == buzz.KindCommunityAdmin {
		return buzz.Admitted{Applied: true}, tx.applySetting(r, now)
	}
	// One statement asks both questions every event raises: stored
	// already, or deleted (NIP-09) before it arrived?
	var dup, deleted bool
	if err := tx.seen.QueryRowContext(tx.ctx, r.id, r.pubkey).Scan(&dup, &deleted); err != nil {
		return buzz.Admitted{}, fmt.Errorf("look up event: %w", err)
	}
	switch {
	case dup:
		return buzz.Admitted{}, buzz.ErrDuplicate
	case r.expiresAt.Valid && r.expiresAt.Int64 <= now:
		return buzz.Admitted{}, buzz.ErrExpired
	case deleted:
		return buzz.Admitted{}, buzz.ErrDeletedBeforeArriving
	}

	// A channel seen for the first time gets its row with the event's
	// writes below; until then it is number 0, which no stored event has.
	var channel sql.NullInt64
	var chState *buzz.Channel // nil: the channel does not exist yet
	newChannel := false
	if r.channel != "" {
		seq, found, err := tx.lookupChannel(r.channel)
		if err != nil {
			return buzz.Admitted{}, err
		}
		channel = sql.NullInt64{Int64: seq, Valid: true}
		newChannel = !found
		if found {
			chState = tx.channelState(seq, r.channel)
		}
	}

	var superseded []*stored
	if addr, ok := address(ev); ok {
		deleted, err := tx.exists(tx.deletedAddress, addr, ev.CreatedAt, r.pubkey)
		if err != nil {
			return buzz.Admitted{}, err
		}
		if deleted {
			return buzz.Admitted{}, buzz.ErrDeletedBeforeArriving
		}
		versions, err := tx.versions(ev.Kind, r.pubkey, ev.Tags.GetD())
		if err != nil {
			return buzz.Admitted{}, err
		}
		for _, v := range versions {
			if v.createdAt > int64(ev.CreatedAt) || (v.createdAt == int64(ev.CreatedAt) && bytes.Compare(v.id, r.id) < 0) {
				return buzz.Admitted{}, buzz.ErrNewerVersionStored
			}
			if !v.deletedAt.Valid { // deleted versions stay, as deleted
				superseded = append(superseded, v)
			}
		}
	}

	var targets []*stored
	var err error
	switch ev.Kind {
	case buzz.KindDeletion:
		targets, err = tx.nip09Targets(r)
	case buzz.KindGroupDelete:
		targets, err = tx.groupDeleteTarget(r, channel, chState, now)
	case buzz.KindEdit:
		err = tx.checkEdit(r, channel, now)
	}
	if err != nil {
		return buzz.Admitted{}, err
	}

	scope, next, err := tx.access(r, channel, chState, targets)
	if err != nil {
		return buzz.Admitted{}, err
	}
	// A reaction or deletion of no channel, its targets' included, is an
	// event of no channel (RL-29), except a deletion of its author's own
	// events: an author may always delete what they wrote (RL-6).
	if !scope.Valid && !relaySigned && (ev.Kind == buzz.KindReaction || (ev.Kind == buzz.KindDeletion && len(targets) == 0)) {
		if err := tx.community().CheckNoChannel(ev.PubKey); err != nil {
			return buzz.Admitted{}, err
		}
	}

	cls, err := tx.classify(r, channel, now, importing)
	if err != nil {
		return buzz.Admitted{}, err
	}

	// Everything above only reads; every rejection is decided by now (see
	// writer.run: a job writes nothing before it can no longer be rejected).
	if newChannel {
		if channel.Int64, err = tx.insertChannelRow(r.channel); err != nil {
			return buzz.Admitted{}, err
		}
		scope = channel
		if next == nil {
			// Named by an event, not created: open, without members.
			implicit := &buzz.Channel{Seq: channel.Int64, H: r.channel, Members: map[string]buzz.Role{}}
			tx.changeCommunity().Put(implicit)
			tx.stateChanged(implicit.Seq)
		}
	}
	res, err := tx.insertEvent.ExecContext(tx.ctx, r.id, r.pubkey, int64(ev.CreatedAt), ev.Kind,
		r.tagsJSON, ev.Content, r.sig, channel, r.dtag, r.expiresAt,
		cls.parent, cls.root, cls.depth, cls.broadcast, cls.rowClass, scope)
	if err != nil {
		return buzz.Admitted{}, fmt.Errorf("insert event: %w", err)
	}
	seq, err := res.LastInsertId()
	if err != nil {
		return buzz.Admitted{}, fmt.Errorf("insert event: %w", err)
	}
	tx.storedIn(channel, scope)
	for _, t := range r.tags {
		if _, err := tx.insertTag.ExecContext(tx.ctx, t.name, t.value, int64(ev.CreatedAt), seq, ev.Kind); err != nil {
			return buzz.Admitted{}, fmt.Errorf("insert tag: %w", err)
		}
	}
	if cls.parent.Valid {
		if err := tx.addToAncestors(cls.parent.Int64, r.pubkey, int64(ev.CreatedAt)); err != nil {
			return buzz.Admitted{}, err
		}
	}
	for _, t := range targets {
		if err := tx.softDelete(t, now); err != nil {
			return buzz.Admitted{}, err
		}
	}
	for _, v := range superseded {
		if err := tx.remove(v, now); err != nil {
			return buzz.Admitted{}, err
		}
	}
	if next != nil {
		next.Seq = channel.Int64
		if err := tx.saveChannel(chState, next, int64(ev.CreatedAt), now); err != nil {
			return buzz.Admitted{}, err
		}
	}
	if scope.Valid && channel.Valid {
		if err := tx.adoptReactions(r.id, scope.Int64); err != nil {
			return buzz.Admitted{}, err
		}
	}
	a := buzz.Admitted{}
	if !importing { // an import has no one to tell
		if a.Threads, err = tx.recountedThreads(); err != nil {
			return buzz.Admitted{}, err
		}
	}
	if scope.Valid {
		if ch := tx.community().ChannelBySeq(scope.Int64); ch != nil {
			a.Scope = ch.H
		}
	}
	return a, nil
}

// access decides whether r may be written (RL-10, RL-14) and which channel
// it belongs to for reading (its scope: RL-8, RL-13). For a lifecycle
// event, next is the channel's state after it.
func (tx *writeTx) access(r *record, channel sql.NullInt64, ch *buzz.Channel, targets []*stored) (scope sql.NullInt64, next *buzz.Channel, err error) {
	ev := r.ev
	c := tx.community()
	switch {
	case buzz.IsLifecycleKind(ev.Kind):
		if !channel.Valid {
			return scope, nil, buzz.ErrMissingH
		}
		next, err = c.Transition(ev, r.channel, ch)
		return channel, next, err
	case channel.Valid:
		switch {
		case (ev.Kind == buzz.KindDeletion || ev.Kind == buzz.KindGroupDelete) && deletesOnlyIn(ch, targets):
			// A deletion of events of its own channel has rules of its
			// own: an author may always delete what they wrote (RL-6), a
			// removed member too. Any other is an ordinary post.
		case ev.Kind == buzz.KindReaction:
			// A reaction belongs to its target's channel too (RL-8): an h
			// tag of another channel does not carry it past that
			// channel's write rule.
			if err = c.CheckWrite(ev.PubKey, ch); err == nil {
				err = tx.checkTargetWrite(r, channel)
			}
		default:
			err = c.CheckWrite(ev.PubKey, ch)
		}
		return channel, nil, err
	case ev.Kind == buzz.KindReaction:
		t, err := tx.reactionTarget(r)
		if err != nil || t == nil || !t.scope.Valid {
			return scope, nil, err
		}
		return t.scope, nil, c.CheckWrite(ev.PubKey, tx.channelState(t.scope.Int64, ""))
	case ev.Kind == buzz.KindDeletion:
		for _, t := range targets {
			switch {
			case !t.scope.Valid:
			case !scope.Valid:
				scope = t.scope
			case scope.Int64 != t.scope.Int64:
				return scope, nil, buzz.ErrCrossChannelDeletion
			}
		}
		return scope, nil, nil
	case buzz.IsRelayOnlyKind(ev.Kind) && r.dtag.Valid:
		// The relay's own group state belongs to the channel it describes.
		seq, found, err := tx.lookupChannel(r.dtag.String)
		return sql.NullInt64{Int64: seq, Valid: found}, nil, err
	}
	return scope, nil, nil
}

// deletesOnlyIn reports whether every target of a deletion is an event of
// channel ch, which exists and was not deleted.
func deletesOnlyIn(ch *buzz.Channel, targets []*stored) bool {
	if ch == nil || ch.Deleted || len(targets) == 0 {
		return false
	}
	for _, t := range targets {
		if !t.scope.Valid || t.scope.Int64 != ch.Seq {
			return false
		}
	}
	return true
}

// checkTargetWrite applies the write rule of the channel of a reaction's
// stored target when it is not the reaction's own.
func (tx *writeTx) checkTargetWrite(r *record, channel sql.NullInt64) error {
	t, err := tx.reactionTarget(r)
	if err != nil || t == nil || !t.scope.Valid || t.scope == channel {
		return err
	}
	return tx.community().CheckWrite(r.ev.PubKey, tx.channelState(t.scope.Int64, ""))
}

// reactionTarget is the stored target of reaction r as its author may know
// of it (see known): nil when there is none.
func (tx *writeTx) reactionTarget(r *record) (*stored, error) {
	id, ok := idKey(buzz.ScopeTarget(r.ev))
	if !ok {
		return nil, nil
	}
	return tx.knownByID(r, id)
}

// known reports whether the author of r may know of stored event t: it is
// their own, of no channel, or of a channel they may read (RL-13; a relay
// admin reads every channel that was not deleted). A refusal that names
// any other would tell them that it exists, so every rule that looks up
// an event r names treats it as not stored (RL-29).
func (tx *writeTx) known(r *record, t *stored) bool {
	if bytes.Equal(t.pubkey, r.pubkey) || !t.scope.Valid {
		return true
	}
	return tx.community().CanReadSeq(buzz.Viewer(r.ev.PubKey), t.scope.Int64)
}

// knownByID is byID for an event r names: nil when none is stored that
// r's author may know of.
func (tx *writeTx) knownByID(r *record, id []byte) (*stored, error) {
	t, err := tx.byID(id)
	if err != nil || t == nil || !tx.known(r, t) {
		return nil, err
	}
	return t, nil
}

// recountedThreads describes the events whose thread counters this ingest
// changed, for the live summary push of CW-21.
func (tx *writeTx) recountedThreads() ([]buzz.ThreadChange, error) {
	if len(tx.recounted) == 0 {
		return nil, nil
	}
	out := make([]buzz.ThreadChange, 0, len(tx.recounted))
	seen := make(map[int64]bool, len(tx.recounted))
	for _, seq := range tx.recounted {
		if seen[seq] {
			continue
		}
		seen[seq] = true
		var id []byte
		var c buzz.ThreadChange
		var rowClass int
		if err := tx.summaryTarget.QueryRowContext(tx.ctx, seq).Scan(&id, &c.Channel, &c.Root, &rowClass); err != nil {
			return nil, fmt.Errorf("read thread of #%d: %w", seq, err)
		}
		c.ID = hex.EncodeToString(id)
		c.TopLevel = rowClass == rowTopLevel
		out = append(out, c)
	}
	return out, nil
}

// adoptReactions gives the scope of a channel event that just arrived to
// the reactions without a channel that named it before it did (RL-8).
func (tx *writeTx) adoptReactions(id []byte, scope int64) error {
	rows, err := tx.reactionsTo.QueryContext(tx.ctx, id)
	if err != nil {
		return fmt.Errorf("look up reactions: %w", err)
	}
	seqs, err := readSeqs(rows)
	if err != nil {
		return fmt.Errorf("look up reactions: %w", err)
	}
	want := hex.EncodeToString(id)
	for _, seq := range seqs {
		t, err := tx.bySeq(seq)
		if err != nil {
			return err
		}
		if t == nil || t.channel.Valid || t.scope.Valid {
			continue
		}
		tags, err := parseTags(t.tagsJSON)
		if err != nil {
			return fmt.Errorf("tags of stored event #%d: %w", seq, err)
		}
		if strings.ToLower(buzz.ScopeTarget(&nostr.Event{Kind: t.kind, Tags: tags})) != want {
			continue
		}
		if _, err := tx.setScope.ExecContext(tx.ctx, scope, seq); err != nil {
			return fmt.Errorf("set scope: %w", err)
		}
	}
	return nil
}

// address is the NIP-01 address ("kind:pubkey:d") of a replaceable or
// addressable event, as deletions name it in `a` tags.
func address(ev *nostr.Event) (string, bool) {
	switch {
	case buzz.IsReplaceableKind(ev.Kind):
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":", true
	case buzz.IsAddressableKind(ev.Kind):
		return strconv.Itoa(ev.Kind) + ":" + ev.PubKey + ":" + ev.Tags.GetD(), true
	}
	return "", false
}

// classification is an event's place in a thread (CW-10, CW-11, CW-12).
type classification struct {
	parent, root, depth sql.NullInt64
	broadcast           bool
	rowClass            int
}

// Row classes of events.row_class: see schema.sql.
const (
	rowNever    = 0
	rowReply    = 1
	rowTopLevel = 2
)

func (tx *writeTx) classify(r *record, channel sql.NullInt64, now int64, importing bool) (classification, error) {
	c := classification{broadcast: r.thread.Broadcast}
	if !channel.Valid || !buzz.IsClassifiedKind(r.ev.Kind) {
		return c, nil
	}
	c.rowClass = rowTopLevel
	if r.thread.Parent == "" {
		c.depth = sql.NullInt64{Valid: true}
		return c, nil
	}
	pid, _ := idKey(r.thread.Parent)
	p, err := tx.knownByID(r, pid)
	if err != nil {
		return c, err
	}
	switch {
	case (p == nil || !p.live(now)) && importing:
		return c, nil // CW-12: kept unclassified until Backfill finds the parent
	case p == nil || !p.live(now):
		return c, buzz.ErrParentNotFound
	case !p.channel.Valid:
		return c, buzz.ErrParentNoChannel
	case p.channel.Int64 != channel.Int64:
		return c, buzz.ErrParentOtherChannel
	case !buzz.IsClassifiedKind(p.kind):
		// A reaction, edit, deletion or moderation event is no thread
		// message: nothing can be a reply to it.
		return c, buzz.ErrParentNotFound
	case !p.depth.Valid:
		// The parent is unclassified itself (legacy, or not a thread kind):
		// so is this reply, and it stays visible as a row until a backfill
		// classifies both (CW-12).
		return c, nil
	}
	rootSeq, rootID := p.seq, p.id
	if p.depth.Int64 > 0 {
		rootSeq = p.root.Int64
		if r.thread.Root != "" {
			root, err := tx.bySeq(rootSeq)
			if err != nil {
				return c, err
			}
			if root == nil {
				return c, fmt.Errorf("thread root %d of %x is missing", rootSeq, p.id)
			}
			rootID = root.id
		}
	}
	if r.thread.Root != "" && r.thread.Root != hex.EncodeToString(rootID) {
		return c, buzz.ErrRootMismatch
	}
	depth := p.depth.Int64 + 1
	if depth > maxDepth {
		return c, buzz.ErrDepthExceeded
	}
	c.parent = sql.NullInt64{Int64: p.seq, Valid: true}
	c.root = sql.NullInt64{Int64: rootSeq, Valid: true}
	c.depth = sql.NullInt64{Int64: depth, Valid: true}
	if depth > 1 || !c.broadcast {
		c.rowClass = rowReply
	}
	return c, nil
}

// nip09Targets resolves the targets of a kind 5 deletion (RL-6): every
// stored event its `e` tags name and every version up to its date of the
// addresses its `a` tags name. One target of another author refuses the
// whole deletion, unless its author may not know of it: that one is
// ignored, as a target not stored is (RL-29). A deletion deletes no
// deletion (NIP-09).
func (tx *writeTx) nip09Targets(r *record) ([]*stored, error) {
	var targets []*stored
	for _, tag := range r.ev.Tags {
		if len(tag) < 2 {
			continue
		}
		var found []*stored
		switch tag[0] {
		case "e":
			// Only the canonical (lowercase) spelling deletes: it is the one
			// the check for deletions that arrive first looks up.
			if !buzz.IsLowerHex64(tag[1]) {
				continue
			}
			id, _ := idKey(tag[1])
			t, err := tx.byID(id)
			if err != nil {
				return nil, err
			}
			if t != nil {
				found = append(found, t)
			}
		case "a":
			vs, err := tx.addressed(tag[1])
			if err != nil {
				return nil, err
			}
			for _, v := range vs {
				if v.createdAt <= int64(r.ev.CreatedAt) {
					found = append(found, v)
				}
			}
		}
		for _, t := range found {
			if !tx.known(r, t) {
				continue
			}
			if !bytes.Equal(t.pubkey, r.pubkey) {
				return nil, buzz.ErrNotAuthor
			}
			if t.kind != buzz.KindDeletion {
				targets = append(targets, t)
			}
		}
	}
	return targets, nil
}

// groupDeleteTarget resolves the one target of a NIP-29 kind 9005 deletion
// (RL-6), checked in the order of the contract: by the target's author or
// an owner or admin of the channel.
func (tx *writeTx) groupDeleteTarget(r *record, channel sql.NullInt64, ch *buzz.Channel, now int64) ([]*stored, error) {
	var ref nostr.Tag
	n := 0
	for _, tag := range r.ev.Tags {
		if len(tag) >= 2 && (tag[0] == "e" || tag[0] == "a") {
			ref = tag
			n++
		}
	}
	if n != 1 {
		return nil, buzz.ErrDeletionTargets
	}
	if !channel.Valid {
		return nil, buzz.ErrMissingH
	}
	var t *stored
	if ref[0] == "e" {
		if buzz.IsLowerHex64(ref[1]) {
			id, _ := idKey(ref[1])
			var err error
			if t, err = tx.knownByID(r, id); err != nil {
				return nil, err
			}
		}
	} else {
		vs, err := tx.addressed(ref[1])
		if err != nil {
			return nil, err
		}
		if len(vs) > 0 && tx.known(r, vs[0]) {
			t = vs[0]
		}
	}
	switch {
	case t == nil || (!t.deletedAt.Valid && !t.live(now)): // deleting a deleted event again is harmless
		return nil, buzz.ErrTargetNotFound
	case t.scope != channel:
		// A reaction without an h tag belongs to its target's channel
		// (RL-8), and a channel admin may delete it there.
		return nil, buzz.ErrTargetOtherChannel
	case !bytes.Equal(t.pubkey, r.pubkey) && tx.community().RoleOf(r.ev.PubKey, ch) < buzz.RoleAdmin:
		return nil, buzz.ErrNotAuthorOrAdmin
	}
	return []*stored{t}, nil
}

// checkEdit enforces RL-7: an edit names its target with its first `e` tag,
// in its own channel, and only the target's author may edit it.
func (tx *writeTx) checkEdit(r *record, channel sql.NullInt64, now int64) error {
	if !channel.Valid {
		return buzz.ErrMissingH
	}
	ref := r.ev.Tags.Find("e")
	if ref == nil {
		return buzz.ErrEditTarget
	}
	id, ok := idKey(ref[1])
	if !ok {
		return buzz.ErrTargetNotFound
	}
	t, err := tx.knownByID(r, id)
	switch {
	case err != nil:
		return err
	case t == nil || !t.live(now):
		return buzz.ErrTargetNotFound
	case t.channel != channel:
		return buzz.ErrTargetOtherChannel
	case !bytes.Equal(t.pubkey, r.pubkey):
		return buzz.ErrNotAuthor
	}
	return nil
}

func (tx *writeTx) byID(id []byte) (*stored, error) {
	s, err := scanStored(tx.eventByID.QueryRowContext(tx.ctx, id))
	if err != nil {
		return nil, fmt.Errorf("look up event %x: %w", id, err)
	}
	return s, nil
}

func (tx *writeTx) bySeq(seq int64) (*stored, error) {
	s, err := scanStored(tx.eventBySeq.QueryRowContext(tx.ctx, seq))
	if err != nil {
		return nil, fmt.Errorf("look up event #%d: %w", seq, err)
	}
	return s, nil
}

// exists runs a `SELECT 1 ... LIMIT 1` statement.
func (tx *writeTx) exists(st *sql.Stmt, args ...any) (bool, error) {
	var one int
	switch err := st.QueryRowContext(tx.ctx, args...).Scan(&one); {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("lookup: %w", err)
	}
	return true, nil
}

// versions lists the stored versions of a replaceable (d ignored) or
// addressable event, deleted ones included: a deleted version still counts
// as the newest, so that re-sending an older one does not bring back what
// its author replaced and then deleted.
func (tx *writeTx) versions(kind int, pubkey []byte, d string) ([]*stored, error) {
	var rows *sql.Rows
	var err error
	if buzz.IsAddressableKind(kind) {
		rows, err = tx.addressableVersion.QueryContext(tx.ctx, kind, pubkey, d)
	} else {
		rows, err = tx.replaceableVersions.QueryContext(tx.ctx, pubkey, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	seqs, err := readSeqs(rows)
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	out := make([]*stored, 0, len(seqs))
	for _, seq := range seqs {
		v, err := tx.bySeq(seq)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// addressed resolves an `a` tag value ("kind:pubkey:d") to the stored
// versions at that address, newest first. Only the canonical spelling (the
// one address() writes: lowercase pubkey, empty d for replaceable kinds)
// names anything, as only it is found by the check for deletions that
// arrive before their target.
func (tx *writeTx) addressed(a string) ([]*stored, error) {
	parts := strings.SplitN(a, ":", 3)
	if len(parts) != 3 || !buzz.IsLowerHex64(parts[1]) {
		return nil, nil
	}
	kind, err := strconv.Atoi(parts[0])
	if err != nil || strconv.Itoa(kind) != parts[0] {
		return nil, nil
	}
	if !buzz.IsAddressableKind(kind) && !(buzz.IsReplaceableKind(kind) && parts[2] == "") {
		return nil, nil
	}
	pubkey, _ := idKey(parts[1])
	vs, err := tx.versions(kind, pubkey, parts[2])
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].createdAt > vs[j-1].createdAt; j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
	return vs, nil
}

// lookupChannel returns the number of channel h, if it has one.
func (tx *writeTx) lookupChannel(h string) (seq int64, found bool, err error) {
	if seq, ok := tx.channels[h]; ok {
		return seq, true, nil
	}
	switch err := tx.channelSeq.QueryRowContext(tx.ctx, h).Scan(&seq); {
	case err == sql.ErrNoRows:
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("look up channel: %w", err)
	}
	tx.channels[h] = seq
	return seq, true, nil
}

func (tx *writeTx) insertChannelRow(h string) (int64, error) {
	res, err := tx.insertChannel.ExecContext(tx.ctx, h)
	if err != nil {
		return 0, fmt.Errorf("create channel: %w", err)
	}
	return res.LastInsertId()
}
