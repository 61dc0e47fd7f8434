package sqlite

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
	"github.com/buzz-lite/buzz-lite/internal/tagjson"
	"github.com/buzz-lite/buzz-lite/nipcw"
)

// record is an event prepared for the write path: decoded once, outside the
// writer, so that the single writer spends its time on SQL only.
type record struct {
	ev         *nostr.Event
	id, pubkey []byte
	sig        []byte
	tagsJSON   string
	channel    string
	thread     buzz.ThreadTags
	dtag       sql.NullString
	expiresAt  sql.NullInt64
	tags       []tagRow
}

// tagRow is one row of the exact tag index.
type tagRow struct {
	name  string
	value any // []byte for a lowercase 64-hex value, else string
}

var errMalformed = &buzz.Rejection{Prefix: "invalid", Message: "malformed event"}

func newRecord(ev *nostr.Event) (*record, error) {
	r := &record{ev: ev}
	var err error
	if r.id, err = decodeHex(ev.ID, 32); err != nil {
		return nil, errMalformed
	}
	if r.pubkey, err = decodeHex(ev.PubKey, 32); err != nil {
		return nil, errMalformed
	}
	if r.sig, err = decodeHex(ev.Sig, 64); err != nil {
		return nil, errMalformed
	}
	r.tagsJSON = string(tagjson.AppendTags(make([]byte, 0, 64*len(ev.Tags)+2), ev.Tags))
	if r.channel, err = buzz.ChannelOf(ev.Tags); err != nil {
		return nil, err
	}
	r.thread = buzz.ParseThreadTags(ev.Tags)
	if buzz.IsAddressableKind(ev.Kind) {
		r.dtag = sql.NullString{String: ev.Tags.GetD(), Valid: true}
	}
	r.tags = indexedTags(ev.Tags)
	for _, tag := range ev.Tags {
		if len(tag) >= 2 && tag[0] == "expiration" {
			if ts, err := strconv.ParseInt(tag[1], 10, 64); err == nil {
				r.expiresAt = sql.NullInt64{Int64: ts, Valid: true}
			}
			break
		}
	}
	return r, nil
}

// indexedTags lists the distinct (name, value) pairs of single-letter tags
// other than h, in index form (RL-3).
func indexedTags(tags nostr.Tags) []tagRow {
	rows := make([]tagRow, 0, len(tags))
	seen := make(map[[2]string]bool, len(tags))
	for _, tag := range tags {
		if len(tag) < 2 || !isTagName(tag[0]) || tag[0] == "h" {
			continue
		}
		k := [2]string{tag[0], tag[1]}
		if seen[k] {
			continue
		}
		seen[k] = true
		rows = append(rows, tagRow{name: tag[0], value: tagValue(tag[1])})
	}
	return rows
}

// isTagName reports whether name is one NIP-01 filters can address: a single
// ASCII letter.
func isTagName(name string) bool {
	return len(name) == 1 && ('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z')
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

func decodeHex(s string, n int) ([]byte, error) {
	if len(s) != 2*n {
		return nil, fmt.Errorf("want %d hex characters, got %d", 2*n, len(s))
	}
	return hex.DecodeString(strings.ToLower(s))
}

// idKey is the stored form of an event id given in hex of either case.
func idKey(s string) ([]byte, bool) {
	if !nipcw.IsHex64(s) {
		return nil, false
	}
	b, _ := hex.DecodeString(strings.ToLower(s))
	return b, true
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

func scanStored(row *sql.Row) (*stored, error) {
	var s stored
	err := row.Scan(&s.seq, &s.id, &s.pubkey, &s.createdAt, &s.kind, &s.tagsJSON,
		&s.channel, &s.depth, &s.parent, &s.root, &s.deletedAt, &s.expiresAt, &s.scope)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

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
	ev := &nostr.Event{
		ID:        hex.EncodeToString(id),
		PubKey:    hex.EncodeToString(pubkey),
		CreatedAt: nostr.Timestamp(createdAt),
		Kind:      kind,
		Content:   content,
		Sig:       hex.EncodeToString(sig),
	}
	var err error
	if ev.Tags, err = tagjson.Parse(tags); err != nil {
		return nil, fmt.Errorf("decode tags of stored event %s: %w", ev.ID, err)
	}
	return ev, nil
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
