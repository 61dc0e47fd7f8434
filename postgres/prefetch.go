package postgres

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// writeCache answers, from memory, the reads the rules of ingest raise
// for each event of an import batch or a shared transaction: the probe of
// every event (Seen), the event a reply names and its root (byID, bySeq),
// and the counters of its ancestors (ReadThreadRow). Issue 32: under the
// write lock those were a round trip each, for every event.
//
// It holds what the transaction read ahead in one round trip for its
// batch (prefetch), what it read since, and the rows it wrote itself, and
// it stays exact by seeing every write of the transaction to what it
// holds: an insert adds the event (and a deletion's or reaction's names),
// a change of an event's row forgets it, the counters written replace
// those held, and a deletion or reaction taken away forgets the probes.
// What it does not hold is read from the database as before. The write
// lock keeps every other process from writing meanwhile.
type writeCache struct {
	// rows are the events by id (the 32 bytes as a string): the stored
	// row, or nil for an id known not to be stored; numbered the same rows
	// by number.
	rows     map[string]*stored
	numbered map[int64]*stored
	// probed are the ids (tagKey of the hex id) whose deletions and
	// reactions are held: deleters are the authors of the live kind 5
	// deletions naming each in an `e` tag, reacted the ids a reaction
	// names. nil once a write took away a deletion or reaction.
	probed   map[string]bool
	deleters map[string][][]byte
	reacted  map[string]bool
	// threads are the parent, channel and counters of events, as
	// ReadThreadRow reads them.
	threads map[int64]threadEntry
	// places are what a notice of a recounted thread says of events
	// (threadChanges), by number: nil for an event of no channel.
	places map[int64]*threadPlace
}

// threadPlace is what threadChanges reads of an event of a channel.
type threadPlace struct {
	id       []byte
	channel  int64
	root     bool
	rowClass int16
}

// threadEntry is what ReadThreadRow reads of an event.
type threadEntry struct {
	channel *int64
	row     buzz.ThreadRow
}

func newWriteCache() *writeCache {
	return &writeCache{rows: map[string]*stored{}, numbered: map[int64]*stored{}, probed: map[string]bool{},
		deleters: map[string][][]byte{}, reacted: map[string]bool{}, threads: map[int64]threadEntry{},
		places: map[int64]*threadPlace{}}
}

// prefetchRowsSQL reads the events of ids $1 (32 bytes each), with the
// counters and row class of each, locked as ReadThreadRow locks them:
// the batch's own events (stored already?), the parents and roots its
// replies name.
const prefetchRowsSQL = `SELECT e.*, coalesce(t.reply_count, 0), coalesce(t.descendant_count, 0),
		t.last_reply_at, t.participants
	FROM (SELECT ` + storedColumns + `, row_class FROM events WHERE id = ANY($1) FOR UPDATE) e
	LEFT JOIN thread_metadata t ON t.seq = e.seq`

// prefetchProbeSQL reads the live kind 5 deletions naming ids $1 (tagKey
// of the hex ids) in an `e` tag, with their authors, and the ids a
// reaction names (author NULL): Seen's probes for a whole batch.
const prefetchProbeSQL = `SELECT t.value, d.pubkey FROM tags t JOIN events d ON d.seq = t.seq
		WHERE t.name = 'e' AND t.value = ANY($1) AND t.kind = 5 AND d.deleted_at IS NULL
	UNION ALL
	SELECT DISTINCT value, NULL::bytea FROM tags WHERE name = 'e' AND value = ANY($1) AND kind = 7`

// prefetch reads ahead, in one round trip, what the rules will read for
// recs, the events the transaction is about to admit, and starts the
// transaction's cache with it; the numbers of the events it expects
// (nextSeq) are drawn with it.
func (tx *writeTx) prefetch(recs []*record) error {
	c := newWriteCache()
	var ids, probes [][]byte
	for _, r := range recs {
		probe := tagKey(r.Event.ID)
		probes = append(probes, probe)
		c.probed[string(probe)] = true
		for _, id := range [][]byte{r.ID, id32(r.Thread.Parent), id32(r.Thread.Root)} {
			if id != nil {
				ids = append(ids, id)
				c.rows[string(id)] = nil
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(prefetchRowsSQL, ids)
	b.Queue(prefetchProbeSQL, probes)
	b.Queue(drawSeqsSQL, max(tx.expect, 1))
	br := tx.tx.SendBatch(tx.ctx, b)
	if err := c.readRows(br); err != nil {
		return joinClose(err, br)
	}
	if err := c.readProbes(br); err != nil {
		return joinClose(err, br)
	}
	rows, err := br.Query()
	if tx.seqs, err = collect(rows, err, pgx.RowTo[int64]); err != nil {
		return fmt.Errorf("draw event numbers: %w", joinClose(err, br))
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("read the batch's events ahead: %w", err)
	}
	tx.cache = c
	return nil
}

// id32 is the 32 bytes of hex id, nil for none or a malformed one.
func id32(id string) []byte {
	key, ok := nipcw.ID32(id)
	if !ok {
		return nil
	}
	return key
}

// readRows reads prefetchRowsSQL's result.
func (c *writeCache) readRows(br pgx.BatchResults) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("read the batch's events ahead: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var row buzz.ThreadRow
		var last *int64
		var rowClass int16
		s, err := scanStored(rows, &rowClass, &row.Replies, &row.Descendants, &last, &row.Participants)
		if err != nil {
			return fmt.Errorf("read the batch's events ahead: %w", err)
		}
		row.Up, row.LastReplyAt, row.HasLastReply = value(s.parent), value(last), last != nil
		c.rows[string(s.id)], c.numbered[s.seq] = s, s
		c.threads[s.seq] = threadEntry{channel: s.channel, row: row}
		c.placed(s, rowClass)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the batch's events ahead: %w", err)
	}
	return nil
}

// readProbes reads prefetchProbeSQL's result.
func (c *writeCache) readProbes(br pgx.BatchResults) error {
	rows, err := br.Query()
	var probe, deleter []byte
	return eachRow(rows, err, "read the batch's probes ahead", []any{&probe, &deleter}, func() error {
		if deleter == nil {
			c.reacted[string(probe)] = true
		} else {
			c.deleters[string(probe)] = append(c.deleters[string(probe)], deleter)
		}
		return nil
	})
}

// seen answers Seen for r when the cache holds its probes.
func (c *writeCache) seen(r *record) (buzz.Seen, bool) {
	if c == nil || c.probed == nil {
		return buzz.Seen{}, false
	}
	row, known := c.rows[string(r.ID)]
	probe := string(tagKey(r.Event.ID))
	if !known || !c.probed[probe] {
		return buzz.Seen{}, false
	}
	return buzz.Seen{
		Stored:          row != nil,
		DeletedBefore:   slices.ContainsFunc(c.deleters[probe], func(pk []byte) bool { return bytes.Equal(pk, r.PubKey) }),
		NamedByReaction: c.reacted[probe],
	}, true
}

// byID is the event of id as held: found says whether the cache knows,
// row (a copy) is nil for an event not stored.
func (c *writeCache) byID(id []byte) (row *stored, found bool) {
	if c == nil {
		return nil, false
	}
	s, found := c.rows[string(id)]
	return s.clone(), found
}

// bySeq is the event numbered seq as held, a copy; nil when not held.
func (c *writeCache) bySeq(seq int64) *stored {
	if c == nil {
		return nil
	}
	return c.numbered[seq].clone()
}

// read holds s, read from the database: the row of id (nil: none).
func (c *writeCache) read(id []byte, s *stored) {
	if c == nil || len(id) != 32 {
		return
	}
	c.rows[string(id)] = s.clone()
	if s != nil {
		c.numbered[s.seq] = c.rows[string(id)]
	}
}

// inserted holds s, the row of r the transaction inserted with row class
// rowClass: its counters are none yet, and a deletion or reaction adds
// the ids it names.
func (c *writeCache) inserted(r *record, s *stored, rowClass int16) {
	if c == nil {
		return
	}
	c.read(s.id, s)
	c.threads[s.seq] = threadEntry{channel: s.channel, row: buzz.ThreadRow{Up: value(s.parent)}}
	c.placed(s, rowClass)
	if c.probed == nil || (s.kind != buzz.KindDeletion && s.kind != buzz.KindReaction) {
		return
	}
	for _, t := range r.tags {
		switch {
		case t.name != "e":
		case s.kind == buzz.KindDeletion:
			c.deleters[string(t.value)] = append(c.deleters[string(t.value)], r.PubKey)
		default:
			c.reacted[string(t.value)] = true
		}
	}
}

// changed forgets the row of event t, which the transaction changes.
func (c *writeCache) changed(t *stored) {
	if c == nil {
		return
	}
	delete(c.rows, string(t.id))
	delete(c.numbered, t.seq)
}

// deleted forgets event t, which the transaction deletes (gone: drops),
// and the probes when it was a deletion or a reaction they counted.
func (c *writeCache) deleted(t *stored, gone bool) {
	if c == nil {
		return
	}
	c.changed(t)
	if gone {
		delete(c.threads, t.seq)
		delete(c.places, t.seq)
	}
	if t.kind == buzz.KindDeletion || (gone && t.kind == buzz.KindReaction) {
		c.probed = nil
	}
}

// thread is what ReadThreadRow reads of seq, a copy, if held.
func (c *writeCache) thread(seq int64) (threadEntry, bool) {
	if c == nil {
		return threadEntry{}, false
	}
	e, ok := c.threads[seq]
	e.row.Participants = slices.Clone(e.row.Participants)
	return e, ok
}

// counted holds what ReadThreadRow read of seq (written: or what
// WriteThreadRow wrote of it, which keeps the channel read before).
func (c *writeCache) counted(seq int64, channel *int64, row buzz.ThreadRow, written bool) {
	if c == nil {
		return
	}
	if written {
		e, ok := c.threads[seq]
		if !ok {
			return
		}
		channel = e.channel
	}
	row.Participants = slices.Clone(row.Participants)
	c.threads[seq] = threadEntry{channel: channel, row: row}
}

// placed holds what threadChanges reads of s, of row class rowClass.
func (c *writeCache) placed(s *stored, rowClass int16) {
	if s.channel == nil {
		c.places[s.seq] = nil
		return
	}
	c.places[s.seq] = &threadPlace{id: s.id, channel: *s.channel, root: s.parent == nil, rowClass: rowClass}
}

// threadChanges are threadChanges(seqs) as held, if the cache holds every
// one of seqs and their channels are in the access state community.
func (c *writeCache) threadChanges(seqs []int64, community *buzz.Community) ([]buzz.ThreadChange, bool) {
	if c == nil {
		return nil, false
	}
	var out []buzz.ThreadChange
	seen := make(map[int64]bool, len(seqs))
	for _, seq := range seqs {
		p, ok := c.places[seq]
		if !ok {
			return nil, false
		}
		if p == nil || seen[seq] {
			continue
		}
		seen[seq] = true
		ch := community.ChannelBySeq(p.channel)
		if ch == nil {
			return nil, false
		}
		out = append(out, buzz.ThreadChange{ID: hex.EncodeToString(p.id), Channel: ch.H, Root: p.root,
			TopLevel: buzz.RowClass(p.rowClass) == buzz.RowTopLevel})
	}
	return out, true
}

// clone is a copy of s whose pointers the caller may replace.
func (s *stored) clone() *stored {
	if s == nil {
		return nil
	}
	cp := *s
	return &cp
}
