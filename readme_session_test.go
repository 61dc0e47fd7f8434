package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 16, RL-34: the README's newcomer session (keygen, post, reply,
// window, thread, channels, sync) runs as written against a real relay:
// each `buzz-lite` line of the block, with $R the relay, me.key a file of
// the test's, offline a directory of the test's, and 5c0f… the id the
// first post printed.
func TestReadmeSession(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "buzz-lite itself is enough")
	if !ok {
		t.Fatal("README: no newcomer session")
	}
	_, block, _ := strings.Cut(rest, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	url, _ := wnServe(t)
	keyFile := filepath.Join(t.TempDir(), "me.key")
	offline := filepath.Join(t.TempDir(), "offline")
	var outs []string
	id := ""
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "  #")
		if !strings.HasPrefix(line, "buzz-lite ") {
			continue
		}
		line = strings.NewReplacer("$R", url, "me.key", keyFile, "offline", offline, "5c0f…", id).Replace(line)
		out, err := runApp(shellWords(t, strings.TrimPrefix(line, "buzz-lite "))...)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if after, ok := strings.CutPrefix(out, "ok "); ok && id == "" {
			id = strings.TrimSpace(after)
		}
		outs = append(outs, out)
	}
	if len(outs) != 7 {
		t.Fatalf("ran %d commands, want keygen, 2 posts, window, thread, channels, sync", len(outs))
	}
	if !strings.Contains(outs[3], "hello  [1 reply]") {
		t.Errorf("window printed %q, want hello with its reply", outs[3])
	}
	if thread := strings.Split(strings.TrimSpace(outs[4]), "\n"); len(thread) != 2 ||
		!strings.HasSuffix(thread[0], "hello  [1 reply]") || !strings.HasPrefix(thread[1], "  ") || !strings.HasSuffix(thread[1], "hi back") {
		t.Errorf("thread printed %q, want hello, then hi back indented", outs[4])
	}
	if outs[5] != "abc123\t\topen\n" {
		t.Errorf("channels printed %q", outs[5])
	}
	if !strings.Contains(outs[6], "lacks: 2 copied, 0 duplicate, 0 refused") {
		t.Errorf("sync printed %q, want the 2 messages copied", outs[6])
	}
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
