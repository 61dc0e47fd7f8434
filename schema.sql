-- buzz-lite schema, the whole of it. Embedded into the binary.
-- schema_version: 13
--
-- A fresh database gets this file in one transaction and then
-- PRAGMA user_version = <schema_version> and PRAGMA application_id = 0x62757a7a
-- ("buzz"). An older database is migrated forward by the steps in
-- sqlite/migrate.go, each in its own transaction; a newer one is refused.
--
-- Every table is STRICT: a value is stored as given, never converted (in
-- the tag index, "01" must not equal "1").
--
-- Ids, pubkeys and signatures are stored as raw bytes (32/32/64), not hex:
-- half the size, and BLOB order is byte order, which is lowercase-hex order,
-- the `id ASC` of the channel window (CW-15).

-- Channels named by an event's `h` tag or created by a kind 9007. The events
-- table refers to them by a small integer so that the channel indexes stay
-- narrow. A channel no 9007 created (created_at NULL) exists because events
-- name it: it is open and has no members (RL-10, RL-14).
--   created_at  date of the 9007 that created the channel
--   name, picture, about, private   its metadata (9007, 9002; picture
--               an http(s) URL or '')
--   parent      the channel it is a subgroup of (RL-36, NIP-29
--               "Subgroups"), NULL for a root; a 9008 of the parent makes
--               its children roots, found by channels_parent
--   deleted_at  date of the 9008 that deleted it: it then answers as a
--               channel that does not exist
--   last_message_at  created_at of its newest message (a projection-mode
--               window row) that is not deleted, 0 for none: the web
--               view lists channels by it (CW-25). The writer raises it
--               with each message and reads it again from
--               events_projection when the message it names is deleted.
CREATE TABLE channels (
  seq        INTEGER PRIMARY KEY,
  h          TEXT    NOT NULL UNIQUE,
  created_at INTEGER,
  name       TEXT    NOT NULL DEFAULT '',
  about      TEXT    NOT NULL DEFAULT '',
  private    INTEGER NOT NULL DEFAULT 0,
  deleted_at INTEGER,
  last_message_at INTEGER NOT NULL DEFAULT 0,
  picture    TEXT    NOT NULL DEFAULT '',
  parent     INTEGER REFERENCES channels(seq)
) STRICT;
-- A channel's subgroups, for the 9008 that deletes it.
CREATE INDEX channels_parent ON channels(parent) WHERE parent IS NOT NULL;
-- The open channels by their last message, newest first when read
-- backwards: a page of the web view's index is one range of it, however
-- many channels the community has, private ones never examined.
CREATE INDEX channels_activity ON channels(last_message_at, seq)
  WHERE private = 0 AND deleted_at IS NULL;

-- Who holds a role in a channel (RL-10): role 1 member, 2 admin, 3 owner.
CREATE TABLE members (
  channel INTEGER NOT NULL REFERENCES channels(seq),
  pubkey  BLOB    NOT NULL,
  role    INTEGER NOT NULL,
  PRIMARY KEY (channel, pubkey)
) STRICT, WITHOUT ROWID;

-- Invite codes (RL-36): the code each live 9009 create-invite (event, its
-- events.seq) gives its channel. A join with a code seeks (channel, code);
-- a deletion of the 9009 takes its row away through invites_event. Each
-- channel's count of rows is its number of live codes (buzz.Channel).
CREATE TABLE invites (
  channel INTEGER NOT NULL REFERENCES channels(seq),
  code    TEXT    NOT NULL,
  event   INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
  PRIMARY KEY (channel, code, event)
) STRICT, WITHOUT ROWID;
CREATE INDEX invites_event ON invites(event);

-- Community settings and bookkeeping:
--   access_version            bumped by every transaction that changes
--                             channels, members or settings, so that a
--                             process sees another one's changes
--   access_stamp              a random number written with each such
--                             change: a reader that finds the one its own
--                             writer is committing takes that writer's
--                             state instead of reading the whole state
--   thread_replies_in_channel the community setting of RL-15 (0/1)
--   thread_replies_in_channel.config  the value the config file gave when
--                             the relay last started: a change there is
--                             the newest write and wins over a 9033
--   group_state.fingerprint   what every channel's group state was last
--                             renewed from beyond the channels (the
--                             renderer's form, open_write, allowed_kinds:
--                             buzz.GroupStateFingerprint, a hash); the relay
--                             renews all of it when that changes
CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value ANY
) STRICT, WITHOUT ROWID;
INSERT INTO settings (key, value) VALUES ('access_version', 0);

-- Every stored event. The signed event is rebuilt from these columns on read
-- (tags are kept as their JSON array, content verbatim).
--
-- Thread classification (CW-10, CW-11) lives here rather than in
-- thread_metadata because the window's partial index must see it:
--   parent, root  seq of the parent / thread root; NULL for top-level events
--   depth         0 top-level, n for a reply n levels down, NULL unclassified
--                 (legacy, or the parent was not classifiable; CW-12)
--   broadcast     1 iff the exact tag ["broadcast","1"] is present
--   row_class     0 never a window row (no channel, or an aux, NIP-29
--                 moderation/lifecycle or relay-only kind), 1 a quiet reply
--                 (a row only in projection mode), 2 a row in both modes:
--                 depth NULL, 0, or 1 with broadcast (CW-9, CW-13)
--   scope         the channel whose readers may read the event (RL-8,
--                 RL-13): its own channel; for a reaction or deletion without
--                 an h tag, its target's; for the relay's group state
--                 (39000-39002), the channel it describes. NULL: everyone.
--   named_by_deletion  for the aux kinds (5, 7, 9005, 40003): 1 once a
--                 deletion (5 or 9005) stored names it in an e tag, set by
--                 whichever of the two arrives second. Hop 2 of a window's
--                 aux closure (CW-18) asks only about these instead of
--                 searching tags_aux for every hop-1 event. It is not
--                 cleared when the deletion goes (expiry): hop 2 then finds
--                 nothing, as it would have.
--   feed          for a channel message of the home feed's activity (kinds
--                 9 and 11, replies included, RL-35): its stream, 0 while
--                 its channel is open, the channel's seq while it is private
--                 or deleted (no one reads it but the channel's readers);
--                 NULL for every other event. The channels_feed trigger
--                 keeps it when a channel changes.
CREATE TABLE events (
  seq        INTEGER PRIMARY KEY,
  id         BLOB    NOT NULL,
  pubkey     BLOB    NOT NULL,
  created_at INTEGER NOT NULL,
  kind       INTEGER NOT NULL,
  tags       TEXT    NOT NULL,
  content    TEXT    NOT NULL,
  sig        BLOB    NOT NULL,
  channel    INTEGER REFERENCES channels(seq),
  dtag       TEXT,
  expires_at INTEGER,
  deleted_at INTEGER,
  parent     INTEGER,
  root       INTEGER,
  depth      INTEGER,
  broadcast  INTEGER NOT NULL DEFAULT 0,
  row_class  INTEGER NOT NULL DEFAULT 0,
  scope      INTEGER,
  named_by_deletion INTEGER NOT NULL DEFAULT 0,
  feed       INTEGER
) STRICT;

CREATE UNIQUE INDEX events_id ON events(id);
CREATE INDEX events_created ON events(created_at);
-- The indexes that reads walk newest first, in the order they serve
-- (created_at DESC, id ASC), hold it reversed, (created_at, id DESC), and
-- are read backwards: events arrive in time order, and SQLite fills pages
-- that grow at the end of a range but leaves half of each page empty when
-- they grow at its front, as a created_at DESC index does.
--
-- A kind's events: the home feed's activity stops at the events it needs,
-- not at the end of their second, and a REQ by kind needs no sort.
CREATE INDEX events_kind ON events(kind, created_at, id DESC);
-- An author's index has no id: it would add a tenth to the database for
-- what costs a REQ by author the sort of one second's ties.
CREATE INDEX events_pubkey ON events(pubkey, kind, created_at);
-- REQ by channel and, later, projection-mode windows.
CREATE INDEX events_channel ON events(channel, created_at, id DESC)
  WHERE channel IS NOT NULL;
-- Default-mode window rows only: the top-level row set is an index range scan
-- in window order, whatever the number of replies (CW-9, CW-15).
CREATE INDEX events_toplevel ON events(channel, created_at, id DESC)
  WHERE row_class = 2 AND deleted_at IS NULL;
-- Projection-mode window rows (CW-13): every non-deleted classified channel
-- event, replies included, in window order.
CREATE INDEX events_projection ON events(channel, created_at, id DESC)
  WHERE row_class >= 1 AND deleted_at IS NULL;
-- Addressable replacement (RL-9).
CREATE INDEX events_address ON events(kind, pubkey, dtag)
  WHERE dtag IS NOT NULL;
-- NIP-40 purge.
CREATE INDEX events_expiry ON events(expires_at)
  WHERE expires_at IS NOT NULL;
-- Thread path and exact counter recomputation.
CREATE INDEX events_root ON events(root, created_at, id)
  WHERE root IS NOT NULL;
CREATE INDEX events_parent ON events(parent)
  WHERE parent IS NOT NULL;
-- A thread's authors, each with its newest live reply: a deletion that
-- changes a root's participants reads one entry per author, however long
-- the thread (threadRecent).
CREATE INDEX events_root_authors ON events(root, pubkey, created_at)
  WHERE root IS NOT NULL AND deleted_at IS NULL;
-- Channel messages stored without classification (CW-12), for Backfill.
CREATE INDEX events_unclassified ON events(created_at, id)
  WHERE depth IS NULL AND row_class = 2;

-- Exact tag index (RL-3): one row per distinct single-letter tag name and
-- value of an event (NIP-01 filters only address single-letter tags). The
-- `h` tag is not here: events.channel is its index. A value that is 64
-- lowercase hex characters is stored as its 32 bytes (a BLOB never equals a
-- TEXT, so the exact match of every other value is unaffected). created_at is
-- a key column so that a tag filter reads its matches newest first; kind rides
-- along in the leaf so that kind filters need no event lookup.
CREATE TABLE tags (
  name       TEXT    NOT NULL,
  value      ANY     NOT NULL,
  created_at INTEGER NOT NULL,
  seq        INTEGER NOT NULL,
  kind       INTEGER NOT NULL,
  PRIMARY KEY (name, value, created_at, seq)
) STRICT, WITHOUT ROWID;

-- Aux lookups of the window and thread pages (CW-18): the `e` tags of the
-- kinds an aux closure serves, in the order it reads them. Through the
-- primary key a page also walked every reply naming its rows (issue 15).
CREATE INDEX tags_aux ON tags(value, created_at, seq, kind)
  WHERE name = 'e' AND kind IN (5, 7, 9005, 40003);

-- The home feed (RL-35): each type read from an index in feed order, in
-- streams: stream 0 holds what every reader of open channels may read
-- (open channels' events, and for mentions events of no channel too),
-- each private or deleted channel a stream of its own (its seq). A feed
-- merges the streams its requester may read and touches nothing of the
-- others, however many events they hold. Activity is events_feed (the
-- events' feed column); mentions (needs 0: kinds 1, 9, 11, 1111) and
-- needs_action (needs 1: kinds 40007, 46010) are the mentions table: one
-- row per live event of those kinds and pubkey its p tags name (32 bytes,
-- the tag index's form of a pubkey). Deleted events leave both; the
-- triggers below keep the streams when a channel becomes private, open
-- or deleted.
CREATE INDEX events_feed ON events(feed, created_at, id DESC)
  WHERE feed IS NOT NULL AND deleted_at IS NULL;
CREATE TABLE mentions (
  seq        INTEGER NOT NULL,
  pubkey     BLOB    NOT NULL,
  needs      INTEGER NOT NULL,
  feed       INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  id         BLOB    NOT NULL,
  PRIMARY KEY (seq, pubkey)
) STRICT, WITHOUT ROWID;
CREATE INDEX mentions_feed ON mentions(pubkey, needs, feed, created_at, id DESC);
-- The streams of a requester: the channels it holds a role in, and for
-- a relay admin every private channel.
CREATE INDEX members_pubkey ON members(pubkey);
CREATE INDEX channels_private ON channels(seq) WHERE private = 1 AND deleted_at IS NULL;

CREATE TRIGGER mentions_insert AFTER INSERT ON tags
  WHEN NEW.name = 'p' AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010) AND typeof(NEW.value) = 'blob' BEGIN
  INSERT OR IGNORE INTO mentions (seq, pubkey, needs, feed, created_at, id)
    SELECT e.seq, NEW.value, NEW.kind IN (40007, 46010),
      iif(e.scope IS NULL, 0, coalesce((SELECT iif(c.private = 0 AND c.deleted_at IS NULL, 0, c.seq)
        FROM channels c WHERE c.seq = e.scope), e.scope)),
      e.created_at, e.id
    FROM events e WHERE e.seq = NEW.seq AND e.deleted_at IS NULL;
END;

CREATE TRIGGER mentions_tag_delete AFTER DELETE ON tags
  WHEN OLD.name = 'p' AND OLD.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
  DELETE FROM mentions WHERE seq = OLD.seq AND pubkey = OLD.value;
END;

CREATE TRIGGER mentions_event_deleted AFTER UPDATE OF deleted_at ON events
  WHEN NEW.deleted_at IS NOT NULL AND NEW.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
  DELETE FROM mentions WHERE seq = NEW.seq;
END;

CREATE TRIGGER mentions_event_delete AFTER DELETE ON events
  WHEN OLD.kind IN (1, 9, 11, 1111, 40007, 46010) BEGIN
  DELETE FROM mentions WHERE seq = OLD.seq;
END;

-- A channel's events change stream when it becomes private, open or
-- deleted: a write that costs the channel's feed events, once.
CREATE TRIGGER channels_feed AFTER UPDATE OF private, deleted_at ON channels
  WHEN (OLD.private = 0 AND OLD.deleted_at IS NULL) != (NEW.private = 0 AND NEW.deleted_at IS NULL) BEGIN
  UPDATE events SET feed = iif(NEW.private = 0 AND NEW.deleted_at IS NULL, 0, NEW.seq)
    WHERE channel = NEW.seq AND feed IS NOT NULL;
  UPDATE mentions SET feed = iif(NEW.private = 0 AND NEW.deleted_at IS NULL, 0, NEW.seq)
    WHERE seq IN (SELECT seq FROM events WHERE channel = NEW.seq AND kind IN (1, 9, 11, 1111, 40007, 46010));
END;

-- Subtree counters of a classified channel event (RL-5), kept exact for every
-- ancestor at ingest and deletion (RL-6). A row exists once the event has had
-- a reply; no row means all zero.
--   reply_count       non-deleted direct replies
--   descendant_count  non-deleted events anywhere below
--   last_reply_at     created_at of the newest of those, NULL when none
--   participants      up to 10 distinct authors of those, newest first:
--                     n x (32-byte pubkey, 8-byte big-endian created_at)
--   updated_at        when the relay last changed the row: the date of the
--                     thread summary, which keeps its id (and signature)
--                     until the thread changes
CREATE TABLE thread_metadata (
  seq              INTEGER PRIMARY KEY REFERENCES events(seq) ON DELETE CASCADE,
  reply_count      INTEGER NOT NULL DEFAULT 0,
  descendant_count INTEGER NOT NULL DEFAULT 0,
  last_reply_at    INTEGER,
  participants     BLOB,
  updated_at       INTEGER
) STRICT;

-- Window page versions (issue 15): a cached window page of a channel is
-- valid while its channel's version stands, so a write to one channel
-- leaves the cached pages of every other valid. The triggers below bump
-- the version of every channel whose pages a write may change, whatever
-- wrote it (ingest, deletion, replacement, NIP-40 purge, backfill,
-- reclassify, repair, another process):
--   an event changed or dropped: its channel and its scope (a row, or an
--     aux event of the channel; a reaction without an h tag is scoped to
--     its target's channel). An event stored counts for the same, once a
--     channel per write batch: the writer bumps those itself (a trigger
--     per event cost an upsert per event, 512 in a batch to one channel);
--   an aux event (kinds 5, 7, 9005, 40003) changed or dropped, or its `e`
--     tag index row written or deleted: the channel of each event it names
--     (it is served in that event's window page, CW-18: hop 1); for a
--     deletion (5, 9005), also the channel of each event named by an aux
--     event it names (hop 2). This holds for aux events of no channel: a
--     channel-less kind 7 naming an event of channel A is A's, and so is a
--     deletion of that kind 7;
--   a thread counter row written: the channel of its event (summaries).
-- A channel without a row has version 0. The channel's access state is
-- checked afresh for every page, cached or not; aux events scoped to other
-- channels are judged by the access state, whose version the cache checks.
CREATE TABLE page_versions (
  channel INTEGER PRIMARY KEY,
  version INTEGER NOT NULL
) STRICT;

-- The channels whose pages show an event that names id in an e tag, by
-- hop (CW-18): 1, id's own channel; 2, the channels of the events id names
-- when id is an aux event (a deletion of id is served there).
CREATE VIEW target_pages (id, hop, channel) AS
  SELECT id, 1, channel FROM events
  UNION ALL
  SELECT x.id, 2, y.channel FROM events x CROSS JOIN json_each(iif(json_valid(x.tags), x.tags, '[]')) k
    CROSS JOIN events y ON y.id = unhex(k.value ->> 1)
    WHERE x.kind IN (5, 7, 9005, 40003) AND k.value ->> 0 = 'e';

-- The channels whose pages show event seq: its channel, its scope, and
-- when it is an aux event, the pages of the events it names (hop 2 for a
-- deletion only). CROSS JOIN keeps the order: each event found by its
-- number or id, never the other way round.
CREATE VIEW event_pages (seq, channel) AS
  SELECT seq, channel FROM events
  UNION ALL
  SELECT seq, scope FROM events
  UNION ALL
  SELECT e.seq, x.channel FROM events e CROSS JOIN json_each(iif(json_valid(e.tags), e.tags, '[]')) j
    CROSS JOIN events x ON x.id = unhex(j.value ->> 1)
    WHERE e.kind IN (5, 7, 9005, 40003) AND j.value ->> 0 = 'e'
  UNION ALL
  SELECT e.seq, y.channel FROM events e CROSS JOIN json_each(iif(json_valid(e.tags), e.tags, '[]')) j
    CROSS JOIN events x ON x.id = unhex(j.value ->> 1)
    CROSS JOIN json_each(iif(json_valid(x.tags), x.tags, '[]')) k CROSS JOIN events y ON y.id = unhex(k.value ->> 1)
    WHERE e.kind IN (5, 9005) AND j.value ->> 0 = 'e' AND x.kind IN (5, 7, 9005, 40003) AND k.value ->> 0 = 'e';

-- A scope is set once (a reaction that arrived before its target): the
-- old one counts too.
CREATE TRIGGER events_page_update AFTER UPDATE ON events BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT c, 1 FROM (SELECT channel AS c FROM event_pages WHERE seq = NEW.seq UNION SELECT OLD.scope)
    WHERE c IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

-- Before the row goes, while the views still see it.
CREATE TRIGGER events_page_delete BEFORE DELETE ON events BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT DISTINCT channel, 1 FROM event_pages WHERE seq = OLD.seq AND channel IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER tags_page_insert AFTER INSERT ON tags
  WHEN NEW.name = 'e' AND NEW.kind IN (5, 7, 9005, 40003) BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT DISTINCT channel, 1 FROM target_pages
    WHERE id = NEW.value AND (hop = 1 OR NEW.kind IN (5, 9005)) AND channel IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER tags_page_delete AFTER DELETE ON tags
  WHEN OLD.name = 'e' AND OLD.kind IN (5, 7, 9005, 40003) BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT DISTINCT channel, 1 FROM target_pages
    WHERE id = OLD.value AND (hop = 1 OR OLD.kind IN (5, 9005)) AND channel IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER thread_page_insert AFTER INSERT ON thread_metadata BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT channel, 1 FROM events WHERE seq = NEW.seq AND channel IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER thread_page_update AFTER UPDATE ON thread_metadata BEGIN
  INSERT INTO page_versions (channel, version)
    SELECT channel, 1 FROM events WHERE seq = NEW.seq AND channel IS NOT NULL
    ON CONFLICT (channel) DO UPDATE SET version = version + 1;
END;

-- The NIP-98 tokens `/query` accepted (RL-17), so that each is used once,
-- across restarts and, on PostgreSQL, across the processes of one
-- database. A token is kept as the first 16 bytes of the SHA-256 of its
-- signature's lower-case hex, until expires (Unix seconds): 120 s after
-- it was accepted, past the end of any token's validity. The purge
-- deletes the expired ones along nip98_tokens_expires; a client adds no
-- more rows than its `/query` rate lets requests through.
CREATE TABLE nip98_tokens (
  sig     BLOB    PRIMARY KEY,
  expires INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX nip98_tokens_expires ON nip98_tokens(expires);
