package main

import (
	"fmt"
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

// requirementID is a requirement id as code and tests cite it: RL-n, the
// relay's rules (a letter may follow the number, as in RL-27a), and the
// channel window's CW-n (the relay) and CL-n (the client).
var requirementID = regexp.MustCompile(`\b(?:RL|CW|CL)-[0-9]+[a-z]?\b`)

// requirementDocs are the pages that define the ids, each with the form a
// definition takes there, so that a passing mention or a cross-reference
// elsewhere never counts as one.
var requirementDocs = []struct {
	doc        string
	definition *regexp.Regexp
}{
	// One rule per list item, opened by its id in bold.
	{"requirements.md", regexp.MustCompile(`(?m)^- \*\*(RL-[0-9]+[a-z]?)\*\*`)},
	// The id alone in brackets, beside the paragraph or heading it marks.
	{"nip-cw.md", regexp.MustCompile(`\(((?:CW|CL)-[0-9]+)\)`)},
}

// Issue 30 item 5: every requirement id that a Go file of the repository
// cites, in a comment, a test's message or a flag's help, is defined once
// in docs/, so that a test's `// RL-13` or `// CW-16` resolves inside the
// repository rather than in a spec its readers do not have.
func TestDocsDefineCitedIDs(t *testing.T) {
	defined := map[string]string{}
	for _, d := range requirementDocs {
		text, err := os.ReadFile(filepath.Join("docs", d.doc))
		if err != nil {
			t.Fatalf("reading the requirements: %v", err)
		}
		for _, m := range d.definition.FindAllStringSubmatch(string(text), -1) {
			if first, twice := defined[m[1]]; twice {
				t.Errorf("%s is defined twice: in %s and in %s", m[1], first, d.doc)
			}
			defined[m[1]] = d.doc
		}
	}
	cited := citedIDs(t, ".")
	families := map[string]bool{}
	for id := range cited {
		families[id[:len("RL-")]] = true
	}
	for _, family := range []string{"RL-", "CW-", "CL-"} {
		if !families[family] {
			t.Fatalf("no Go file cites an id of the %sn family: the scan is broken", family)
		}
	}
	var missing []string
	for id, where := range cited {
		if defined[id] == "" {
			missing = append(missing, id+" (cited at "+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/requirements.md (RL) and docs/nip-cw.md (CW, CL) define none of these ids that Go files cite:\n  %s", strings.Join(missing, "\n  "))
	}
}

// citedIDs returns each requirement id that a Go file under root cites,
// anywhere in its text, with one place that cites it. It walks the whole
// tree, so that a file moved to a new package is still read.
func citedIDs(t *testing.T, root string) map[string]string {
	t.Helper()
	cited := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, id := range requirementID.FindAllString(line, -1) {
				if _, seen := cited[id]; !seen {
					cited[id] = fmt.Sprintf("%s:%d", path, i+1)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scanning Go files: %v", err)
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
