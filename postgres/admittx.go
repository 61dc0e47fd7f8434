package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// admission is one event's admission in a write transaction
// (buzz.WriteTx): the record of the event and the statements that read
// and write its rows. It decides nothing: buzz.Admit does.
type admission struct {
	*lookup
	tx *writeTx
	r  *record
	// seq is the event's number once InsertEvent stored it.
	seq int64
}

// Seen asks in one round trip what every event raises: stored already,
// deleted (NIP-09) by its author before it arrived, named by a reaction.
// A batch's are read ahead (writeCache).
func (a *admission) Seen() (buzz.Seen, error) {
	if s, ok := a.tx.cache.seen(a.r); ok {
		return s, nil
	}
	var s buzz.Seen
	err := a.tx.tx.QueryRow(a.tx.ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE id = $1),
		EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
			WHERE t.name = 'e' AND t.value = $2 AND t.kind = 5 AND d.pubkey = $3 AND d.deleted_at IS NULL),
		EXISTS (SELECT 1 FROM tags WHERE name = 'e' AND value = $2 AND kind = 7)`,
		a.r.ID, tagKey(a.r.Event.ID), a.r.PubKey).Scan(&s.Stored, &s.DeletedBefore, &s.NamedByReaction)
	if err != nil {
		return buzz.Seen{}, fmt.Errorf("look up event: %w", err)
	}
	return s, nil
}

func (a *admission) AddressDeleted(addr string) (bool, error) {
	var deleted bool
	err := a.tx.tx.QueryRow(a.tx.ctx, `SELECT EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
		WHERE t.name = 'a' AND t.value = $1 AND t.kind = 5 AND t.created_at >= $2 AND d.pubkey = $3
		AND d.deleted_at IS NULL)`, tagKey(addr), int64(a.r.Event.CreatedAt), a.r.PubKey).Scan(&deleted)
	if err != nil {
		return false, fmt.Errorf("look up deletions of %s: %w", addr, err)
	}
	return deleted, nil
}

func (a *admission) SetThreadRepliesInChannel(v bool) error {
	if _, err := a.tx.tx.Exec(a.tx.ctx, `INSERT INTO settings (key, value) VALUES ('thread_replies_in_channel', $1)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, boolInt(v)); err != nil {
		return fmt.Errorf("write setting: %w", err)
	}
	a.Change().ThreadRepliesInChannel = v
	return nil
}

func (a *admission) InsertChannel(h string) (int64, error) {
	var seq int64
	if err := a.tx.tx.QueryRow(a.tx.ctx, `INSERT INTO channels (h) VALUES ($1) RETURNING seq`, h).Scan(&seq); err != nil {
		return 0, fmt.Errorf("create channel: %w", err)
	}
	return seq, nil
}

func (a *admission) UpdateChannel(ch *buzz.Channel, createdAt, deletedAt int64) error {
	if _, err := a.tx.tx.Exec(a.tx.ctx, `UPDATE channels SET created_at = coalesce(created_at, $1), name = $2, about = $3,
		private = $4, deleted_at = coalesce(deleted_at, $5), picture = $6, parent = $7 WHERE seq = $8`,
		nilUnlessZero(createdAt), ch.Name, ch.About, ch.Private, nilUnlessZero(deletedAt), ch.Picture,
		nilUnlessZero(ch.Parent), ch.Seq); err != nil {
		return fmt.Errorf("update channel: %w", err)
	}
	return nil
}

// childChannelsSQL reads a deleted channel's subgroups (RL-36) along
// channels_parent, however many channels there are (RL-27a).
const childChannelsSQL = `SELECT seq FROM channels WHERE parent = $1 LIMIT $2`

func (a *admission) ChildChannels(parent int64, limit int) ([]int64, error) {
	rows, err := a.tx.tx.Query(a.tx.ctx, childChannelsSQL, parent, limit)
	return collect(rows, err, pgx.RowTo[int64])
}

func (a *admission) PutMember(channel int64, pubkey []byte, role buzz.Role) error {
	_, err := a.tx.tx.Exec(a.tx.ctx, `INSERT INTO members (channel, pubkey, role) VALUES ($1, $2, $3)
		ON CONFLICT (channel, pubkey) DO UPDATE SET role = excluded.role`, channel, pubkey, int16(role))
	return err
}

func (a *admission) DeleteMember(channel int64, pubkey []byte) error {
	_, err := a.tx.tx.Exec(a.tx.ctx, `DELETE FROM members WHERE channel = $1 AND pubkey = $2`, channel, pubkey)
	return err
}

// eventRowColumns are the columns of an event's row as a write gives them,
// in the order of insertEventSQL's parameters and of copyEvents' rows.
var eventRowColumns = []string{"seq", "id", "pubkey", "created_at", "kind", "tags", "content", "sig", "channel", "dkey", "expires_at",
	"parent", "root", "depth", "broadcast", "row_class", "scope", "feed"}

// insertEventSQL writes an event's row under the number $1 drawn for it
// (nextSeq).
var insertEventSQL = `INSERT INTO events (` + strings.Join(eventRowColumns, ", ") + `)
	OVERRIDING SYSTEM VALUE
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)`

// drawSeqsSQL draws $1 event numbers from the events' sequence, in order.
const drawSeqsSQL = `SELECT nextval(pg_get_serial_sequence('events', 'seq')) FROM generate_series(1, $1) ORDER BY 1`

// nextSeq is the number of the next event the transaction inserts. The
// numbers are drawn from the events' sequence as the identity column
// draws them, as many at once as the transaction expects events
// (writeTx.expect), so that the rows can be queued without a round trip
// each for their number; one drawn and not used is a gap, as a rolled
// back insert leaves. They are drawn under the write lock, so events are
// numbered in the order of their commits across processes, as before.
func (tx *writeTx) nextSeq() (int64, error) {
	if len(tx.seqs) == 0 {
		rows, err := tx.tx.Query(tx.ctx, drawSeqsSQL, max(tx.expect, 1))
		seqs, err := collect(rows, err, pgx.RowTo[int64])
		if err != nil {
			return 0, fmt.Errorf("draw event numbers: %w", err)
		}
		tx.seqs = seqs
	}
	seq := tx.seqs[0]
	tx.seqs = tx.seqs[1:]
	return seq, nil
}

// InsertEvent writes the event's row and its tag index rows, and notes
// the pages it changes.
func (a *admission) InsertEvent(row buzz.EventRow) error {
	tx, r, ev := a.tx, a.r, a.r.Event
	cls := columnsOf(row.Class)
	channel, scope := nilUnlessZero(row.Channel), nilUnlessZero(row.Scope)
	var err error
	if a.seq, err = tx.nextSeq(); err != nil {
		return err
	}
	var feed *int64
	if stream, ok := tx.access.Community().FeedStream(ev.Kind, row.Channel); ok {
		feed = &stream
	}
	columns := []any{a.seq, r.ID, r.PubKey, int64(ev.CreatedAt), int32(ev.Kind), r.tagsJSON, []byte(ev.Content), r.Sig, channel, r.dkey, r.expiresAt(),
		cls.parent, cls.root, cls.depth, cls.broadcast, cls.rowClass, scope, feed}
	// Every later read of the row comes after it (pipeTx): a transaction
	// of several events writes their rows with one COPY, a statement a
	// row costing the server more than the row's index entries.
	if tx.expect > 1 {
		tx.tx.copyEvent(columns)
	} else {
		tx.tx.queue(insertEventSQL, columns...)
	}
	if err := tx.insertTags(r.tags, int64(ev.CreatedAt), a.seq, ev.Kind); err != nil {
		return err
	}
	s := &stored{seq: a.seq, id: r.ID, pubkey: r.PubKey, createdAt: int64(ev.CreatedAt), kind: ev.Kind, tagsJSON: r.tagsJSON,
		channel: channel, depth: cls.depth, parent: cls.parent, root: cls.root, expiresAt: r.expiresAt(), scope: scope}
	tx.cache.inserted(r, s, cls.rowClass)
	return tx.touchEvent(s)
}

func (a *admission) RaiseLastMessage(channel, at int64) error {
	if a.tx.raised == nil {
		a.tx.raised = map[int64]int64{}
	}
	a.tx.raised[channel] = max(a.tx.raised[channel], at)
	return nil
}

func (a *admission) AddToAncestors(parent int64) error {
	return a.tx.addToAncestors(parent, a.r.PubKey, int64(a.r.Event.CreatedAt))
}

func (a *admission) ReactionsNaming(id string) ([]int64, error) {
	rows, err := a.tx.tx.Query(a.tx.ctx, `SELECT seq FROM tags WHERE name = 'e' AND value = $1 AND kind = 7`, tagKey(id))
	if err == nil {
		var seqs []int64
		if seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err == nil {
			return seqs, nil
		}
	}
	return nil, fmt.Errorf("look up reactions to %s: %w", id, err)
}

// SetScope sets the scope of a reaction ReactionsNaming returned, and
// notes the pages it changes.
func (a *admission) SetScope(ref, scope int64) error {
	if _, err := a.tx.tx.Exec(a.tx.ctx, `UPDATE events SET scope = $1 WHERE seq = $2`, scope, ref); err != nil {
		return fmt.Errorf("set scope: %w", err)
	}
	t := a.Row(ref)
	a.tx.cache.changed(t)
	t.scope = &scope
	return a.tx.touchEvent(t)
}

func (a *admission) RecountedThreads() ([]buzz.ThreadChange, error) {
	if changes, ok := a.tx.cache.threadChanges(a.tx.recounted, a.Community()); ok {
		return changes, nil
	}
	return threadChanges(a.tx.ctx, a.tx.tx, a.tx.recounted)
}

func (a *admission) InviteRefs(channel int64, code string, limit int) ([]int64, error) {
	rows, err := a.tx.tx.Query(a.tx.ctx, `SELECT event FROM invites WHERE channel = $1 AND code = $2
		ORDER BY event DESC LIMIT $3`, channel, code, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

func (a *admission) PutInvite(channel int64, code string) error {
	_, err := a.tx.tx.Exec(a.tx.ctx, `INSERT INTO invites (channel, code, event) VALUES ($1, $2, $3)`, channel, code, a.seq)
	return err
}

func (a *admission) DeleteInvites(ref int64) (int, error) { return a.tx.dropInvites(ref) }

// dropInvites takes away the invite of the 9009 numbered ref
// (buzz.InviteRows.DeleteInvites), for an admission and for the purge.
func (tx *writeTx) dropInvites(ref int64) (int, error) {
	tag, err := tx.tx.Exec(tx.ctx, `DELETE FROM invites WHERE event = $1`, ref)
	return int(tag.RowsAffected()), err
}

// nilUnlessZero is v as a column, NULL for 0: a channel number, or a time
// the rules did not set.
func nilUnlessZero(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}
