package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// countFigures are the places the docs state how many mutations the list
// holds: README.md's `make mutate` row and the target's `make help` line.
// TestDocsCountTheMutations compares them with the list; `go run ./cmd/mutate
// -docs` writes the list's count into them.
var countFigures = []struct {
	file string
	re   *regexp.Regexp // its first group is the count
}{
	{"README.md", regexp.MustCompile("each of the (\\d+) deliberate bugs in `cmd/mutate/mutations.go`")},
	{"mk/mutate.mk", regexp.MustCompile(`\(~\d+ min for (\d+) on 2 cores`)},
}

// countsInDocs returns, per file, the counts its figures state, or an error
// naming a file that states none.
func countsInDocs(root string) (map[string][]int, error) {
	found := map[string][]int{}
	for _, f := range countFigures {
		doc, err := os.ReadFile(filepath.Join(root, f.file))
		if err != nil {
			return nil, err
		}
		ms := f.re.FindAllSubmatch(doc, -1)
		if len(ms) == 0 {
			return nil, fmt.Errorf("%s no longer states the count (%s)", f.file, f.re)
		}
		for _, m := range ms {
			n, _ := strconv.Atoi(string(m[1]))
			found[f.file] = append(found[f.file], n)
		}
	}
	return found, nil
}

// writeCounts puts n into every count figure of the docs.
func writeCounts(root string, n int) error {
	for _, f := range countFigures {
		path := filepath.Join(root, f.file)
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := f.re.ReplaceAllFunc(doc, func(m []byte) []byte {
			loc := f.re.FindSubmatchIndex(m)
			return append(append(append([]byte{}, m[:loc[2]]...), strconv.Itoa(n)...), m[loc[3]:]...)
		})
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
