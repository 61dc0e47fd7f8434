package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Community returns the access state now: policy, channels, members and
// settings. It is what every access decision reads (RL-12..RL-15); it is
// never modified, a change publishes a new one.
func (s *Store) Community() *buzz.Community { return s.writer.community.Load() }

// OnPublish sets fn to be called, after their transaction commits, with
// the group state events (39000-39003) the store signed and stored, so that
// the relay can deliver them to open subscriptions.
func (s *Store) OnPublish(fn func([]*nostr.Event)) { s.writer.onPublish.Store(&fn) }

// watchEvery is how often the store looks for changes of the access state
// that another process (an import beside the relay) committed.
const watchEvery = time.Second

// refreshCommunity reads the access state afresh when another process
// changed it.
func (s *Store) refreshCommunity(ctx context.Context) error {
	return s.readTx(ctx, func(tx *sql.Tx) error {
		_, err := s.communityIn(ctx, tx)
		return err
	})
}

// communityIn is the access state for a read in tx: the published one,
// unless tx sees a change committed since. A query must not judge the
// events it sees by an older state: one that does not know a private
// channel another process just created would let them through (RL-13).
// A change this process's writer committed and is about to publish is
// taken as it is (committing); only one from another process is read
// afresh from tx (and published): a read costs the same however many
// channels there are, even while the state changes (RL-27a).
func (s *Store) communityIn(ctx context.Context, tx *sql.Tx) (*buzz.Community, error) {
	cur := s.Community()
	var version int64
	var stamp sql.NullInt64
	st, err := s.prepared(ctx, tx, accessVersionSQL)
	if err != nil {
		return nil, fmt.Errorf("read access version: %w", err)
	}
	if err := st.QueryRowContext(ctx).Scan(&version, &stamp); err != nil {
		return nil, fmt.Errorf("read access version: %w", err)
	}
	if version <= cur.Version {
		return cur, nil
	}
	if p := s.writer.committing.Load(); p != nil && stamp.Valid && p.stamp == stamp.Int64 && p.state.Version == version {
		return p.state, nil
	}
	fresh, err := loadCommunity(ctx, tx, cur.Policy)
	if err != nil {
		return nil, err
	}
	buzz.PublishNewer(&s.writer.community, fresh)
	return fresh, nil
}

// accessVersionSQL reads the access version and stamp of a snapshot.
const accessVersionSQL = `SELECT (SELECT value FROM settings WHERE key = 'access_version'),
		(SELECT value FROM settings WHERE key = 'access_stamp')`

// communityDirect is communityIn for a page read on a direct connection.
// A change made by another process is read afresh through the read pool
// and published; it is tx's state unless another change came meanwhile
// (errAccessMoved).
func (s *Store) communityDirect(ctx context.Context, tx directTx) (*buzz.Community, error) {
	cur := s.Community()
	st, err := tx.query(accessVersionSQL)
	if err != nil {
		return nil, fmt.Errorf("read access version: %w", err)
	}
	found, err := st.step()
	if err != nil || !found {
		st.reset()
		return nil, fmt.Errorf("read access version: %w", cmp.Or(err, errors.New("no row")))
	}
	version := st.int64(0)
	stamp, hasStamp := st.nullInt64(1)
	st.reset()
	if version <= cur.Version {
		return cur, nil
	}
	if p := s.writer.committing.Load(); p != nil && hasStamp && p.stamp == stamp && p.state.Version == version {
		return p.state, nil
	}
	if err := s.refreshCommunity(ctx); err != nil {
		return nil, err
	}
	if cur = s.Community(); cur.Version != version {
		return nil, errAccessMoved
	}
	return cur, nil
}

// errAccessMoved is a page read whose snapshot's access state could not be
// had: it changed again meanwhile. A page judged by a newer state than it
// reads could serve an event deleted before its reader was let in; the
// page is read again (pageRead).
var errAccessMoved = errors.New("the access state changed during the read")

// committingState is an access state the writer committed, or is about to
// commit, under a random stamp: a reader that finds the stamp in its
// snapshot knows that this state is the one committed, before the writer
// publishes it. A state whose commit failed left its stamp nowhere.
type committingState struct {
	state *buzz.Community
	stamp int64
}

// queryer is a connection, transaction or pool.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loadCommunity reads the whole access state (buzz.CommunityOf).
func loadCommunity(ctx context.Context, q queryer, policy buzz.Policy) (*buzz.Community, error) {
	var version int64
	var replies sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT value FROM settings WHERE key = 'access_version'),
		(SELECT value FROM settings WHERE key = 'thread_replies_in_channel')`).Scan(&version, &replies)
	if err != nil {
		return nil, fmt.Errorf("load settings: %w", err)
	}
	var channels []*buzz.Channel
	err = eachRow(ctx, q, `SELECT seq, h, created_at IS NOT NULL, name, picture, about, private, coalesce(parent, 0),
		deleted_at IS NOT NULL, (SELECT count(*) FROM invites i WHERE i.channel = channels.seq) FROM channels`,
		func(rows *sql.Rows) error {
			ch := &buzz.Channel{}
			channels = append(channels, ch)
			return rows.Scan(&ch.Seq, &ch.H, &ch.Created, &ch.Name, &ch.Picture, &ch.About, &ch.Private, &ch.Parent, &ch.Deleted, &ch.Invites)
		})
	if err != nil {
		return nil, fmt.Errorf("load channels: %w", err)
	}
	var members []buzz.MemberRow
	err = eachRow(ctx, q, `SELECT channel, pubkey, role FROM members`, func(rows *sql.Rows) error {
		var m buzz.MemberRow
		err := rows.Scan(&m.Channel, &m.PubKey, &m.Role)
		members = append(members, m)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load members: %w", err)
	}
	return buzz.CommunityOf(policy, version, replies.Int64 != 0, channels, members), nil
}

// eachRow runs query and scan on each row of its result.
func eachRow(ctx context.Context, q queryer, query string, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// applyConfiguredSetting makes the config file's thread_replies_in_channel
// the community setting when it changed since the last start: that edit is
// then the newest write, and wins over an earlier 9033 (RL-15, last write
// wins). An unchanged config leaves a 9033's value in force.
func applyConfiguredSetting(ctx context.Context, conn *sql.Conn, configured bool) error {
	return inTx(ctx, conn, func() error {
		var last sql.NullInt64
		err := conn.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'thread_replies_in_channel.config'`).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read settings: %w", err)
		}
		v := boolInt(configured)
		if last.Valid && last.Int64 == v {
			return nil
		}
		_, err = conn.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES
			('thread_replies_in_channel.config', ?1), ('thread_replies_in_channel', ?1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value;
			UPDATE settings SET value = value + 1 WHERE key = 'access_version'`, v)
		if err != nil {
			return fmt.Errorf("write settings: %w", err)
		}
		return nil
	})
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// storedIn notes the channel and scope of an event the transaction
// stored, whose window pages it changes.
func (tx *writeTx) storedIn(channel, scope sql.NullInt64) {
	if tx.stored == nil {
		tx.stored = map[int64]bool{}
	}
	for _, c := range []sql.NullInt64{channel, scope} {
		if c.Valid {
			tx.stored[c.Int64] = true
		}
	}
}

// finish ends a batch of jobs before its commit: it bumps the page version
// of every channel an event was stored in (schema.sql: page_versions), and
// when the access state changed, it bumps access_version and renews the
// group state of every channel that changed.
func (s *Store) finish(tx *writeTx) error {
	for c := range tx.stored {
		if _, err := tx.bumpPages.ExecContext(tx.ctx, c); err != nil {
			return fmt.Errorf("bump page version of channel %d: %w", c, err)
		}
	}
	next := tx.access.Commit()
	if next == nil {
		return nil
	}
	if _, err := tx.putSetting.ExecContext(tx.ctx, "access_version", next.Version); err != nil {
		return fmt.Errorf("bump access version: %w", err)
	}
	stamp := rand.Int64()
	if _, err := tx.putSetting.ExecContext(tx.ctx, "access_stamp", stamp); err != nil {
		return fmt.Errorf("stamp access version: %w", err)
	}
	s.writer.committing.Store(&committingState{state: next, stamp: stamp})
	return tx.access.RenewGroupState(s.groupState(tx), s.key, s.pubkey, s.nowUnix())
}

// RenewGroupState signs and stores the group state of every channel afresh,
// as an import does once at its end instead of after every batch, and
// removes the group state another relay key signed.
func (s *Store) RenewGroupState(ctx context.Context) error {
	return s.writer.do(ctx, func(tx *writeTx) error {
		return tx.access.RenewEvery(s.groupState(tx), s.key, s.pubkey, s.nowUnix())
	})
}

// RenewChangedGroupState renews every channel's group state, once, when
// what it is rendered from beyond the channels changed since the last such
// renewal (buzz.TxCommunity.RenewIfChanged, RL-36): an upgrade that
// changed its form, or a change of open_write or allowed_kinds. The relay
// calls it as it starts.
func (s *Store) RenewChangedGroupState(ctx context.Context) error {
	return s.writer.do(ctx, func(tx *writeTx) error { return tx.access.RenewIfChanged(settings{tx}, s.key) })
}

// settings are the settings table in the writer's transaction
// (buzz.Settings).
type settings struct{ tx *writeTx }

func (st settings) Setting(key string) (int64, bool, error) {
	var v int64
	err := st.tx.getSetting.QueryRowContext(st.tx.ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

func (st settings) PutSetting(key string, v int64) error {
	_, err := st.tx.putSetting.ExecContext(st.tx.ctx, key, v)
	return err
}

// foreignGroupState is true of the group state (39000-39003) in force
// that pubkey ?1 did not sign.
const foreignGroupState = `kind BETWEEN 39000 AND 39003 AND pubkey != ?1 AND deleted_at IS NULL`

const foreignGroupStateSQL = `SELECT seq FROM events INDEXED BY events_kind WHERE ` + foreignGroupState

// groupState is the writer's transaction tx as group state renewal uses it
// (buzz.GroupStateTx).
func (s *Store) groupState(tx *writeTx) *buzz.OwnGroupState[*stored, *record] {
	return &buzz.OwnGroupState[*stored, *record]{WriteRows: tx.newLookup(),
		Parse: newRecord,
		Ingest: func(r *record, now int64) error {
			_, err := s.ingest(tx, r, now, false)
			return err
		},
		Foreign: func(pubkey []byte) ([]int64, error) {
			rows, err := tx.foreignGroupState.QueryContext(tx.ctx, pubkey)
			if err != nil {
				return nil, err
			}
			return readSeqs(rows)
		}}
}
