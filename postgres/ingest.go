package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// maxDepth bounds the walks up a thread's ancestry (CW-10).
const maxDepth = buzz.MaxDepth

// Admit stores ev, whose id and signature the caller has verified, all or
// nothing (RL-4), as buzz's rules of ingest decide, and says what became
// of it: in one transaction with the other events this process is
// admitting at the time (writeShared). A refusal is a *buzz.Rejection carrying the exact client
// message.
func (s *Store) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	r, err := newRecord(ev)
	if err != nil {
		return buzz.Admitted{}, err
	}
	var a buzz.Admitted
	err = s.writeShared(ctx, r, func(tx *writeTx) error {
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
	var recs []*record
	batch := buzz.PrepareBatch(evs, func(ev *nostr.Event) (*record, error) {
		r, err := newRecord(ev)
		if err == nil {
			recs = append(recs, r)
		}
		return r, err
	})
	err = s.write(ctx, func(tx *writeTx) error {
		tx.access.Deferred = true
		tx.copied = map[int64][]tagCopy{}
		tx.expect = len(evs)
		if err := tx.prefetch(recs); err != nil {
			return err
		}
		if err := batch.Admit(func(r *record) error {
			_, err := s.ingest(tx, r, tx.now, true)
			return err
		}); err != nil {
			return err
		}
		return tx.copyTags()
	})
	return batch.Outcomes, err
}

// ingest admits one event in tx by buzz's rules (buzz.Admit): the live
// writer, an import and the relay's own group state alike. The other
// processes hear of what a live write stored (notify.go).
func (s *Store) ingest(tx *writeTx, r *record, now int64, importing bool) (buzz.Admitted, error) {
	tx.recounted = tx.recounted[:0]
	adm := &admission{lookup: tx.newLookup(), tx: tx, r: r}
	a, err := buzz.Admit(adm, r.Event, r.Input(s.pubkey, now, importing))
	if err == nil && adm.seq != 0 && !importing {
		tx.noted(adm.seq)
	}
	return a, err
}

// insertTags writes the tag index rows of event seq; in an import batch
// or a shared transaction, those that no later event of it reads are
// left for its COPY.
func (tx *writeTx) insertTags(rows []tagRow, createdAt, seq int64, kind int) error {
	if tx.copied != nil && !tagsReadByIngest(kind) {
		for _, t := range rows {
			tx.copied[seq] = append(tx.copied[seq], tagCopy{name: t.name, value: t.value, createdAt: createdAt, kind: kind})
		}
		return nil
	}
	for _, t := range rows {
		tx.tx.queue(insertTagSQL, t.name, t.value, createdAt, seq, kind)
	}
	return nil
}

// insertTagSQL writes one tag index row.
const insertTagSQL = `INSERT INTO tags (name, value, created_at, seq, kind) VALUES ($1,$2,$3,$4,$5)
	ON CONFLICT DO NOTHING`

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

// copyTags writes the tag index rows the transaction left for it in one
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
// transaction, keeping the rows it found for the writes.
type lookup = buzz.WriteRows[*stored]

func (tx *writeTx) newLookup() *lookup { return buzz.NewWriteRows(tx.rows, tx.access) }

// storedOne reads the stored event of a one-row query; nil when none.
func (tx *writeTx) storedOne(query string, arg any) (*stored, error) {
	s, err := scanStored(tx.tx.QueryRow(tx.ctx, query, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return s, err
}

func (tx *writeTx) byID(id []byte) (*stored, error) {
	if s, found := tx.cache.byID(id); found {
		return s, nil
	}
	s, err := tx.storedOne(`SELECT `+storedColumns+` FROM events WHERE id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("look up event %x: %w", id, err)
	}
	tx.cache.read(id, s)
	return s, nil
}

func (tx *writeTx) bySeq(seq int64) (*stored, error) {
	if s := tx.cache.bySeq(seq); s != nil {
		return s, nil
	}
	s, err := tx.storedOne(`SELECT `+storedColumns+` FROM events WHERE seq = $1`, seq)
	if err != nil {
		return nil, fmt.Errorf("look up event #%d: %w", seq, err)
	}
	if s != nil {
		tx.cache.read(s.id, s)
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
	out, err := collect(rows, err, func(row pgx.CollectableRow) (*stored, error) { return scanStored(row) })
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	return out, nil
}

// lookupChannel returns the number of channel h, if it has one.
func (tx *writeTx) lookupChannel(h string) (seq int64, found bool, err error) {
	// Every channel row is in the access state, which the transaction
	// holds as of its write lock; the table answers what it does not
	// know yet.
	if ch := tx.access.Community().Channel(h); ch != nil && ch.Seq != 0 {
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
