package sqlite

import (
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// admission is one event's admission in the writer's transaction
// (buzz.WriteTx): the record of the event and the statements that read
// and write its rows. It decides nothing: buzz.Admit does.
type admission struct {
	*lookup
	tx *writeTx
	r  *record
	// named is whether a deletion stored before the event names it (for
	// the aux kinds, schema.sql: named_by_deletion), as Seen read it.
	named bool
	// seq is the event's number once InsertEvent stored it.
	seq int64
}

// Seen asks in one statement what every event raises: stored already,
// deleted (NIP-09) before it arrived, named by a reaction, and for an aux
// event, named by a deletion.
func (a *admission) Seen() (buzz.Seen, error) {
	st, r := a.tx.seen, a.r
	defer st.reset()
	switch found, err := st.first(r.ID, r.PubKey, nipcw.IsAuxKind(r.Event.Kind)); {
	case err != nil:
		return buzz.Seen{}, fmt.Errorf("look up event: %w", err)
	case !found:
		return buzz.Seen{}, fmt.Errorf("look up event: %w", errNoRow)
	}
	a.named = st.int64(2) != 0
	return buzz.Seen{Stored: st.int64(0) != 0, DeletedBefore: st.int64(1) != 0, NamedByReaction: st.int64(3) != 0}, nil
}

func (a *admission) AddressDeleted(addr string) (bool, error) {
	return a.tx.exists(a.tx.deletedAddress, addr, int64(a.r.Event.CreatedAt), a.r.PubKey)
}

func (a *admission) SetThreadRepliesInChannel(v bool) error {
	if _, err := a.tx.putSetting.ExecContext(a.tx.ctx, "thread_replies_in_channel", boolInt(v)); err != nil {
		return fmt.Errorf("write setting: %w", err)
	}
	a.Change().ThreadRepliesInChannel = v
	return nil
}

func (a *admission) InsertChannel(h string) (int64, error) {
	res, err := a.tx.insertChannel.ExecContext(a.tx.ctx, h)
	if err != nil {
		return 0, fmt.Errorf("create channel: %w", err)
	}
	return res.LastInsertId()
}

func (a *admission) UpdateChannel(ch *buzz.Channel, createdAt, deletedAt int64) error {
	_, err := a.tx.updateChannel.ExecContext(a.tx.ctx, nullUnlessZero(createdAt), ch.Name, ch.About, ch.Private,
		nullUnlessZero(deletedAt), ch.Picture, nullUnlessZero(ch.Parent), ch.Seq)
	if err != nil {
		return fmt.Errorf("update channel: %w", err)
	}
	return nil
}

func (a *admission) ChildChannels(parent int64, limit int) ([]int64, error) {
	rows, err := a.tx.childChannels.QueryContext(a.tx.ctx, parent, limit)
	if err != nil {
		return nil, err
	}
	return readSeqs(rows)
}

func (a *admission) PutMember(channel int64, pubkey []byte, role buzz.Role) error {
	_, err := a.tx.putMember.ExecContext(a.tx.ctx, channel, pubkey, role)
	return err
}

func (a *admission) DeleteMember(channel int64, pubkey []byte) error {
	_, err := a.tx.deleteMember.ExecContext(a.tx.ctx, channel, pubkey)
	return err
}

// InsertEvent writes the event's row and its tag index rows; for a
// deletion, it marks the aux events its e tags name (named_by_deletion).
func (a *admission) InsertEvent(row buzz.EventRow) error {
	tx, r, ev := a.tx, a.r, a.r.Event
	cls := columnsOf(row.Class)
	channel, scope := nullUnlessZero(row.Channel), nullUnlessZero(row.Scope)
	err := tx.insertEvent.exec(r.ID, r.PubKey, int64(ev.CreatedAt), ev.Kind,
		r.tagsJSON, ev.Content, r.Sig, channel, r.dtag, r.expiresAt(),
		cls.parent, cls.root, cls.depth, cls.broadcast, cls.rowClass, scope, a.named)
	if err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	seq := tx.insertEvent.lastInsertID()
	a.seq = seq
	tx.storedIn(channel, scope)
	deletion := ev.Kind == buzz.KindDeletion || ev.Kind == buzz.KindGroupDelete
	for _, t := range r.tags {
		if err := tx.insertTag.exec(t.name, t.value, int64(ev.CreatedAt), seq, ev.Kind); err != nil {
			return fmt.Errorf("insert tag: %w", err)
		}
		if id, ok := t.value.([]byte); ok && deletion && t.name == "e" {
			if _, err := tx.nameByDeletion.ExecContext(tx.ctx, id); err != nil {
				return fmt.Errorf("name a deleted event: %w", err)
			}
		}
	}
	return nil
}

func (a *admission) RaiseLastMessage(channel, at int64) error {
	if err := a.tx.raiseLastMessage.exec(channel, at); err != nil {
		return fmt.Errorf("channel's last message: %w", err)
	}
	return nil
}

func (a *admission) AddToAncestors(parent int64) error {
	return a.tx.addToAncestors(parent, a.r.PubKey, int64(a.r.Event.CreatedAt))
}

func (a *admission) ReactionsNaming(id string) ([]int64, error) {
	key, err := nipcw.DecodeHex(id, 32)
	if err == nil {
		var rows *sql.Rows
		if rows, err = a.tx.reactionsTo.QueryContext(a.tx.ctx, key); err == nil {
			var seqs []int64
			if seqs, err = readSeqs(rows); err == nil {
				return seqs, nil
			}
		}
	}
	return nil, fmt.Errorf("look up reactions to %s: %w", id, err)
}

func (a *admission) SetScope(ref, scope int64) error {
	if _, err := a.tx.setScope.ExecContext(a.tx.ctx, scope, ref); err != nil {
		return fmt.Errorf("set scope: %w", err)
	}
	return nil
}

func (a *admission) RecountedThreads() ([]buzz.ThreadChange, error) { return a.tx.recountedThreads() }

func (a *admission) InviteRefs(channel int64, code string, limit int) ([]int64, error) {
	rows, err := a.tx.inviteRefs.QueryContext(a.tx.ctx, channel, code, limit)
	if err != nil {
		return nil, err
	}
	return readSeqs(rows)
}

func (a *admission) PutInvite(channel int64, code string) error {
	_, err := a.tx.putInvite.ExecContext(a.tx.ctx, channel, code, a.seq)
	return err
}

func (a *admission) DeleteInvites(ref int64) (int, error) { return a.tx.dropInvites(ref) }

// dropInvites takes away the invite of the 9009 numbered ref
// (buzz.InviteRows.DeleteInvites), for an admission and for the purge.
func (tx *writeTx) dropInvites(ref int64) (int, error) {
	res, err := tx.deleteInvites.ExecContext(tx.ctx, ref)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// nullUnlessZero is v as a column, NULL for 0: a channel number, or a
// time the rules did not set.
func nullUnlessZero(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: v != 0} }
