package postgres

import (
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// record is an event prepared for the write path (buzz.ParsedEvent) with
// its columns, decoded once.
type record struct {
	*buzz.ParsedEvent
	tagsJSON []byte
	dkey     []byte // index key of an addressable event's d tag; nil otherwise
	tags     []tagRow
}

// tagRow is one row of the exact tag index.
type tagRow struct {
	name  string
	value []byte // tagKey of the value
}

func newRecord(ev *nostr.Event) (*record, error) {
	p, err := buzz.ParseEvent(ev)
	if err != nil {
		return nil, err
	}
	r := &record{ParsedEvent: p, tags: indexedTags(ev.Tags),
		tagsJSON: tagjson.AppendTags(make([]byte, 0, 64*len(ev.Tags)+2), ev.Tags)}
	if buzz.IsAddressableKind(ev.Kind) {
		r.dkey = tagKey(ev.Tags.GetD())
	}
	return r, nil
}

// expiresAt is the event's expires_at column (NIP-40).
func (r *record) expiresAt() *int64 {
	if !r.Expires {
		return nil
	}
	return &r.ExpiresAt
}

// maxKeyLen is the longest tag value kept as itself in an index key.
const maxKeyLen = 64

// tagKey is the index form of a tag value: its bytes when they are short,
// else their SHA-512 and one byte more, a length no short value has. A
// btree entry holds a third of a page at most, and a tag value has no
// bound; the digest keeps the match exact for every value a client can
// find a second value of the same key for.
func tagKey(v string) []byte {
	if len(v) <= maxKeyLen {
		return []byte(v)
	}
	sum := sha512.Sum512([]byte(v))
	return append(sum[:], 0)
}

// indexedTags is the tag index rows of tags (buzz.IndexedTags) in index
// form.
func indexedTags(tags nostr.Tags) []tagRow {
	pairs := buzz.IndexedTags(tags)
	rows := make([]tagRow, len(pairs))
	for i, p := range pairs {
		rows[i] = tagRow{name: p[0], value: tagKey(p[1])}
	}
	return rows
}

// hexKeys decodes the 64-hex values of list (either case), dropping the rest.
func hexKeys(list []string) [][]byte {
	out := make([][]byte, 0, len(list))
	for _, v := range list {
		if b, ok := nipcw.ID32(v); ok {
			out = append(out, b)
		}
	}
	return out
}

// stored is what the write path reads back about a stored event.
type stored struct {
	seq       int64
	id        []byte
	pubkey    []byte
	createdAt int64
	kind      int
	tagsJSON  []byte
	channel   *int64
	depth     *int64
	parent    *int64
	root      *int64
	deletedAt *int64
	expiresAt *int64
	scope     *int64
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
		Channel:    value(s.channel),
		Scope:      value(s.scope),
		Classified: s.depth != nil,
		Depth:      value(s.depth),
		RootRef:    value(s.root),
		Deleted:    s.deletedAt != nil,
		ExpiresAt:  value(s.expiresAt),
	}
}

// Tags are the tags of s (buzz.StoredRow).
func (s *stored) Tags() (nostr.Tags, error) { return tagjson.Parse(string(s.tagsJSON)) }

// storedColumns are the columns scanStored reads.
const storedColumns = `seq, id, pubkey, created_at, kind, tags, channel, depth, parent, root, deleted_at, expires_at, scope`

type scanner interface{ Scan(dest ...any) error }

// scanStored scans a row of storedColumns, then the columns after them
// into extra.
func scanStored(sc scanner, extra ...any) (*stored, error) {
	var s stored
	var depth *int32
	var kind int32
	err := sc.Scan(append([]any{&s.seq, &s.id, &s.pubkey, &s.createdAt, &kind, &s.tagsJSON,
		&s.channel, &depth, &s.parent, &s.root, &s.deletedAt, &s.expiresAt, &s.scope}, extra...)...)
	if err != nil {
		return nil, err
	}
	s.kind = int(kind)
	if depth != nil {
		d := int64(*depth)
		s.depth = &d
	}
	return &s, nil
}

// value is what a nullable column holds, 0 for NULL.
func value(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// eventSelect is the column list that rebuilds a signed event.
const eventSelect = `e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig`

// eventColumns are the columns of eventSelect as scanned.
type eventColumns struct {
	id, pubkey, sig []byte
	createdAt       int64
	kind            int32
	tags, content   []byte
}

// dest are the scan destinations of eventSelect.
func (c *eventColumns) dest() []any {
	return []any{&c.id, &c.pubkey, &c.createdAt, &c.kind, &c.tags, &c.content, &c.sig}
}

// event rebuilds the signed event.
func (c *eventColumns) event() (*nostr.Event, error) {
	return buzz.EventOf(c.id, c.pubkey, c.sig, c.createdAt, int(c.kind), string(c.tags), string(c.content))
}

// raw serves the stored event as its signed JSON (buzz.NewRawEvent).
func (c *eventColumns) raw() (buzz.RawEvent, error) {
	return buzz.NewRawEvent(c.id, c.pubkey, c.sig, c.createdAt, int(c.kind), string(c.tags), string(c.content))
}

// errStop, returned by eachRow's fn, stops reading rows.
var errStop = errors.New("stop reading rows")

// collect is pgx.CollectRows of a query's rows, or the query's error.
func collect[T any](rows pgx.Rows, err error, fn pgx.RowToFunc[T]) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, fn)
}

// eachRow scans every row of a query's result (rows and err as Query
// returns them) into dest and calls fn after each, then closes rows. A
// failure of the query or of reading a row is wrapped with what; fn's own
// error ends the loop and is returned as it is, but errStop ends it with
// no error.
func eachRow(rows pgx.Rows, err error, what string, dest []any, fn func() error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var fnErr error
	_, err = pgx.ForEachRow(rows, dest, func() error {
		fnErr = fn()
		return fnErr
	})
	switch {
	case fnErr == errStop:
		return nil
	case fnErr != nil:
		return fnErr
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
