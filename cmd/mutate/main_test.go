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

// README's count of the deliberate bugs is the list's: a mutation added or
// removed without the README fails here.
func TestReadmeCountsTheMutations(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("each of the %d deliberate bugs in `cmd/mutate/mutations.go`", len(mutations))
	if !strings.Contains(string(readme), want) {
		t.Fatalf("README.md's `make mutate` row should say %q", want)
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
