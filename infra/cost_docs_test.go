package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/infra/cost"
)

// Every figure of docs/cost.md and of infra/README.md's cost section is the
// model's: the committed fragments equal what `make cost` renders from the
// documented configurations, and no dollar figure stands outside them.
func TestCostDocuments(t *testing.T) {
	confs, _ := documentedConfigurations(t)
	frags, err := cost.DocumentsFor(confs, documented.dir)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]map[string]string{}
	for _, f := range frags {
		if committed[f.Document] == nil {
			doc, err := os.ReadFile(filepath.Join("..", f.Document))
			if err != nil {
				t.Fatal(err)
			}
			if committed[f.Document], err = cost.Fragments(doc); err != nil {
				t.Fatalf("%s: %v", f.Document, err)
			}
			for _, line := range cost.HandFigures(doc) {
				t.Errorf("%s: a dollar figure outside the generated blocks: %s", f.Document, line)
			}
		}
		got, ok := committed[f.Document][f.Name]
		if !ok {
			t.Errorf("%s has no block %s (markers <!-- begin %s: … --> and <!-- end %s -->)", f.Document, f.Name, f.Name, f.Name)
			continue
		}
		if got != f.Text {
			t.Errorf("%s, block %s, differs from the model (run make cost): %s", f.Document, f.Name, firstDifference(got, f.Text))
		}
		delete(committed[f.Document], f.Name)
	}
	for doc, left := range committed {
		for name := range left {
			t.Errorf("%s: block %s is not the model's (make cost writes no such block)", doc, name)
		}
	}
}

// firstDifference names the first line where committed and rendered differ.
func firstDifference(committed, rendered string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(rendered, "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb {
			return "committed " + strings.TrimSpace(la) + " | model " + strings.TrimSpace(lb)
		}
	}
	return ""
}
