package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// writeStmts are the statements of the write path, prepared once on the
// writer connection: those every event runs on its engine handle (hot,
// writedirect.go), the others through database/sql.
type writeStmts struct {
	insertEvent, insertTag, eventByID, eventBySeq, seen       *directStmt
	threadRow, upsertThread, raiseLastMessage, summaryTarget  *directStmt
	begin, commit, rollback                                   *sql.Stmt
	deleteTag, nameByDeletion, deletedAddress                 *sql.Stmt
	replaceableVersions, addressableVersion                   *sql.Stmt
	channelSeq, insertChannel                                 *sql.Stmt
	markDeleted, hasChildren, hardDelete                      *sql.Stmt
	liveChildren, subtreeAuthors, threadNewest, threadAuthors *sql.Stmt
	expired, clearExpiry                                      *sql.Stmt
	unclassified, setThread, deleteExtraTag                   *sql.Stmt
	accessVersion, putSetting, getSetting, setScope           *sql.Stmt
	updateChannel, putMember, deleteMember, childChannels     *sql.Stmt
	reactionsTo, bumpPages                                    *sql.Stmt
	shortWait, longWait, checkpoint, busyWait                 *sql.Stmt
	foreignGroupState                                         *sql.Stmt
	topLevelAfter, subtree, moveSubtree                       *sql.Stmt
	spendToken, purgeTokens                                   *sql.Stmt
	rereadLastMessage                                         *sql.Stmt
	inviteRefs, putInvite, deleteInvites                      *sql.Stmt

	all []*sql.Stmt
	hot *directConn
}

// liveChildrenSQL counts the non-deleted direct replies of ?1.
const liveChildrenSQL = `SELECT count(*) FROM events WHERE parent = ? AND deleted_at IS NULL`

// subtreeAuthorsSQL counts the non-deleted events below ?1 by author, with
// the created_at of each author's newest. With ?2 a reply of ?1, the walk
// counts ?2 but does not descend below it (the caller knows that part
// already); with ?2 NULL it counts the whole subtree. The subtree drives
// both joins (CROSS JOIN fixes the order): found through events_parent,
// then each of its events read by number. Left to itself SQLite read the
// whole of events in events_pubkey order for the GROUP BY, for every
// ancestor of a deletion (issue 13: seconds of writer time).
const subtreeAuthorsSQL = `WITH RECURSIVE below(seq) AS (
		SELECT seq FROM events WHERE parent = ?1
		UNION ALL
		SELECT e.seq FROM below b CROSS JOIN events e ON e.parent = b.seq WHERE b.seq IS NOT ?2
	)
	SELECT e.pubkey, max(e.created_at), count(*)
	FROM below b CROSS JOIN events e ON e.seq = b.seq
	WHERE e.deleted_at IS NULL
	GROUP BY e.pubkey`

// childChannelsSQL reads a deleted channel's subgroups (RL-36) along
// channels_parent, however many channels there are (RL-27a).
const childChannelsSQL = `SELECT seq FROM channels WHERE parent = ? LIMIT ?`

// raiseLastMessageSQL makes ?2 the last message of channel ?1 if newer.
const raiseLastMessageSQL = `UPDATE channels SET last_message_at = ?2 WHERE seq = ?1 AND last_message_at < ?2`

// rereadLastMessageSQL reads the last message of channel ?1 again when it
// was at ?2, the time of an event that is gone: one seek into
// events_projection.
const rereadLastMessageSQL = `UPDATE channels SET last_message_at = coalesce((SELECT max(e.created_at) FROM events e
		WHERE e.channel = ?1 AND e.row_class >= 1 AND e.deleted_at IS NULL), 0)
	WHERE seq = ?1 AND last_message_at = ?2`

// eventColumns are what the write path needs to know of a stored event.
const eventColumns = `seq, id, pubkey, created_at, kind, tags, channel, depth, parent, root, deleted_at, expires_at, scope`

// writeStmt is one statement of the writer and where its prepared form
// goes: dst through database/sql, hot on the engine handle.
type writeStmt struct {
	dst **sql.Stmt
	hot **directStmt
	sql string
}

// list is every statement the writer prepares: prepare goes through it,
// and so does the test that checks each one's plan (RL-27a), so that a
// statement added here is checked too.
func (s *writeStmts) list() []writeStmt {
	return []writeStmt{
		{dst: &s.begin, sql: `BEGIN IMMEDIATE`},
		// writer.boundWAL: how long it waits for readers, the checkpoint,
		// and the busy timeout of every other statement.
		{dst: &s.shortWait, sql: fmt.Sprintf("PRAGMA busy_timeout = %d", walShortWait.Milliseconds())},
		{dst: &s.longWait, sql: fmt.Sprintf("PRAGMA busy_timeout = %d", queryTimeout.Milliseconds())},
		{dst: &s.checkpoint, sql: `PRAGMA wal_checkpoint(TRUNCATE)`},
		{dst: &s.busyWait, sql: fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMS)},
		{dst: &s.commit, sql: `COMMIT`},
		{dst: &s.rollback, sql: `ROLLBACK`},
		// feed: a channel message's stream of the home feed (schema.sql),
		// from the state of its channel (?8) when it is stored.
		{hot: &s.insertEvent, sql: `INSERT INTO events
			(id, pubkey, created_at, kind, tags, content, sig, channel, dtag, expires_at,
			 parent, root, depth, broadcast, row_class, scope, named_by_deletion, feed)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
			 CASE WHEN ?4 IN (9, 11) THEN (SELECT iif(c.private = 0 AND c.deleted_at IS NULL, 0, c.seq)
			   FROM channels c WHERE c.seq = ?8) END)`},
		// An aux event a deletion names, stored before it (schema.sql).
		{dst: &s.nameByDeletion, sql: `UPDATE events SET named_by_deletion = 1
			WHERE id = ? AND kind IN (5, 7, 9005, 40003) AND named_by_deletion = 0`},
		{hot: &s.insertTag, sql: `INSERT OR IGNORE INTO tags (name, value, created_at, seq, kind) VALUES (?,?,?,?,?)`},
		{dst: &s.deleteTag, sql: `DELETE FROM tags WHERE name = ? AND value = ? AND created_at = ? AND seq = ?`},
		{hot: &s.eventByID, sql: `SELECT ` + eventColumns + ` FROM events WHERE id = ?`},
		{hot: &s.eventBySeq, sql: `SELECT ` + eventColumns + ` FROM events WHERE seq = ?`},
		// Is event ?1 stored; has its author ?2 deleted it (NIP-09) before
		// it arrived; if it is of an aux kind (?3), does any deletion name
		// it (named_by_deletion); does a reaction name it (RL-8)?
		{hot: &s.seen, sql: `SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1),
			EXISTS (SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
				WHERE t.name = 'e' AND t.value = ?1 AND t.kind = 5 AND d.pubkey = ?2 AND d.deleted_at IS NULL),
			CASE WHEN ?3 THEN EXISTS (SELECT 1 FROM tags WHERE name = 'e' AND value = ?1 AND kind IN (5, 9005)) ELSE 0 END,
			EXISTS (SELECT 1 FROM tags WHERE name = 'e' AND value = ?1 AND kind = 7)`},
		// NIP-09: an `a` deletion by the author dated at or after the event.
		{dst: &s.deletedAddress, sql: `SELECT 1 FROM tags t JOIN events d ON d.seq = t.seq
			WHERE t.name = 'a' AND t.value = ? AND t.kind = 5 AND t.created_at >= ? AND d.pubkey = ?
			AND d.deleted_at IS NULL LIMIT 1`},
		{dst: &s.replaceableVersions, sql: `SELECT seq FROM events INDEXED BY events_pubkey
			WHERE pubkey = ? AND kind = ?`},
		{dst: &s.addressableVersion, sql: `SELECT seq FROM events INDEXED BY events_address
			WHERE kind = ? AND pubkey = ? AND dtag = ?`},
		{dst: &s.channelSeq, sql: `SELECT seq FROM channels WHERE h = ?`},
		{dst: &s.insertChannel, sql: `INSERT INTO channels (h) VALUES (?)`},
		{hot: &s.threadRow, sql: `SELECT e.parent, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
			t.last_reply_at, t.participants
			FROM events e LEFT JOIN thread_metadata t ON t.seq = e.seq WHERE e.seq = ?`},
		{hot: &s.upsertThread, sql: `INSERT INTO thread_metadata (seq, reply_count, descendant_count, last_reply_at, participants, updated_at)
			VALUES (?,?,?,?,?,?)
			ON CONFLICT (seq) DO UPDATE SET reply_count = excluded.reply_count,
			descendant_count = excluded.descendant_count, last_reply_at = excluded.last_reply_at,
			participants = excluded.participants,
			updated_at = max(coalesce(thread_metadata.updated_at, 0), excluded.updated_at)`},
		{dst: &s.markDeleted, sql: `UPDATE events SET deleted_at = ? WHERE seq = ? AND deleted_at IS NULL`},
		// channels.last_message_at (schema.sql): raised by a message
		// (?1 its channel, ?2 its created_at); read again from
		// events_projection when a deletion takes the message it names.
		{hot: &s.raiseLastMessage, sql: raiseLastMessageSQL},
		{dst: &s.rereadLastMessage, sql: rereadLastMessageSQL},
		{dst: &s.hasChildren, sql: `SELECT 1 FROM events WHERE parent = ? LIMIT 1`},
		{dst: &s.hardDelete, sql: `DELETE FROM events WHERE seq = ?`},
		{dst: &s.liveChildren, sql: liveChildrenSQL},
		{dst: &s.subtreeAuthors, sql: subtreeAuthorsSQL},
		// A thread's non-deleted replies, newest first, from events_root.
		{dst: &s.threadNewest, sql: `SELECT pubkey, created_at FROM events INDEXED BY events_root
			WHERE root = ? AND deleted_at IS NULL ORDER BY created_at DESC LIMIT ?`},
		// Every author of a thread's live replies with its newest: one
		// step of events_root_authors per author, skipping the others'
		// replies (threadRecent).
		{dst: &s.threadAuthors, sql: threadAuthorsSQL},
		{dst: &s.expired, sql: `SELECT seq FROM events WHERE expires_at <= ? LIMIT ?`},
		{dst: &s.clearExpiry, sql: `UPDATE events SET expires_at = NULL WHERE seq = ?`},
		{dst: &s.unclassified, sql: unclassifiedAfter},
		{dst: &s.deleteExtraTag, sql: deleteExtraTagSQL},
		// Reclassify: top-level channel events by seq, the replies below
		// one of them, and moving those below a new root.
		{dst: &s.topLevelAfter, sql: `SELECT seq FROM events WHERE seq > ? AND depth = 0 AND channel IS NOT NULL ORDER BY seq LIMIT ?`},
		{dst: &s.subtree, sql: `SELECT depth, pubkey, created_at, deleted_at, tags FROM events INDEXED BY events_root WHERE root = ?`},
		{dst: &s.moveSubtree, sql: `UPDATE events SET root = ?, depth = depth + ?, row_class = 1 WHERE root = ?`},
		{dst: &s.setThread, sql: `UPDATE events SET parent = ?, root = ?, depth = ?, broadcast = ?, row_class = ? WHERE seq = ?`},
		{dst: &s.accessVersion, sql: `SELECT value FROM settings WHERE key = 'access_version'`},
		{dst: &s.bumpPages, sql: `INSERT INTO page_versions (channel, version) VALUES (?, 1)
			ON CONFLICT (channel) DO UPDATE SET version = version + 1`},
		{dst: &s.putSetting, sql: `INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`},
		{dst: &s.getSetting, sql: `SELECT value FROM settings WHERE key = ?`},
		{dst: &s.setScope, sql: `UPDATE events SET scope = ? WHERE seq = ?`},
		{dst: &s.updateChannel, sql: `UPDATE channels SET created_at = coalesce(created_at, ?), name = ?, about = ?,
			private = ?, deleted_at = coalesce(deleted_at, ?), picture = ?, parent = ? WHERE seq = ?`},
		{dst: &s.childChannels, sql: childChannelsSQL},
		{dst: &s.putMember, sql: `INSERT INTO members (channel, pubkey, role) VALUES (?, ?, ?)
			ON CONFLICT (channel, pubkey) DO UPDATE SET role = excluded.role`},
		{dst: &s.deleteMember, sql: `DELETE FROM members WHERE channel = ? AND pubkey = ?`},
		// Invite codes (RL-36): a join's seek, the newest 9009s of the code
		// first, along the primary key; a 9009's row, and a deleted or
		// purged 9009's row taken away.
		{dst: &s.inviteRefs, sql: `SELECT event FROM invites WHERE channel = ? AND code = ? ORDER BY event DESC LIMIT ?`},
		{dst: &s.putInvite, sql: `INSERT INTO invites (channel, code, event) VALUES (?, ?, ?)`},
		{dst: &s.deleteInvites, sql: `DELETE FROM invites WHERE event = ?`},
		// Reactions without a channel that name ?1 in an e tag: one of them
		// may have arrived before its target (RL-8).
		{dst: &s.reactionsTo, sql: `SELECT t.seq FROM tags t WHERE t.name = 'e' AND t.value = ? AND t.kind = 7`},
		{dst: &s.foreignGroupState, sql: foreignGroupStateSQL},
		// NIP-98 tokens (RL-17): the key's row, and the expired ones
		// along nip98_tokens_expires, a batch at a time.
		{dst: &s.spendToken, sql: `INSERT INTO nip98_tokens (sig, expires) VALUES (?, ?) ON CONFLICT (sig) DO NOTHING`},
		{dst: &s.purgeTokens, sql: `DELETE FROM nip98_tokens WHERE sig IN
			(SELECT sig FROM nip98_tokens WHERE expires < ? LIMIT ?)`},
		{hot: &s.summaryTarget, sql: `SELECT e.id, c.h, e.parent IS NULL, e.row_class FROM events e JOIN channels c ON c.seq = e.channel
			WHERE e.seq = ?`},
	}
}

func (s *writeStmts) prepare(ctx context.Context, conn *sql.Conn) error {
	hot, err := writerEngine(conn)
	if err != nil {
		return err
	}
	s.hot = hot
	for _, p := range s.list() {
		if p.hot != nil {
			*p.hot, err = hot.keep(p.sql)
		} else {
			*p.dst, err = conn.PrepareContext(ctx, p.sql)
			if err == nil {
				s.all = append(s.all, *p.dst)
			}
		}
		if err != nil {
			s.close()
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
	}
	return nil
}

func (s *writeStmts) close() error {
	var errs []error
	for _, st := range s.all {
		errs = append(errs, st.Close())
	}
	s.all = nil
	if s.hot != nil {
		s.hot.release()
		s.hot = nil
	}
	return errors.Join(errs...)
}
