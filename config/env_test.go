package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 29 item 15, RL-24: a BUZZ_LITE_ variable that is no configuration
// key is refused, naming it, as an unknown key of the file is; the
// configuration file's variable, the project's tools' and other programs'
// variables pass.
func TestCheckEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		unknown []string
	}{
		{"none", nil, nil},
		{"keys", []string{"BUZZ_LITE_LIMITS_RATES=false", "BUZZ_LITE_SERVER_LISTEN=[::1]:1", "BUZZ_LITE_RELAY_KEY_FILE="}, nil},
		{"config file", []string{"BUZZ_LITE_CONFIG=/etc/buzz-lite.toml"}, nil},
		{"tools", []string{"BUZZ_LITE_TEST_POSTGRES=postgres://x", "BUZZ_LITE_TEST_SOMETHING_NEW=1", "BUZZ_LITE_BENCH_CHANNELS=3",
			"BUZZ_LITE_CRASH_KILLS=3", "BUZZ_LITE_JS_CLIENTS=1", "BUZZ_LITE_BROWSER=1"}, nil},
		{"others", []string{"PATH=/bin", "HOME=/root", "BUZZ_LITE=1", "GOMEMLIMIT=1GiB"}, nil},
		{"a misspelt key", []string{"BUZZ_LITE_LIMITS_RATE=false"}, []string{"BUZZ_LITE_LIMITS_RATE"}},
		{"a misspelt section", []string{"BUZZ_LITE_LIMIT_RATES=false"}, []string{"BUZZ_LITE_LIMIT_RATES"}},
		{"a guess", []string{"BUZZ_LITE_DATA=/srv/buzz", "BUZZ_LITE_SERVER_LISTEN=127.0.0.1:1"}, []string{"BUZZ_LITE_DATA"}},
		{"a tool's name as a prefix", []string{"BUZZ_LITE_CONFIG_FILE=x", "BUZZ_LITE_BROWSERS=1"}, []string{"BUZZ_LITE_BROWSERS", "BUZZ_LITE_CONFIG_FILE"}},
		{"lower case", []string{"buzz_lite_limits_rates=false", "BUZZ_LITE_limits_rates=false"}, []string{"BUZZ_LITE_limits_rates"}},
	} {
		err := CheckEnv(tc.environ)
		if len(tc.unknown) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), " "+strings.Join(tc.unknown, ", ")+": ") {
			t.Errorf("%s: %v, want a refusal naming %v", tc.name, err, tc.unknown)
		}
	}
}

// Issue 32 item 5: the variable of a retired key is refused by CheckEnv
// and by Load, naming the variable that replaces it, not as an unknown
// one; an unknown one beside it is named too.
func TestRetiredEnv(t *testing.T) {
	const want = "BUZZ_LITE_STORAGE_PAGE_CACHE is retired: set BUZZ_LITE_STORAGE_PAGE_CACHE_BYTES (storage.page_cache_bytes) instead"
	err := CheckEnv([]string{"BUZZ_LITE_STORAGE_PAGE_CACHE=128"})
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "unknown") {
		t.Errorf("CheckEnv: %v, want %q alone", err, want)
	}
	err = CheckEnv([]string{"BUZZ_LITE_STORAGE_PAGE_CACHE=0", "BUZZ_LITE_STORAGE_PAGE_CASH_BYTES=1"})
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "unknown variable BUZZ_LITE_STORAGE_PAGE_CASH_BYTES: ") {
		t.Errorf("CheckEnv with a misspelt variable too: %v", err)
	}
	_, err = Load("", func(name string) (string, bool) {
		if name == "BUZZ_LITE_STORAGE_PAGE_CACHE" {
			return "128", true
		}
		return "", false
	})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load: %v, want %q", err, want)
	}
}

// Issue 29 item 15: every BUZZ_LITE_ variable the repository names (the
// README, docs, scripts, tests, the Dockerfile) passes CheckEnv: a test or
// script that starts the relay with one set is never refused. A tool's new
// variable fails here until toolEnv lists it.
func TestCheckEnvTakesTheRepositorysNames(t *testing.T) {
	name := regexp.MustCompile(`\bBUZZ_LITE_[A-Z0-9_]*`)
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Base(path) == "env_test.go" {
			return nil // this file's names are wrong on purpose
		}
		if info, err := d.Info(); err != nil || info.Size() > 4<<20 {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(b), -1) {
			seen[n] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 10 {
		t.Fatalf("found only %d BUZZ_LITE_ names in the repository", len(seen))
	}
	for n := range seen {
		// A name the repository spells as a section's prefix only
		// (BUZZ_LITE_LIMITS_) is prose, not a variable.
		if strings.HasSuffix(n, "_") {
			continue
		}
		if err := CheckEnv([]string{n + "=1"}); err != nil {
			t.Errorf("%s, named in the repository: %v", n, err)
		}
	}
}
