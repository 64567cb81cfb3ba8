package main

import (
	"os"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/bench/load/loadtable"
)

func TestSplice(t *testing.T) {
	doc := "intro\n<!-- begin load: written by make load -->\nold table\n<!-- end load -->\nafter\n"
	got, err := splice([]byte(doc), "load", []byte("new table"))
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n<!-- begin load: written by make load -->\nnew table\n<!-- end load -->\nafter\n"
	if string(got) != want {
		t.Fatalf("got %q", got)
	}
	for name, bad := range map[string]string{
		"no markers":     "text\n",
		"no end":         "<!-- begin load: x -->\n",
		"end first":      "<!-- end load -->\n<!-- begin load: x -->\n",
		"two blocks":     strings.Repeat("<!-- begin load: x -->\n<!-- end load -->\n", 2),
		"other fragment": "<!-- begin loads: x -->\n<!-- end loads -->\n",
	} {
		if _, err := splice([]byte(bad), "load", nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestReadmeLoadTableIsCurrent fails when README.md's load table is not
// what bench/load/run.sh renders from the committed
// docs/bench/load-results.json: a hand edit, or results without the table.
func TestReadmeLoadTableIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../docs/bench/load-results.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := loadtable.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := splice(readme, "load", []byte(loadtable.Render(r)))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(readme) {
		t.Errorf("README.md's load table is not what `make load` renders from docs/bench/load-results.json; it should read:\n%s", loadtable.Render(r))
	}
}
