//go:build unix

package cmd

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RL-25: export -o into a pipe (as into /dev/null or /dev/stdout) writes
// to it and leaves it a pipe, where renaming the finished file over it
// made it a file; backup refuses one rather than replace it.
func TestExportIntoPipe(t *testing.T) {
	dir, _ := toolData(t)
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "-o", file}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	go func() {
		f, err := os.Open(pipe) // until a writer opens it
		if err != nil {
			read <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		read <- b
	}()
	if err := newApp().Run([]string{"buzz-lite", "export", "--data", dir, "-o", pipe}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(pipe); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("after the export %s is %v (%v), want the pipe", pipe, st.Mode(), err)
	}
	select {
	case got := <-read:
		if len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("read %d bytes from the pipe, want the %d of the export to a file", len(got), len(want))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the export wrote nothing into the pipe")
	}

	if err := newApp().Run([]string{"buzz-lite", "backup", "--data", dir, "--force", pipe}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("backup over a pipe: %v", err)
	}
	if st, err := os.Lstat(pipe); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("after the backup %s is %v (%v), want the pipe", pipe, st.Mode(), err)
	}
}
