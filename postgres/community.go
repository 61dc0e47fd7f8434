package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// Community returns the access state as this process last saw it:
// policy, channels, members and settings. It is never modified, a change
// publishes a new one; every transaction first compares it with the
// database's access_version (communityIn).
func (s *Store) Community() *buzz.Community { return s.community.Load() }

// CommunityNow is the access state as the database has it now: one round
// trip to its access_version, and the state read afresh only when another
// process changed it since this one last read it (buzz.SharedStore).
// Callers that ask at once share one round trip.
func (s *Store) CommunityNow(ctx context.Context) (*buzz.Community, error) {
	// The shared round trip is no one caller's: it runs on its own bound,
	// and each caller waits for it only as long as its own context lasts.
	shared := context.WithoutCancel(ctx)
	ch := s.probes.DoChan("access", func() (any, error) {
		probe, cancel := context.WithTimeout(shared, queryTimeout)
		defer cancel()
		cur := s.Community()
		var version int64
		if err := s.pool.QueryRow(probe, `SELECT value FROM settings WHERE key = 'access_version'`).Scan(&version); err != nil {
			return nil, fmt.Errorf("read access version: %w", err)
		}
		if version <= cur.Version {
			return cur, nil
		}
		// Read in one snapshot, as every read transaction reads it.
		var fresh *buzz.Community
		err := s.read(probe, func(_ pgx.Tx, c *buzz.Community) error {
			fresh = c
			return nil
		})
		return fresh, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*buzz.Community), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// OnPublish sets fn to be called, after their transaction commits, with
// the group state events (39000-39003) the store signed and stored.
func (s *Store) OnPublish(fn func([]*nostr.Event)) { s.onPublish.Store(&fn) }

// communityIn is the access state for a transaction: the published one,
// unless the transaction sees a change another process committed since,
// which is read from the transaction and published. A query must not
// judge the events it sees by an older state: one that does not know a
// private channel another process just created would let them through
// (RL-13).
func (s *Store) communityIn(ctx context.Context, tx pgx.Tx) (*buzz.Community, error) {
	var version int64
	if err := tx.QueryRow(ctx, accessVersionSQL).Scan(&version); err != nil {
		return nil, fmt.Errorf("read access version: %w", err)
	}
	return s.communityAt(ctx, tx, version)
}

// communityAt is communityIn once the transaction read the access
// version, version.
func (s *Store) communityAt(ctx context.Context, tx pgx.Tx, version int64) (*buzz.Community, error) {
	cur := s.Community()
	if version <= cur.Version {
		return cur, nil
	}
	fresh, err := loadCommunity(ctx, tx, cur.Policy)
	if err != nil {
		return nil, err
	}
	buzz.PublishNewer(&s.community, fresh)
	return fresh, nil
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// loadCommunity reads the whole access state (buzz.CommunityOf).
func loadCommunity(ctx context.Context, q queryer, policy buzz.Policy) (*buzz.Community, error) {
	var version int64
	var replies *int64
	err := q.QueryRow(ctx, `SELECT
		(SELECT value FROM settings WHERE key = 'access_version'),
		(SELECT value FROM settings WHERE key = 'thread_replies_in_channel')`).Scan(&version, &replies)
	if err != nil {
		return nil, fmt.Errorf("load settings: %w", err)
	}
	rows, err := q.Query(ctx, `SELECT seq, h, created_at IS NOT NULL, name, picture, about, private, coalesce(parent, 0),
		deleted_at IS NOT NULL, (SELECT count(*) FROM invites i WHERE i.channel = channels.seq) FROM channels`)
	channels, err := collect(rows, err, func(row pgx.CollectableRow) (*buzz.Channel, error) {
		ch := &buzz.Channel{}
		var invites int64
		err := row.Scan(&ch.Seq, &ch.H, &ch.Created, &ch.Name, &ch.Picture, &ch.About, &ch.Private, &ch.Parent, &ch.Deleted, &invites)
		ch.Invites = int(invites)
		return ch, err
	})
	if err != nil {
		return nil, fmt.Errorf("load channels: %w", err)
	}
	rows, err = q.Query(ctx, `SELECT channel, pubkey, role FROM members`)
	members, err := collect(rows, err, func(row pgx.CollectableRow) (buzz.MemberRow, error) {
		var m buzz.MemberRow
		var role int16
		err := row.Scan(&m.Channel, &m.PubKey, &role)
		m.Role = buzz.Role(role)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("load members: %w", err)
	}
	return buzz.CommunityOf(policy, version, replies != nil && *replies != 0, channels, members), nil
}

// applyConfiguredSetting makes the config file's thread_replies_in_channel
// the community setting when it changed since the last start: that edit is
// then the newest write, and wins over an earlier 9033 (RL-15, last write
// wins). An unchanged config leaves a 9033's value in force.
func (s *Store) applyConfiguredSetting(ctx context.Context, configured bool) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(writeLock)); err != nil {
			return fmt.Errorf("take the write lock: %w", err)
		}
		var last *int64
		err := tx.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'thread_replies_in_channel.config'`).Scan(&last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read settings: %w", err)
		}
		v := boolInt(configured)
		if last != nil && *last == v {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO settings (key, value) VALUES
			('thread_replies_in_channel.config', $1), ('thread_replies_in_channel', $1)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, v); err != nil {
			return fmt.Errorf("write settings: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE settings SET value = value + 1 WHERE key = 'access_version'`); err != nil {
			return fmt.Errorf("bump access version: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply the configured thread_replies_in_channel: %w", err)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// RenewGroupState signs and stores the group state of every channel afresh,
// as an import does once at its end, and removes the group state another
// relay key signed.
func (s *Store) RenewGroupState(ctx context.Context) error {
	return s.write(ctx, func(tx *writeTx) error {
		return tx.access.RenewEvery(s.groupState(tx), s.key, s.pubkey, s.nowUnix())
	})
}

// RenewChangedGroupState renews every channel's group state, once, when
// what it is rendered from beyond the channels changed since the last such
// renewal (buzz.TxCommunity.RenewIfChanged, RL-36): an upgrade that
// changed its form, or a change of open_write or allowed_kinds. The relay
// calls it as it starts.
func (s *Store) RenewChangedGroupState(ctx context.Context) error {
	return s.write(ctx, func(tx *writeTx) error { return tx.access.RenewIfChanged(settings{tx}, s.key) })
}

// settings are the settings table in a write transaction (buzz.Settings).
type settings struct{ tx *writeTx }

func (st settings) Setting(key string) (int64, bool, error) {
	var v int64
	err := st.tx.tx.QueryRow(st.tx.ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return v, err == nil, err
}

func (st settings) PutSetting(key string, v int64) error {
	_, err := st.tx.tx.Exec(st.tx.ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, v)
	return err
}

// groupState is the write transaction tx as group state renewal uses it
// (buzz.GroupStateTx). The group state events depend only on the
// channel's state, the stored versions and the clock, and BIP-340 signing
// is deterministic: every process holding the same key signs the same
// event for the same state and second.
func (s *Store) groupState(tx *writeTx) *buzz.OwnGroupState[*stored, *record] {
	return &buzz.OwnGroupState[*stored, *record]{WriteRows: tx.newLookup(),
		Parse: newRecord,
		Ingest: func(r *record, now int64) error {
			_, err := s.ingest(tx, r, now, false)
			return err
		},
		Foreign: func(pubkey []byte) ([]int64, error) {
			rows, err := tx.tx.Query(tx.ctx, `SELECT seq FROM events
				WHERE kind BETWEEN 39000 AND 39003 AND pubkey <> $1 AND deleted_at IS NULL`, pubkey)
			return collect(rows, err, pgx.RowTo[int64])
		}}
}

// GroupStateSigner is the key that signed some of the group state in force
// (39000-39003, as buzz.DropForeignGroupState), when one other than this store's relay key did; "" when
// all of it is this store's or there is none. Every process of a
// community signs with one key (RL-33): a process started with another
// would sign beside it.
func (s *Store) GroupStateSigner(ctx context.Context) (string, error) {
	var other []byte
	err := s.read(ctx, func(tx pgx.Tx, _ *buzz.Community) error {
		mine, err := nipcw.DecodeHex(s.pubkey, 32)
		if err != nil {
			mine = []byte{}
		}
		err = tx.QueryRow(ctx, `SELECT pubkey FROM events WHERE kind BETWEEN 39000 AND 39003 AND pubkey <> $1
			AND deleted_at IS NULL LIMIT 1`, mine).Scan(&other)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("group state signer: %w", err)
	}
	return hex.EncodeToString(other), nil
}
