package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/buzz-lite/buzz-lite/internal/testutil"
)

// git runs git in dir and returns its output, trimmed.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// RL-30: a binary built from the checkout names its revision in
// `--version` (with +dirty when the tree is modified), never `dev`. The
// build asks for VCS stamping itself: a machine's GOFLAGS may turn it off.
// cmd/go stamps only a checkout whose .git is a directory, so from a
// linked worktree (.git a file) the test builds a clone of its HEAD.
func TestVersionFromCheckout(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not built from a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(top))
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		t.Fatal(err)
	}
	rev := git(t, wd, "rev-parse", "HEAD")
	src := root
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		src = filepath.Join(t.TempDir(), "src")
		git(t, wd, "clone", "--quiet", "--no-checkout", root, src)
		git(t, src, "checkout", "--quiet", rev)
	}
	dirty := git(t, src, "status", "--porcelain") != ""

	bin := filepath.Join(t.TempDir(), "buzz-lite")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "..")
	build.Dir = filepath.Join(src, rel)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	v := strings.TrimPrefix(got, "buzz-lite version ")
	// A commit with a semver tag is named by the tag instead.
	want := rev[:12]
	if tag, err := exec.Command("git", "-C", src, "describe", "--exact-match", "--tags", "--match", "v*").Output(); err == nil {
		want = strings.TrimSpace(string(tag))
	}
	if v == got || v == "dev" || v == "(devel)" || !strings.Contains(v, want) {
		t.Fatalf("--version says %q, want it to name %s", got, want)
	}
	t.Logf("%s (tree modified: %v)", got, dirty)
	if strings.HasSuffix(v, "+dirty") != dirty {
		t.Errorf("--version says %q of a tree modified: %v", got, dirty)
	}
}

// RL-30: the version comes from the build information: the module
// version, else the VCS revision with +dirty, else "(devel)"; the
// -ldflags variable overrides it.
func TestVersionOf(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name     string
		main     string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install of a release", "v1.2.3", nil, "v1.2.3"},
		{"stamped checkout", "v0.0.0-20261203074512-0123456789ab+dirty", vcs("true"), "v0.0.0-20261203074512-0123456789ab+dirty"},
		{"revision only", "(devel)", vcs("false"), "0123456789ab"},
		{"modified revision", "(devel)", vcs("true"), "0123456789ab+dirty"},
		{"nothing recorded", "(devel)", nil, "(devel)"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/buzz-lite/buzz-lite", Version: tc.main}, Settings: tc.settings}
		if got := versionOf(info); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.9.9"
	if got := buildVersion(); got != "v9.9.9" {
		t.Errorf("with -X main.version=v9.9.9: %q", got)
	}
}

// RL-30: log.format = json (BUZZ_LITE_LOG_FORMAT) makes the log one JSON
// object a line.
func TestLogFormatJSON(t *testing.T) {
	testutil.ClearEnv(t)
	t.Setenv("BUZZ_LITE_LOG_FORMAT", "json")
	cfg, err := runServeConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := logTo(cfg, &buf)
	log.Info("connection opened", "ip", "192.0.2.1")
	log.Info("second line", "n", 2)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
	}
	cfg.Log.Format = "text"
	buf.Reset()
	logTo(cfg, &buf).Info("connection opened", "ip", "192.0.2.1")
	if !strings.Contains(buf.String(), "ip=192.0.2.1") {
		t.Errorf("text log: %q", buf.String())
	}
}
