package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The list follows the code: a change that moves an anchor fails here, in
// `make test`, not only in the long `make mutate`.
func TestEveryAnchorIsCurrent(t *testing.T) {
	if err := checkAnchors(filepath.Join("..", ".."), mutations); err != nil {
		t.Fatal(err)
	}
}

// The docs' counts of the deliberate bugs (README.md's `make mutate` row,
// the target's `make help` line) are the list's: a mutation added or removed
// without them fails here. `go run ./cmd/mutate -docs` writes them.
func TestDocsCountTheMutations(t *testing.T) {
	found, err := countsInDocs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for file, counts := range found {
		for _, n := range counts {
			if n != len(mutations) {
				t.Errorf("%s says %d mutations, the list holds %d: run go run ./cmd/mutate -docs", file, n, len(mutations))
			}
		}
	}
}

// -docs writes the count where the check reads it.
func TestWriteCounts(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "mk"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"README.md":    "| `make mutate` | each of the 3 deliberate bugs in `cmd/mutate/mutations.go` (Lua and Go) |\n",
		"mk/mutate.mk": "## mutate: each bug (~23 min for 3 on 2 cores; MUTATE_FLAGS)\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeCounts(root, 201); err != nil {
		t.Fatal(err)
	}
	found, err := countsInDocs(root)
	if err != nil || fmt.Sprint(found["README.md"], found["mk/mutate.mk"]) != "[201] [201]" {
		t.Fatalf("%v %v", found, err)
	}
	mk, _ := os.ReadFile(filepath.Join(root, "mk", "mutate.mk"))
	if string(mk) != strings.Replace(files["mk/mutate.mk"], "for 3", "for 201", 1) {
		t.Errorf("mk/mutate.mk: %q", mk)
	}
}

func TestStaleAnchorsAreRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.lua"), []byte("x = 1\nx = 1\ny = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]Mutation{
		"missing":   {Name: "m", File: "a.lua", From: "z = 3", To: "z = 4", Pkgs: []string{"."}},
		"twice":     {Name: "m", File: "a.lua", From: "x = 1", To: "x = 2", Pkgs: []string{"."}},
		"no change": {Name: "m", File: "a.lua", From: "y = 2", To: "y = 2", Pkgs: []string{"."}},
		"no file":   {Name: "m", File: "b.lua", From: "y = 2", To: "y = 3", Pkgs: []string{"."}},
		"no tests":  {Name: "m", File: "a.lua", From: "y = 2", To: "y = 3"},
	} {
		if err := checkAnchors(dir, []Mutation{m}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := Mutation{Name: "m", File: "a.lua", From: "y = 2", To: "y = 3", Pkgs: []string{"."}}
	if err := checkAnchors(dir, []Mutation{ok, ok}); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("a name used twice: %v", err)
	}
	if err := checkAnchors(dir, []Mutation{ok}); err != nil {
		t.Errorf("a current anchor: %v", err)
	}
}
