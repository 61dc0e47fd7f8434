package cmd

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// tourAddr is the relay the tour's commands talk to unless told otherwise.
const tourAddr = "127.0.0.1:7777"

// Issue 29 item 10: the README's tour runs as written. Its `./buzz-lite`
// lines run in a directory of the test's, in order, as processes of their
// own (this test binary as buzz-lite: the tour's `go build` line stands
// for it), the `serve` lines as relays on ports of the test's; each output
// the tour shows is what the command printed, ids, keys and times aside
// (an id the tour shows stands for the real one in later lines); each page
// of the web view it links to serves the messages posted. Before the
// tour's sync, the test adds to the first relay reply chains made within
// one second, and checks that the mirror holds them, threaded, after it
// (RL-34). The nostr-tools snippet runs too with BUZZ_LITE_JS_CLIENTS=1.
func TestReadmeSession(t *testing.T) {
	jsClients := os.Getenv("BUZZ_LITE_JS_CLIENTS") == "1"
	testutil.ClearEnv(t)
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(readme), "\n## A five-minute tour\n")
	if !ok {
		t.Fatal("README: no five-minute tour")
	}
	tour, _, _ = strings.Cut(tour, "\n## ")
	s := &tourSession{t: t, jsClients: jsClients, dir: t.TempDir(), bound: map[string]string{}, addrs: map[string]string{}, channelOf: map[string]string{}}
	var ran []string
	for _, step := range tourSteps.FindAllStringSubmatch(tour, -1) {
		lang, body, link := step[1], step[2], step[3]
		switch {
		case link != "":
			s.webPage(link)
		case lang == "sh":
			for _, line := range strings.Split(body, "\n") {
				line, _, _ = strings.Cut(line, "  #")
				if line = strings.TrimSpace(line); line != "" {
					ran = append(ran, s.run(line))
				}
			}
		case lang == "":
			s.expect(body)
		case lang == "js":
			s.nostrTools(body)
		default:
			t.Fatalf("README tour: a %q block the test does not know how to run", lang)
		}
	}
	want := []string{"build", "serve", "keygen", "post", "post", "window", "window", "serve", "sync", "window"}
	if !slices.Equal(ran, want) {
		t.Fatalf("the tour ran %v, want %v", ran, want)
	}
	if !s.synced {
		t.Fatal("the tour has no sync between two relays")
	}
}

// tourSteps finds the tour's steps in order: a fenced block (its language
// and text) or a link <http://...> to a page.
var tourSteps = regexp.MustCompile("(?s)```(\\w*)\\n(.*?)```|<(http://[^>]+)>")

// tourSession is the tour so far.
type tourSession struct {
	t         *testing.T
	jsClients bool   // BUZZ_LITE_JS_CLIENTS=1: run the nostr-tools snippet
	dir       string // the directory the commands run in
	// bound maps an id, key or npub the README shows to the real one the
	// command printed in its place.
	bound map[string]string
	// addrs maps an address the README names to the one a relay of the
	// test's serves at.
	addrs map[string]string
	// channelOf is the channel of each message a `post` line made.
	channelOf map[string]string
	// topLevel is what each channel's messages that reply to none say.
	topLevel map[string][]string
	last     string // what the last command printed on stdout
	lastLine string
	// chain is the same-second thread added before the sync, mirror the
	// relay it was synced to.
	chain  []*nostr.Event
	mirror string
	synced bool
}

// run runs one command line of the tour and says which command it was.
func (s *tourSession) run(line string) string {
	t := s.t
	t.Helper()
	if line == "go build -o buzz-lite ." {
		return "build" // this test binary is the buzz-lite it builds
	}
	rest, ok := strings.CutPrefix(line, "./buzz-lite ")
	if !ok {
		t.Fatalf("README tour: %q is not a ./buzz-lite command", line)
	}
	for readme, real := range s.bound {
		rest = strings.ReplaceAll(rest, readme, real)
	}
	args := shellWords(t, rest)
	cmd := args[0]
	if cmd == "serve" {
		s.serve(args)
		return cmd
	}
	for i := range args {
		for readme, real := range s.addrs {
			args[i] = strings.ReplaceAll(args[i], readme, real)
		}
	}
	if cmd == "sync" {
		s.sameSecondChains(args)
	}
	out := s.client(line, args)
	s.last, s.lastLine = out, line
	switch cmd {
	case "post":
		id := strings.TrimSpace(strings.TrimPrefix(out, "ok "))
		ch := flagValue(args, "--channel")
		s.channelOf[id] = ch
		if flagValue(args, "--reply-to") == "" {
			if s.topLevel == nil {
				s.topLevel = map[string][]string{}
			}
			s.topLevel[ch] = append(s.topLevel[ch], args[len(args)-1])
		}
	case "sync":
		s.checkSync(out)
	}
	return cmd
}

// serve starts a relay of the tour as a process of its own, on a port of
// the test's in place of the one the README names.
func (s *tourSession) serve(args []string) {
	t := s.t
	t.Helper()
	readmeAddr := flagValue(args, "--listen")
	var env []string
	if readmeAddr == "" {
		readmeAddr = tourAddr
		env = []string{"BUZZ_LITE_SERVER_LISTEN=127.0.0.1:0"}
	} else {
		args = slices.Clone(args)
		args[slices.Index(args, "--listen")+1] = "127.0.0.1:0"
	}
	p := startProc(t, s.dir, env, args...)
	if p.addr == "" {
		t.Fatalf("README tour: serve %v did not start:\n%s", args[1:], p.output())
	}
	s.addrs[readmeAddr] = p.addr
}

// client runs a command line that is a client of the relays (or keygen)
// and returns what it printed on stdout; any other outcome than exit
// status 0 fails the test.
func (s *tourSession) client(line string, args []string) string {
	t := s.t
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = s.dir
	// The relay the client commands talk to by default: the one the
	// default configuration serves, on the test's port.
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "BUZZ_LITE_SERVER_LISTEN="+s.addrs[tourAddr])
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README tour: %s (run as %q): %v\nstdout:\n%s\nstderr:\n%s", line, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// tourPlaceholder is what may differ between the README's output and a
// run's: ids and hex keys, npubs whole or cut short, and times.
var tourPlaceholder = regexp.MustCompile(`[0-9a-f]{64}|npub1[02-9ac-hj-np-z]{58}|npub1[02-9ac-hj-np-z]{7}…|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)

// expect checks that the last command printed what the README shows, line
// by line, each id, key and npub bound to what the command printed in its
// place (the same example the same real value everywhere) and times any.
func (s *tourSession) expect(want string) {
	t := s.t
	t.Helper()
	wantLines := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	gotLines := strings.Split(strings.TrimSuffix(s.last, "\n"), "\n")
	if len(wantLines) != len(gotLines) {
		t.Fatalf("README tour: %s printed\n%s\nthe README shows\n%s", s.lastLine, s.last, want)
	}
	for i, w := range wantLines {
		examples := tourPlaceholder.FindAllString(w, -1)
		pattern := "^" + tourPlaceholder.ReplaceAllStringFunc(regexp.QuoteMeta(w), func(ex string) string {
			if strings.Contains(ex, ":") {
				return `(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)`
			}
			return `(` + tourPlaceholder.String() + `)`
		}) + "$"
		m := regexp.MustCompile(pattern).FindStringSubmatch(gotLines[i])
		if m == nil {
			t.Fatalf("README tour: %s printed the line\n%s\nthe README shows\n%s", s.lastLine, gotLines[i], w)
		}
		for j, ex := range examples {
			if strings.Contains(ex, ":") {
				continue
			}
			s.bind(ex, m[j+1])
		}
	}
}

// bind says that the README's example stands for real; an npub binds its
// short form too, as window prints it.
func (s *tourSession) bind(example, real string) {
	t := s.t
	t.Helper()
	pairs := [][2]string{{example, real}}
	if strings.HasPrefix(example, "npub1") {
		pairs = append(pairs, [2]string{example[:12], real[:12]})
	}
	for _, p := range pairs {
		if had, ok := s.bound[p[0]]; ok && had != p[1] {
			t.Fatalf("README tour: %s printed %s where the README's %s stood for %s before", s.lastLine, p[1], p[0], had)
		}
		s.bound[p[0]] = p[1]
	}
}

// webPage loads a page of the web view the tour links to, as a browser
// asks for it: it serves, and a channel's page shows what the tour posted
// there.
func (s *tourSession) webPage(link string) {
	t := s.t
	t.Helper()
	url := link
	for readme, real := range s.addrs {
		url = strings.ReplaceAll(url, readme, real)
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("README tour: %s: %v", link, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("README tour: %s answered %d %s (%v)", link, resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	ch, isChannel := strings.CutPrefix(link, "http://"+tourAddr+"/c/")
	if !isChannel {
		if !strings.Contains(string(body), `href="/c/`) {
			t.Fatalf("README tour: %s lists no channel", link)
		}
		return
	}
	if len(s.topLevel[ch]) == 0 {
		t.Fatalf("README tour: %s is a channel the tour posted nothing to", link)
	}
	for _, text := range s.topLevel[ch] {
		if !strings.Contains(string(body), html.EscapeString(text)) {
			t.Errorf("README tour: %s does not show %q", link, text)
		}
	}
}

// sameSecondChains adds, before the sync line args, to the relay it copies
// from, a thread whose root, reply and reply to the reply share one
// created_at, each id sorting before its parent's.
func (s *tourSession) sameSecondChains(args []string) {
	t := s.t
	t.Helper()
	from := flagValue(args, "--from")
	author := testutil.NewSigner(t)
	const ch = "same-second"
	at := time.Now().Unix() - 60
	// A parent's id sorts after its reply's: sorted by (created_at, id), a
	// reply would be sent before its parent.
	mine := func(parent *nostr.Event, tags ...nostr.Tag) *nostr.Event {
		for n := 0; ; n++ {
			ev := author.Event(t, 9, at, fmt.Sprintf("same second, try %d", n), append([]nostr.Tag{{"h", ch}}, tags...)...)
			if parent == nil || ev.ID < parent.ID {
				return ev
			}
		}
	}
	root := mine(nil)
	reply := mine(root, nostr.Tag{"e", root.ID, "", "root"})
	deeper := mine(reply, nostr.Tag{"e", root.ID, "", "root"}, nostr.Tag{"e", reply.ID, "", "reply"}, nostr.Tag{"p", author.PK})
	testutil.Publish(t, from, root, reply, deeper)
	s.chain = []*nostr.Event{root, reply, deeper}
	s.mirror = flagValue(args, "--to")
}

// checkSync checks the tour's sync: it copied every message posted and
// the same-second chain, refused nothing, and the mirror holds the chain
// as one thread.
func (s *tourSession) checkSync(out string) {
	t := s.t
	t.Helper()
	want := fmt.Sprintf("lacks: %d copied, 0 duplicate, 0 refused", len(s.channelOf)+len(s.chain))
	if !strings.Contains(out, want) {
		t.Fatalf("README tour: %s printed %q, want %q", s.lastLine, out, want)
	}
	thread, err := runApp("window", "--relay", s.mirror, "--thread", s.chain[0].ID)
	if err != nil {
		t.Fatalf("the mirror's same-second thread: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(thread, "\n"), "\n")
	if len(lines) != len(s.chain) {
		t.Fatalf("the mirror's same-second thread is\n%s\nwant its %d events", thread, len(s.chain))
	}
	for depth, line := range lines {
		want := s.chain[depth].Content
		if depth < len(s.chain)-1 {
			want += "  [1 reply]"
		}
		indented := regexp.MustCompile(fmt.Sprintf(`^(?:  ){%d}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  `, depth))
		if !indented.MatchString(line) || !strings.HasSuffix(line, want) {
			t.Errorf("the mirror's same-second thread, line %d: %q, want %q indented %d levels", depth, line, want, depth)
		}
	}
	s.synced = true
}

// nostrTools runs the tour's nostr-tools snippet under Node, with the
// libraries of relay/testdata/clients, against the tour's relay: it prints
// the channel's messages, then its own as the relay delivers it live.
func (s *tourSession) nostrTools(snippet string) {
	t := s.t
	t.Helper()
	if !s.jsClients {
		t.Log("the nostr-tools snippet runs with BUZZ_LITE_JS_CLIENTS=1 (after npm ci --prefix relay/testdata/clients)")
		return
	}
	modules, err := filepath.Abs(filepath.Join("..", "relay", "testdata", "clients", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(modules); err != nil {
		t.Fatalf("BUZZ_LITE_JS_CLIENTS=1 but the client libraries are not installed (%v): run npm ci --prefix relay/testdata/clients", err)
	}
	m := regexp.MustCompile(`content: '([^']*)'`).FindStringSubmatch(snippet)
	if m == nil {
		t.Fatal("README tour: the nostr-tools snippet publishes no content the test can find")
	}
	own := m[1]
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for readme, real := range s.addrs {
		snippet = strings.ReplaceAll(snippet, readme, real)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.mjs"), []byte(snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "hello.mjs")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{own: false}
	for _, text := range s.topLevel["hello"] {
		want[text] = false
	}
	var printed []string
	sc := bufio.NewScanner(stdout)
	for missing := len(want); missing > 0 && sc.Scan(); {
		printed = append(printed, sc.Text())
		if seen, ok := want[sc.Text()]; ok && !seen {
			want[sc.Text()] = true
			missing--
		}
	}
	cancel() // it subscribes until interrupted
	cmd.Wait()
	for text, seen := range want {
		if !seen {
			t.Errorf("the nostr-tools snippet did not print %q; it printed %q\nstderr:\n%s", text, printed, stderr.String())
		}
	}
}

// flagValue is the value of flag in a command's args ("" if not given).
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// shellWords splits a command line as sh would the README's: words
// separated by spaces, single quotes around a word with spaces.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if line[0] == '\'' {
			word, rest, ok := strings.Cut(line[1:], "'")
			if !ok {
				t.Fatalf("unterminated quote in %q", line)
			}
			words, line = append(words, word), rest
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		words, line = append(words, word), rest
	}
	return words
}
