package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/waitroom/waitroom/bench/spike/sim"
)

// repoRoot is this package's path back to the repository's root.
const repoRoot = "../.."

// TestBenchmarksMdIsRendered fails when the committed BENCHMARKS.md or one
// of its plots is not what `make bench-report` renders from the committed
// results files: a hand edit, or a results file changed without running
// the report. The results are copied into a temporary tree of the same
// layout and rendered there, so that the Markdown's links are the same.
func TestBenchmarksMdIsRendered(t *testing.T) {
	tmp := t.TempDir()
	in, out := under(repoRoot, sim.DefaultFiles()), under(tmp, sim.DefaultFiles())
	from, to := reflect.ValueOf(in), reflect.ValueOf(out)
	for i := range from.NumField() {
		if name := from.Type().Field(i).Name; name != "Markdown" && name != "Plots" { // the results read
			copyIfPresent(t, from.Field(i).String(), to.Field(i).String())
		}
	}
	inputs, err := sim.LoadInputs(out)
	if err != nil {
		t.Fatal(err)
	}
	md, err := sim.WriteReport(inputs, out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(in.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	if md != string(committed) {
		t.Errorf("BENCHMARKS.md is not what `make bench-report` renders from docs/bench/*.json: run `make bench-report` (never edit it by hand)\n%s", firstDifference(string(committed), md))
	}
	plots, err := filepath.Glob(filepath.Join(out.Plots, "*.svg"))
	if err != nil || len(plots) == 0 {
		t.Fatalf("no plots rendered (%v)", err)
	}
	for _, p := range plots {
		got, _ := os.ReadFile(p)
		want, err := os.ReadFile(filepath.Join(in.Plots, filepath.Base(p)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what `make bench-report` renders (%v): run it", filepath.Join(in.Plots, filepath.Base(p)), err)
		}
	}
}

// under is f with every path joined under root.
func under(root string, f sim.Files) sim.Files {
	v := reflect.ValueOf(&f).Elem()
	for i := range v.NumField() {
		v.Field(i).SetString(filepath.Join(root, v.Field(i).String()))
	}
	return f
}

func copyIfPresent(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if os.IsNotExist(err) {
		return // an optional results file: the report leaves its section out
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstDifference shows the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if !bytes.Equal(a, b) {
			return fmt.Sprintf("line %d:\n  committed: %s\n  rendered:  %s", i+1, a, b)
		}
	}
	return ""
}
