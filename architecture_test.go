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
// way, relay/ -> buzz/ <- sqlite/, postgres/ (issue 18). For each package,
// the packages of this module its non-test files must not import.
var forbiddenImports = map[string][]string{
	"buzz":      {"relay", "sqlite", "postgres", "storetest", "client", "bench", "importer"},
	"nipcw":     {"buzz", "relay", "sqlite", "postgres", "storetest", "client", "bench", "importer"},
	"relay":     {"sqlite", "postgres", "storetest", "client", "bench", "importer"},
	"sqlite":    {"relay", "postgres", "storetest", "client", "bench", "importer"},
	"postgres":  {"relay", "sqlite", "storetest", "client", "bench", "importer"},
	"storetest": {"relay", "sqlite", "postgres", "client", "bench", "importer"},
	"client":    {"relay", "sqlite", "postgres", "storetest"},
	"bench":     {"relay", "sqlite", "postgres", "storetest"},
	"importer":  {"relay", "sqlite", "postgres", "storetest"},
	"web":       {"relay", "sqlite", "postgres", "storetest", "client", "bench", "importer"},
}

// TestPackageDirections: no store imports the relay or the other store,
// the relay imports no store, the domain imports neither, and the wire
// vocabulary (nipcw) nothing of the domain.
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
