package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// This file is the client side of NIP-77 (negentropy) sync (RL-34): a
// relay's set of events for a filter is reconciled with a local set of
// (created_at, id) pairs, with go-nostr's negentropy doing the
// reconciliation and the envelopes written and read here (go-nostr's
// nip77.ParseNegMessage recognises none of them).

// syncFrameBytes bounds one NEG-MSG the client sends (the negentropy frame
// size limit, in bytes before hex encoding): well within the message size
// relays accept.
const syncFrameBytes = 64 << 10

// Syncer is one connection to a relay for syncing: reconcile, fetch what
// is missing, publish what the relay lacks.
type Syncer struct {
	w *wsConn
}

// Sync opens a connection for syncing; Close ends it. With the client's
// key it authenticates (NIP-42), so that a member syncs the private
// channels they read.
func (c *Client) Sync(ctx context.Context) (*Syncer, error) {
	if !c.negentropy {
		return nil, errors.New("client: sync: the relay does not offer NIP-77 (77 is not in its NIP-11 supported_nips)")
	}
	// Authenticated at once: a relay asks only when a filter names a
	// channel the connection may not read, and answers a filter naming
	// none with what an anonymous reader may read.
	w, err := c.dialAuthenticated(ctx)
	if err != nil {
		return nil, err
	}
	return &Syncer{w: w}, nil
}

// Close ends the connection.
func (s *Syncer) Close() { s.w.close() }

// Reconcile runs NIP-77 against the relay for f with local as the
// client's set, and returns the ids the relay has and local lacks
// (missing) and those local has and the relay lacks (extra), each sorted.
// It is one session: NEG-OPEN with the client's first message, NEG-MSG
// rounds until the client has nothing more to ask, then NEG-CLOSE. A
// NEG-ERR is a *ClosedError with its reason.
func (s *Syncer) Reconcile(ctx context.Context, f nostr.Filter, local []negentropy.Item) (missing, extra []string, err error) {
	vec := vector.New()
	for _, it := range local {
		vec.Insert(it.Timestamp, it.ID)
	}
	vec.Seal()
	neg := negentropy.New(vec, syncFrameBytes)

	// The reconciliation hands over ids on channels as it finds them, and
	// closes them when it is done; they are collected until then, or until
	// the session fails.
	done := make(chan struct{})
	var wg sync.WaitGroup
	collect := func(ch chan string, into *[]string) {
		defer wg.Done()
		for {
			select {
			case id, ok := <-ch:
				if !ok {
					return
				}
				*into = append(*into, id)
			case <-done:
				return
			}
		}
	}
	wg.Add(2)
	go collect(neg.HaveNots, &missing)
	go collect(neg.Haves, &extra)
	finish := func(err error) ([]string, []string, error) {
		if err != nil {
			close(done)
			wg.Wait()
			return nil, nil, err
		}
		wg.Wait()
		slices.Sort(missing)
		slices.Sort(extra)
		return slices.Compact(missing), slices.Compact(extra), nil
	}

	id := "sync" + fmt.Sprint(s.w.sub.Add(1))
	if err := s.w.conn.WriteJSON([]any{"NEG-OPEN", id, f, neg.Start()}); err != nil {
		return finish(s.w.fail(ctx, err))
	}
	for {
		label, sub, msg, err := s.w.next(ctx)
		if err != nil {
			return finish(err)
		}
		if label == "AUTH" {
			s.w.challenge = sub
			continue
		}
		if sub != id || len(msg) < 3 {
			continue
		}
		var payload string
		if err := json.Unmarshal(msg[2], &payload); err != nil {
			return finish(fmt.Errorf("client: sync: malformed %s: %w", label, err))
		}
		switch label {
		case "NEG-ERR":
			return finish(&ClosedError{Where: "sync", Reason: payload})
		case "NEG-MSG":
			if err := buzz.CheckNegentropyMessage(payload); err != nil {
				return finish(fmt.Errorf("client: sync: the relay sent a malformed message: %w", err))
			}
			out, err := neg.Reconcile(payload)
			if err != nil {
				return finish(fmt.Errorf("client: sync: reconcile: %w", err))
			}
			if out == "" {
				if err := s.w.conn.WriteJSON([]any{"NEG-CLOSE", id}); err != nil {
					return finish(s.w.fail(ctx, err))
				}
				return finish(nil)
			}
			if err := s.w.conn.WriteJSON([]any{"NEG-MSG", id, out}); err != nil {
				return finish(s.w.fail(ctx, err))
			}
		}
	}
}

// Fetch reads the events of ids from the relay, idChunk at a time, each
// verified (CL-3), and hands each chunk to fn.
func (s *Syncer) Fetch(ctx context.Context, ids []string, fn func([]*nostr.Event) error) error {
	for chunk := range slices.Chunk(ids, idChunk) {
		evs, err := s.w.req(ctx, nostr.Filter{IDs: chunk, Limit: len(chunk)})
		if err != nil {
			return err
		}
		if err := fn(evs); err != nil {
			return err
		}
	}
	return nil
}

// Publish sends ev and waits for the relay's OK; a refusal is a
// *RefusedError. An auth-required refusal is answered with the key and ev
// sent again, once.
func (s *Syncer) Publish(ctx context.Context, ev *nostr.Event) error {
	return s.w.publish(ctx, ev)
}
