package barrier

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	case <-time.After(50 * time.Millisecond):
		return false
	}
}

// RL-33: a call is answered once the listener hears back a token sent after
// it, at once while no listener is connected, and when the listener stops
// hearing or the token cannot be sent.
func TestBarriers(t *testing.T) {
	tokens := make(chan string, 10)
	fail := false
	b := New(func(token string) error {
		if fail {
			return errors.New("down")
		}
		tokens <- token
		return nil
	}, time.Minute, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !closed(b.Call()) {
		t.Fatal("a call while not hearing is not answered at once")
	}
	b.Hearing()
	c := b.Call()
	token := <-tokens
	if closed(c) {
		t.Fatal("a call is answered before its token is heard")
	}
	b.Heard(token)
	if !closed(c) {
		t.Fatal("a call is not answered once its token is heard")
	}
	c = b.Call()
	<-tokens
	b.StopHearing()
	if !closed(c) || b.Listening() {
		t.Fatal("a call is not answered when the listener stops hearing")
	}
	b.Hearing()
	fail = true
	if !closed(b.Call()) {
		t.Fatal("a call whose token cannot be sent is not answered")
	}
}

// Issue 32: the calls made within the gap after a token was heard share
// the next token, sent once the gap has passed, and are answered by it.
func TestBarriersGap(t *testing.T) {
	tokens := make(chan string, 10)
	b := New(func(token string) error {
		tokens <- token
		return nil
	}, time.Minute, 200*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	b.Hearing()
	first := b.Call()
	b.Heard(<-tokens)
	if !closed(first) {
		t.Fatal("a call is not answered once its token is heard")
	}
	calls := []<-chan struct{}{b.Call(), b.Call(), b.Call()}
	select {
	case <-tokens:
		t.Fatal("a token was sent within the gap after the last was heard")
	case <-time.After(50 * time.Millisecond):
	}
	b.Heard(<-tokens)
	for i, c := range calls {
		if !closed(c) {
			t.Fatalf("call %d made within the gap is not answered by the next token", i)
		}
	}
	select {
	case token := <-tokens:
		t.Fatalf("token %s sent beside the one the calls shared", token)
	default:
	}
}
