package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// maxDepth bounds the walks up a thread's ancestry (CW-10).
const maxDepth = buzz.MaxDepth

// Ingest stores ev, whose id and signature the caller has verified, in one
// transaction (RL-4): the event row, its tag index rows, its thread
// classification and the counters of every ancestor; for a deletion, the
// soft deletion of its targets with their ancestors' counters made exact
// again (RL-6); for a replaceable or addressable event, the removal of the
// versions it replaces (RL-9); for a NIP-29 lifecycle event, the channel's
// new state and group state (RL-10, RL-11). A refusal is a *buzz.Rejection
// carrying the exact client message; buzz.ErrDuplicate and
// buzz.ErrNewerVersionStored mean nothing was stored and nothing is wrong.
func (s *Store) Ingest(ctx context.Context, ev *nostr.Event) error {
	_, err := s.Admit(ctx, ev)
	return err
}

// Admit is Ingest, saying what became of the event.
func (s *Store) Admit(ctx context.Context, ev *nostr.Event) (buzz.Admitted, error) {
	r, err := newRecord(ev)
	if err != nil {
		return buzz.Admitted{}, err
	}
	now := s.nowUnix()
	var a buzz.Admitted
	err = s.writer.do(ctx, func(tx *writeTx) error {
		var err error
		a, err = s.ingest(tx, r, now, false)
		return err
	})
	return a, err
}

// ImportBatch ingests evs in order, in one transaction, as an import does
// (issue 8): through the same ingest as Ingest, except that a reply whose
// parent is not stored (absent, or later in the file), or no longer served,
// is kept unclassified (depth NULL, CW-12) instead of refused; Backfill
// classifies it once its parent is there. Group state is left for
// RenewGroupState at the end of the import. It returns each event's
// outcome (nil when stored, else a *buzz.Rejection); err is a failure of
// the batch as a whole, after which nothing of it is stored.
func (s *Store) ImportBatch(ctx context.Context, evs []*nostr.Event) (outcomes []error, err error) {
	batch := buzz.PrepareBatch(evs, newRecord)
	now := s.nowUnix()
	err = s.writer.do(ctx, func(tx *writeTx) error {
		tx.access.Deferred = true
		defer func() { tx.access.Deferred = false }()
		return batch.Admit(func(r *record) error {
			_, err := s.ingest(tx, r, now, true)
			return err
		})
	})
	return batch.Outcomes, err
}

// ingest admits one event in tx by buzz's rules (buzz.Admit): the live
// writer, an import and the relay's own group state alike.
func (s *Store) ingest(tx *writeTx, r *record, now int64, importing bool) (buzz.Admitted, error) {
	tx.recounted = tx.recounted[:0]
	return buzz.Admit(&admission{lookup: tx.newLookup(), tx: tx, r: r}, r.Event, r.Input(s.pubkey, now, importing))
}

// recountedThreads describes the events whose thread counters this ingest
// changed, for the live summary push of CW-21.
func (tx *writeTx) recountedThreads() ([]buzz.ThreadChange, error) {
	if len(tx.recounted) == 0 {
		return nil, nil
	}
	out := make([]buzz.ThreadChange, 0, len(tx.recounted))
	seen := make(map[int64]bool, len(tx.recounted))
	for _, seq := range tx.recounted {
		if seen[seq] {
			continue
		}
		seen[seq] = true
		c, err := tx.threadChange(seq)
		if err != nil {
			return nil, fmt.Errorf("read thread of #%d: %w", seq, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// classification is an event's place in a thread (CW-10, CW-11, CW-12).
type classification struct {
	parent, root, depth sql.NullInt64
	broadcast           bool
	rowClass            int
}

// Row classes of events.row_class: see schema.sql.
const (
	rowNever    = int(buzz.RowNever)
	rowReply    = int(buzz.RowReply)
	rowTopLevel = int(buzz.RowTopLevel)
)

// columnsOf is a classification as the events table stores it.
func columnsOf(c buzz.Classification) classification {
	cls := classification{broadcast: c.Broadcast, rowClass: int(c.Row)}
	if c.Classified {
		cls.depth = sql.NullInt64{Int64: c.Depth, Valid: true}
		if c.Depth > 0 {
			cls.parent = sql.NullInt64{Int64: c.ParentRef, Valid: true}
			cls.root = sql.NullInt64{Int64: c.RootRef, Valid: true}
		}
	}
	return cls
}

// lookup is what the rules of ingest (buzz.Lookup) read in a write
// transaction, keeping the rows it found for the writes.
type lookup = buzz.WriteRows[*stored]

func (tx *writeTx) newLookup() *lookup { return buzz.NewWriteRows(tx.rows, tx.access) }

// threadChange reads the summary target seq (a channel event) of a
// recounted thread.
func (tx *writeTx) threadChange(seq int64) (buzz.ThreadChange, error) {
	st := tx.summaryTarget
	defer st.reset()
	switch found, err := st.first(seq); {
	case err != nil:
		return buzz.ThreadChange{}, err
	case !found:
		return buzz.ThreadChange{}, errNoRow
	}
	return buzz.ThreadChange{ID: hex.EncodeToString(st.bytes(0)), Channel: string(st.bytes(1)),
		Root: st.int64(2) != 0, TopLevel: int(st.int64(3)) == rowTopLevel}, nil
}

// errNoRow is a row the writer reads by number and does not find.
var errNoRow = errors.New("no row")

func (tx *writeTx) byID(id []byte) (*stored, error) {
	s, err := readStored(tx.eventByID, id)
	if err != nil {
		return nil, fmt.Errorf("look up event %x: %w", id, err)
	}
	return s, nil
}

func (tx *writeTx) bySeq(seq int64) (*stored, error) {
	s, err := readStored(tx.eventBySeq, seq)
	if err != nil {
		return nil, fmt.Errorf("look up event #%d: %w", seq, err)
	}
	return s, nil
}

// readStored runs st (eventColumns of one event) with key: nil when no
// event matches.
func readStored(st *directStmt, key any) (*stored, error) {
	defer st.reset()
	found, err := st.first(key)
	if err != nil || !found {
		return nil, err
	}
	return &stored{seq: st.int64(0), id: st.bytesCopy(1), pubkey: st.bytesCopy(2), createdAt: st.int64(3),
		kind: int(st.int64(4)), tagsJSON: string(st.bytes(5)), channel: st.nullInt64Col(6),
		depth: st.nullInt64Col(7), parent: st.nullInt64Col(8), root: st.nullInt64Col(9),
		deletedAt: st.nullInt64Col(10), expiresAt: st.nullInt64Col(11), scope: st.nullInt64Col(12)}, nil
}

// exists runs a `SELECT 1 ... LIMIT 1` statement.
func (tx *writeTx) exists(st *sql.Stmt, args ...any) (bool, error) {
	var one int
	switch err := st.QueryRowContext(tx.ctx, args...).Scan(&one); {
	case err == sql.ErrNoRows:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("lookup: %w", err)
	}
	return true, nil
}

// versions lists the stored versions of a replaceable (d ignored) or
// addressable event, deleted ones included: a deleted version still counts
// as the newest, so that re-sending an older one does not bring back what
// its author replaced and then deleted.
func (tx *writeTx) versions(kind int, pubkey []byte, d string) ([]*stored, error) {
	var rows *sql.Rows
	var err error
	if buzz.IsAddressableKind(kind) {
		rows, err = tx.addressableVersion.QueryContext(tx.ctx, kind, pubkey, d)
	} else {
		rows, err = tx.replaceableVersions.QueryContext(tx.ctx, pubkey, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	seqs, err := readSeqs(rows)
	if err != nil {
		return nil, fmt.Errorf("look up versions: %w", err)
	}
	out := make([]*stored, 0, len(seqs))
	for _, seq := range seqs {
		v, err := tx.bySeq(seq)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// lookupChannel returns the number of channel h, if it has one.
func (tx *writeTx) lookupChannel(h string) (seq int64, found bool, err error) {
	if seq, ok := tx.channels[h]; ok {
		return seq, true, nil
	}
	switch err := tx.channelSeq.QueryRowContext(tx.ctx, h).Scan(&seq); {
	case err == sql.ErrNoRows:
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("look up channel: %w", err)
	}
	tx.channels[h] = seq
	return seq, true, nil
}
