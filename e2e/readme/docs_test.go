package readme

// Issue 34: what the README states besides its commands: its links lead
// somewhere, and its figures are the ones their sources give.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/web"
)

// linkedDocs are the documents whose relative links and anchors are checked.
var linkedDocs = []string{"README.md", "docs/API.md", "docs/design.md", "docs/security.md", "docs/e2e.md", "docs/cost.md", "docs/architecture.md", "infra/README.md", "BENCHMARKS.md"}

// Every relative link of the README (and of the docs it leads to) names a
// file that exists and, with #anchor, a heading of that file (GitHub's
// anchors) or an explicit id.
func TestDocsLinksLeadSomewhere(t *testing.T) {
	root := filepath.Join("..", "..")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		doc, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = headingAnchors(string(doc))
		return anchors[file]
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, name := range linkedDocs {
		doc, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range proseLines(string(doc)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // http(s), mailto: not this test's
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := filepath.Join(root, name)
				if path != "" {
					file = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: %s: no such file", name, i+1, target)
					continue
				}
				if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
					t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", name, i+1, target, path, anchor)
				}
			}
		}
	}
}

// proseLines are the document's lines with those of fenced code blocks
// blanked (their brackets are code, not links); numbering is kept.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
		} else if in {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors are the anchors GitHub gives a document's headings
// (lower case; punctuation but - and _ dropped; spaces to -; a repeated
// one suffixed -1, -2, …), and the ids of its <a id> / <a name> tags.
func headingAnchors(doc string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\p{M} _-]`)
	for _, line := range proseLines(doc) {
		if !regexp.MustCompile(`^#{1,6} `).MatchString(line) {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
		slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	for _, m := range regexp.MustCompile(`<a (?:id|name)="([^"]+)"`).FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Waitroom on AWS (`infra/`)\n```\n# not a heading\n```\n### Context keys\n## Checking the pass on your own pages\n## A: b\n## A: b\n## 대기 중 (한국어)\n")
	for _, want := range []string{"waitroom-on-aws-infra", "context-keys", "checking-the-pass-on-your-own-pages", "a-b", "a-b-1", "대기-중-한국어"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block taken for a heading")
	}
}

// The README's size of the page is the page's: every file of web/static, in
// kB (1000 bytes) to a tenth.
func TestReadmeStatesThePageSize(t *testing.T) {
	var size int64
	err := fs.WalkDir(web.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		size += info.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`English and Korean \([^)]*\), ([\d.]+) KB`).FindSubmatch(readme)
	want := strconv.FormatFloat(float64(size)/1000, 'f', 1, 64)
	if m == nil || string(m[1]) != want {
		t.Errorf("README.md should say the page is %s KB (%d bytes in web/static), in \"English and Korean (…), N KB\"", want, size)
	}
}

// A duration the README's "Make targets" table gives a target (~N min, ~N s)
// is the one its `make help` line gives: one figure, two places.
func TestReadmeTimingsAreMakeHelps(t *testing.T) {
	root := filepath.Join("..", "..")
	help := map[string]string{}
	makefiles, _ := filepath.Glob(filepath.Join(root, "mk", "*.mk"))
	for _, f := range append(makefiles, filepath.Join(root, "Makefile")) {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^## ([a-zA-Z0-9_.-]+): (.*)$`).FindAllStringSubmatch(string(text), -1) {
			help[m[1]] = m[2]
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	duration := regexp.MustCompile(`~[\d.]+(?:-[\d.]+)? ?(?:min|s)\b`)
	rows := 0
	for _, m := range regexp.MustCompile("(?m)^\\| `make ([a-z0-9-]+)` \\| (.*)$").FindAllStringSubmatch(string(readme), -1) {
		rows++
		for _, d := range duration.FindAllString(m[2], -1) {
			if line, ok := help[m[1]]; !ok || !strings.Contains(strings.ReplaceAll(line, " ", ""), strings.ReplaceAll(d, " ", "")) {
				t.Errorf("README.md says `make %s` takes %s; make help says: %s", m[1], d, line)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("README.md's Make targets table has %d rows: the pattern lost it", rows)
	}
}
