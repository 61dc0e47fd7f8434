package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"
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

// markdownLink is a link target in markdown: [text](target) or an HTML
// src or href attribute.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)|(?:src|href)="([^"]+)"`)

// fencedBlock is a fenced code block, whose text is no link.
var fencedBlock = regexp.MustCompile("(?ms)^```.*?^```")

// Issue 29 item 10: every relative link of the README and of docs/*.md
// names a file of the repository, and an #anchor into a markdown file one
// of its headings, as GitHub makes their anchors.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, doc := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(fencedBlock.ReplaceAllString(string(text), ""), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s: %v", doc, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s links to %s: an anchor into a file that is not markdown", doc, target)
				continue
			}
			if !slices.Contains(headingAnchors(t, path), anchor) {
				t.Errorf("%s links to %s: %s has no heading #%s", doc, target, path, anchor)
			}
		}
	}
	if links < 20 {
		t.Fatalf("found %d relative links: the scan is broken", links)
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown file: lowercased, punctuation but - and _ dropped, spaces as
// hyphens, a repeated one suffixed -1, -2, ...
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var anchors []string
	for _, line := range strings.Split(fencedBlock.ReplaceAllString(string(text), ""), "\n") {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", anchor, n))
		} else {
			anchors = append(anchors, anchor)
		}
		seen[anchor]++
	}
	return anchors
}
