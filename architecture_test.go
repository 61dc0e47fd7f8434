package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The README's Architecture section, as the code has it: data flows one
// way, relay/ -> buzz/ <- sqlite/, postgres/ (issue 18); the commands
// (cmd/, which the module root's main runs) sit above everything the relay
// binary carries, and the load and attack harness (bench/, run by
// cmd/buzz-lite-bench) is no part of it (issue 30). For each package
// (directory), the packages of this module its non-test files must not
// import.
var forbiddenImports = map[string][]string{
	".":                   {"bench", "relay", "sqlite", "postgres", "storetest", "client", "importer"},
	"cmd":                 {"bench", "storetest"},
	"cmd/buzz-lite-bench": {"storetest"},
	"buzz":                {"relay", "sqlite", "postgres", "storetest", "client", "bench", "importer", "cmd"},
	"nipcw":               {"buzz", "relay", "sqlite", "postgres", "storetest", "client", "bench", "importer", "cmd"},
	"relay":               {"sqlite", "postgres", "storetest", "client", "bench", "importer", "cmd"},
	"sqlite":              {"relay", "postgres", "storetest", "client", "bench", "importer", "cmd"},
	"postgres":            {"relay", "sqlite", "storetest", "client", "bench", "importer", "cmd"},
	"storetest":           {"relay", "sqlite", "postgres", "client", "bench", "importer", "cmd"},
	"client":              {"relay", "sqlite", "postgres", "storetest", "bench", "importer", "cmd"},
	"bench":               {"relay", "sqlite", "postgres", "storetest", "client", "importer", "cmd"},
	"importer":            {"relay", "sqlite", "postgres", "storetest", "client", "bench", "cmd"},
	"web":                 {"relay", "sqlite", "postgres", "storetest", "client", "bench", "importer", "cmd"},
}

// TestPackageDirections: no store imports the relay or the other store,
// the relay imports no store, the domain imports neither, the wire
// vocabulary (nipcw) nothing of the domain, nothing imports the commands,
// and the relay binary (the module root and cmd/) not the harness.
func TestPackageDirections(t *testing.T) {
	const module = "github.com/buzz-lite/buzz-lite/"
	for pkg, forbidden := range forbiddenImports {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files (%v)", pkg, err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, module) {
					continue
				}
				if slices.Contains(forbidden, strings.TrimPrefix(path, module)) {
					t.Errorf("%s imports %s: %s must not depend on it", file, path, pkg)
				}
			}
		}
	}
}
