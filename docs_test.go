package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// channelWindowID is a requirement id of the channel window's families:
// CW-n (the relay) and CL-n (the client).
var channelWindowID = regexp.MustCompile(`\b(?:CW|CL)-[0-9]+\b`)

// TestNipCWDocCarriesCitedIDs: every CW-n and CL-n id that a comment in the
// repository's Go code cites is explained in docs/nip-cw.md, so that a
// test's `// CW-16` resolves inside the repository rather than in a spec
// readers of the code do not have.
func TestNipCWDocCarriesCitedIDs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "nip-cw.md"))
	if err != nil {
		t.Fatalf("reading the channel-window doc: %v", err)
	}
	documented := map[string]bool{}
	for _, id := range channelWindowID.FindAllString(string(doc), -1) {
		documented[id] = true
	}
	cited := citedIDs(t, ".")
	if len(cited) == 0 {
		t.Fatal("no Go comment cites a CW or CL id: the scan is broken")
	}
	var missing []string
	for id, where := range cited {
		if !documented[id] {
			missing = append(missing, id+" (cited at "+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/nip-cw.md does not mention these ids that Go comments cite:\n  %s", strings.Join(missing, "\n  "))
	}
}

// citedIDs returns each CW/CL id cited in a comment of a Go file under
// root, with one place that cites it.
func citedIDs(t *testing.T, root string) map[string]string {
	t.Helper()
	cited := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				for _, id := range channelWindowID.FindAllString(c.Text, -1) {
					if _, seen := cited[id]; !seen {
						cited[id] = fset.Position(c.Pos()).String()
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scanning Go comments: %v", err)
	}
	return cited
}
