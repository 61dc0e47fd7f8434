package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// crashEnv turns the crash test on and says how many kills it makes.
const crashEnv = "BUZZ_LITE_CRASH_KILLS"

// crashRestartBudget is how soon a killed relay must serve again (issue 8).
const crashRestartBudget = 2 * time.Second

// RL-4, RL-1, issue 8: kill -9 at random moments of sustained concurrent
// ingest (messages, replies, reactions, deletions) loses no event the
// relay acknowledged, leaves every thread counter and tag index row exact
// (check passes), and the relay serves again within two seconds of a
// restart. Opt-in: BUZZ_LITE_CRASH_KILLS=N (.ci/run runs a short form).
func TestCrashSafety(t *testing.T) {
	kills, _ := strconv.Atoi(os.Getenv(crashEnv))
	if kills <= 0 {
		t.Skipf("set %s=N to kill a real relay N times", crashEnv)
	}
	bin := filepath.Join(t.TempDir(), "buzz-lite")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	data := t.TempDir()
	w := newCrashWorkload(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	for i := range kills {
		cmd, url := crashStart(t, bin, data)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); w.drive(ctx, t, url) }()
		}
		time.Sleep(time.Duration(200+rng.IntN(800)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		stop()
		wg.Wait()
		t.Logf("kill %d: %d events acknowledged so far", i+1, len(w.acked))
		w.verify(t, bin, data)
	}
}

// crashStart starts `buzz-lite serve` on a free loopback port and waits
// until it serves, at most crashRestartBudget.
func crashStart(t *testing.T, bin, data string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--data", data, "--listen", "127.0.0.1:0")
	// Eight writers on one address would meet the event rates (RL-27).
	cmd.Env = append(os.Environ(), "BUZZ_LITE_LOG_LEVEL=info", "BUZZ_LITE_LIMITS_RATES=false")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		url := "ws://" + a
		for time.Since(start) < crashRestartBudget {
			if c, _, err := websocket.DefaultDialer.Dial(url, nil); err == nil {
				c.Close()
				return cmd, url
			}
			time.Sleep(10 * time.Millisecond)
		}
	case <-time.After(crashRestartBudget):
	}
	t.Fatalf("the relay did not serve within %v of starting", crashRestartBudget)
	return nil, ""
}

// crashWorkload publishes a mix of events and remembers what the relay
// acknowledged.
type crashWorkload struct {
	signers []testutil.Signer
	mu      sync.Mutex
	acked   map[string]bool // id -> acknowledged
	deleted map[string]bool // ids an acknowledged deletion named
	// doomed are ids a deletion was sent for: if the relay died before its
	// OK, the deletion may be committed or not, and either is right.
	doomed  map[string]bool
	roots   []*nostr.Event // acknowledged, by signer index
	replies []*nostr.Event
}

func newCrashWorkload(t *testing.T) *crashWorkload {
	return &crashWorkload{signers: []testutil.Signer{testutil.NewSigner(t), testutil.NewSigner(t), testutil.NewSigner(t)},
		acked: map[string]bool{}, deleted: map[string]bool{}, doomed: map[string]bool{}}
}

const crashChannel = "77777777-7777-4777-8777-777777777777"

func (w *crashWorkload) drive(ctx context.Context, t *testing.T, url string) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for ctx.Err() == nil {
		ev, target := w.next(t, rng)
		b, _ := json.Marshal([]any{"EVENT", ev})
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
			return
		}
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var env []json.RawMessage
			if json.Unmarshal(msg, &env) != nil || len(env) < 3 || string(env[0]) != `"OK"` {
				continue
			}
			var id string
			var ok bool
			json.Unmarshal(env[1], &id)
			json.Unmarshal(env[2], &ok)
			if id != ev.ID {
				continue
			}
			if ok {
				w.ack(ev, target)
			}
			break
		}
	}
}

// next makes the next event: a message, a reply to an acknowledged one, a
// reaction, or the deletion of an acknowledged reply of the same author.
func (w *crashWorkload) next(t *testing.T, rng *rand.Rand) (ev *nostr.Event, target *nostr.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now().Unix()
	content := fmt.Sprint("crash test ", rng.Uint64())
	h := nostr.Tag{"h", crashChannel}
	switch r := rng.IntN(10); {
	case r < 3 || len(w.roots) == 0:
		return w.signers[rng.IntN(len(w.signers))].Event(t, 9, now, content, h), nil
	case r < 7:
		parent := w.roots[rng.IntN(len(w.roots))]
		if len(w.replies) > 0 && rng.IntN(2) == 0 {
			parent = w.replies[rng.IntN(len(w.replies))]
		}
		return w.signers[rng.IntN(len(w.signers))].Event(t, 9, now, content, h, nostr.Tag{"e", parent.ID, "", "reply"}), nil
	case r < 9 || len(w.replies) == 0:
		target := w.roots[rng.IntN(len(w.roots))]
		return w.signers[rng.IntN(len(w.signers))].Event(t, 7, now, "+", h, nostr.Tag{"e", target.ID}), nil
	default:
		target = w.replies[rng.IntN(len(w.replies))]
		for _, s := range w.signers {
			if s.PK == target.PubKey {
				w.doomed[target.ID] = true
				return s.Event(t, 5, now, "", nostr.Tag{"e", target.ID}), target
			}
		}
	}
	return nil, nil
}

func (w *crashWorkload) ack(ev, target *nostr.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked[ev.ID] = true
	switch {
	case ev.Kind == 5:
		w.deleted[target.ID] = true
	case ev.Kind == 9 && len(ev.Tags) == 1:
		w.roots = append(w.roots, ev)
	case ev.Kind == 9:
		w.replies = append(w.replies, ev)
	}
	// Deleted replies take no more replies; keep them out of the pool.
	if ev.Kind == 5 {
		w.replies = slices.DeleteFunc(w.replies, func(e *nostr.Event) bool { return w.deleted[e.ID] })
	}
}

// verify restarts the relay, checks that every acknowledged event not
// deleted since is served, runs `check` on the data directory, and stops.
func (w *crashWorkload) verify(t *testing.T, bin, data string) {
	t.Helper()
	cmd, url := crashStart(t, bin, data)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if lost := w.unserved(t, url); len(lost) > 0 {
		t.Fatalf("%d acknowledged events lost, e.g. %s", len(lost), lost[0])
	}
	if out, err := exec.Command(bin, "check", "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("check after a crash: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}

// unserved are the acknowledged events no deletion was sent for that the
// relay at url does not serve.
func (w *crashWorkload) unserved(t *testing.T, url string) []string {
	t.Helper()
	w.mu.Lock()
	var want []string
	for id := range w.acked {
		if !w.deleted[id] && !w.doomed[id] {
			want = append(want, id)
		}
	}
	w.mu.Unlock()
	got := servedIDs(t, url, want)
	var lost []string
	for _, id := range want {
		if !got[id] {
			lost = append(lost, id)
		}
	}
	return lost
}

// servedIDs asks the relay at url for the events ids by REQ, 500 at a
// time, and returns the ids it served.
func servedIDs(t *testing.T, url string, ids []string) map[string]bool {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := map[string]bool{}
	for i := 0; i < len(ids); i += 500 {
		batch := ids[i:min(i+500, len(ids))]
		filter, _ := json.Marshal(nostr.Filter{IDs: batch, Limit: len(batch)})
		conn.WriteMessage(websocket.TextMessage, []byte(`["REQ","v",`+string(filter)+`]`))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var env []json.RawMessage
			json.Unmarshal(msg, &env)
			if string(env[0]) == `"EOSE"` {
				break
			}
			var ev nostr.Event
			if string(env[0]) == `"EVENT"` && json.Unmarshal(env[2], &ev) == nil {
				got[ev.ID] = true
			}
		}
	}
	return got
}
