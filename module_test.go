package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	goversion "go/version"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goCmd runs the go command in dir with env added, and returns its
// standard output.
func goCmd(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// goMod is what `go mod edit -json` says of a go.mod.
type goMod struct {
	Module    struct{ Path string }
	Go        string
	Toolchain string
	Require   []struct{ Path, Version string }
	Replace   []json.RawMessage
	Exclude   []json.RawMessage
}

func readGoMod(t *testing.T, file string) goMod {
	t.Helper()
	var m goMod
	if err := json.Unmarshal(goCmd(t, ".", nil, "mod", "edit", "-json", file), &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// RL-32: go.mod holds nothing `go install <module>@version` refuses (a
// replace or exclude directive), names no toolchain, and its go line is
// the highest go line among the modules it requires: the oldest Go the
// dependencies let build it, no newer. (Whether the code builds and its
// tests pass with exactly that Go, go mod tidy cannot tell:
// `GOTOOLCHAIN=go<line> go test ./...` does.)
func TestGoModInstallable(t *testing.T) {
	m := readGoMod(t, "go.mod")
	if m.Module.Path != "github.com/buzz-lite/buzz-lite" {
		t.Errorf("module %q", m.Module.Path)
	}
	if len(m.Replace) != 0 || len(m.Exclude) != 0 {
		t.Errorf("go.mod has %d replace and %d exclude directives: go install ...@version refuses them", len(m.Replace), len(m.Exclude))
	}
	if m.Toolchain != "" {
		t.Errorf("go.mod names toolchain %s", m.Toolchain)
	}
	for _, r := range m.Require {
		if r.Path == "github.com/fiatjaf/khatru" {
			t.Error("go.mod requires github.com/fiatjaf/khatru: the patched copy is internal/khatru")
		}
	}

	args := []string{"mod", "download", "-json"}
	for _, r := range m.Require {
		args = append(args, r.Path+"@"+r.Version)
	}
	dec := json.NewDecoder(bytes.NewReader(goCmd(t, ".", []string{"GOFLAGS=-mod=mod"}, args...)))
	floor, by := "go1", ""
	for {
		var d struct{ Path, GoMod, Error string }
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if d.Error != "" {
			t.Fatalf("%s does not resolve: %s", d.Path, d.Error)
		}
		if g := "go" + readGoMod(t, d.GoMod).Go; goversion.Compare(g, floor) > 0 {
			floor, by = g, d.Path
		}
	}
	if want := strings.TrimPrefix(floor, "go"); m.Go != want {
		t.Errorf("go.mod says go %s; the dependencies need go %s (%s), no more", m.Go, want, by)
	}
}

// RL-32: `go install github.com/buzz-lite/buzz-lite@latest` builds the
// binary from the module as a proxy serves it, in an empty module cache
// (no GOPATH, no checkout, no workspace): the module is zipped from the
// files git tracks (and untracked ones it does not ignore) into a
// file:// proxy that serves it as its only version, beside the
// dependencies, which come from this machine's module cache as a second
// file:// proxy and are checked against the module's go.sum. Opt-in
// (BUZZ_LITE_GO_INSTALL=1): it unpacks every dependency anew.
func TestGoInstallLatest(t *testing.T) {
	if os.Getenv("BUZZ_LITE_GO_INSTALL") == "" {
		t.Skip("set BUZZ_LITE_GO_INSTALL=1 to go install the module from a proxy")
	}
	const module, v = "github.com/buzz-lite/buzz-lite", "v0.0.0-20260101000000-000000000000"
	root := t.TempDir()
	proxy := filepath.Join(root, "proxy", module, "@v")
	if err := os.MkdirAll(proxy, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"list":      v + "\n",
		v + ".info": `{"Version":"` + v + `","Time":"2026-01-01T00:00:00Z"}`,
		v + ".mod":  string(gomod),
		v + ".zip":  string(moduleZip(t, module+"@"+v)),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(proxy, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cache := strings.TrimSpace(string(goCmd(t, ".", nil, "env", "GOMODCACHE")))
	bin := filepath.Join(root, "bin")
	env := []string{
		"GOPROXY=file://" + filepath.Join(root, "proxy") + ",file://" + filepath.Join(cache, "cache", "download"),
		"GOPATH=" + filepath.Join(root, "gopath"),
		"GOMODCACHE=" + filepath.Join(root, "modcache"),
		"GOBIN=" + bin,
		"GOFLAGS=-modcacherw",
		"GOSUMDB=off", // the fake version of this module has no checksum to look up; its dependencies are checked against its go.sum
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"CGO_ENABLED=0",
	}
	goCmd(t, root, env, "install", module+"@latest")
	out, err := exec.Command(filepath.Join(bin, "buzz-lite"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "serve") {
		t.Fatalf("the installed buzz-lite --help: %v\n%s", err, out)
	}
}

// moduleZip is the module zip of the working tree, each file under
// prefix/, as a proxy would serve it.
func moduleZip(t *testing.T, prefix string) []byte {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	list, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		name := sc.Text()
		b, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		} else if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(prefix + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
