package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// maxDepth bounds the walks up a thread's ancestry (CW-10).
const maxDepth = buzz.MaxDepth

// Admit stores ev, whose id and signature the caller has verified, in one
// transaction (RL-4), as buzz's rules of ingest decide, and says what
// became of it. A refusal is a *buzz.Rejection carrying the exact client
// message.
func (s *Store) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	r, err := newRecord(ev)
	if err != nil {
		return buzz.Admitted{}, err
	}
	var a buzz.Admitted
	err = s.write(ctx, func(tx *writeTx) error {
		var err error
		a, err = s.ingest(tx, r, tx.now, false)
		return err
	})
	return a, err
}

// ImportBatch ingests evs in order, in one transaction, as an import does:
// a reply whose parent is not served is kept unclassified (CW-12), and
// group state is left for RenewGroupState. It returns each event's outcome
// (nil when stored, else a *buzz.Rejection); err is a failure of the batch
// as a whole, after which nothing of it is stored.
func (s *Store) ImportBatch(ctx context.Context, evs []*nostr.Event) (outcomes []error, err error) {
	outcomes = make([]error, len(evs))
	records := make([]*record, len(evs))
	for i, ev := range evs {
		records[i], outcomes[i] = newRecord(ev)
	}
	err = s.write(ctx, func(tx *writeTx) error {
		tx.deferState = true
		tx.copied = map[int64][]tagCopy{}
		for i, r := range records {
			if r == nil {
				continue
			}
			_, outcomes[i] = s.ingest(tx, r, tx.now, true)
			if _, rejected := buzz.AsRejection(outcomes[i]); outcomes[i] != nil && !rejected {
				return outcomes[i]
			}
		}
		return tx.copyTags()
	})
	return outcomes, err
}

// ingest stores one event in tx. Everything before its first write only
// reads, so a rejection leaves tx as it was.
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
		return buzz.Admitted{Applied: true}, tx.applySetting(ev, now)
	}
	// Stored already, or deleted (NIP-09) by its author before it arrived?
	// And did reactions name it before it arrived (adoptReactions)? One
	// round trip: an import pays one per statement.
	var dup, deleted, reacted bool
	err := tx.tx.QueryRow(tx.ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1),
		EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
			WHERE t.name = 'e' AND t.value = $2 AND t.kind = 5 AND d.pubkey = $3 AND d.deleted_at IS NULL),
		EXISTS (SELECT 1 FROM tags WHERE name = 'e' AND value = $2 AND kind = 7)`,
		r.id, tagKey(ev.ID), r.pubkey).Scan(&dup, &deleted, &reacted)
	if err != nil {
		return buzz.Admitted{}, fmt.Errorf("look up event: %w", err)
	}
	switch {
	case dup:
		return buzz.Admitted{}, buzz.ErrDuplicate
	case r.expiresAt != nil && *r.expiresAt <= now:
		return buzz.Admitted{}, buzz.ErrExpired
	case deleted:
		return buzz.Admitted{}, buzz.ErrDeletedBeforeArriving
	}

	lk := &lookup{tx: tx}
	// A channel seen for the first time gets its row with the event's
	// writes below; until then it is number 0, which no stored event has.
	var channel *int64
	var chState *buzz.Channel // nil: the channel does not exist yet
	newChannel := false
	if r.channel != "" {
		seq, found, err := tx.lookupChannel(r.channel)
		if err != nil {
			return buzz.Admitted{}, err
		}
		channel = &seq
		newChannel = !found
		if found {
			chState = tx.channelState(seq, r.channel)
		}
	}

	var superseded []*stored
	if addr, ok := buzz.Address(ev); ok {
		var deleted bool
		err := tx.tx.QueryRow(tx.ctx, `SELECT EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
			WHERE t.name = 'a' AND t.value = $1 AND t.kind = 5 AND t.created_at >= $2 AND d.pubkey = $3
			AND d.deleted_at IS NULL)`, tagKey(addr), int64(ev.CreatedAt), r.pubkey).Scan(&deleted)
		if err != nil {
			return buzz.Admitted{}, fmt.Errorf("look up deletions of %s: %w", addr, err)
		}
		if deleted {
			return buzz.Admitted{}, buzz.ErrDeletedBeforeArriving
		}
		versions, err := lk.Versions(ev.Kind, ev.PubKey, ev.Tags.GetD())
		if err != nil {
			return buzz.Admitted{}, err
		}
		replaced, err := buzz.Supersedes(ev, versions)
		if err != nil {
			return buzz.Admitted{}, err
		}
		superseded = lk.records(replaced)
	}

	var deletes []*buzz.StoredEvent
	switch ev.Kind {
	case buzz.KindDeletion:
		deletes, err = buzz.DeletionTargets(lk, ev)
	case buzz.KindGroupDelete:
		deletes, err = buzz.GroupDeleteTarget(lk, ev, r.channel, chState, now)
	case buzz.KindEdit:
		err = buzz.CheckEdit(lk, ev, r.channel, chState, now)
	}
	if err != nil {
		return buzz.Admitted{}, err
	}
	targets := lk.records(deletes)

	scopeSeq, next, err := buzz.Access(lk, ev, r.channel, chState, deletes, relaySigned)
	if err != nil {
		return buzz.Admitted{}, err
	}
	var scope *int64
	if scopeSeq != 0 || channel != nil {
		scope = &scopeSeq
	}

	placed, err := buzz.Classify(lk, ev, r.thread, r.channel, chState, now, importing)
	if err != nil {
		return buzz.Admitted{}, err
	}
	cls := columnsOf(placed)

	// Every rejection is decided by now: the writes begin.
	if newChannel {
		seq, err := tx.insertChannel(r.channel)
		if err != nil {
			return buzz.Admitted{}, err
		}
		channel, scope = &seq, &seq
		if next == nil {
			// Named by an event, not created: open, without members.
			implicit := &buzz.Channel{Seq: seq, H: r.channel, Members: map[string]buzz.Role{}}
			tx.changeCommunity().Put(implicit)
			tx.stateChanged(implicit.Seq)
		}
	}
	var seq int64
	err = tx.tx.QueryRow(tx.ctx, `INSERT INTO events
		(id, pubkey, created_at, kind, tags, content, sig, channel, dkey, expires_at,
		 parent, root, depth, broadcast, row_class, scope, feed)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,
		 CASE WHEN $4 IN (9, 11) AND $8::bigint IS NOT NULL THEN feed_stream($8) END) RETURNING seq`,
		r.id, r.pubkey, int64(ev.CreatedAt), ev.Kind, r.tagsJSON, []byte(ev.Content), r.sig, channel, r.dkey, r.expiresAt,
		cls.parent, cls.root, cls.depth, cls.broadcast, cls.rowClass, scope).Scan(&seq)
	if err != nil {
		return buzz.Admitted{}, fmt.Errorf("insert event: %w", err)
	}
	if err := tx.insertTags(r.tags, int64(ev.CreatedAt), seq, ev.Kind); err != nil {
		return buzz.Admitted{}, err
	}
	if channel != nil && cls.rowClass >= 1 {
		if _, err := tx.tx.Exec(tx.ctx, raiseLastMessageSQL, *channel, int64(ev.CreatedAt)); err != nil {
			return buzz.Admitted{}, fmt.Errorf("channel's last message: %w", err)
		}
	}
	if err := tx.touchEvent(&stored{seq: seq, kind: ev.Kind, tagsJSON: r.tagsJSON, channel: channel, scope: scope}); err != nil {
		return buzz.Admitted{}, err
	}
	if cls.parent != nil {
		if err := tx.addToAncestors(*cls.parent, r.pubkey, int64(ev.CreatedAt)); err != nil {
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
		next.Seq = *channel
		if err := tx.saveChannel(chState, next, int64(ev.CreatedAt), now); err != nil {
			return buzz.Admitted{}, err
		}
	}
	if reacted && scope != nil && channel != nil {
		if err := tx.adoptReactions(r.id, *scope); err != nil {
			return buzz.Admitted{}, err
		}
	}
	a := buzz.Admitted{}
	if !importing { // an import has no one to tell
		if a.Threads, err = threadChanges(tx.ctx, tx.tx, tx.recounted); err != nil {
			return buzz.Admitted{}, err
		}
		tx.noted(seq)
	}
	if scope != nil {
		if ch := tx.community().ChannelBySeq(*scope); ch != nil {
			a.Scope = ch.H
		}
	}
	return a, nil
}

// insertTags writes the tag index rows of event seq; in an import batch,
// those that no later event of the batch reads are left for its COPY.
func (tx *writeTx) insertTags(rows []tagRow, createdAt, seq int64, kind int) error {
	if tx.copied != nil && !tagsReadByIngest(kind) {
		for _, t := range rows {
			tx.copied[seq] = append(tx.copied[seq], tagCopy{name: t.name, value: t.value, createdAt: createdAt, kind: kind})
		}
		return nil
	}
	for _, t := range rows {
		if _, err := tx.tx.Exec(tx.ctx, `INSERT INTO tags (name, value, created_at, seq, kind) VALUES ($1,$2,$3,$4,$5)
			ON CONFLICT DO NOTHING`, t.name, t.value, createdAt, seq, kind); err != nil {
			return fmt.Errorf("insert tag: %w", err)
		}
	}
	return nil
}

// tagsReadByIngest reports whether ingest reads back the tag index rows of
// events of kind: those of deletions (a target arriving after its
// deletion, by id or address) and of reactions (adopted by a target that
// arrives after them). The rows of every other kind are only read by
// queries, which never run inside a write.
func tagsReadByIngest(kind int) bool {
	return kind == buzz.KindDeletion || kind == buzz.KindReaction
}

// tagCopy is a tag index row an import batch writes with its COPY.
type tagCopy struct {
	name      string
	value     []byte
	createdAt int64
	kind      int
}

// copyTags writes the tag index rows the import batch left for it in one
// COPY: a statement a row cost an import more than storing the event.
func (tx *writeTx) copyTags() error {
	var rows [][]any
	for seq, tags := range tx.copied {
		for _, t := range tags {
			rows = append(rows, []any{t.name, t.value, t.createdAt, seq, t.kind})
		}
	}
	tx.copied = nil
	if len(rows) == 0 {
		return nil
	}
	n, err := tx.tx.CopyFrom(tx.ctx, pgx.Identifier{"tags"}, []string{"name", "value", "created_at", "seq", "kind"}, pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("copy tag index rows: %w", err)
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("copy tag index rows: %d of %d written", n, len(rows))
	}
	return nil
}

// adoptReactions gives the scope of a channel event that just arrived to
// the reactions without a channel that named it before it did (RL-8).
func (tx *writeTx) adoptReactions(id []byte, scope int64) error {
	want := hex.EncodeToString(id)
	rows, err := tx.tx.Query(tx.ctx, `SELECT seq FROM tags WHERE name = 'e' AND value = $1 AND kind = 7`, tagKey(want))
	if err != nil {
		return fmt.Errorf("look up reactions: %w", err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("look up reactions: %w", err)
	}
	for _, seq := range seqs {
		t, err := tx.bySeq(seq)
		if err != nil {
			return err
		}
		if t == nil || t.channel != nil || t.scope != nil {
			continue
		}
		tags, err := tagjson.Parse(string(t.tagsJSON))
		if err != nil {
			return fmt.Errorf("tags of stored event #%d: %w", seq, err)
		}
		if strings.ToLower(buzz.ScopeTarget(&nostr.Event{Kind: t.kind, Tags: tags})) != want {
			continue
		}
		if _, err := tx.tx.Exec(tx.ctx, `UPDATE events SET scope = $1 WHERE seq = $2`, scope, seq); err != nil {
			return fmt.Errorf("set scope: %w", err)
		}
		t.scope = &scope
		if err := tx.touchEvent(t); err != nil {
			return err
		}
	}
	return nil
}

// classification is an event's place in a thread as the events table
// stores it (CW-10, CW-11, CW-12).
type classification struct {
	parent, root, depth *int64
	broadcast           bool
	rowClass            int16
}

// columnsOf is a classification as the events table stores it.
func columnsOf(c buzz.Classification) classification {
	cls := classification{broadcast: c.Broadcast, rowClass: int16(c.Row)}
	if c.Classified {
		depth := c.Depth
		cls.depth = &depth
		if c.Depth > 0 {
			parent, root := c.ParentRef, c.RootRef
			cls.parent, cls.root = &parent, &root
		}
	}
	return cls
}

// lookup is what the rules of ingest (buzz.Lookup) read in a write
// transaction. It keeps the records it found, so that the writes carrying
// out the rules' decisions take them back by number.
type lookup struct {
	tx    *writeTx
	found map[int64]*stored
}

// fact is what the rules know of s, which it keeps.
func (l *lookup) fact(s *stored) *buzz.StoredEvent {
	if s == nil {
		return nil
	}
	if l.found == nil {
		l.found = map[int64]*stored{}
	}
	l.found[s.seq] = s
	return &buzz.StoredEvent{
		Ref:        s.seq,
		ID:         hex.EncodeToString(s.id),
		PubKey:     hex.EncodeToString(s.pubkey),
		Kind:       s.kind,
		CreatedAt:  s.createdAt,
		Channel:    value(s.channel),
		Scope:      value(s.scope),
		Classified: s.depth != nil,
		Depth:      value(s.depth),
		RootRef:    value(s.root),
		Deleted:    s.deletedAt != nil,
		ExpiresAt:  value(s.expiresAt),
	}
}

// records are the stored records of events the rules chose.
func (l *lookup) records(evs []*buzz.StoredEvent) []*stored {
	out := make([]*stored, len(evs))
	for i, e := range evs {
		out[i] = l.found[e.Ref]
	}
	return out
}

func (l *lookup) EventByID(id string) (*buzz.StoredEvent, error) {
	key, _ := nipcw.ID32(id)
	s, err := l.tx.byID(key)
	return l.fact(s), err
}

func (l *lookup) EventByRef(ref int64) (*buzz.StoredEvent, error) {
	s, err := l.tx.bySeq(ref)
	return l.fact(s), err
}

func (l *lookup) Versions(kind int, pubkey, d string) ([]*buzz.StoredEvent, error) {
	key, err := nipcw.DecodeHex(pubkey, 32)
	if err != nil {
		return nil, fmt.Errorf("versions of %d:%s: %w", kind, pubkey, err)
	}
	vs, err := l.tx.versions(kind, key, d)
	if err != nil {
		return nil, err
	}
	out := make([]*buzz.StoredEvent, len(vs))
	for i, v := range vs {
		out[i] = l.fact(v)
	}
	return out, nil
}

func (l *lookup) ChannelNumber(h string) (int64, bool, error) { return l.tx.lookupChannel(h) }

func (l *lookup) Community() *buzz.Community { return l.tx.community() }

// storedOne reads the stored event of a one-row query; nil when none.
func (tx *writeTx) storedOne(query string, arg any) (*stored, error) {
	s, err := scanStored(tx.tx.QueryRow(tx.ctx, query, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return s, err
}

func (tx *writeTx) byID(id []byte) (*stored, error) {
	s, err := tx.storedOne(`SELECT `+storedColumns+` FROM events WHERE id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("look up event %x: %w", id, err)
	}
	return s, nil
}

func (tx *writeTx) bySeq(seq int64) (*stored, error) {
	s, err := tx.storedOne(`SELECT `+storedColumns+` FROM events WHERE seq = $1`, seq)
	if err != nil {
		return nil, fmt.Errorf("look up event #%d: %w", seq, err)
	}
	return s, nil
}

// versions lists the stored versions of a replaceable (d ignored) or
// addressable event, deleted ones included: a deleted version still counts
// as the newest.
func (tx *writeTx) versions(kind int, pubkey []byte, d string) ([]*stored, error) {
	var rows pgx.Rows
	var err error
	if buzz.IsAddressableKind(kind) {
		rows, err = tx.tx.Query(tx.ctx, `SELECT `+storedColumns+` FROM events
			WHERE kind = $1 AND pubkey = $2 AND dkey = $3`, kind, pubkey, tagKey(d))
	} else {
		rows, err = tx.tx.Query(tx.ctx, `SELECT `+storedColumns+` FROM events
			WHERE pubkey = $1 AND kind = $2`, pubkey, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	defer rows.Close()
	var out []*stored
	for rows.Next() {
		v, err := scanStored(rows)
		if err != nil {
			return nil, fmt.Errorf("look up versions: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	return out, nil
}

// lookupChannel returns the number of channel h, if it has one.
func (tx *writeTx) lookupChannel(h string) (seq int64, found bool, err error) {
	// Every channel row is in the access state, which the transaction
	// holds as of its write lock; the table answers what it does not
	// know yet.
	if ch := tx.community().Channel(h); ch != nil && ch.Seq != 0 {
		return ch.Seq, true, nil
	}
	switch err := tx.tx.QueryRow(tx.ctx, `SELECT seq FROM channels WHERE h = $1`, h).Scan(&seq); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("look up channel: %w", err)
	}
	return seq, true, nil
}

func (tx *writeTx) insertChannel(h string) (int64, error) {
	var seq int64
	if err := tx.tx.QueryRow(tx.ctx, `INSERT INTO channels (h) VALUES ($1) RETURNING seq`, h).Scan(&seq); err != nil {
		return 0, fmt.Errorf("create channel: %w", err)
	}
	return seq, nil
}
