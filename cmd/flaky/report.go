package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is one line of go test -json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// result is one test's (or, Test "", one package's own) runs: how many
// ended, how many of those failed, and the output of the first failure.
type result struct {
	Package, Test string
	Runs, Fails   int
	First         string
}

// maxLines bounds a failure's output in the report: its last lines, where
// the test's own message and the FAIL line are.
const maxLines = 40

// parse reads a go test -json stream to its end. A test's output is kept
// from its "run" to its "pass", "fail" or "skip" (a -count=N run of one
// test never overlaps the next); a package's own output (a build error, a
// panic outside any test, a timeout) is kept whole.
func parse(r io.Reader) ([]result, error) {
	type key struct{ pkg, test string }
	results, out := map[key]*result{}, map[key]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return list(results), fmt.Errorf("not go test -json: %q: %w", sc.Text(), err)
		}
		k := key{e.Package, e.Test}
		if out[k] == nil {
			out[k] = &strings.Builder{}
		}
		switch e.Action {
		case "run":
			out[k].Reset()
		case "output", "build-output":
			out[k].WriteString(e.Output)
		case "pass", "fail":
			res := results[k]
			if res == nil {
				res = &result{Package: e.Package, Test: e.Test}
				results[k] = res
			}
			res.Runs++
			if e.Action == "fail" {
				res.Fails++
				if res.Fails == 1 {
					res.First = tail(out[k].String(), maxLines)
				}
			}
			if e.Test != "" {
				out[k].Reset()
			}
		case "skip":
			out[k].Reset()
		}
	}
	return list(results), sc.Err()
}

// list is the results in package, then test order.
func list[K comparable](m map[K]*result) []result {
	var l []result
	for _, r := range m {
		l = append(l, *r)
	}
	slices.SortFunc(l, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.Test, b.Test))
	})
	return l
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// report writes every test that failed at least once, with its count and
// first failure's output, and every package that failed with none of its
// tests failing (a build error, a panic outside a test, a timeout), then a
// summary line; it says whether anything failed.
func report(w io.Writer, results []result) bool {
	tests, runs, failing, packages := 0, 0, 0, 0
	failed := map[string]bool{} // packages with a failing test
	for _, r := range results {
		if r.Test != "" && r.Fails > 0 {
			failed[r.Package] = true
		}
	}
	for _, r := range results {
		if r.Test != "" {
			tests++
			runs += r.Runs
		}
		if r.Fails == 0 || r.Test == "" && failed[r.Package] {
			continue
		}
		name := r.Test
		if name == "" {
			packages++
			name = "(the package itself: a build error, a panic outside a test, a timeout)"
		} else {
			failing++
		}
		fmt.Fprintf(w, "FAIL %s %s: %d of %d runs failed; the first:\n", r.Package, name, r.Fails, r.Runs)
		for _, line := range strings.Split(r.First, "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	fmt.Fprintf(w, "flaky: %d of %d tests failed at least once in %d runs", failing, tests, runs)
	if packages > 0 {
		fmt.Fprintf(w, "; %d packages failed outside their tests", packages)
	}
	fmt.Fprintln(w)
	return failing+packages > 0
}
