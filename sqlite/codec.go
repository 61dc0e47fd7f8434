package sqlite

import (
	"database/sql"
	"encoding/hex"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// record is an event prepared for the write path (buzz.ParsedEvent) with
// its columns: decoded once, outside the writer, so that the single writer
// spends its time on SQL only.
type record struct {
	*buzz.ParsedEvent
	tagsJSON string
	dtag     sql.NullString
	tags     []tagRow
}

// tagRow is one row of the exact tag index.
type tagRow struct {
	name  string
	value any // []byte for a lowercase 64-hex value, else string
}

func newRecord(ev *nostr.Event) (*record, error) {
	p, err := buzz.ParseEvent(ev)
	if err != nil {
		return nil, err
	}
	r := &record{ParsedEvent: p, tags: indexedTags(ev.Tags),
		tagsJSON: string(tagjson.AppendTags(make([]byte, 0, 64*len(ev.Tags)+2), ev.Tags))}
	if buzz.IsAddressableKind(ev.Kind) {
		r.dtag = sql.NullString{String: ev.Tags.GetD(), Valid: true}
	}
	return r, nil
}

// expiresAt is the event's expires_at column (NIP-40).
func (r *record) expiresAt() sql.NullInt64 {
	return sql.NullInt64{Int64: r.ExpiresAt, Valid: r.Expires}
}

// indexedTags is the tag index rows of tags (buzz.IndexedTags) in index
// form.
func indexedTags(tags nostr.Tags) []tagRow {
	pairs := buzz.IndexedTags(tags)
	rows := make([]tagRow, len(pairs))
	for i, p := range pairs {
		rows[i] = tagRow{name: p[0], value: tagValue(p[1])}
	}
	return rows
}

// tagValue is the index form of a tag value: 32 bytes for 64 lowercase hex
// characters (ids and pubkeys, the bulk of all values), the text otherwise.
// An uppercase hex value stays text, so it matches only itself.
func tagValue(v string) any {
	if nipcw.IsLowerHex64(v) {
		b, _ := hex.DecodeString(v)
		return b
	}
	return v
}

// stored is what the write path reads back about a stored event.
type stored struct {
	seq       int64
	id        []byte
	pubkey    []byte
	createdAt int64
	kind      int
	tagsJSON  string
	channel   sql.NullInt64
	depth     sql.NullInt64
	parent    sql.NullInt64
	root      sql.NullInt64
	deletedAt sql.NullInt64
	expiresAt sql.NullInt64
	scope     sql.NullInt64
}

// Fact is what the rules of ingest know of s (buzz.StoredRow).
func (s *stored) Fact() *buzz.StoredEvent {
	if s == nil {
		return nil
	}
	return &buzz.StoredEvent{
		Ref:        s.seq,
		ID:         hex.EncodeToString(s.id),
		PubKey:     hex.EncodeToString(s.pubkey),
		Kind:       s.kind,
		CreatedAt:  s.createdAt,
		Channel:    s.channel.Int64,
		Scope:      s.scope.Int64,
		Classified: s.depth.Valid,
		Depth:      s.depth.Int64,
		RootRef:    s.root.Int64,
		Deleted:    s.deletedAt.Valid,
		ExpiresAt:  s.expiresAt.Int64,
	}
}

// Tags are the tags of s (buzz.StoredRow).
func (s *stored) Tags() (nostr.Tags, error) { return tagjson.Parse(s.tagsJSON) }

// eventSelect is the column list that rebuilds a signed event.
const eventSelect = `e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig`

type scanner interface{ Scan(dest ...any) error }

// scanEvent rebuilds a signed event from the columns of eventSelect.
func scanEvent(sc scanner) (*nostr.Event, error) {
	var (
		id, pubkey, sig []byte
		createdAt       int64
		kind            int
		tags, content   string
	)
	if err := sc.Scan(&id, &pubkey, &createdAt, &kind, &tags, &content, &sig); err != nil {
		return nil, err
	}
	return buzz.EventOf(id, pubkey, sig, createdAt, kind, tags, content)
}

// readSeqs reads a one-column result of event numbers and closes rows.
func readSeqs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		seqs = append(seqs, seq)
	}
	return seqs, rows.Err()
}
