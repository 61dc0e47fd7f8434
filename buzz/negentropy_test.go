package buzz

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// RL-34: what CheckNegentropyMessage lets through, go-nostr's negentropy
// reads without a panic, as a relay (answering a client) and as a client
// (answering a relay); and the messages the reconciliation itself writes
// pass.
func FuzzCheckNegentropyMessage(f *testing.F) {
	items := vector.New()
	for i := range 40 {
		items.Insert(nostr.Timestamp(1700000000+i), strings.Repeat(string("0123456789abcdef"[i%16]), 63)+"a")
	}
	items.Seal()
	start := negentropy.New(items, 0).Start()
	f.Add(start)
	f.Add("61")
	f.Add("6100000202" + strings.Repeat("ab", 64))
	f.Add("61000002ffffffff7f")
	f.Add("61ffffffffffffffffff7f00")
	f.Add("62")
	f.Fuzz(func(t *testing.T, msg string) {
		if CheckNegentropyMessage(msg) != nil {
			return
		}
		// An error is a fine answer to garbage; a panic is not.
		_, _ = negentropy.New(items, 4096).Reconcile(msg)
		client := negentropy.New(items, 4096)
		client.Start()
		done := make(chan struct{})
		defer close(done)
		for _, ids := range []chan string{client.Haves, client.HaveNots} {
			go func() {
				for {
					select {
					case _, open := <-ids:
						if !open {
							return
						}
					case <-done:
						return
					}
				}
			}()
		}
		_, _ = client.Reconcile(msg)
	})
}

// RL-34: the bounds a relay's or a client's first message may not pass.
func TestCheckNegentropyMessage(t *testing.T) {
	empty := vector.New()
	empty.Seal()
	for _, c := range []struct {
		msg, err string
	}{
		{negentropy.New(empty, 0).Start(), ""},
		{"62ff", ""}, // another version: answered, not read
		{"", "empty negentropy message"},
		{"6G", "the negentropy message must be lowercase hex"},
		{"61AB", "the negentropy message must be lowercase hex"},
		{"61000002ffffffff7f", "truncated negentropy id list"},
		{"61002100", "malformed negentropy bound"},
		{"6100000110", "truncated negentropy fingerprint"},
		{"61000007", "unknown negentropy mode 7"},
		{"61ffffffffffffffffff7f", "malformed negentropy varint"},
	} {
		err := CheckNegentropyMessage(c.msg)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%q: %v, want %q", c.msg, err, c.err)
		}
	}
}
