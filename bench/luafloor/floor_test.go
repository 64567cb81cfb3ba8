package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lua-floor block of docs/design.md is the committed results'
// rendering: `make bench-luafloor` writes both, and a figure edited by hand
// in one of them fails here.
func TestDesignShowsTheFloor(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "bench", "luafloor-results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := blockOf(doc)
	if !ok {
		t.Fatal("docs/design.md has no block between <!-- begin lua-floor: … --> and <!-- end lua-floor -->")
	}
	if want := Render(&r); got != want {
		t.Errorf("docs/design.md's lua-floor block is not docs/bench/luafloor-results.json's rendering (run make bench-luafloor):\n%s\nwant:\n%s", got, want)
	}
	if len(r.Cases) != len(cases()) {
		t.Errorf("the results hold %d cases, the tool measures %d: run make bench-luafloor", len(r.Cases), len(cases()))
	}
	for i, c := range cases() {
		if i < len(r.Cases) && r.Cases[i].fcase != c {
			t.Errorf("case %s: the results measured another body (run make bench-luafloor):\n%+v\nnow:\n%+v", c.Key, r.Cases[i].fcase, c)
		}
	}
}

// Every case but the floor is compared with a case measured before it,
// and every body returns.
func TestCasesAreComparable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range cases() {
		if c.Baseline != "" && !seen[c.Baseline] {
			t.Errorf("%s is compared with %q, not measured before it", c.Key, c.Baseline)
		}
		if seen[c.Key] {
			t.Errorf("two cases named %s", c.Key)
		}
		seen[c.Key] = true
		if !c.Plain && !strings.Contains(c.Body, "return") {
			t.Errorf("%s: the body returns nothing:\n%s", c.Key, c.Body)
		}
	}
}

func TestRenderRoundsToTens(t *testing.T) {
	r := &Results{Redis: "Redis server v=7.0.15", Valgrind: "valgrind-3.19.0", Calls: 10, Warmup: 1, Cases: []Result{
		{fcase: fcase{Key: "a", What: "floor"}, Instructions: 123_456},
		{fcase: fcase{Key: "b", What: "two", Baseline: "a", Units: 2}, Instructions: 143_456},
	}}
	got := Render(r)
	for _, want := range []string{"| floor | 12,350 | | |", "| two | 14,350 | +2,000 | 1,000 |", "(Redis 7.0.15; valgrind-3.19.0)"} {
		if !strings.Contains(got, want) {
			t.Errorf("render lacks %q:\n%s", want, got)
		}
	}
}
