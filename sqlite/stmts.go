package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// writeStmts are the statements of the write path, prepared once on the
// writer connection.
type writeStmts struct {
	begin, commit, rollback                    *sql.Stmt
	insertEvent, insertTag, deleteTag          *sql.Stmt
	eventByID, eventBySeq                      *sql.Stmt
	seen, deletedAddress                       *sql.Stmt
	replaceableVersions, addressableVersion    *sql.Stmt
	channelSeq, insertChannel                  *sql.Stmt
	threadRow, upsertThread                    *sql.Stmt
	markDeleted, hasChildren, hardDelete       *sql.Stmt
	liveChildren, subtreeAuthors, threadNewest *sql.Stmt
	expired, clearExpiry                       *sql.Stmt
	unclassified, setThread, deleteExtraTags   *sql.Stmt
	accessVersion, putSetting, setScope        *sql.Stmt
	updateChannel, putMember, deleteMember     *sql.Stmt
	reactionsTo, summaryTarget, bumpWrites     *sql.Stmt

	all []*sql.Stmt
}

// liveChildrenSQL counts the non-deleted direct replies of ?1.
const liveChildrenSQL = `SELECT count(*) FROM events WHERE parent = ? AND deleted_at IS NULL`

// subtreeAuthorsSQL lists every non-deleted event below ?1 grouped by
// author, newest author first: the exact counters, last_reply_at and
// participants of ?1.
const subtreeAuthorsSQL = `WITH RECURSIVE below(seq) AS (
		SELECT seq FROM events WHERE parent = ?1
		UNION ALL
		SELECT e.seq FROM events e JOIN below b ON e.parent = b.seq
	)
	SELECT e.pubkey, max(e.created_at) AS newest, count(*)
	FROM below b JOIN events e ON e.seq = b.seq
	WHERE e.deleted_at IS NULL
	GROUP BY e.pubkey ORDER BY newest DESC, e.pubkey ASC`

// eventColumns are what the write path needs to know of a stored event.
const eventColumns = `seq, id, pubkey, created_at, kind, tags, channel, depth, parent, root, deleted_at, expires_at, scope`

func (s *writeStmts) prepare(ctx context.Context, conn *sql.Conn) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.begin, `BEGIN IMMEDIATE`},
		{&s.commit, `COMMIT`},
		{&s.rollback, `ROLLBACK`},
		{&s.insertEvent, `INSERT INTO events
			(id, pubkey, created_at, kind, tags, content, sig, channel, dtag, expires_at,
			 parent, root, depth, broadcast, row_class, scope)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`},
		{&s.insertTag, `INSERT OR IGNORE INTO tags (name, value, created_at, seq, kind) VALUES (?,?,?,?,?)`},
		{&s.deleteTag, `DELETE FROM tags WHERE name = ? AND value = ? AND created_at = ? AND seq = ?`},
		{&s.eventByID, `SELECT ` + eventColumns + ` FROM events WHERE id = ?`},
		{&s.eventBySeq, `SELECT ` + eventColumns + ` FROM events WHERE seq = ?`},
		// Is event ?1 stored; has its author ?2 deleted it (NIP-09) before
		// it arrived?
		{&s.seen, `SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1),
			EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
				WHERE t.name = 'e' AND t.value = ?1 AND t.kind = 5 AND d.pubkey = ?2 AND d.deleted_at IS NULL)`},
		// NIP-09: an `a` deletion by the author dated at or after the event.
		{&s.deletedAddress, `SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
			WHERE t.name = 'a' AND t.value = ? AND t.kind = 5 AND t.created_at >= ? AND d.pubkey = ?
			AND d.deleted_at IS NULL LIMIT 1`},
		{&s.replaceableVersions, `SELECT seq FROM events INDEXED BY events_pubkey
			WHERE pubkey = ? AND kind = ?`},
		{&s.addressableVersion, `SELECT seq FROM events INDEXED BY events_address
			WHERE kind = ? AND pubkey = ? AND dtag = ?`},
		{&s.channelSeq, `SELECT seq FROM channels WHERE h = ?`},
		{&s.insertChannel, `INSERT INTO channels (h) VALUES (?)`},
		{&s.threadRow, `SELECT e.parent, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq WHERE e.seq = ?`},
		{&s.upsertThread, `INSERT INTO thread_metadata (seq, reply_count, descendant_count, last_reply_at, participants, updated_at)
			VALUES (?,?,?,?,?,?)
			ON CONFLICT (seq) DO UPDATE SET reply_count = excluded.reply_count,
			descendant_count = excluded.descendant_count, last_reply_at = excluded.last_reply_at,
			participants = excluded.participants,
			updated_at = max(coalesce(thread_metadata.updated_at, 0), excluded.updated_at)`},
		{&s.markDeleted, `UPDATE events SET deleted_at = ? WHERE seq = ? AND deleted_at IS NULL`},
		{&s.hasChildren, `SELECT 1 FROM events WHERE parent = ? LIMIT 1`},
		{&s.hardDelete, `DELETE FROM events WHERE seq = ?`},
		{&s.liveChildren, liveChildrenSQL},
		{&s.subtreeAuthors, subtreeAuthorsSQL},
		// A thread's non-deleted replies, newest first, from events_root.
		{&s.threadNewest, `SELECT pubkey, created_at FROM events INDEXED BY events_root
			WHERE root = ? AND deleted_at IS NULL ORDER BY created_at DESC`},
		{&s.expired, `SELECT seq FROM events WHERE expires_at <= ? LIMIT ?`},
		{&s.clearExpiry, `UPDATE events SET expires_at = NULL WHERE seq = ?`},
		{&s.unclassified, unclassifiedAfter},
		{&s.deleteExtraTags, deleteExtraTagsSQL},
		{&s.setThread, `UPDATE events SET parent = ?, root = ?, depth = ?, broadcast = ?, row_class = ? WHERE seq = ?`},
		{&s.accessVersion, `SELECT value FROM settings WHERE key = 'access_version'`},
		{&s.bumpWrites, `UPDATE settings SET value = value + 1 WHERE key = 'write_version'`},
		{&s.putSetting, `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`},
		{&s.setScope, `UPDATE events SET scope = ? WHERE seq = ?`},
		{&s.updateChannel, `UPDATE channels SET created_at = coalesce(created_at, ?), name = ?, about = ?,
			private = ?, deleted_at = coalesce(deleted_at, ?) WHERE seq = ?`},
		{&s.putMember, `INSERT INTO members (channel, pubkey, role) VALUES (?, ?, ?)
			ON CONFLICT (channel, pubkey) DO UPDATE SET role = excluded.role`},
		{&s.deleteMember, `DELETE FROM members WHERE channel = ? AND pubkey = ?`},
		// Reactions without a channel that name ?1 in an e tag: one of them
		// may have arrived before its target (RL-8).
		{&s.reactionsTo, `SELECT t.seq FROM tags t WHERE t.name = 'e' AND t.value = ? AND t.kind = 7`},
		{&s.summaryTarget, `SELECT e.id, c.h, e.parent IS NULL, e.row_class FROM events e JOIN channels c ON c.seq = e.channel
			WHERE e.seq = ?`},
	} {
		st, err := conn.PrepareContext(ctx, p.sql)
		if err != nil {
			s.close()
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	return nil
}

func (s *writeStmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	return errors.Join(errs...)
}
