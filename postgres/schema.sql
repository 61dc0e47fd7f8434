-- buzz-lite on PostgreSQL: migration 1, the whole schema.
--
-- Applied by migrate.go inside one transaction, recorded in
-- schema_migrations; later changes are further migrations, never edits of
-- this file once released.
--
-- Ids, pubkeys and signatures are raw bytes (32/32/64): bytea order is
-- byte order, which is lowercase-hex order, the `id ASC` of the channel
-- window (CW-15). Tags and content are bytea too: an event's text is kept
-- byte for byte as signed, invalid UTF-8 and NUL included, which text
-- columns refuse.

-- Channels named by an event's `h` tag or created by a kind 9007 (see the
-- SQLite schema for the meaning of each column).
CREATE TABLE channels (
  seq        bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  h          text    NOT NULL UNIQUE,
  created_at bigint,
  name       text    NOT NULL DEFAULT '',
  about      text    NOT NULL DEFAULT '',
  private    boolean NOT NULL DEFAULT false,
  deleted_at bigint
);

-- Who holds a role in a channel (RL-10): 1 member, 2 admin, 3 owner.
CREATE TABLE members (
  channel bigint   NOT NULL REFERENCES channels(seq),
  pubkey  bytea    NOT NULL,
  role    smallint NOT NULL,
  PRIMARY KEY (channel, pubkey)
);

-- Community settings and bookkeeping: access_version is bumped by every
-- transaction that changes channels, members or settings, so that every
-- process sees another one's changes; thread_replies_in_channel (0/1) and
-- thread_replies_in_channel.config as in the SQLite schema.
CREATE TABLE settings (
  key   text   PRIMARY KEY,
  value bigint NOT NULL
);
INSERT INTO settings (key, value) VALUES ('access_version', 0);

-- Every stored event, with its thread classification and read scope (as
-- in the SQLite schema). dkey is the index key (tagkey.go) of an
-- addressable event's d tag.
CREATE TABLE events (
  seq        bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         bytea    NOT NULL UNIQUE,
  pubkey     bytea    NOT NULL,
  created_at bigint   NOT NULL,
  kind       integer  NOT NULL,
  tags       bytea    NOT NULL,
  content    bytea    NOT NULL,
  sig        bytea    NOT NULL,
  channel    bigint   REFERENCES channels(seq),
  dkey       bytea,
  expires_at bigint,
  deleted_at bigint,
  parent     bigint,
  root       bigint,
  depth      integer,
  broadcast  boolean  NOT NULL DEFAULT false,
  row_class  smallint NOT NULL DEFAULT 0,
  scope      bigint
);

CREATE INDEX events_created ON events (created_at);
CREATE INDEX events_kind ON events (kind, created_at);
CREATE INDEX events_pubkey ON events (pubkey, kind, created_at);
CREATE INDEX events_channel ON events (channel, created_at DESC, id)
  WHERE channel IS NOT NULL;
-- The window: one index range scan in window order per row mode (CW-9,
-- CW-13, CW-15).
CREATE INDEX events_toplevel ON events (channel, created_at DESC, id)
  WHERE row_class = 2 AND deleted_at IS NULL;
CREATE INDEX events_projection ON events (channel, created_at DESC, id)
  WHERE row_class >= 1 AND deleted_at IS NULL;
CREATE INDEX events_address ON events (kind, pubkey, dkey)
  WHERE dkey IS NOT NULL;
CREATE INDEX events_expiry ON events (expires_at)
  WHERE expires_at IS NOT NULL;
CREATE INDEX events_root ON events (root, created_at, id)
  WHERE root IS NOT NULL;
CREATE INDEX events_parent ON events (parent)
  WHERE parent IS NOT NULL;
-- A thread's authors with their newest live replies: the recount of a
-- root's participants after a deletion (thread.go: threadRecent).
CREATE INDEX events_root_authors ON events (root, pubkey, created_at)
  WHERE root IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX events_unclassified ON events (created_at, id)
  WHERE depth IS NULL AND row_class = 2;

-- Exact tag index (RL-3): one row per distinct single-letter tag name and
-- value of an event, the `h` tag aside (events.channel is its index). The
-- value is kept as its index key (tagkey.go): the value's bytes, or for a
-- value longer than a btree entry may be, its digest.
CREATE TABLE tags (
  name       text    NOT NULL,
  value      bytea   NOT NULL,
  created_at bigint  NOT NULL,
  seq        bigint  NOT NULL,
  kind       integer NOT NULL,
  PRIMARY KEY (name, value, created_at, seq)
);
CREATE INDEX tags_seq ON tags (seq);
-- Aux lookups of the window and thread pages (CW-18).
CREATE INDEX tags_aux ON tags (value, created_at, seq, kind)
  WHERE name = 'e' AND kind IN (5, 7, 9005, 40003);

-- Window page versions (issue 15): a cached window page of a channel is
-- valid while its channel's version stands. Every write transaction bumps
-- the version of each channel whose pages it may change (pages.go); a
-- channel without a row has version 0.
CREATE TABLE page_versions (
  channel bigint PRIMARY KEY,
  version bigint NOT NULL
);

-- Subtree counters of a classified channel event (RL-5, RL-6), as in the
-- SQLite schema: participants packed as n x (32-byte pubkey, 8-byte
-- big-endian created_at).
CREATE TABLE thread_metadata (
  seq              bigint PRIMARY KEY REFERENCES events(seq) ON DELETE CASCADE,
  reply_count      bigint NOT NULL DEFAULT 0,
  descendant_count bigint NOT NULL DEFAULT 0,
  last_reply_at    bigint,
  participants     bytea,
  updated_at       bigint
);
