package cmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/datadir"
	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// servingLine is serve's log line that gives its address (the bench,
// cmd/buzz-lite-bench, reads it so too).
var servingLine = regexp.MustCompile(`msg="buzz-lite serving" addr=(\S+)`)

// serveProc is `buzz-lite serve` run as a process of its own: this test
// binary run as main (asMainEnv, main_test.go).
type serveProc struct {
	cmd  *exec.Cmd
	addr string // where it serves; "" when it exited instead
	line string // its "buzz-lite serving" log line
	mu   sync.Mutex
	log  strings.Builder // its stderr so far
	done chan struct{}   // closed at the end of its stderr
}

// startServe starts `buzz-lite serve --data data --listen 127.0.0.1:0`,
// with the further arguments args, in the directory wd and reads its log
// until it serves or exits. The process is killed at the end of the test
// if it still runs.
func startServe(t *testing.T, wd, data string, args ...string) *serveProc {
	t.Helper()
	return startProc(t, wd, nil, append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, args...)...)
}

// startProc starts `buzz-lite ARGS` (a serve command line) in the
// directory wd, with env added to the environment, and reads its log
// until it serves or exits, as startServe does.
func startProc(t *testing.T, wd string, env []string, args ...string) *serveProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{done: make(chan struct{})}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Dir = wd
	p.cmd.Env = append(append(os.Environ(), asMainEnv+"=1", "BUZZ_LITE_LOG_LEVEL=info"), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	serving := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if servingLine.MatchString(sc.Text()) {
				serving <- sc.Text()
			}
		}
	}()
	select {
	case p.line = <-serving:
		p.addr = servingLine.FindStringSubmatch(p.line)[1]
	case <-p.done:
	}
	return p
}

// output is what the process wrote to stderr so far.
func (p *serveProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// refused waits for a process that did not serve to exit and returns its
// stderr; it fails the test if the process served or exited with 0.
func (p *serveProc) refused(t *testing.T, what string) string {
	t.Helper()
	if p.addr != "" {
		t.Fatalf("%s: serve started: %s", what, p.line)
	}
	<-p.done
	if err := p.cmd.Wait(); err == nil {
		t.Fatalf("%s: serve exited with 0:\n%s", what, p.output())
	}
	return p.output()
}

// roundTrip publishes a message through the relay at addr and reads it
// back: the relay serves, and writes.
func roundTrip(t *testing.T, addr string, s testutil.Signer, content string) *nostr.Event {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ev := s.Event(t, 9, int64(nostr.Now()), content, nostr.Tag{"h", "31313131-3131-4131-8131-313131313131"})
	send := func(msg ...any) {
		b, _ := json.Marshal(msg)
		if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
			t.Fatal(err)
		}
	}
	send("EVENT", ev)
	var ok, found bool
	for !ok || !found {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var env []json.RawMessage
		if err := json.Unmarshal(msg, &env); err != nil || len(env) < 2 {
			t.Fatalf("relay sent %s", msg)
		}
		switch string(env[0]) {
		case `"OK"`:
			if !strings.HasPrefix(string(msg), `["OK","`+ev.ID+`",true`) {
				t.Fatalf("publish: %s", msg)
			}
			ok = true
			send("REQ", "r", nostr.Filter{IDs: []string{ev.ID}})
		case `"EVENT"`:
			found = found || strings.Contains(string(msg), ev.ID)
		}
	}
	return ev
}

// RL-31, RL-25: a second `serve` on a data directory one already serves
// refuses at once with the spec's message, naming the directory as an
// absolute path and the first relay's pid, while the first keeps serving;
// export and check work beside it. A relay killed with SIGKILL leaves its
// lock file behind, and that does not stop the next one.
func TestServeLocksDataDirectory(t *testing.T) {
	testutil.ClearEnv(t)
	wd := t.TempDir()
	abs := filepath.Join(wd, "data")
	s := testutil.NewSigner(t)
	first := startServe(t, wd, "data")
	if first.addr == "" {
		t.Fatalf("first serve did not start:\n%s", first.output())
	}
	before := roundTrip(t, first.addr, s, "before the second serve")

	out := startServe(t, wd, "data").refused(t, "second serve on the same directory")
	want := fmt.Sprintf("buzz-lite: data directory %s is in use by another buzz-lite (pid %d)\n", abs, first.cmd.Process.Pid)
	if out != want {
		t.Errorf("second serve:\n got %q\nwant %q", out, want)
	}

	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", abs, "-o", dump}); err != nil {
		t.Fatalf("export beside a serving relay: %v", err)
	}
	if b, err := os.ReadFile(dump); err != nil || !strings.Contains(string(b), before.ID) {
		t.Errorf("export beside a serving relay lacks the event published: %v\n%s", err, b)
	}
	if err := newApp().Run([]string{"buzz-lite", "check", "--data", abs}); err != nil {
		t.Errorf("check beside a serving relay: %v", err)
	}
	roundTrip(t, first.addr, s, "after the second serve was refused")

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	first.cmd.Wait()
	next := startServe(t, wd, abs)
	if next.addr == "" {
		t.Fatalf("serve after a killed relay did not start:\n%s", next.output())
	}
	if b, err := os.ReadFile(filepath.Join(abs, datadir.LockFile)); err != nil || string(b) != fmt.Sprintf("%d\n", next.cmd.Process.Pid) {
		t.Errorf("lock file after restart: %q (%v), want the new pid %d", b, err, next.cmd.Process.Pid)
	}
	roundTrip(t, next.addr, s, "after a restart")
	if err := next.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-next.done
	if err := next.cmd.Wait(); err != nil {
		t.Errorf("serve stopped by SIGTERM: %v\n%s", err, next.output())
	}
}

// RL-31: `serve` on a taken port fails before it creates anything: no
// data directory, so no relay.key and no database.
func TestServeListensFirst(t *testing.T) {
	testutil.ClearEnv(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	data := filepath.Join(t.TempDir(), "data")
	err = newApp().Run([]string{"buzz-lite", "serve", "--data", data, "--listen", taken.Addr().String()})
	if err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Errorf("serve on a taken port: %v, want a listen error", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve on a taken port created its data directory: %v", err)
	}
}

// servedBefore makes a data directory a relay has served and stopped.
func servedBefore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := startServe(t, dir, dir)
	if p.addr == "" {
		t.Fatalf("serve did not start:\n%s", p.output())
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("serve stopped by SIGTERM: %v\n%s", err, p.output())
	}
	return dir
}

// RL-31: a database the relay cannot write, or a data directory it cannot
// create files in, is refused at start with a message that names it, not
// found at the first write (a database served before would be served
// read-only), and nothing is created. Run as root too
// (testutil.Unwritable).
func TestServeRefusesReadOnly(t *testing.T) {
	testutil.ClearEnv(t)
	refusesDatabase := func(t *testing.T, dir string) {
		t.Helper()
		db := filepath.Join(dir, DBFile)
		testutil.Unwritable(t, db)
		out := startServe(t, dir, dir).refused(t, "serve on a read-only database")
		if !strings.HasPrefix(out, "buzz-lite: database file is not writable: open "+db+": ") {
			t.Errorf("serve on a read-only database said:\n%s", out)
		}
	}
	t.Run("database served before", func(t *testing.T) {
		refusesDatabase(t, servedBefore(t))
	})
	t.Run("database copied in", func(t *testing.T) {
		dir, _ := toolData(t)
		refusesDatabase(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "relay.key")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("serve on a read-only database created relay.key: %v", err)
		}
	})
	t.Run("directory served before", func(t *testing.T) {
		dir := servedBefore(t)
		testutil.Unwritable(t, dir)
		out := startServe(t, dir, dir).refused(t, "serve on a read-only directory")
		if !strings.HasPrefix(out, "buzz-lite: data directory "+dir+" is not writable: ") {
			t.Errorf("serve on a read-only directory said:\n%s", out)
		}
	})
}

// RL-31: the start log names the data directory as an absolute path, even
// when it was given relative.
func TestServeLogsAbsoluteDataDir(t *testing.T) {
	testutil.ClearEnv(t)
	wd := t.TempDir()
	p := startServe(t, wd, "data")
	if p.addr == "" {
		t.Fatalf("serve did not start:\n%s", p.output())
	}
	m := regexp.MustCompile(` data=(\S+)`).FindStringSubmatch(p.line)
	if want := filepath.Join(wd, "data"); m == nil || m[1] != want {
		t.Errorf("start log %q, want data=%s", p.line, want)
	}
}
