package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// Live fan-out across processes rides on PostgreSQL itself: every write
// transaction that stores events or changes the access state sends a
// NOTIFY, which the server delivers to every listening process once the
// transaction commits, and never when it rolls back. An event's
// notification carries its key (events.seq), not the event: the
// receiving process reads it, as stored and committed, and hands it to
// OnRemote, whose caller applies the delivery-time access check to each
// subscriber as it does for its own events.
const (
	eventsChannel    = "buzz_events"
	accessChannel    = "buzz_access"
	ephemeralChannel = "buzz_ephemeral"
)

// eventNote is the payload of an event's notification: the process that
// stored it (which delivers it itself), its key, and the events whose
// thread counters the write changed (CW-21), each once and at most
// maxNotedThreads of them, so that the payload stays below NOTIFY's 8000
// bytes: a deletion naming a thousand replies recounts their ancestors,
// and a payload past the bound failed the whole write.
type eventNote struct {
	Origin    string  `json:"o"`
	Seq       int64   `json:"s"`
	Recounted []int64 `json:"t,omitempty"`
	// Barrier, in a note of no event, is the token of a CaughtUp round
	// trip, which only its own process heeds.
	Barrier string `json:"b,omitempty"`
}

// newOrigin is a random name for this store's process in notifications.
func newOrigin() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("name the process: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// OnRemote sets fn to be called with each event another process stored
// in the database, once committed, and what became of it there: the
// channel whose readers may read it and the thread summaries it changed.
// The caller delivers it to its subscriptions under the same access check
// as its own events. Events this process stores are not handed to fn.
func (s *Store) OnRemote(fn func(ev *nostr.Event, a buzz.Admitted)) { s.onRemote.Store(&fn) }

// noted records that the current job stored event seq, for the
// notification sent before the commit; an import has no one to tell.
func (tx *writeTx) noted(seq int64) {
	threads := slices.Compact(slices.Sorted(slices.Values(tx.recounted)))
	if len(threads) > maxNotedThreads {
		// The other processes push these summaries live no further;
		// their clients read them with their next page.
		threads = threads[:maxNotedThreads]
	}
	tx.notes = append(tx.notes, eventNote{Seq: seq, Recounted: threads})
}

// maxNotedThreads bounds the threads one notification names: 300 numbers
// of up to 19 digits stay under 6,100 bytes.
const maxNotedThreads = 300

// notifySQL sends the notifications of a write: each channel of $1 with
// the payload of $2 at the same place, in order.
const notifySQL = `SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)`

// notify queues the notifications of a write, inside its transaction, in
// one statement: the events', then the access state's.
func (s *Store) notify(tx *writeTx) error {
	var channels, payloads []string
	for _, n := range tx.notes {
		n.Origin = s.origin
		payload, err := json.Marshal(n)
		if err != nil {
			return fmt.Errorf("notify event #%d: %w", n.Seq, err)
		}
		channels, payloads = append(channels, eventsChannel), append(payloads, string(payload))
	}
	if tx.access.Changed() != nil {
		channels, payloads = append(channels, accessChannel), append(payloads, s.origin)
	}
	if len(channels) > 0 {
		tx.tx.queue(notifySQL, channels, payloads)
	}
	return nil
}

// listenRetry is how long the listener waits before connecting again
// after its connection failed.
const listenRetry = time.Second

// listenConn connects the listener and subscribes it to both channels.
func (s *Store) listenConn(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.connConfig)
	if err != nil {
		return nil, fmt.Errorf("listen: connect: %w", err)
	}
	for _, ch := range []string{eventsChannel, accessChannel, ephemeralChannel} {
		if _, err := conn.Exec(ctx, `LISTEN `+ch); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("listen on %s: %w", ch, err)
		}
	}
	return conn, nil
}

// listen receives the notifications of other processes until ctx ends,
// connecting again after a failure. What was sent while it was not
// connected is lost for live delivery: the events are stored, and the
// access state is read afresh on reconnecting.
func (s *Store) listen(ctx context.Context, conn *pgx.Conn, done chan<- struct{}) {
	defer close(done)
	for {
		err := s.receive(ctx, conn)
		s.barriers.StopHearing()
		conn.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return
		}
		s.log.Error("listening for other processes' writes", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(listenRetry):
			}
			if conn, err = s.listenConn(ctx); err == nil {
				break
			}
			s.log.Error("listening for other processes' writes", "err", err)
		}
		// Heard again only once the access state the outage may have
		// missed is read: until then the connection counts as lost.
		for {
			if err = s.refresh(ctx); err == nil {
				break
			}
			s.log.Error("reading the access state", "err", err)
			select {
			case <-ctx.Done():
				conn.Close(context.WithoutCancel(ctx))
				return
			case <-time.After(listenRetry):
			}
		}
		s.barriers.Hearing()
	}
}

// receive handles notifications on conn until it fails or ctx ends.
func (s *Store) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case accessChannel:
			if n.Payload != s.origin {
				if err := s.refresh(ctx); err != nil {
					s.log.Error("reading the access state", "err", err)
				}
			}
		case ephemeralChannel:
			s.deliverEphemeral(n.Payload)
		case eventsChannel:
			var note eventNote
			if err := json.Unmarshal([]byte(n.Payload), &note); err != nil {
				s.log.Error("reading an event notification", "payload", n.Payload, "err", err)
				continue
			}
			if note.Origin == s.origin {
				if note.Barrier != "" {
					s.barriers.Heard(note.Barrier)
				}
				continue
			}
			if err := s.deliverRemote(ctx, note); err != nil && ctx.Err() == nil {
				s.log.Error("delivering another process's event", "seq", note.Seq, "err", err)
			}
		}
	}
}

// ephemeralNote is the payload of an ephemeral event's notification: the
// process that received it (which delivered it itself) and the event, which
// no table holds.
type ephemeralNote struct {
	Origin string       `json:"o"`
	Event  *nostr.Event `json:"e"`
}

// maxNotifyPayload is NOTIFY's bound on a payload, less a margin.
const maxNotifyPayload = 7900

// errEphemeralTooLarge refuses to hand on an ephemeral event whose
// notification would pass NOTIFY's bound.
var errEphemeralTooLarge = errors.New("ephemeral event too large to hand to other processes")

// Broadcast hands an ephemeral event (kinds 20000-29999), which is never
// stored, to the other processes, each to deliver it to its subscriptions
// through OnRemote (RL-33). An event whose notification would pass NOTIFY's
// 8000 bytes is refused with errEphemeralTooLarge: typing indicators and
// presence are small.
func (s *Store) Broadcast(ctx context.Context, ev *nostr.Event) error {
	payload, err := json.Marshal(ephemeralNote{Origin: s.origin, Event: ev})
	if err != nil {
		return fmt.Errorf("broadcast %s: %w", ev.ID, err)
	}
	if len(payload) > maxNotifyPayload {
		return fmt.Errorf("broadcast %s (%d bytes): %w", ev.ID, len(payload), errEphemeralTooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, ephemeralChannel, string(payload)); err != nil {
		return fmt.Errorf("broadcast %s: %w", ev.ID, err)
	}
	return nil
}

// deliverEphemeral hands the ephemeral event of another process's
// notification to OnRemote's function.
func (s *Store) deliverEphemeral(payload string) {
	fn := s.onRemote.Load()
	if fn == nil {
		return
	}
	var note ephemeralNote
	if err := json.Unmarshal([]byte(payload), &note); err != nil || note.Event == nil {
		s.log.Error("reading an ephemeral event notification", "payload", payload, "err", err)
		return
	}
	if note.Origin != s.origin {
		(*fn)(note.Event, buzz.Admitted{})
	}
}

// refresh reads the access state when another process changed it.
func (s *Store) refresh(ctx context.Context) error {
	return s.read(ctx, func(pgx.Tx, *buzz.Community) error { return nil })
}

// deliverRemote reads the event a notification names and hands it to
// OnRemote's function.
func (s *Store) deliverRemote(ctx context.Context, note eventNote) error {
	fn := s.onRemote.Load()
	if fn == nil {
		return nil
	}
	var ev *nostr.Event
	var a buzz.Admitted
	err := s.read(ctx, func(tx pgx.Tx, c *buzz.Community) error {
		var cols eventColumns
		var scope *int64
		err := tx.QueryRow(ctx, `SELECT `+eventSelect+`, e.scope FROM events e WHERE e.seq = $1
			AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > $2)`, note.Seq, s.nowUnix()).
			Scan(append(cols.dest(), &scope)...)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil // deleted, expired, replaced or purged since: nothing to deliver
		case err != nil:
			return fmt.Errorf("read event #%d: %w", note.Seq, err)
		}
		if ev, err = cols.event(); err != nil {
			return err
		}
		if scope != nil {
			ch := c.ChannelBySeq(*scope)
			if ch == nil {
				// Not reached: every channel row is in the access state.
				// Delivered to nobody rather than to everyone.
				s.log.Error("another process's event has a scope no channel has", "seq", note.Seq, "scope", *scope)
				ev = nil
				return nil
			}
			a.Scope = ch.H
		}
		a.Threads, err = threadChanges(ctx, tx, note.Recounted)
		return err
	})
	if err != nil || ev == nil {
		return err
	}
	(*fn)(ev, a)
	return nil
}

// threadChanges describes the events seqs whose thread counters changed,
// each once, in the order first named, those still stored, for the live
// summary push of CW-21:
// one statement however many (a deletion recounts up to hundreds).
func threadChanges(ctx context.Context, q queryer, seqs []int64) ([]buzz.ThreadChange, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	found := make(map[int64]buzz.ThreadChange, len(seqs))
	var seq int64
	var id []byte
	var c buzz.ThreadChange
	var rowClass int16
	rows, err := q.Query(ctx, `SELECT e.seq, e.id, c.h, e.parent IS NULL, e.row_class
		FROM events e JOIN channels c ON c.seq = e.channel WHERE e.seq = ANY($1)`, seqs)
	err = eachRow(rows, err, "read threads", []any{&seq, &id, &c.Channel, &c.Root, &rowClass}, func() error {
		c.ID = hex.EncodeToString(id)
		c.TopLevel = buzz.RowClass(rowClass) == buzz.RowTopLevel
		found[seq] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]buzz.ThreadChange, 0, len(found))
	seen := make(map[int64]bool, len(found))
	for _, seq := range seqs {
		// One removed since (purged, replaced) has no summary to push.
		if c, ok := found[seq]; ok && !seen[seq] {
			seen[seq] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// CaughtUp returns a channel closed once this process has delivered live
// every event another process committed before the call
// (buzz.SharedStore): the listener hears notifications in the order their
// transactions committed and delivers each before it reads the next, so
// once it hears a barrier this process sent after the call, every earlier
// one is behind it (internal/barrier). While the listener is not
// connected, what is committed meanwhile is not delivered live at all: the
// channel is closed at once.
func (s *Store) CaughtUp() <-chan struct{} { return s.barriers.Call() }

// sendBarrier sends the barrier token on the events channel, behind every
// notification committed before it.
func (s *Store) sendBarrier(token string) error {
	payload, err := json.Marshal(eventNote{Origin: s.origin, Barrier: token})
	if err != nil {
		return fmt.Errorf("delivery barrier: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if _, err = s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, string(payload)); err != nil {
		return fmt.Errorf("delivery barrier: %w", err)
	}
	return nil
}

// barrierWait bounds how long CaughtUp waits for the listener to hear a
// barrier: longer than any notification takes on a live connection.
const barrierWait = 2 * queryTimeout

// barrierGap is the least time between barriers. Every REQ asks for one
// once its stored events are sent (khatru patch 29), and each is a
// transaction of the server's and a notification every process hears:
// while REQs came one after another, barriers ran back to back, as many
// transactions again as the REQs' own (issue 32). Asked for within the
// gap, they share one; a subscription keeps the ids it sent that much
// longer.
const barrierGap = 20 * time.Millisecond
